// The clean filter's body (Cleaner::Clean) in a scratch folder: a
// checkpoint larger than raw_cache is read where git read it, with no
// scratch copy, a stream the work tree does not hold is stored as
// streamed, and a file rewritten while it is stored fails the command
// with a message that says what to do.
#include "lib/ops/clean.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <cstring>
#include <functional>
#include <string>
#include <utility>

#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/ops/in_folder.h"
#include "lib/store/restore.h"

namespace zipnn::ops {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void Write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// Git's stream of a file: `bytes`, then, as the stream ends, `at_end`.
class Stream : public ByteReader {
 public:
  Stream(std::string bytes, std::function<void()> at_end) : bytes_(std::move(bytes)), at_end_(std::move(at_end)) {}
  Result<size_t> Read(void* out, size_t n) override {
    const size_t k = std::min(n, bytes_.size() - at_);
    std::memcpy(out, bytes_.data() + at_, k);
    at_ += k;
    if (k == 0 && at_end_) std::exchange(at_end_, nullptr)();
    return k;
  }

 private:
  std::string bytes_;
  size_t at_ = 0;
  std::function<void()> at_end_;
};

class StringSink : public ByteSink {
 public:
  Status Append(const void* data, size_t n) override {
    text.append(static_cast<const char*>(data), n);
    return OkStatus();
  }
  std::string text;
};

// The bytes of every scratch file clean has open in `dir`.
uint64_t ScratchBytes(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind("clean-", 0) == 0) n += e.file_size(ec);
  }
  return n;
}

// `n` bytes of no format clean knows (stored raw), varied by `seed`.
std::string Bytes(size_t n, uint32_t seed) {
  std::string bytes(n, '\0');
  for (char& c : bytes) c = static_cast<char>((seed = seed * 1664525u + 1013904223u) >> 24);
  return bytes;
}

TEST_CASE(
    "clean reads a checkpoint larger than raw_cache where git read it; a file rewritten meanwhile is stored as it is "
    "then") {
  const std::string step40 = Slurp("tests/data/cnn-bf16/step-000040.safetensors");
  REQUIRE(!step40.empty());
  InFolder scratch(/*repository=*/false);
  const std::string root = scratch.root();
  config::Policy policy;
  policy.raw_cache = 0;
  const store::Store store{store::ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", root, policy};
  Cleaner cleaner(store, nullptr);
  auto restored = [&](const ContentId& id) {
    StringSink out;
    REQUIRE(store::Restore(store, id, out).ok());
    return out.text;
  };
  auto clean = [&](Stream& stream, const std::string& bytes) {
    StringSink pointer;
    REQUIRE(cleaner.Clean("model.safetensors", stream, pointer).ok());
    const ContentId id = HashBytes(bytes.data(), bytes.size());
    CHECK(pointer.text.find(id.Hex()) != std::string::npos);
    CHECK(restored(id) == bytes);
  };

  // A real checkpoint the work tree holds.
  Write("model.safetensors", step40);
  Stream checkpoint(step40, nullptr);
  clean(checkpoint, step40);

  // Three reads' worth of what the work tree holds: no byte of it is
  // copied to scratch (at the end of the stream the spool is empty).
  const std::string big = Bytes(3u << 20, 1);
  Write("model.safetensors", big);
  uint64_t scratch_at_end = 1;
  Stream same(big, [&] { scratch_at_end = ScratchBytes(root + "/tmp"); });
  clean(same, big);
  CHECK(scratch_at_end == 0);

  // Other bytes streamed for the path: spooled, and stored as streamed.
  const std::string other = Bytes(3u << 20, 2);
  Stream streamed(other, [&] { scratch_at_end = ScratchBytes(root + "/tmp"); });
  clean(streamed, other);
  CHECK(scratch_at_end >= (2u << 20));

  // Rewritten in place once git has streamed it (a tool saving the next
  // step over it without truncating it): the command fails, says why and
  // what to do, and stores nothing under the streamed bytes' id.
  const std::string next = Bytes(3u << 20, 3);
  Write("model.safetensors", next);
  Stream rewritten(next, [&] {
    const int fd = ::open("model.safetensors", O_WRONLY);
    REQUIRE(fd >= 0);
    REQUIRE(::pwrite(fd, "next step", 9, 100) == 9);
    ::close(fd);
  });
  StringSink pointer;
  const Status refused = cleaner.Clean("model.safetensors", rewritten, pointer);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.message() ==
        "the file was rewritten while it was stored; run the git command again once it is written (a file written "
        "in place while git reads it: set raw_cache above its size, so that it is copied first)");
  CHECK(pointer.text.empty());
  CHECK_FALSE(store.objects.Has(HashBytes(next.data(), next.size())));
}

}  // namespace
}  // namespace zipnn::ops
