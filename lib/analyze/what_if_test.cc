// Tests of analyze's policy what-if against the store it models: every
// version placed where `git add` places it (the two ask one plan,
// lib/store/placement.h), for several policies.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "lib/analyze/what_if.h"
#include "lib/store/series_fixture.h"

namespace zipnn::analyze {
namespace {

using config::DeltaAgainst;
using config::Newest;
using store::testing::Fixture;
using store::testing::Small;

config::Policy PolicyOf(uint32_t k, Newest newest, DeltaAgainst against, int max_chain = -1) {
  config::Policy p;
  p.base_interval = k;
  p.newest = newest;
  p.delta_against = against;
  p.max_chain = max_chain < 0 ? config::DefaultMaxChain(k, newest) : static_cast<uint32_t>(max_chain);
  p.min_gain = 0;  // every delta of the small versions below pays
  return p;
}

// What the what-if makes of `n` versions under `policy` (base_interval 0:
// none after the first), every delta paying; `layout`: each version's
// base (-1: whole).
PolicyOutcome PlayWhatIf(const config::Policy& policy, size_t n, std::vector<int>* layout = nullptr) {
  Scenario s;
  s.outcome.base_interval = policy.base_interval;
  s.outcome.against = policy.delta_against;
  s.outcome.newest = policy.newest;
  s.outcome.max_chain = policy.max_chain;
  s.min_gain = policy.min_gain;
  for (size_t at = 0; at < n; ++at) {
    if (s.Whole() && at > 0) s.Demote(/*reverse=*/1);
    const std::optional<size_t> against = s.Against(at);
    s.Store(at, /*base_size=*/100, against ? std::optional<uint64_t>(1) : std::nullopt);
  }
  s.Finish();
  for (size_t i = 0; layout != nullptr && i < n; ++i) {
    const std::optional<store::StoredInfo> info = s.shape.Held(i);
    REQUIRE(info);
    layout->push_back(info->delta ? static_cast<int>(*s.shape.PositionOf(info->base)) : -1);
  }
  return s.outcome;
}

// Where `git add` puts `n` small versions under `policy`.
std::vector<int> GitAdd(const config::Policy& policy, size_t n) {
  Fixture f;
  f.store.policy = policy;
  for (size_t i = 0; i < n; ++i) f.AddBytes(Small(i), std::to_string(i));
  std::vector<int> layout;
  for (const store::Version& v : f.held) {
    const store::StoredInfo info = f.Info(v.id);
    int base = -1;
    for (size_t j = 0; info.delta && j < f.held.size(); ++j) {
      if (f.held[j].id == info.base) base = static_cast<int>(j);
    }
    layout.push_back(base);
  }
  return layout;
}

TEST_CASE("the what-if places every version where git add does") {
  const std::vector<config::Policy> policies = {
      PolicyOf(7, Newest::kWhole, DeltaAgainst::kPrevious),  PolicyOf(5, Newest::kWhole, DeltaAgainst::kPrevious, 2),
      PolicyOf(4, Newest::kWhole, DeltaAgainst::kBase),      PolicyOf(6, Newest::kWhole, DeltaAgainst::kPrevious, 1),
      PolicyOf(2, Newest::kWhole, DeltaAgainst::kPrevious),  PolicyOf(3, Newest::kDelta, DeltaAgainst::kPrevious),
      PolicyOf(4, Newest::kDelta, DeltaAgainst::kBase),      PolicyOf(10, Newest::kDelta, DeltaAgainst::kPrevious, 1),
      PolicyOf(5, Newest::kDelta, DeltaAgainst::kPrevious, 0)};
  for (const config::Policy& p : policies) {
    CAPTURE(p.base_interval);
    CAPTURE(static_cast<int>(p.newest));
    CAPTURE(static_cast<int>(p.delta_against));
    CAPTURE(p.max_chain);
    std::vector<int> what_if;
    PlayWhatIf(p, 11, &what_if);
    CHECK(what_if == GitAdd(p, 11));
  }
}

TEST_CASE("the what-if, like git add, makes no chain longer than a restore follows") {
  // With no periodic base and no chain limit of its own, the what-if
  // chained every version of a long trajectory; git add makes the version
  // after a chain of kMaxChainDepth deltas a base ("chain at max_chain"),
  // and so does the what-if now.
  for (Newest newest : {Newest::kDelta, Newest::kWhole}) {
    CAPTURE(static_cast<int>(newest));
    config::Policy unbounded = PolicyOf(0, newest, DeltaAgainst::kPrevious);
    unbounded.max_chain = kNoChainLimit;  // as the what-if lists interval 0
    std::vector<int> layout;
    const PolicyOutcome outcome = PlayWhatIf(unbounded, store::kMaxChainDepth + 3, &layout);
    CHECK(outcome.worst_chain == store::kMaxChainDepth);
    CHECK(layout[store::kMaxChainDepth] == store::kMaxChainDepth - 1);
    CHECK(layout[store::kMaxChainDepth + 1] == -1);
  }
  // git add, its series holding a chain of kMaxChainDepth deltas.
  Fixture f;
  f.store.policy = PolicyOf(1000000, Newest::kDelta, DeltaAgainst::kPrevious, 1000000);
  const std::vector<ContentId> ids = store::testing::StoreChain(f.store, store::kMaxChainDepth);
  for (size_t i = 0; i < ids.size(); ++i) f.held.push_back(store::Version{ids[i], std::to_string(i), ""});
  CHECK(f.AddBytes(Small(ids.size()), std::to_string(ids.size())).reason == store::BaseReason::kChain);
}

}  // namespace
}  // namespace zipnn::analyze
