// Tests of placing a new version of a series (PlaceVersion, through
// CheckIn as the filter calls it): which earlier version a delta is made
// against, and why a version becomes a base (first, due, max_chain, the
// store lacking the others). Real checkpoints from tests/data.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "lib/store/placement.h"
#include "lib/store/series_fixture.h"

namespace zipnn::store {
namespace {

using testing::Bf16;
using testing::Copy;
using testing::Fixture;
using testing::IdOf;
using testing::Small;
using testing::TempDir;

TEST_CASE("a version git already holds is placed among the others, not after itself") {
  // A commit names step 120, but this store lacks its object (a fresh
  // store, or one gc emptied): stored again, it takes the place it had.
  Fixture f;
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
  f.AddStep(40);
  // Step 80 is in git (a teammate's) but not in this store.
  f.held.push_back(Version{IdOf(Bf16(80)), "80", "run/step-80.safetensors"});
  CHECK(f.AddStep(120).reason == BaseReason::kNotBase);
  CHECK(f.Info(IdOf(Bf16(120))).base == IdOf(Bf16(40)));
  // Nothing earlier held here at all: a base, saying why.
  Fixture g;
  g.held.push_back(Version{IdOf(Bf16(40)), "40", "run/step-40.safetensors"});
  CHECK(g.AddStep(80).reason == BaseReason::kNotStored);
  CHECK(BaseReasonText(BaseReason::kNotStored, g.repo.policy) == "no earlier version of its series in the store");
}

TEST_CASE("every base_interval-th version since the last base is a base") {
  Fixture f;
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
  f.repo.policy.delta_against = config::DeltaAgainst::kBase;
  f.AddStep(40);
  f.AddStep(80);
  f.AddStep(120);
  CHECK(f.Info(IdOf(Bf16(120))).base == IdOf(Bf16(40)));
  CHECK(f.Info(IdOf(Bf16(120))).depth == 1);
}

TEST_CASE("the last base out of the shallow view makes the lookup read history") {
  Fixture f;
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
