// Tests of restoring stored versions: whole, through chains as deep as
// the limit with few files open, by parts with each part checked, from
// the first copy down a chain, and the formats that cannot be read by
// parts.
#include <doctest/doctest.h>

#include <sys/resource.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/io.h"
#include "lib/container/object.h"
#include "lib/store/restore.h"
#include "lib/store/series_fixture.h"
#include "lib/store/test_objects.h"

namespace zipnn::store {
namespace {

using testing::Bf16;
using testing::Copy;
using testing::Fixture;
using testing::IdOf;
using testing::StoreChain;
using testing::TempDir;

TEST_CASE("a chain of 1000 is restored and read by parts holding a bounded number of objects open") {
  const std::string root = TempDir();
  const Store store{ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(store, kMaxChainDepth);
  // Each level decoded at once holds its object open, its chunk map and
  // decoded chunks: with 64 file descriptors, a restore that stacked all
  // 1001 levels at once could not even open them.
  struct rlimit was;
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &was) == 0);
  struct rlimit low = was;
  low.rlim_cur = 64;
  REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);
  MemorySink restored;
  const Status s = Restore(store, ids.back(), restored);
  auto version = OpenVersion(store, ids.back());
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
  const Store store{ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", "", config::Policy{}};
  const std::vector<ContentId> ids = StoreChain(store, 4);
  auto version = OpenVersion(store, ids[4]);
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
    REQUIRE(
        container::EncodeObject(input, container::Layout::Single(codec::DType::kBytes, 64), nullptr, {}, *out).ok());
    REQUIRE(out->Commit().ok());
  }
  auto bytes = ReadWholeFile(other);
  REQUIRE(bytes.ok());
  auto forged = testing::ForgeObject(std::string(bytes->begin(), bytes->end()), ids[2]);
  REQUIRE(forged.ok());
  const std::string path = store.objects.PathOf(ids[2]);
  REQUIRE(std::system(("chmod u+w " + path).c_str()) == 0);
  {
    auto out = AtomicFile::Create(path, true);
    REQUIRE(out.ok());
    REQUIRE(out->Append(forged->data(), forged->size()).ok());
    REQUIRE(out->Commit().ok());
  }
  auto damaged = OpenVersion(store, ids[4]);
  REQUIRE(damaged.ok());
  const Status st = (*damaged)->ReadAt(0, head, sizeof head);
  CHECK(st.code() == StatusCode::kCorruption);
  CHECK(st.message().find("restored bytes do not match their checksum") != std::string::npos);

  // A missing base is NotFound, before anything is read.
  REQUIRE(std::remove(store.objects.PathOf(ids[3]).c_str()) == 0);
  CHECK(OpenVersion(store, ids[4]).status().code() == StatusCode::kNotFound);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a chunk a delta leaves unchanged is its base's decoded chunk, shared up the chain, and still checked") {
  const std::string root = TempDir();
  const Store store{ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", "", config::Policy{}};
  // Four versions of three chunks; each changes only the last chunk of
  // the one before it.
  constexpr size_t kChunk = container::kDefaultChunkSize, kSize = 3 * kChunk;
  std::vector<std::vector<uint8_t>> versions(4, std::vector<uint8_t>(kSize));
  uint64_t x = 7;
  for (uint8_t& b : versions[0]) x = x * 6364136223846793005ull + 1442695040888963407ull, b = uint8_t(x >> 56);
  for (size_t v = 1; v < versions.size(); ++v) {
    versions[v] = versions[v - 1];
    for (size_t i = 2 * kChunk; i < kSize; i += 97) versions[v][i] ^= static_cast<uint8_t>(1u << v);
  }
  std::vector<ContentId> ids;
  for (size_t v = 0; v < versions.size(); ++v) {
    CAPTURE(v);
    ids.push_back(HashBytes(versions[v].data(), kSize));
    MemorySource input(versions[v].data(), kSize, "version");
    MemorySource base(v > 0 ? versions[v - 1].data() : nullptr, v > 0 ? kSize : 0, "base");
    const container::DeltaBase delta{&base, v > 0 ? ids[v - 1] : ContentId{}};
    container::Layout layout = container::Layout::Single(codec::DType::kBF16, kSize);
    layout.regions[0].delta = v > 0;
    REQUIRE(store.objects
                .Put(ids[v],
                     [&](AtomicFile& out) -> Status {
                       auto r = container::EncodeObject(input, layout, v > 0 ? &delta : nullptr, {}, out);
                       return r.ok() ? OkStatus() : r.status();
                     })
                .ok());
  }
  REQUIRE(std::set<ContentId>(ids.begin(), ids.end()).size() == 4);
  MemorySink restored;
  REQUIRE(Restore(store, ids[3], restored).ok());
  CHECK(std::vector<uint8_t>(restored.buffer().data(), restored.buffer().data() + restored.buffer().size()) ==
        versions[3]);
  // Two levels by hand: the delta's first chunk is the base's, the same
  // buffer; its last chunk, which changed, is its own.
  auto open = [&](size_t v, const ByteSource* base, std::vector<ReadFile>& files) {
    auto file = ReadFile::Open(store.objects.PathOf(ids[v]));
    REQUIRE(file.ok());
    files.push_back(std::move(*file));  // `files` has room reserved: no element moves
    auto info = container::ReadObjectInfo(files.back());
    REQUIRE(info.ok());
    auto reader = container::ObjectReader::Open(files.back(), *info, base);
    REQUIRE(reader.ok());
    return std::move(*reader);
  };
  std::vector<ReadFile> files;
  files.reserve(4);
  auto level0 = open(0, nullptr, files);
  auto level1 = open(1, level0.get(), files);
  const auto held = level0->Shared(0, kChunk);  // a reader of the base holds its first chunk
  CHECK(level1->Shared(0, kChunk).get() == held.get());
  CHECK(level1->Shared(2 * kChunk, kChunk).get() != level0->Shared(2 * kChunk, kChunk).get());
  CHECK(level1->Shared(1, kChunk) == nullptr);  // not a chunk's range
  // Where nobody else holds the base's chunk, the level above takes it:
  // the same buffer, unchanged or decoded into in place, and the base,
  // asked again, decodes its own anew, never handing out the patched one.
  auto bottom = open(0, nullptr, files);
  auto above = open(1, bottom.get(), files);
  for (size_t at : {size_t{0}, 2 * kChunk}) {
    CAPTURE(at);
    const auto up = above->Shared(at, kChunk);
    REQUIRE(up != nullptr);
    CHECK(std::equal(up.get(), up.get() + kChunk, versions[1].begin() + static_cast<std::ptrdiff_t>(at)));
    const auto down = bottom->Shared(at, kChunk);
    REQUIRE(down != nullptr);
    CHECK(down.get() != up.get());
    CHECK(std::equal(down.get(), down.get() + kChunk, versions[0].begin() + static_cast<std::ptrdiff_t>(at)));
    // Held by its cache and by this test: not given away.
    CHECK(bottom->Take(at, kChunk) == nullptr);
  }
  auto lone = bottom->Take(kChunk, kChunk);  // never read: decoded for the caller alone
  REQUIRE(lone != nullptr);
  CHECK(std::equal(lone.get(), lone.get() + kChunk, versions[0].begin() + static_cast<std::ptrdiff_t>(kChunk)));
  CHECK(bottom->Take(1, kChunk) == nullptr);
  // Read by parts, the top checks even a shared chunk against its raw
  // checksum: a base forged under its id (another checkpoint's object)
  // shows at once.
  auto version = OpenVersion(store, ids[3]);
  REQUIRE(version.ok());
  std::vector<uint8_t> part(kChunk);
  REQUIRE((*version)->ReadAt(0, part.data(), kChunk).ok());
  CHECK(std::equal(part.begin(), part.end(), versions[3].begin()));
  std::vector<uint8_t> other(kSize, 5);
  MemorySource input(other.data(), kSize, "other");
  {
    const std::string path = root + "/other";
    auto out = AtomicFile::Create(path, true);
    REQUIRE(out.ok());
    REQUIRE(
        container::EncodeObject(input, container::Layout::Single(codec::DType::kBF16, kSize), nullptr, {}, *out).ok());
    REQUIRE(out->Commit().ok());
  }
  auto bytes = ReadWholeFile(root + "/other");
  REQUIRE(bytes.ok());
  auto forged = testing::ForgeObject(std::string(bytes->begin(), bytes->end()), ids[0]);
  REQUIRE(forged.ok());
  {
    auto out = AtomicFile::Create(store.objects.PathOf(ids[0]), true);
    REQUIRE(out.ok());
    REQUIRE(out->Append(forged->data(), forged->size()).ok());
    REQUIRE(out->Commit().ok());
  }
  auto damaged = OpenVersion(store, ids[3]);
  REQUIRE(damaged.ok());
  const Status st = (*damaged)->ReadAt(0, part.data(), kChunk);
  CHECK(st.code() == StatusCode::kCorruption);
  CHECK(st.message().find("restored bytes do not match their checksum") != std::string::npos);
  MemorySink whole;
  CHECK(Restore(store, ids[3], whole).code() == StatusCode::kCorruption);
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a version stored before format 5 is not read by parts") {
  const std::string root = TempDir();
  const Store store{ObjectStore(root + "/objects"), root + "/tmp", root + "/cache", "", config::Policy{}};
  std::vector<uint8_t> data(64, 7);
  const ContentId id = HashBytes(data.data(), data.size());
  MemorySource input(data.data(), data.size(), "version");
  container::EncodeOptions options;
  options.transform = codec::Transform::kXor;  // format 2
  REQUIRE(store.objects
              .Put(id,
                   [&](AtomicFile& out) -> Status {
                     auto r = container::EncodeObject(input, container::Layout::Single(codec::DType::kBytes, 64),
                                                      nullptr, options, out);
                     return r.ok() ? OkStatus() : r.status();
                   })
              .ok());
  const Status s = OpenVersion(store, id).status();
  CHECK(s.code() == StatusCode::kUnsupported);
  CHECK(s.message() ==
        store.objects.PathOf(id) +
            ": object format 2 has no raw checksums; a part of it is checked only by restoring it whole");
  REQUIRE(std::system(("rm -rf " + root).c_str()) == 0);
}

TEST_CASE("a restore starts from the first version down its chain it has a copy of, and checks what it writes") {
  Fixture f;
  f.StoreForward();
  f.AddStep(40);
  f.AddStep(80);
  f.AddStep(120);
  const ContentId id40 = IdOf(Bf16(40)), id80 = IdOf(Bf16(80)), id120 = IdOf(Bf16(120));
  REQUIRE(f.Info(id120).base == id80);
  REQUIRE(f.Info(id80).base == id40);
  // The base at the bottom of the chain is gone: restoring 120 needs it...
  REQUIRE(std::remove(f.store.objects.PathOf(id40).c_str()) == 0);
  CountingSink counted;
  CHECK(Restore(f.store, id120, counted).code() == StatusCode::kNotFound);
  // ...unless the restore has a copy of 80 to start from. It asks for the
  // bases from the top down and stops at the first it has.
  std::vector<ContentId> asked;
  auto copies = [&](const std::string& file_for_80) {
    return [&asked, &id80, file_for_80](const ContentId& id) -> std::optional<ReadFile> {
      asked.push_back(id);
      if (id != id80) return std::nullopt;
      auto file = ReadFile::Open(file_for_80);
      REQUIRE(file.ok());
      return std::move(*file);
    };
  };
  MemorySink out;
  REQUIRE(Restore(f.store, id120, out, copies(Bf16(80))).ok());
  CHECK(HashBytes(out.buffer().data(), out.buffer().size()) == id120);
  CHECK(asked == std::vector<ContentId>{id80});
  // A "copy" that holds other bytes ends in an error, never in other bytes
  // taken for step 120.
  MemorySink wrong;
  const Status refused = Restore(f.store, id120, wrong, copies(Bf16(200)));
  CHECK(refused.code() == StatusCode::kCorruption);
}

}  // namespace
}  // namespace zipnn::store
