// Tests of the Store itself: opening one at the place git names (the
// policy of .zipnn.yaml, its mistakes as warnings, the repository
// registered as a user), and how it holds a version (Resolve: its
// object, what retention made of it, or nothing).
#include "lib/store/store.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/store/retention.h"
#include "lib/store/test_objects.h"

namespace zipnn::store {
namespace {

using testing::TempDir;

StorePlace PlaceIn(const std::string& root, bool work_tree) {
  std::filesystem::create_directories(root + "/work/.git");
  return StorePlace{root + "/objects", root + "/work/.git/zipnn", root + "/work/.git",
                    work_tree ? std::optional<std::string>(root + "/work") : std::nullopt};
}

TEST_CASE("a store opens at its place with the policy of .zipnn.yaml, and registers its repository") {
  const std::string root = TempDir();
  const StorePlace place = PlaceIn(root, /*work_tree=*/true);
  std::ofstream(root + "/work/.zipnn.yaml") << "base_interval: 5\n";
  const OpenedStore opened = Store::Open(place);
  CHECK(opened.warnings.empty());
  CHECK(opened.store.policy.base_interval == 5);
  CHECK(opened.store.policy.threads >= 1);
  CHECK(opened.store.objects.root() == root + "/objects");
  CHECK(opened.store.temp_dir == root + "/work/.git/zipnn/tmp");
  CHECK(opened.store.cache_dir == root + "/work/.git/zipnn/cache/raw");
  CHECK(opened.store.rebased_dir == root + "/work/.git/zipnn/cache/rebased");
  CHECK(opened.store.work_dir == root + "/work");
  const Result<std::vector<std::string>> users = opened.store.objects.Users();
  REQUIRE(users.ok());
  CHECK(*users == std::vector<std::string>{root + "/work/.git"});
}

TEST_CASE("a mistake in .zipnn.yaml costs its key the default and comes back as a warning") {
  const std::string root = TempDir();
  const StorePlace place = PlaceIn(root, /*work_tree=*/true);
  std::ofstream(root + "/work/.zipnn.yaml") << "base_interval: 5\nbase_intervall: 9\nmin_gain: lots\n";
  const OpenedStore opened = Store::Open(place);
  CHECK(opened.store.policy.base_interval == 5);
  REQUIRE(opened.warnings.size() >= 2);
  for (const std::string& w : opened.warnings) CHECK(w.find("(ignored; the defaults hold)") != std::string::npos);
}

TEST_CASE("a bare repository's store has the default policy and no work tree") {
  const std::string root = TempDir();
  const OpenedStore opened = Store::Open(PlaceIn(root, /*work_tree=*/false));
  CHECK(opened.warnings.empty());
  CHECK(opened.store.work_dir.empty());
  CHECK(opened.store.policy.base_interval == config::Policy{}.base_interval);
}

TEST_CASE("Resolve says how a version is held: its object, thinned, dropped, absent, or a damaged record") {
  const std::string root = TempDir();
  const Store store = Store::Open(PlaceIn(root, /*work_tree=*/false)).store;
  const ContentId exact = HashBytes("exact", 5);
  REQUIRE(store.objects.Put(exact, [](AtomicFile& f) { return f.Append("x", 1); }).ok());
  Result<Resolved> held = store.Resolve(exact);
  REQUIRE(held.ok());
  CHECK(held->kind == Resolved::Kind::kExact);
  CHECK(!held->retained);

  const ContentId absent = HashBytes("absent", 6);
  held = store.Resolve(absent);
  REQUIRE(held.ok());
  CHECK(held->kind == Resolved::Kind::kAbsent);

  // A record of retention: thinned to `exact`, or dropped.
  auto recorded = [&](const std::string& name, bool dropped) {
    Retained r;
    r.id = HashBytes(name.data(), name.size());
    r.size = 7;
    r.date = 1;
    r.dropped = dropped;
    if (!dropped) r.approximate = exact;
    REQUIRE(WriteRecord(store.objects, r).ok());
    return r.id;
  };
  held = store.Resolve(recorded("thinned", /*dropped=*/false));
  REQUIRE(held.ok());
  CHECK(held->kind == Resolved::Kind::kApproximate);
  REQUIRE(held->retained);
  CHECK(held->retained->approximate == exact);

  held = store.Resolve(recorded("dropped", /*dropped=*/true));
  REQUIRE(held.ok());
  CHECK(held->kind == Resolved::Kind::kDropped);
  CHECK(held->retained->dropped);

  // A damaged record is never taken for "absent": the version may be
  // somewhere else, and retain's word on it is lost.
  const ContentId damaged = HashBytes("damaged", 7);
  std::filesystem::create_directories(std::filesystem::path(RecordPath(store.objects, damaged)).parent_path());
  std::ofstream(RecordPath(store.objects, damaged)) << "not a record\n";
  held = store.Resolve(damaged);
  CHECK(held.status().code() == StatusCode::kCorruption);
}

}  // namespace
}  // namespace zipnn::store
