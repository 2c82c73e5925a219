// Tests of pointers (one valid encoding, every other rejected with a clear
// message) and of the object store (layout, atomic and concurrent writes,
// the chain limit).
#include <doctest/doctest.h>
#include <dirent.h>
#include <sys/resource.h>

#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "lib/base/io.h"
#include "lib/container/object.h"
#include "lib/store/checkpoints.h"
#include "lib/store/object_store.h"
#include "lib/store/pointer.h"
#include "lib/store/test_objects.h"

namespace zipnn::store {
namespace {

using testing::FilesIn;
using testing::StoreChain;
using testing::TempDir;

Pointer Sample() {
  Pointer p;
  p.id = *ContentId::FromHex("0123456789abcdef0123456789abcdef");
  p.size = 117764;
  p.format = "safetensors";
  return p;
}

TEST_CASE("a pointer has exactly one encoding in each version, well under 200 bytes") {
  const std::string text = FormatPointer(Sample());
  CHECK(text == "git-zipnn pointer 2 117764 xxh3-128:0123456789abcdef0123456789abcdef safetensors\n");
  Pointer v1 = Sample();
  v1.version = 1;
  const std::string text1 = FormatPointer(v1);
  CHECK(text1 ==
        "git-zipnn pointer 1\n"
        "id xxh3-128:0123456789abcdef0123456789abcdef\n"
        "size 117764\n"
        "format safetensors\n");
  for (const std::string& t : {text, text1}) {
    CAPTURE(t);
    CHECK(t.size() < 120);
    auto back = ParsePointer(t);
    REQUIRE(back.ok());
    CHECK(*back == Sample());
    CHECK(FormatPointer(*back) == t);  // each version spelled back as it came
    CHECK(LooksLikePointer(t));
  }
  CHECK(ParsePointer(text)->version == 2);
  CHECK(ParsePointer(text1)->version == 1);
  CHECK(!LooksLikePointer("PK\x03\x04 a zip"));
  Pointer empty = Sample();
  empty.size = 0;
  CHECK(ParsePointer(FormatPointer(empty)).ok());
  // Every size round-trips, up to 2^64 - 1 (20 digits), with the longest
  // format name, within 200 bytes.
  for (int version : {1, 2}) {
    for (uint64_t size : {uint64_t{9999999999999999999u}, uint64_t{10000000000000000000u}, UINT64_MAX}) {
      Pointer big = Sample();
      big.size = size;
      big.format = "abcdefghijklmnop";
      big.version = version;
      CHECK(FormatPointer(big).size() <= kMaxPointerBytes);
      auto parsed = ParsePointer(FormatPointer(big));
      REQUIRE(parsed.ok());
      CHECK(parsed->size == size);
    }
  }
}

// git's rename detection (diffcore-delta.c) cuts a text into pieces that
// end at a newline or after 64 bytes, and calls two files alike by the
// bytes of the pieces they share. A merge pairs a deleted file with an
// added one at 50% alike; version 1 pointers of two checkpoints of one
// size and format share 51 of about 96 bytes.
double GitSimilarity(const std::string& a, const std::string& b) {
  auto pieces = [](const std::string& text) {
    std::map<std::string, size_t> bytes;
    std::string piece;
    for (char c : text) {
      piece += c;
      if (piece.size() == 64 || c == '\n') {
        bytes[piece] += piece.size();
        piece.clear();
      }
    }
    if (!piece.empty()) bytes[piece] += piece.size();
    return bytes;
  };
  const auto pa = pieces(a), pb = pieces(b);
  size_t shared = 0;
  for (const auto& [piece, n] : pa) {
    if (auto it = pb.find(piece); it != pb.end()) shared += std::min(n, it->second);
  }
  return static_cast<double>(shared) / static_cast<double>(std::max(a.size(), b.size()));
}

TEST_CASE("two pointers of version 2 share no piece git's rename detection compares, nor one of each version") {
  Pointer a = Sample(), b = Sample();
  b.id = *ContentId::FromHex("fedcba9876543210fedcba9876543210");
  a.version = b.version = 1;
  CHECK(GitSimilarity(FormatPointer(a), FormatPointer(b)) > 0.5);  // what made merges pair checkpoints
  for (uint64_t size : {uint64_t{100}, uint64_t{117764}, uint64_t{1} << 40, UINT64_MAX}) {
    for (const char* format : {"raw", "pytorch", "safetensors", "abcdefghijklmnop"}) {
      CAPTURE(size);
      CAPTURE(format);
      a.version = b.version = 2;
      a.size = b.size = size;
      a.format = b.format = format;
      CHECK(GitSimilarity(FormatPointer(a), FormatPointer(b)) == 0);
      a.version = 1;
      CHECK(GitSimilarity(FormatPointer(a), FormatPointer(b)) == 0);
    }
  }
  // Below 100 bytes the format may share the last piece: far below 50%.
  a.version = 2;
  a.size = b.size = 99;
  a.format = b.format = "abcdefghijklmnop";
  CHECK(GitSimilarity(FormatPointer(a), FormatPointer(b)) < 0.25);
}

TEST_CASE("every other spelling of a pointer is rejected, saying why") {
  Pointer v1 = Sample();
  v1.version = 1;
  const std::string good = FormatPointer(v1);
  auto reject = [](const std::string& text) { return ParsePointer(text).status().message(); };
  CHECK(reject(good.substr(0, good.size() - 1)) == "pointer does not end with a newline");
  CHECK(reject(good + "extra 1\n") == "pointer has 5 lines, not 4");
  // One edit of a good pointer each: {text found, its replacement, the error}.
  struct Edit {
    const char* find;
    const char* replace;
    const char* error;
  };
  const Edit kEdits1[] = {
      {"pointer 1\n", "pointer 1\r\n",
       "pointer does not start with 'git-zipnn pointer 1' or 'git-zipnn pointer 2 '"},
      {"0123456789abcdef\n", "0123456789abcdeF\n", "pointer id is not 32 lowercase hex digits"},
      {"xxh3-128:0123", "xxh3-128:123", "pointer id is not 32 lowercase hex digits"},
      {"size 117764", "size 0117764", "pointer size is not a plain decimal number"},
      {"size 117764", "size +117764", "pointer size is not a plain decimal number"},
      {"size 117764", "size 99999999999999999999", "pointer size is not a plain decimal number"},
      {"size 117764", "size 18446744073709551616", "pointer size is not a plain decimal number"},
      {"size 117764", "size 100000000000000000000", "pointer size is not a plain decimal number"},
      {"format ", "format  ", "pointer line 4 is not 'format <name>'"},
  };
  const std::string good2 = FormatPointer(Sample());
  const Edit kEdits2[] = {
      {"2 117764", "2  117764", "pointer size is not a plain decimal number"},
      {"117764", "0117764", "pointer size is not a plain decimal number"},
      {"117764 ", "117764", "pointer size is not a plain decimal number"},
      {" safetensors", " Safetensors", "pointer format is not a name of a-z, 0-9 and _"},
      {" safetensors", " safetensors ", "pointer format is not a name of a-z, 0-9 and _"},
      {" safetensors", "", "pointer has no format after its id"},
      {" xxh3-128:", " sha256:", "pointer id does not start with 'xxh3-128:'"},
      {"0123456789abcdef ", "0123456789abcdeF ", "pointer id is not 32 lowercase hex digits"},
      {"\n", "\r\n", "pointer format is not a name of a-z, 0-9 and _"},
      {"\n", "\nsize 1\n", "pointer version 2 has 2 lines, not 1"},
      {"pointer 2 ", "pointer 2\t", "pointer does not start with 'git-zipnn pointer 1' or 'git-zipnn pointer 2 '"},
  };
  for (const auto& [text0, edits] : {std::pair<std::string, std::vector<Edit>>{good, {std::begin(kEdits1), std::end(kEdits1)}},
                                     std::pair<std::string, std::vector<Edit>>{good2, {std::begin(kEdits2), std::end(kEdits2)}}}) {
    for (const Edit& edit : edits) {
      CAPTURE(edit.replace);
      std::string text = text0;
      const size_t at = text.find(edit.find);
      REQUIRE(at != std::string::npos);
      text.replace(at, std::string(edit.find).size(), edit.replace);
      CHECK(reject(text) == edit.error);
    }
  }
  std::string newer = good;
  newer.replace(0, 19, "git-zipnn pointer 3");
  CHECK(ParsePointer(newer).status().code() == StatusCode::kUnsupported);
  CHECK(reject(newer) == "pointer version '3' is newer than this git-zipnn reads (2); upgrade git-zipnn");
  CHECK(reject("git-zipnn pointer 12 1 raw xxh3-128:0123456789abcdef0123456789abcdef\n") ==
        "pointer version '12' is newer than this git-zipnn reads (2); upgrade git-zipnn");
  CHECK(reject(std::string(300, 'x')) == "pointer is longer than 200 bytes");
}

TEST_CASE("objects live under <2 hex>/<2 hex>/<id>, appear whole or not at all") {
  const ObjectStore store(TempDir() + "/objects");
  const ContentId id = HashBytes("checkpoint", 10);
  const std::string hex = id.Hex();
  CHECK(store.PathOf(id) == store.root() + "/" + hex.substr(0, 2) + "/" + hex.substr(2, 2) + "/" + hex);
  CHECK(!store.Has(id));
  CHECK(store.Open(id).status().message() == "object " + hex + " is not in the store " + store.root());

  // A writer that fails leaves nothing, not even its temporary file.
  Status failed = store.Put(id, [](AtomicFile& f) {
    REQUIRE(f.Append("half", 4).ok());
    return IoError("disk full");
  });
  CHECK(failed.message() == "disk full");
  CHECK(!store.Has(id));
  CHECK(FilesIn(store.root() + "/" + hex.substr(0, 2) + "/" + hex.substr(2, 2)) == 0);

  REQUIRE(store.Put(id, [](AtomicFile& f) { return f.Append("object bytes", 12); }).ok());
  CHECK(store.Has(id));
  auto data = ReadWholeFile(store.PathOf(id));
  REQUIRE(data.ok());
  CHECK(std::string(data->begin(), data->end()) == "object bytes");
  // Immutable: a second Put of the same id does not write.
  bool called = false;
  REQUIRE(store.Put(id, [&](AtomicFile&) {
    called = true;
    return OkStatus();
  }).ok());
  CHECK(!called);
}

TEST_CASE("writers of the same object at once all succeed with one intact copy") {
  const ObjectStore store(TempDir() + "/objects");
  const ContentId id = HashBytes("same", 4);
  const std::string payload(1 << 20, 'z');
  std::vector<std::thread> writers;
  std::vector<int> ok(8, 0);
  for (int t = 0; t < 8; ++t) {
    writers.emplace_back([&, t] {
      ok[t] = store.Put(id, [&](AtomicFile& f) { return f.Append(payload.data(), payload.size()); }).ok();
    });
  }
  for (auto& w : writers) w.join();
  for (int t = 0; t < 8; ++t) CHECK(ok[t] == 1);
  auto data = ReadWholeFile(store.PathOf(id));
  REQUIRE(data.ok());
  CHECK(data->size() == payload.size());
  const std::string hex = id.Hex();
  CHECK(FilesIn(store.root() + "/" + hex.substr(0, 2) + "/" + hex.substr(2, 2)) == 1);
}

TEST_CASE("a finished object file is adopted whole; an object already there is kept") {
  const std::string dir = TempDir();
  const ObjectStore store(dir + "/objects");
  const ContentId id = HashBytes("adopted", 7);
  auto write = [&](const std::string& path, const std::string& text) {
    auto f = AtomicFile::Create(path, /*overwrite=*/true);
    REQUIRE(f.ok());
    REQUIRE(f->Append(text.data(), text.size()).ok());
    REQUIRE(f->Commit().ok());
  };
  write(dir + "/candidate", "first");
  REQUIRE(store.Adopt(id, dir + "/candidate").ok());
  CHECK(*ReadWholeFile(store.PathOf(id)) == std::vector<uint8_t>{'f', 'i', 'r', 's', 't'});
  write(dir + "/again", "second");
  REQUIRE(store.Adopt(id, dir + "/again").ok());
  CHECK(*ReadWholeFile(store.PathOf(id)) == std::vector<uint8_t>{'f', 'i', 'r', 's', 't'});
  CHECK(!store.Adopt(HashBytes("x", 1), dir + "/no-such-file").ok());
}


TEST_CASE("a chain over the hard limit is refused before anything is decoded") {
  char dir[] = "/tmp/chain-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string root = dir;
  const Repository repo{ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(repo, kMaxChainDepth + 1);
  // At the limit a version restores; one more delta and it is refused.
  CountingSink at_limit;
  CHECK(Restore(repo, ids[kMaxChainDepth], at_limit).ok());
  CHECK(at_limit.bytes() == 64);
  CountingSink over;
  const Status s = Restore(repo, ids.back(), over);
  CHECK(s.code() == StatusCode::kCorruption);
  CHECK(s.message() == "chain of object " + ids.back().Hex() + " is longer than 1000");
  CHECK(over.bytes() == 0);
  CHECK(VisitChain(repo, ids.back(), [](const ChainLink&) {}).message() == s.message());
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a chain of 1000 is restored and read by parts holding a bounded number of objects open") {
  const std::string root = TempDir();
  const Repository repo{ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(repo, kMaxChainDepth);
  // Each level decoded at once holds its object open, its chunk map and
  // decoded chunks: with 64 file descriptors, a restore that stacked all
  // 1001 levels at once could not even open them.
  struct rlimit was;
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &was) == 0);
  struct rlimit low = was;
  low.rlim_cur = 64;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  MemorySink restored;
  const Status s = Restore(repo, ids.back(), restored);
  auto version = OpenVersion(repo, ids.back());
  uint8_t head[4] = {};
  const Status read = version.ok() ? (*version)->ReadAt(0, head, sizeof head) : version.status();
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &was) == 0);
  REQUIRE_MESSAGE(s.ok(), s.message());
  CHECK(HashBytes(restored.buffer().data(), restored.buffer().size()) == ids.back());
  REQUIRE_MESSAGE(read.ok(), read.message());
  CHECK(std::vector<uint8_t>(head, head + 4) == std::vector<uint8_t>{0xe8, 0x03, 0, 0});  // version 1000
  if (version.ok()) version->reset();
  CHECK(testing::FilesIn(root + "/tmp") == 0);  // no scratch file is left behind
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a version is read by parts through its chain, each part checked") {
  const std::string root = TempDir();
  const Repository repo{ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(repo, 4);
  auto version = OpenVersion(repo, ids[4]);
  REQUIRE(version.ok());
  CHECK((*version)->size() == 64);
  uint8_t head[8] = {};
  REQUIRE((*version)->ReadAt(0, head, sizeof head).ok());
  CHECK(std::vector<uint8_t>(head, head + 8) == std::vector<uint8_t>{4, 0, 0, 0, 0, 0, 0, 0});

  // A base replaced by another checkpoint's object under its name (a
  // forgery every structural check passes): the top's chunk comes out
  // wrong, and its raw checksum says so.
  const std::string other = root + "/other";
  {
    std::vector<uint8_t> data(64, 99);
    MemorySource input(data.data(), data.size(), "other");
    auto out = AtomicFile::Create(other, true);
    REQUIRE(out.ok());
    REQUIRE(container::EncodeObject(input, container::Layout::Single(codec::DType::kBytes, 64), nullptr, {}, *out).ok());
    REQUIRE(out->Commit().ok());
  }
  auto bytes = ReadWholeFile(other);
  REQUIRE(bytes.ok());
  auto forged = testing::ForgeObject(std::string(bytes->begin(), bytes->end()), ids[2]);
  REQUIRE(forged.ok());
  const std::string path = repo.objects.PathOf(ids[2]);
  REQUIRE(std::system(("chmod u+w " + path).c_str()) == 0);
  {
    auto out = AtomicFile::Create(path, true);
    REQUIRE(out.ok());
    REQUIRE(out->Append(forged->data(), forged->size()).ok());
    REQUIRE(out->Commit().ok());
  }
  auto damaged = OpenVersion(repo, ids[4]);
  REQUIRE(damaged.ok());
  const Status st = (*damaged)->ReadAt(0, head, sizeof head);
  CHECK(st.code() == StatusCode::kCorruption);
  CHECK(st.message().find("restored bytes do not match their checksum") != std::string::npos);

  // A missing base is NotFound, before anything is read.
  REQUIRE(std::remove(repo.objects.PathOf(ids[3]).c_str()) == 0);
  CHECK(OpenVersion(repo, ids[4]).status().code() == StatusCode::kNotFound);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a version stored before format 5 is not read by parts") {
  const std::string root = TempDir();
  const Repository repo{ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", "", config::Policy{}};
  std::vector<uint8_t> data(64, 7);
  const ContentId id = HashBytes(data.data(), data.size());
  MemorySource input(data.data(), data.size(), "version");
  container::EncodeOptions options;
  options.transform = codec::TransformPolicy::kXor;  // format 2
  REQUIRE(repo.objects
              .Put(id, [&](AtomicFile& out) -> Status {
                auto r = container::EncodeObject(input, container::Layout::Single(codec::DType::kBytes, 64), nullptr,
                                                 options, out);
                return r.ok() ? OkStatus() : r.status();
              })
              .ok());
  const Status s = OpenVersion(repo, id).status();
  CHECK(s.code() == StatusCode::kUnsupported);
  CHECK(s.message() == repo.objects.PathOf(id) +
                           ": object format 2 has no raw checksums; a part of it is checked only by restoring it whole");
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

}  // namespace
}  // namespace zipnn::store
