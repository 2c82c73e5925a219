// Tests of placing a new version of a series (PlaceVersion, PlaceDemoted,
// through CheckIn as the filter calls it): the newest stored whole and
// the one before it re-stored as a delta, which version a delta is made
// against, and why a version stays a base (first, due, max_chain, the
// store lacking the others). Real checkpoints from tests/data.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "lib/store/placement.h"
#include "lib/store/raw_cache.h"
#include "lib/store/series_fixture.h"

namespace zipnn::store {
namespace {

using testing::Bf16;
using testing::Copy;
using testing::Fixture;
using testing::IdOf;
using testing::Small;
using testing::TempDir;

void RestoresAll(Fixture& f) {
  for (const Version& v : f.held) {
    CountingSink restored;
    CHECK(Restore(f.repo, v.id, restored).ok());
  }
}

TEST_CASE("the newest version is stored whole, and the one before it becomes a delta when the next arrives") {
  Fixture f;  // the defaults: newest whole, a base every 10
  CHECK(f.AddStep(40).reason == BaseReason::kFirst);
  const CheckedIn second = f.AddStep(80);
  CHECK(second.reason == BaseReason::kNewest);
  CHECK(!second.demoted);  // the first version begins the stretch: it stays whole
  const CheckedIn third = f.AddStep(120);
  CHECK(third.reason == BaseReason::kNewest);
  REQUIRE(third.demoted);
  CHECK(third.demoted->id == IdOf(Bf16(80)));
  CHECK(third.demoted->after < third.demoted->before);
  // The first half of a stretch chains down to the base that begins it.
  CHECK(f.Info(IdOf(Bf16(80))).base == IdOf(Bf16(40)));
  f.AddStep(160);
  f.AddStep(200);
  CHECK(!f.Info(IdOf(Bf16(200))).delta);
  CHECK(f.Info(IdOf(Bf16(160))).base == IdOf(Bf16(120)));
  CHECK(f.Depths() == std::vector<int>{0, 1, 2, 3, 0});
  RestoresAll(f);
  CHECK(WhyBase(f.repo, f.held, 4) == BaseReason::kNewest);
  CHECK(WhyBase(f.repo, f.held, 0) == BaseReason::kFirst);
  CHECK(BaseReasonText(BaseReason::kNewest, f.repo.policy) == "newest of its series");
}

TEST_CASE("between two bases, the first half chains down to the older, the second half up to the newer") {
  Fixture f;
  f.repo.policy.min_gain = 0;
  f.repo.policy.base_interval = 5;
  f.repo.policy.max_chain = 2;
  for (size_t i = 0; i < 12; ++i) f.AddBytes(Small(i), std::to_string(i));
  //                     B  f  f  r  r  B  f  f  r  r  B  newest
  CHECK(f.Depths() == std::vector<int>{0, 1, 2, 2, 1, 0, 1, 2, 2, 1, 0, 0});
  CHECK(f.Info(f.held[3].id).base == f.held[4].id);
  CHECK(f.Info(f.held[4].id).base == f.held[5].id);
  CHECK(f.Info(f.held[6].id).base == f.held[5].id);
  CHECK(WhyBase(f.repo, f.held, 5) == BaseReason::kDue);
  CHECK(WhyBase(f.repo, f.held, 11) == BaseReason::kNewest);
  RestoresAll(f);
}

TEST_CASE("max_chain below half the interval ends a stretch early") {
  Fixture f;
  f.repo.policy.min_gain = 0;
  f.repo.policy.max_chain = 1;
  for (size_t i = 0; i < 6; ++i) f.AddBytes(Small(i), std::to_string(i));
  // B f r B f newest: the second half holds one version, so the third is
  // a base.
  CHECK(f.Depths() == std::vector<int>{0, 1, 1, 0, 1, 0});
  CHECK(WhyBase(f.repo, f.held, 3) == BaseReason::kChain);
  RestoresAll(f);
}

TEST_CASE("with delta_against base and the newest whole, every older version is a delta of its base") {
  Fixture f;
  f.repo.policy.delta_against = config::DeltaAgainst::kBase;
  for (int s : {40, 80, 120, 160}) f.AddStep(s);
  CHECK(f.Depths() == std::vector<int>{0, 1, 1, 0});
  CHECK(f.Info(IdOf(Bf16(120))).base == IdOf(Bf16(40)));
  RestoresAll(f);
}

TEST_CASE("a path overwritten in place reads its history to place the version before the newest") {
  // Git's index and HEAD hold only the newest version; the others are in
  // history, which CheckIn asks for when it must find the stretch's base.
  Fixture f;
  std::vector<Version> all;
  for (int s : {40, 80, 120}) {
    Copy(Bf16(s), f.repo.work_dir + "/model.safetensors");
    // A spooled file of its own, as the filter's: the raw cache links it.
    const std::string spool = f.root + "/spool-" + std::to_string(s);
    Copy(Bf16(s), spool);
    std::vector<bool> asked;
    auto checked = CheckIn(f.repo, NewVersion{spool, IdOf(Bf16(s)), "model.safetensors", "model", ""},
                           [&](bool deep) -> Result<std::vector<Version>> {
                             asked.push_back(deep);
                             if (deep || all.empty()) return all;
                             return std::vector<Version>{all.back()};
                           });
    REQUIRE_MESSAGE(checked.ok(), checked.status().message());
    if (s == 120) {
      CHECK(asked == std::vector<bool>{false, true});
      CHECK(checked->demoted);
    }
    all.push_back(Version{IdOf(Bf16(s)), "", "model.safetensors"});
  }
  CHECK(f.Info(IdOf(Bf16(80))).base == IdOf(Bf16(40)));
  CHECK(!f.Info(IdOf(Bf16(120))).delta);
  // Only the newest's copy is kept for the next add.
  const RawCache cache(f.repo.cache_dir, f.repo.policy.raw_cache);
  CHECK(cache.Find(IdOf(Bf16(120))));
  CHECK(!cache.Find(IdOf(Bf16(80))));
  // So the next one re-stores step 120 as a delta of step 80 decoded
  // from the store (a delta of step 40): the work tree holds neither.
  Copy(Bf16(160), f.repo.work_dir + "/model.safetensors");
  const std::string spool = f.root + "/spool-160";
  Copy(Bf16(160), spool);
  auto checked = CheckIn(f.repo, NewVersion{spool, IdOf(Bf16(160)), "model.safetensors", "model", ""},
                         [&](bool) -> Result<std::vector<Version>> { return all; });
  REQUIRE_MESSAGE(checked.ok(), checked.status().message());
  REQUIRE(checked->demoted);
  CHECK(checked->demoted->id == IdOf(Bf16(120)));
  CHECK(f.Info(IdOf(Bf16(120))).base == IdOf(Bf16(80)));
  CHECK(f.Info(IdOf(Bf16(120))).depth == 2);
  CHECK(!f.Info(IdOf(Bf16(160))).delta);
  CHECK(cache.Find(IdOf(Bf16(160))));
  CHECK(!cache.Find(IdOf(Bf16(120))));
}

TEST_CASE("a version before the newest that cannot be re-stored stays whole, and the add goes on") {
  Fixture f;
  f.AddStep(40);
  f.AddStep(80);
  // Step 80's object is damaged: it is not built on, and the new version
  // is stored all the same.
  const std::string object = f.repo.objects.PathOf(IdOf(Bf16(80)));
  REQUIRE(std::system(("printf x | dd of=" + object + " bs=1 seek=200 conv=notrunc status=none").c_str()) == 0);
  Copy(Bf16(120), f.repo.work_dir + "/run/step-120.safetensors");
  Copy(Bf16(120), f.root + "/spool");
  auto checked = CheckIn(
      f.repo,
      NewVersion{f.root + "/spool", IdOf(Bf16(120)), "run/step-120.safetensors", "run/step-#.safetensors", "120"},
      [&](bool) -> Result<std::vector<Version>> { return f.held; });
  REQUIRE(checked.ok());
  CHECK(!checked->demoted);
  CHECK(checked->demotion_error.find("checksum mismatch") != std::string::npos);
  CHECK(!f.Info(IdOf(Bf16(120))).delta);
}

TEST_CASE("a version git already holds is placed among the others, not after itself") {
  // A commit names step 120, but this store lacks its object (a fresh
  // store, or one gc emptied): stored again, it takes the place it had.
  Fixture f;
  f.StoreForward();
  f.repo.policy.base_interval = 3;
  f.repo.policy.max_chain = 5;
  f.AddStep(40);
  f.AddStep(80);
  f.held.push_back(Version{IdOf(Bf16(120)), "120", "run/step-120.safetensors"});
  CHECK(f.AddStep(120).reason == BaseReason::kNotBase);
  CHECK(f.Info(IdOf(Bf16(120))).base == IdOf(Bf16(80)));
}

TEST_CASE("versions the store does not hold are passed over") {
  Fixture f;
  f.StoreForward();
  f.AddStep(40);
  // Step 80 is in git (a teammate's) but not in this store.
  f.held.push_back(Version{IdOf(Bf16(80)), "80", "run/step-80.safetensors"});
  CHECK(f.AddStep(120).reason == BaseReason::kNotBase);
  CHECK(f.Info(IdOf(Bf16(120))).base == IdOf(Bf16(40)));
  // Nothing earlier held here at all: a base, saying why.
  Fixture g;
  g.StoreForward();
  g.held.push_back(Version{IdOf(Bf16(40)), "40", "run/step-40.safetensors"});
  CHECK(g.AddStep(80).reason == BaseReason::kNotStored);
  CHECK(BaseReasonText(BaseReason::kNotStored, g.repo.policy) == "no earlier version of its series in the store");
}

TEST_CASE("every base_interval-th version since the last base is a base") {
  Fixture f;
  f.StoreForward();
  f.repo.policy.base_interval = 2;
  f.repo.policy.max_chain = 5;
  CHECK(f.AddStep(40).reason == BaseReason::kFirst);
  CHECK(f.AddStep(80).reason == BaseReason::kNotBase);
  CHECK(f.AddStep(120).reason == BaseReason::kDue);
  CHECK(f.AddStep(160).reason == BaseReason::kNotBase);
  CHECK(f.Info(IdOf(Bf16(160))).base == IdOf(Bf16(120)));
  CHECK(BaseReasonText(BaseReason::kDue, f.repo.policy) == "due every 2");
}

TEST_CASE("a delta that would exceed max_chain makes a base") {
  Fixture f;
  f.StoreForward();
  f.repo.policy.max_chain = 1;
  f.AddStep(40);
  f.AddStep(80);
  CHECK(f.AddStep(120).reason == BaseReason::kChain);
  CHECK(!f.Info(IdOf(Bf16(120))).delta);
  CHECK(BaseReasonText(BaseReason::kChain, f.repo.policy) == "chain at max_chain 1");
}

TEST_CASE("no policy makes a chain longer than a restore follows") {
  // A policy built in code with no chain limit, and a series whose last
  // version is at the deepest a restore decodes: the next is a base.
  Fixture f;
  f.StoreForward();
  f.repo.policy.min_gain = 0;
  f.repo.policy.base_interval = 1000000;
  f.repo.policy.max_chain = 1000000;
  const std::vector<ContentId> ids = testing::StoreChain(f.repo, kMaxChainDepth);
  for (size_t i = 0; i < ids.size(); ++i) f.held.push_back(Version{ids[i], std::to_string(i), ""});
  CHECK(f.AddBytes(Small(ids.size()), std::to_string(ids.size())).reason == BaseReason::kChain);
  CHECK(!f.Info(HashBytes(Small(ids.size()).data(), 64)).delta);
}

TEST_CASE("with delta_against base every delta is made against the last base") {
  Fixture f;
  f.StoreForward();
  f.repo.policy.delta_against = config::DeltaAgainst::kBase;
  f.AddStep(40);
  f.AddStep(80);
  f.AddStep(120);
  CHECK(f.Info(IdOf(Bf16(120))).base == IdOf(Bf16(40)));
  CHECK(f.Info(IdOf(Bf16(120))).depth == 1);
}

TEST_CASE("the last base out of the shallow view makes the lookup read history") {
  Fixture f;
  f.StoreForward();
  f.AddStep(40);
  f.AddStep(80);
  // Git's index and HEAD now hold only step 80 (a delta); its base, step
  // 40, is only in history.
  const std::vector<Version> all = f.held;
  f.held = {all[1]};
  f.asked.clear();
  f.repo.policy.base_interval = 2;
  f.repo.policy.max_chain = 5;
  const std::string path = "run/step-120.safetensors";
  Copy(Bf16(120), f.repo.work_dir + "/" + path);
  const std::string spool = f.root + "/spool";
  Copy(Bf16(120), spool);
  auto checked = CheckIn(f.repo, NewVersion{spool, IdOf(Bf16(120)), path, "run/step-#.safetensors", "120"},
                         [&](bool deep) -> Result<std::vector<Version>> {
                           f.asked.push_back(deep);
                           return deep ? all : f.held;
                         });
  REQUIRE(checked.ok());
  CHECK(f.asked == std::vector<bool>{false, true});
  CHECK(checked->reason == BaseReason::kDue);  // two versions since the base in step 40
}

}  // namespace
}  // namespace zipnn::store
