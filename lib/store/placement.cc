#include "lib/store/placement.h"

#include <algorithm>
#include <set>

#include "lib/series/series.h"
#include "lib/store/chain.h"

namespace zipnn::store {

void SortSeries(std::vector<Version>& versions) {
  std::stable_sort(versions.begin(), versions.end(),
                   [](const Version& a, const Version& b) { return series::StepLess(a.step, b.step); });
  std::vector<Version> once;
  std::set<ContentId> seen;
  for (Version& v : versions) {
    if (seen.insert(v.id).second) once.push_back(std::move(v));
  }
  versions = std::move(once);
}

uint32_t ReasonFigure(BaseReason reason, const config::Policy& policy) {
  switch (reason) {
    case BaseReason::kDue:
      return policy.base_interval;
    case BaseReason::kChain:
      return policy.max_chain;
    case BaseReason::kNoGain:
    case BaseReason::kNoGainOrPolicy:
      return static_cast<uint32_t>(policy.min_gain * 100 + 0.5);
    default:
      return 0;
  }
}

std::string BaseReasonText(BaseReason reason, uint32_t figure) {
  const std::string n = std::to_string(figure);
  switch (reason) {
    case BaseReason::kNotBase:
      return "a delta";
    case BaseReason::kFirst:
      return "first of its series";
    case BaseReason::kNotStored:
      return "no earlier version of its series in the store";
    case BaseReason::kDue:
      return "due every " + n;
    case BaseReason::kChain:
      return "chain at max_chain " + n;
    case BaseReason::kNoGain:
      return "delta did not pay, min_gain " + n + "%";
    case BaseReason::kDamagedBase:
      return "the version before it is damaged in the store";
    case BaseReason::kNewest:
      return "newest of its series";
    case BaseReason::kNoGainOrPolicy:
      return "delta did not pay (min_gain " + n + "%), or stored under another policy";
  }
  return "";
}

size_t PositionOf(const std::vector<Version>& series, const std::string& step) {
  return std::upper_bound(series.begin(), series.end(), step,
                          [](const std::string& s, const Version& v) { return series::StepLess(s, v.step); }) -
         series.begin();
}

std::optional<Placement> PlaceVersion(const Store& store, const std::vector<Version>& series, size_t position,
                                      bool complete, const ChainMemo* memo, uint32_t max_chain) {
  Placement placed;
  // The nearest earlier version whose chain the store holds whole.
  std::optional<StoredInfo> chain;
  size_t previous = position;
  for (size_t i = position; i-- > 0;) {
    auto described = Describe(store, series[i].id, memo);
    if (described.ok()) {
      chain = *described;
      previous = i;
      break;
    }
  }
  if (!chain) {
    if (!complete) return std::nullopt;  // history may hold earlier versions
    placed.reason = position == 0 ? BaseReason::kFirst : BaseReason::kNotStored;
    return placed;
  }
  placed.base_ratio = chain->base_ratio;
  // Versions since the last base, counted in the series (so a version
  // whose object is missing here still counts, as it did where it was
  // stored).
  const ContentId& last_base = chain->last_base;
  size_t since = 0;
  for (size_t j = previous + 1; j-- > 0;) {
    if (series[j].id == last_base) {
      since = position - j;
      break;
    }
  }
  if (since == 0) {
    if (!complete) return std::nullopt;
    // The base is not in the series: count its chain.
    since = static_cast<size_t>(chain->depth) + 1 + (position - previous - 1);
  }
  if (since >= store.policy.base_interval) {
    placed.reason = BaseReason::kDue;
    return placed;
  }
  const bool against_base = store.policy.delta_against == config::DeltaAgainst::kBase;
  // Of the version the delta is made against.
  const size_t depth = against_base ? 0 : static_cast<size_t>(chain->depth);
  // A policy built in code may ask for more than restore follows.
  if (depth + 1 > std::min({store.policy.max_chain, max_chain, config::kMaxChainLimit})) {
    placed.reason = BaseReason::kChain;
    return placed;
  }
  placed.base = against_base ? last_base : series[previous].id;
  return placed;
}

namespace {

// How far up the chain of `from` `to` is (1: `from` is a delta of `to`),
// or 0 when the chain does not pass it.
uint32_t DistanceUp(const Store& store, const ContentId& from, const ContentId& to) {
  uint32_t found = 0;
  (void)VisitChain(store, from, [&](const ChainLink& link) {
    if (found == 0 && link.id == to) found = static_cast<uint32_t>(link.depth);
  });
  return found;
}

}  // namespace

std::optional<Placement> PlaceDemoted(const Store& store, const std::vector<Version>& series, size_t position,
                                      const ContentId& newer, bool complete, const ChainMemo* memo,
                                      uint32_t elsewhere) {
  const config::Policy& policy = store.policy;
  Placement placed;
  // The base that begins this version's stretch: the nearest earlier
  // version stored whole, or a delta of a version of another series (its
  // parent, parents.h), which begins a stretch as a base does. A version
  // missing here still counts as a place.
  std::set<ContentId> in_series;
  for (const Version& v : series) in_series.insert(v.id);
  std::optional<size_t> start;
  for (size_t j = position; j-- > 0 && position - j <= policy.base_interval;) {
    auto described = Describe(store, series[j].id, memo);
    if (described.ok() && (!described->delta || in_series.count(described->base) == 0)) {
      start = j;
      break;
    }
  }
  if (!start) {
    if (position < policy.base_interval && !complete) return std::nullopt;  // history may hold the base
    placed.reason = position == 0                     ? BaseReason::kFirst
                    : position < policy.base_interval ? BaseReason::kNotStored
                                                      : BaseReason::kDue;
    return placed;
  }
  const size_t since = position - *start;
  if (since >= policy.base_interval) {
    placed.reason = BaseReason::kDue;
    return placed;
  }
  // Every version whose chain runs through this one (in a stretch's
  // second half, those before it) gets as much longer as its new chain.
  uint32_t hanging = elsewhere;
  for (size_t j = *start + 1; j < position; ++j) {
    hanging = std::max(hanging, DistanceUp(store, series[j].id, series[position].id));
  }
  const config::Stretch stretch = config::StretchOf(policy);
  if (since <= stretch.forward) {
    // A delta of the version before it (the nearest one this store
    // holds), or of the stretch's base.
    size_t below = *start;
    std::optional<StoredInfo> chain;
    for (size_t j = position; !stretch.against_base && j-- > *start;) {
      if (auto described = Describe(store, series[j].id, memo); described.ok()) {
        chain = *described;
        below = j;
        break;
      }
    }
    if (!chain) chain = StoredInfo{};  // the base itself
    if (hanging + static_cast<uint32_t>(chain->depth) + 1 > std::min(policy.max_chain, config::kMaxChainLimit)) {
      placed.reason = BaseReason::kChain;
      return placed;
    }
    placed.base = series[below].id;
    return placed;
  }
  // A delta of `newer`: stored whole, unless it is a delta of a parent
  // in another series, whose chain then counts.
  uint32_t below = 0;
  if (auto described = Describe(store, newer, memo); described.ok()) below = static_cast<uint32_t>(described->depth);
  if (hanging + 1 + below > std::min(stretch.reverse, config::kMaxChainLimit)) {
    // Its stretch is full: it is the base that ends it.
    const bool by_chain = stretch.reverse < policy.base_interval - 1 - stretch.forward;
    placed.reason = by_chain ? BaseReason::kChain : BaseReason::kDue;
    return placed;
  }
  placed.base = newer;
  return placed;
}

BaseReason WhyBase(const Store& store, const std::vector<Version>& series, size_t position) {
  if (store.policy.newest == config::Newest::kWhole) {
    if (position + 1 == series.size()) return position == 0 ? BaseReason::kFirst : BaseReason::kNewest;
    const Placement placed = *PlaceDemoted(store, series, position, series[position + 1].id, /*complete=*/true);
    return placed.base ? BaseReason::kNoGainOrPolicy : placed.reason;
  }
  const Placement placed = *PlaceVersion(store, series, position, /*complete=*/true);
  return placed.base ? BaseReason::kNoGainOrPolicy : placed.reason;
}

}  // namespace zipnn::store
