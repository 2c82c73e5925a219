// Tests of the object store: its layout, and objects that appear whole or
// not at all, however many write one at once.
#include <doctest/doctest.h>

#include <dirent.h>

#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/io.h"
#include "lib/store/object_store.h"
#include "lib/store/test_objects.h"

namespace zipnn::store {
namespace {

using testing::FilesIn;
using testing::TempDir;

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
  REQUIRE(store
              .Put(id,
                   [&](AtomicFile&) {
                     called = true;
                     return OkStatus();
                   })
              .ok());
  CHECK(!called);
}

TEST_CASE("List names what git-zipnn writes beside an object, its records', notes' and its own temporaries too") {
  const ObjectStore store(TempDir() + "/objects");
  const ContentId id = HashBytes("checkpoint", 10);
  REQUIRE(store.Put(id, [](AtomicFile& f) { return f.Append("object bytes", 12); }).ok());
  const std::string at = store.PathOf(id);
  const std::string other = store.PathOf(HashBytes("other", 5));
  for (const std::string& file :
       {at + ".base", at + ".retained", at + ".tmp-0123abcd", at + ".base.tmp-0123abcd", at + ".retained.tmp-0123abcd",
        at + ".gc", at + ".notes", at + ".base.tmp-xyz", other.substr(0, other.rfind('/')) + "/" + id.Hex() + ".base"}) {
    REQUIRE(std::system(("mkdir -p \"$(dirname '" + file + "')\" && touch '" + file + "'").c_str()) == 0);
  }
  auto listed = store.List();
  REQUIRE(listed.ok());
  std::map<std::string, ObjectStore::Kind> kinds;
  for (const auto& e : *listed) kinds[e.path.substr(store.root().size())] = e.kind;
  const std::string rel = at.substr(store.root().size());
  using Kind = ObjectStore::Kind;
  CHECK(kinds[rel] == Kind::kObject);
  CHECK(kinds[rel + ".base"] == Kind::kNote);
  CHECK(kinds[rel + ".retained"] == Kind::kRecord);
  CHECK(kinds[rel + ".tmp-0123abcd"] == Kind::kTemporary);
  CHECK(kinds[rel + ".base.tmp-0123abcd"] == Kind::kTemporary);
  CHECK(kinds[rel + ".retained.tmp-0123abcd"] == Kind::kTemporary);
  CHECK(kinds[rel + ".gc"] == Kind::kSetAside);
  CHECK(kinds[rel + ".notes"] == Kind::kForeign);
  CHECK(kinds[rel + ".base.tmp-xyz"] == Kind::kForeign);
  // A note in another object's folder is not one of ours.
  const std::string misfiled = other.substr(store.root().size(), other.rfind('/') - store.root().size()) + "/" +
                               id.Hex() + ".base";
  CHECK(kinds[misfiled] == Kind::kForeign);
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

}  // namespace
}  // namespace zipnn::store
