// Tests of placing a new version of a series: the pure plan over shapes
// held in memory (PlanVersion, PlanDemoted, PlanStretch), and the plan
// over the store (PlaceVersion, PlaceDemoted, through CheckIn as the
// filter calls it): the newest stored whole and
// the one before it re-stored as a delta, which version a delta is made
// against, and why a version stays a base (first, due, max_chain, the
// store lacking the others). Real checkpoints from tests/data.
#include <doctest/doctest.h>

#include <cstdint>
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
    CHECK(Restore(f.store, v.id, restored).ok());
  }
}

TEST_CASE("a place in a series: a new step goes after every step not greater, and a version is found by id") {
  auto id = [](uint8_t b) {
    ContentId c;
    c.bytes[0] = b;
    return c;
  };
  const std::vector<Version> series = {{id(1), "10", "run/step-10"}, {id(2), "20", "run/step-20"},
                                       {id(3), "20", "run/last"}, {id(4), "30", "run/step-30"}};
  const SeriesAt new20 = SeriesAt::ForStep(series, "20");
  CHECK(new20.position() == 3);
  CHECK(!new20.at_end());
  CHECK(new20.version().path == "run/step-30");
  const SeriesAt newest = SeriesAt::ForStep(series, "40");
  CHECK(newest.at_end());
  CHECK(newest[0].path == "run/step-10");
  const std::optional<SeriesAt> found = SeriesAt::Find(series, id(3));
  REQUIRE(found);
  CHECK(found->position() == 2);
  CHECK(&found->series() == &series);
  CHECK(found->version().path == "run/last");
  CHECK(!SeriesAt::Find(series, id(9)));
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
  CHECK(WhyBase(f.store, SeriesAt(f.held, 4)) == BaseReason::kNewest);
  CHECK(WhyBase(f.store, SeriesAt(f.held, 0)) == BaseReason::kFirst);
  CHECK(BaseReasonText(BaseReason::kNewest, f.store.policy) == "newest of its series");
}

TEST_CASE("between two bases, the first half chains down to the older, the second half up to the newer") {
  Fixture f;
  f.store.policy.min_gain = 0;
  f.store.policy.base_interval = 5;
  f.store.policy.max_chain = 2;
  for (size_t i = 0; i < 12; ++i) f.AddBytes(Small(i), std::to_string(i));
  //                     B  f  f  r  r  B  f  f  r  r  B  newest
  CHECK(f.Depths() == std::vector<int>{0, 1, 2, 2, 1, 0, 1, 2, 2, 1, 0, 0});
  CHECK(f.Info(f.held[3].id).base == f.held[4].id);
  CHECK(f.Info(f.held[4].id).base == f.held[5].id);
  CHECK(f.Info(f.held[6].id).base == f.held[5].id);
  CHECK(WhyBase(f.store, SeriesAt(f.held, 5)) == BaseReason::kDue);
  CHECK(WhyBase(f.store, SeriesAt(f.held, 11)) == BaseReason::kNewest);
  RestoresAll(f);
}

TEST_CASE("max_chain below half the interval ends a stretch early") {
  Fixture f;
  f.store.policy.min_gain = 0;
  f.store.policy.max_chain = 1;
  for (size_t i = 0; i < 6; ++i) f.AddBytes(Small(i), std::to_string(i));
  // B f r B f newest: the second half holds one version, so the third is
  // a base.
  CHECK(f.Depths() == std::vector<int>{0, 1, 1, 0, 1, 0});
  CHECK(WhyBase(f.store, SeriesAt(f.held, 3)) == BaseReason::kChain);
  RestoresAll(f);
}

TEST_CASE("with delta_against base and the newest whole, every older version is a delta of its base") {
  Fixture f;
  f.store.policy.delta_against = config::DeltaAgainst::kBase;
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
    Copy(Bf16(s), f.store.work_dir + "/model.safetensors");
    // A spooled file of its own, as the filter's: the raw cache links it.
    const std::string spool = f.root + "/spool-" + std::to_string(s);
    Copy(Bf16(s), spool);
    std::vector<bool> asked;
    auto checked = CheckIn(f.store, NewVersion{spool, IdOf(Bf16(s)), "model.safetensors", "model", ""},
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
  const RawCache cache(f.store.cache_dir, f.store.policy.raw_cache);
  CHECK(cache.Find(IdOf(Bf16(120))));
  CHECK(!cache.Find(IdOf(Bf16(80))));
  // So the next one re-stores step 120 as a delta of step 80 decoded
  // from the store (a delta of step 40): the work tree holds neither.
  Copy(Bf16(160), f.store.work_dir + "/model.safetensors");
  const std::string spool = f.root + "/spool-160";
  Copy(Bf16(160), spool);
  auto checked = CheckIn(f.store, NewVersion{spool, IdOf(Bf16(160)), "model.safetensors", "model", ""},
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
  const std::string object = f.store.objects.PathOf(IdOf(Bf16(80)));
  REQUIRE(std::system(("printf x | dd of=" + object + " bs=1 seek=200 conv=notrunc status=none").c_str()) == 0);
  Copy(Bf16(120), f.store.work_dir + "/run/step-120.safetensors");
  Copy(Bf16(120), f.root + "/spool");
  auto checked = CheckIn(
      f.store,
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
  f.store.policy.base_interval = 3;
  f.store.policy.max_chain = 5;
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
  CHECK(BaseReasonText(BaseReason::kNotStored, g.store.policy) == "no earlier version of its series in the store");
}

TEST_CASE("every base_interval-th version since the last base is a base") {
  Fixture f;
  f.StoreForward();
  f.store.policy.base_interval = 2;
  f.store.policy.max_chain = 5;
  CHECK(f.AddStep(40).reason == BaseReason::kFirst);
  CHECK(f.AddStep(80).reason == BaseReason::kNotBase);
  CHECK(f.AddStep(120).reason == BaseReason::kDue);
  CHECK(f.AddStep(160).reason == BaseReason::kNotBase);
  CHECK(f.Info(IdOf(Bf16(160))).base == IdOf(Bf16(120)));
  CHECK(BaseReasonText(BaseReason::kDue, f.store.policy) == "due every 2");
}

TEST_CASE("a delta that would exceed max_chain makes a base") {
  Fixture f;
  f.StoreForward();
  f.store.policy.max_chain = 1;
  f.AddStep(40);
  f.AddStep(80);
  CHECK(f.AddStep(120).reason == BaseReason::kChain);
  CHECK(!f.Info(IdOf(Bf16(120))).delta);
  CHECK(BaseReasonText(BaseReason::kChain, f.store.policy) == "chain at max_chain 1");
}

TEST_CASE("no policy makes a chain longer than a restore follows") {
  // A policy built in code with no chain limit, and a series whose last
  // version is at the deepest a restore decodes: the next is a base.
  Fixture f;
  f.StoreForward();
  f.store.policy.min_gain = 0;
  f.store.policy.base_interval = 1000000;
  f.store.policy.max_chain = 1000000;
  const std::vector<ContentId> ids = testing::StoreChain(f.store, kMaxChainDepth);
  for (size_t i = 0; i < ids.size(); ++i) f.held.push_back(Version{ids[i], std::to_string(i), ""});
  CHECK(f.AddBytes(Small(ids.size()), std::to_string(ids.size())).reason == BaseReason::kChain);
  CHECK(!f.Info(HashBytes(Small(ids.size()).data(), 64)).delta);
}

TEST_CASE("with delta_against base every delta is made against the last base") {
  Fixture f;
  f.StoreForward();
  f.store.policy.delta_against = config::DeltaAgainst::kBase;
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
  f.store.policy.base_interval = 2;
  f.store.policy.max_chain = 5;
  const std::string path = "run/step-120.safetensors";
  Copy(Bf16(120), f.store.work_dir + "/" + path);
  const std::string spool = f.root + "/spool";
  Copy(Bf16(120), spool);
  auto checked = CheckIn(f.store, NewVersion{spool, IdOf(Bf16(120)), path, "run/step-#.safetensors", "120"},
                         [&](bool deep) -> Result<std::vector<Version>> {
                           f.asked.push_back(deep);
                           return deep ? all : f.held;
                         });
  REQUIRE(checked.ok());
  CHECK(f.asked == std::vector<bool>{false, true});
  CHECK(checked->reason == BaseReason::kDue);  // two versions since the base in step 40
}

// ---------------------------------------------------------------------------
// The plan alone (PlanVersion, PlanDemoted, PlanStretch), over shapes
// held in memory.

// A shape of `n` versions each held as `bases` says: -1 whole, else a
// delta of the version at that position.
ListedShape ShapeOf(const std::vector<int>& bases) {
  ListedShape shape;
  for (size_t i = 0; i < bases.size(); ++i) shape.Append();
  for (size_t i = 0; i < bases.size(); ++i) {
    if (bases[i] < 0) {
      shape.HoldWhole(i);
    } else {
      shape.HoldAsDelta(i, static_cast<size_t>(bases[i]));
    }
  }
  return shape;
}

// Where a placement puts a version of `shape`: the position of its base,
// -1 for none.
int At(const ListedShape& shape, const Placement& placed, size_t newer = SIZE_MAX) {
  if (!placed.base) return -1;
  if (*placed.base == ListedShape::IdAt(newer)) return static_cast<int>(newer);
  return static_cast<int>(*shape.PositionOf(*placed.base));
}

// The layout `n` versions take, added one by one under `policy` as `git
// add` adds them, every delta paying: each version's base (-1: whole).
std::vector<int> Play(const config::Policy& policy, size_t n) {
  ListedShape shape;
  std::vector<int> layout;
  for (size_t at = 0; at < n; ++at) {
    if (policy.newest == config::Newest::kWhole) {
      if (at > 0) {
        const Placement placed = *PlanDemoted(policy, shape, at - 1, ListedShape::IdAt(at), /*complete=*/true);
        layout[at - 1] = At(shape, placed, at);
        if (placed.base) shape.HoldAsDelta(at - 1, static_cast<size_t>(layout[at - 1]));
      }
      shape.Append();
      shape.HoldWhole(at);
      layout.push_back(-1);
    } else {
      shape.Append();
      const Placement placed = *PlanVersion(policy, shape, at, /*complete=*/true);
      layout.push_back(At(shape, placed));
      if (placed.base) {
        shape.HoldAsDelta(at, static_cast<size_t>(layout.back()));
      } else {
        shape.HoldWhole(at);
      }
    }
  }
  return layout;
}

// The layout repack gives `n` versions (newest: whole), stretch by
// stretch.
std::vector<int> Stretches(const config::Policy& policy, size_t n) {
  std::vector<int> layout(n, -1);
  for (size_t start = 0; start + 1 < n;) {
    const StretchPlan plan = PlanStretch(policy, start, n);
    for (size_t i = start + 1; i < plan.end; ++i) layout[i] = static_cast<int>(plan.Target(i));
    start = plan.end;
  }
  return layout;
}

config::Policy PolicyOf(uint32_t k, config::Newest newest, config::DeltaAgainst against, int max_chain = -1) {
  config::Policy p;
  p.base_interval = k;
  p.newest = newest;
  p.delta_against = against;
  p.max_chain = max_chain < 0 ? config::DefaultMaxChain(k, newest) : static_cast<uint32_t>(max_chain);
  return p;
}

TEST_CASE("the plan places a new version by the shape of its series alone") {
  config::Policy p = PolicyOf(3, config::Newest::kDelta, config::DeltaAgainst::kPrevious);
  // B d d | the third after the base is due.
  ListedShape shape = ShapeOf({-1, 0, 1, -1});
  shape.Forget(3);  // the one to place
  CHECK(PlanVersion(p, shape, 0, true)->reason == BaseReason::kFirst);
  CHECK(At(shape, *PlanVersion(p, shape, 1, true)) == 0);
  CHECK(At(shape, *PlanVersion(p, shape, 2, true)) == 1);
  CHECK(PlanVersion(p, shape, 3, true)->reason == BaseReason::kDue);
  // A version the store lacks is passed over, and still counts as a place.
  shape.Forget(1);
  CHECK(At(shape, *PlanVersion(p, shape, 2, true)) == 0);
  // Nothing earlier held: a base, or (history not read) ask again.
  ListedShape none = ShapeOf({-1, -1});
  none.Forget(0);
  CHECK(PlanVersion(p, none, 1, true)->reason == BaseReason::kNotStored);
  CHECK(!PlanVersion(p, none, 1, false));
  // max_chain, the limit a caller lowers, and delta_against base.
  p.max_chain = 1;
  shape = ShapeOf({-1, 0, 1});
  CHECK(PlanVersion(p, shape, 2, true)->reason == BaseReason::kChain);
  p.max_chain = 5;
  CHECK(PlanVersion(p, shape, 2, true, /*max_chain=*/1)->reason == BaseReason::kChain);
  p.delta_against = config::DeltaAgainst::kBase;
  CHECK(At(shape, *PlanVersion(p, shape, 2, true)) == 0);
}

TEST_CASE("no plan makes a chain longer than a restore follows, whatever the policy") {
  config::Policy p = PolicyOf(1000000, config::Newest::kDelta, config::DeltaAgainst::kPrevious, 1000000);
  p.base_interval = UINT32_MAX;  // as analyze's what-if asks for no periodic base
  p.max_chain = UINT32_MAX;
  const std::vector<int> delta = Play(p, kMaxChainDepth + 3);
  CHECK(delta[kMaxChainDepth] == kMaxChainDepth - 1);
  CHECK(delta[kMaxChainDepth + 1] == -1);  // a base: chain at max_chain
  CHECK(delta[kMaxChainDepth + 2] == kMaxChainDepth + 1);
  p.newest = config::Newest::kWhole;
  const std::vector<int> whole = Play(p, kMaxChainDepth + 3);
  CHECK(whole[kMaxChainDepth] == kMaxChainDepth - 1);
  CHECK(whole[kMaxChainDepth + 1] == -1);
}

TEST_CASE("the plan re-stores the newest's predecessor down its stretch, then up to the newer base") {
  const config::Policy p = PolicyOf(5, config::Newest::kWhole, config::DeltaAgainst::kPrevious, 2);
  //                                          B  f  f  r  r  B  f  f  r  r  B  newest
  CHECK(Play(p, 12) == std::vector<int>{-1, 0, 1, 4, 5, -1, 5, 6, 9, 10, -1, -1});
  // Why each base is one, as `git zipnn log` says.
  ListedShape shape = ShapeOf(Play(p, 12));
  CHECK(PlanWhyBase(p, shape, 0) == BaseReason::kFirst);
  CHECK(PlanWhyBase(p, shape, 5) == BaseReason::kDue);
  CHECK(PlanWhyBase(p, shape, 11) == BaseReason::kNewest);
  CHECK(PlanWhyBase(p, shape, 3) == BaseReason::kNoGainOrPolicy);
  // max_chain below half the interval ends a stretch early.
  const config::Policy short_chain = PolicyOf(7, config::Newest::kWhole, config::DeltaAgainst::kPrevious, 1);
  CHECK(Play(short_chain, 6) == std::vector<int>{-1, 0, 3, -1, 3, -1});
  CHECK(PlanWhyBase(short_chain, ShapeOf(Play(short_chain, 6)), 3) == BaseReason::kChain);
  // Incomplete history that does not reach the stretch's base: ask again.
  ListedShape partial = ShapeOf({0, -1});
  partial.Forget(0);
  CHECK(!PlanDemoted(short_chain, partial, 1, ListedShape::IdAt(2), /*complete=*/false));
}

TEST_CASE("repack's stretches are the layout adds make one by one") {
  using config::DeltaAgainst;
  for (uint32_t k : {1u, 2u, 3u, 4u, 5u, 7u, 10u}) {
    for (DeltaAgainst against : {DeltaAgainst::kPrevious, DeltaAgainst::kBase}) {
      for (int chain : {-1, 0, 1, 2, 3, 100}) {
        const config::Policy p = PolicyOf(k, config::Newest::kWhole, against, chain);
        for (size_t n : {1u, 2u, 3u, 6u, 9u, 17u}) {
          CAPTURE(k);
          CAPTURE(static_cast<int>(against));
          CAPTURE(chain);
          CAPTURE(n);
          CHECK(Stretches(p, n) == Play(p, n));
        }
      }
    }
  }
}

TEST_CASE("git add places every version where the plan alone puts it") {
  using config::DeltaAgainst;
  using config::Newest;
  const std::vector<config::Policy> policies = {
      PolicyOf(7, Newest::kWhole, DeltaAgainst::kPrevious),    PolicyOf(5, Newest::kWhole, DeltaAgainst::kPrevious, 2),
      PolicyOf(4, Newest::kWhole, DeltaAgainst::kBase),        PolicyOf(6, Newest::kWhole, DeltaAgainst::kPrevious, 1),
      PolicyOf(3, Newest::kDelta, DeltaAgainst::kPrevious),    PolicyOf(4, Newest::kDelta, DeltaAgainst::kBase),
      PolicyOf(10, Newest::kDelta, DeltaAgainst::kPrevious, 1)};
  for (const config::Policy& p : policies) {
    Fixture f;
    f.store.policy = p;
    f.store.policy.min_gain = 0;  // every delta of these small versions pays
    const size_t n = 11;
    for (size_t i = 0; i < n; ++i) f.AddBytes(Small(i), std::to_string(i));
    std::vector<int> stored;
    for (const Version& v : f.held) {
      const StoredInfo info = f.Info(v.id);
      int base = -1;
      for (size_t j = 0; info.delta && j < f.held.size(); ++j) {
        if (f.held[j].id == info.base) base = static_cast<int>(j);
      }
      stored.push_back(base);
    }
    CAPTURE(p.base_interval);
    CAPTURE(static_cast<int>(p.newest));
    CAPTURE(static_cast<int>(p.delta_against));
    CAPTURE(p.max_chain);
    CHECK(stored == Play(p, n));
  }
}

}  // namespace
}  // namespace zipnn::store
