// Tests of pointers (one valid encoding, every other rejected with a clear
// message) and of the object store (layout, atomic and concurrent writes,
// the chain limit).
#include <doctest/doctest.h>
#include <dirent.h>

#include <cstdlib>
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

TEST_CASE("a pointer has exactly one encoding, well under 200 bytes") {
  const std::string text = FormatPointer(Sample());
  CHECK(text ==
        "git-zipnn pointer 1\n"
        "id xxh3-128:0123456789abcdef0123456789abcdef\n"
        "size 117764\n"
        "format safetensors\n");
  CHECK(text.size() < 120);
  auto back = ParsePointer(text);
  REQUIRE(back.ok());
  CHECK(*back == Sample());
  CHECK(LooksLikePointer(text));
  CHECK(!LooksLikePointer("PK\x03\x04 a zip"));
  Pointer empty = Sample();
  empty.size = 0;
  CHECK(ParsePointer(FormatPointer(empty)).ok());
  // Every size round-trips, up to 2^64 - 1 (20 digits).
  for (uint64_t size : {uint64_t{9999999999999999999u}, uint64_t{10000000000000000000u}, UINT64_MAX}) {
    Pointer big = Sample();
    big.size = size;
    auto parsed = ParsePointer(FormatPointer(big));
    REQUIRE(parsed.ok());
    CHECK(parsed->size == size);
  }
}

TEST_CASE("every other spelling of a pointer is rejected, saying why") {
  const std::string good = FormatPointer(Sample());
  auto reject = [](const std::string& text) { return ParsePointer(text).status().message(); };
  CHECK(reject(good.substr(0, good.size() - 1)) == "pointer does not end with a newline");
  CHECK(reject(good + "extra 1\n") == "pointer has 5 lines, not 4");
  // One edit of the good pointer each: {text found, its replacement, the error}.
  const struct {
    const char* find;
    const char* replace;
    const char* error;
  } kEdits[] = {
      {"pointer 1\n", "pointer 1\r\n", "pointer does not start with 'git-zipnn pointer 1'"},
      {"0123456789abcdef\n", "0123456789abcdeF\n", "pointer id is not 32 lowercase hex digits"},
      {"xxh3-128:0123", "xxh3-128:123", "pointer id is not 32 lowercase hex digits"},
      {"size 117764", "size 0117764", "pointer size is not a plain decimal number"},
      {"size 117764", "size +117764", "pointer size is not a plain decimal number"},
      {"size 117764", "size 99999999999999999999", "pointer size is not a plain decimal number"},
      {"size 117764", "size 18446744073709551616", "pointer size is not a plain decimal number"},
      {"size 117764", "size 100000000000000000000", "pointer size is not a plain decimal number"},
      {"format ", "format  ", "pointer line 4 is not 'format <name>'"},
  };
  for (const auto& edit : kEdits) {
    CAPTURE(edit.replace);
    std::string text = good;
    const size_t at = text.find(edit.find);
    REQUIRE(at != std::string::npos);
    text.replace(at, std::string(edit.find).size(), edit.replace);
    CHECK(reject(text) == edit.error);
  }
  std::string newer = good;
  newer.replace(0, 19, "git-zipnn pointer 2");
  CHECK(ParsePointer(newer).status().code() == StatusCode::kUnsupported);
  CHECK(reject(newer) == "pointer version '2' is newer than this git-zipnn reads (1); upgrade git-zipnn");
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
