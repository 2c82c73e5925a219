#include "lib/store/placement.h"

#include <algorithm>
#include <cstdint>
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

std::optional<SeriesAt> SeriesAt::Find(const std::vector<Version>& series, const ContentId& id) {
  const auto found = std::find_if(series.begin(), series.end(), [&](const Version& v) { return v.id == id; });
  if (found == series.end()) return std::nullopt;
  return SeriesAt(series, static_cast<size_t>(found - series.begin()));
}

std::optional<Placement> PlanVersion(const config::Policy& policy, const SeriesShape& shape, size_t position,
                                     bool complete, uint32_t max_chain) {
  Placement placed;
  // The nearest earlier version whose chain the store holds whole.
  std::optional<StoredInfo> chain;
  size_t previous = position;
  for (size_t i = position; i-- > 0;) {
    chain = shape.Held(i);
    if (chain) {
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
    if (shape.id(j) == last_base) {
      since = position - j;
      break;
    }
  }
  if (since == 0) {
    if (!complete) return std::nullopt;
    // The base is not in the series: count its chain.
    since = static_cast<size_t>(chain->depth) + 1 + (position - previous - 1);
  }
  if (since >= policy.base_interval) {
    placed.reason = BaseReason::kDue;
    return placed;
  }
  const bool against_base = policy.delta_against == config::DeltaAgainst::kBase;
  // Of the version the delta is made against.
  const size_t depth = against_base ? 0 : static_cast<size_t>(chain->depth);
  // A policy built in code may ask for more than restore follows.
  if (depth + 1 > std::min({policy.max_chain, max_chain, config::kMaxChainLimit})) {
    placed.reason = BaseReason::kChain;
    return placed;
  }
  placed.base = against_base ? last_base : shape.id(previous);
  return placed;
}

std::optional<Placement> PlanDemoted(const config::Policy& policy, const SeriesShape& shape, size_t position,
                                     const ContentId& newer, bool complete, uint32_t elsewhere) {
  Placement placed;
  // The base that begins this version's stretch: the nearest earlier
  // version stored whole, or a delta of a version of another series (its
  // parent, parents.h), which begins a stretch as a base does. A version
  // missing here still counts as a place.
  std::set<ContentId> in_series;
  for (size_t i = 0; i < shape.size(); ++i) in_series.insert(shape.id(i));
  std::optional<size_t> start;
  for (size_t j = position; j-- > 0 && position - j <= policy.base_interval;) {
    const std::optional<StoredInfo> described = shape.Held(j);
    if (described && (!described->delta || in_series.count(described->base) == 0)) {
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
  for (size_t j = *start + 1; j < position; ++j) hanging = std::max(hanging, shape.DistanceUp(j, position));
  const config::Stretch stretch = config::StretchOf(policy);
  if (since <= stretch.forward) {
    // A delta of the version before it (the nearest one this store
    // holds), or of the stretch's base.
    size_t below = *start;
    std::optional<StoredInfo> chain;
    for (size_t j = position; !stretch.against_base && j-- > *start;) {
      if ((chain = shape.Held(j))) {
        below = j;
        break;
      }
    }
    if (!chain) chain = StoredInfo{};  // the base itself
    if (hanging + static_cast<uint32_t>(chain->depth) + 1 > std::min(policy.max_chain, config::kMaxChainLimit)) {
      placed.reason = BaseReason::kChain;
      return placed;
    }
    placed.base = shape.id(below);
    return placed;
  }
  // A delta of `newer`: stored whole, unless it is a delta of a parent
  // in another series, whose chain then counts.
  uint32_t below = 0;
  if (const std::optional<StoredInfo> described = shape.HeldOther(newer)) {
    below = static_cast<uint32_t>(described->depth);
  }
  if (hanging + 1 + below > std::min(stretch.reverse, config::kMaxChainLimit)) {
    // Its stretch is full: it is the base that ends it.
    const bool by_chain = stretch.reverse < policy.base_interval - 1 - stretch.forward;
    placed.reason = by_chain ? BaseReason::kChain : BaseReason::kDue;
    return placed;
  }
  placed.base = newer;
  return placed;
}

StretchPlan PlanStretch(const config::Policy& policy, size_t start, size_t size) {
  const config::Stretch stretch = config::StretchOf(policy);
  StretchPlan plan;
  plan.start = start;
  plan.end = std::min(size - 1, start + stretch.forward + stretch.reverse + 1);
  plan.forward_end = std::min(start + stretch.forward, plan.end - 1);
  plan.end_reason = plan.end + 1 == size ? BaseReason::kNewest : BaseReason::kDue;
  plan.against_base = stretch.against_base;
  return plan;
}

BaseReason PlanWhyBase(const config::Policy& policy, const SeriesShape& shape, size_t position) {
  if (policy.newest == config::Newest::kWhole) {
    if (position + 1 == shape.size()) return position == 0 ? BaseReason::kFirst : BaseReason::kNewest;
    const Placement placed = *PlanDemoted(policy, shape, position, shape.id(position + 1), /*complete=*/true);
    return placed.base ? BaseReason::kNoGainOrPolicy : placed.reason;
  }
  const Placement placed = *PlanVersion(policy, shape, position, /*complete=*/true);
  return placed.base ? BaseReason::kNoGainOrPolicy : placed.reason;
}

size_t ListedShape::Append() {
  Listed added;
  added.id = IdAt(versions_.size());
  versions_.push_back(added);
  Changed();
  return versions_.size() - 1;
}

void ListedShape::HoldWhole(size_t position, double ratio) {
  versions_[position].held = true;
  versions_[position].base.reset();
  versions_[position].ratio = ratio;
  Changed();
}

void ListedShape::HoldAsDelta(size_t position, size_t base) {
  versions_[position].held = true;
  versions_[position].base = base;
  Changed();
}

void ListedShape::Forget(size_t position) {
  versions_[position].held = false;
  Changed();
}

void ListedShape::Changed() {
  held_.clear();
  up_.clear();
  up_to_ = SIZE_MAX;
}

ContentId ListedShape::IdAt(size_t position) {
  ContentId id;
  const uint64_t n = static_cast<uint64_t>(position) + 1;  // never the zero id
  for (int b = 0; b < 8; ++b) id.bytes[15 - b] = static_cast<uint8_t>(n >> (8 * b));
  return id;
}

std::optional<size_t> ListedShape::PositionOf(const ContentId& id) const {
  uint64_t n = 0;
  for (int b = 0; b < 16; ++b) {
    if (b < 8 && id.bytes[b] != 0) return std::nullopt;
    if (b >= 8) n = (n << 8) | id.bytes[b];
  }
  if (n == 0 || n > versions_.size()) return std::nullopt;
  return static_cast<size_t>(n - 1);
}

std::optional<StoredInfo> ListedShape::Held(size_t position) const {
  // As Describe: the chain walked down to its base, every link held, no
  // loop, no deeper than a restore follows. The versions walked are
  // known on the way back up.
  std::vector<size_t> path;
  std::set<size_t> passed;
  std::optional<StoredInfo> below;
  for (size_t at = position;;) {
    if (auto known = held_.find(at); known != held_.end()) {
      below = known->second;
      break;
    }
    // Too deep for a restore: the versions lower down may not be.
    if (path.size() > static_cast<size_t>(kMaxChainDepth)) return std::nullopt;
    if (at >= versions_.size() || !versions_[at].held || !passed.insert(at).second) break;
    path.push_back(at);
    const Listed& link = versions_[at];
    if (!link.base) {
      below = StoredInfo{};
      below->last_base = link.id;
      below->base_ratio = link.ratio;
      below->depth = -1;  // the base itself, counted below
      break;
    }
    at = *link.base;
  }
  for (size_t i = path.size(); i-- > 0;) {
    std::optional<StoredInfo> info;
    if (below && below->depth + 1 <= kMaxChainDepth) {
      const Listed& link = versions_[path[i]];
      info = StoredInfo{};
      info->delta = link.base.has_value();
      if (info->delta) info->base = IdAt(*link.base);
      info->depth = below->depth + 1;
      info->last_base = below->last_base;
      info->base_ratio = below->base_ratio;
    }
    held_[path[i]] = info;
    below = info;
  }
  auto known = held_.find(position);
  return known != held_.end() ? known->second : std::nullopt;
}

std::optional<StoredInfo> ListedShape::HeldOther(const ContentId& id) const {
  const std::optional<size_t> at = PositionOf(id);
  if (!at) return std::nullopt;
  return Held(*at);
}

uint32_t ListedShape::DistanceUp(size_t from, size_t to) const {
  if (up_to_ != to) {
    up_.clear();
    up_to_ = to;
  }
  // The walk down from `from`, until `to`, the end of the chain, or a
  // version whose distance is known.
  std::vector<size_t> path;
  std::set<size_t> passed;
  uint32_t found = 0;
  for (size_t at = from;;) {
    if (auto known = up_.find(at); known != up_.end()) {
      found = known->second == 0 ? 0 : known->second + static_cast<uint32_t>(path.size());
      break;
    }
    if (path.size() > config::kMaxChainLimit) return 0;  // as for Held
    if (at >= versions_.size() || !versions_[at].held || !passed.insert(at).second) break;
    if (at == to) {
      found = static_cast<uint32_t>(path.size());
      break;
    }
    path.push_back(at);
    if (!versions_[at].base) break;
    at = *versions_[at].base;
  }
  for (size_t i = 0; i < path.size(); ++i) up_[path[i]] = found == 0 ? 0 : found - static_cast<uint32_t>(i);
  return found;
}

std::optional<StoredInfo> StoredShape::HeldOther(const ContentId& id) const {
  auto described = Describe(store_, id, memo_);
  if (!described.ok()) return std::nullopt;
  return *described;
}

uint32_t StoredShape::DistanceUp(size_t from, size_t to) const {
  uint32_t found = 0;
  (void)VisitChain(store_, series_[from].id, [&](const ChainLink& link) {
    if (found == 0 && link.id == series_[to].id) found = static_cast<uint32_t>(link.depth);
  });
  return found;
}

std::optional<Placement> PlaceVersion(const Store& store, SeriesAt at, bool complete, const ChainMemo* memo,
                                      uint32_t max_chain) {
  return PlanVersion(store.policy, StoredShape(store, at.series(), memo), at.position(), complete, max_chain);
}

std::optional<Placement> PlaceDemoted(const Store& store, SeriesAt at, const ContentId& newer, bool complete,
                                      const ChainMemo* memo, uint32_t elsewhere) {
  return PlanDemoted(store.policy, StoredShape(store, at.series(), memo), at.position(), newer, complete, elsewhere);
}

namespace {

// The series as the store will hold it once the version at `position`
// is re-stored as a delta of `base`.
class AfterDemotion : public SeriesShape {
 public:
  AfterDemotion(const StoredShape& held, size_t position, const ContentId& base)
      : held_(held), position_(position), base_(base) {}
  size_t size() const override { return held_.size(); }
  const ContentId& id(size_t position) const override { return held_.id(position); }
  std::optional<StoredInfo> Held(size_t position) const override {
    if (position != position_) return held_.Held(position);
    std::optional<StoredInfo> info = held_.HeldOther(base_);
    if (!info) return std::nullopt;
    info->delta = true;
    info->base = base_;
    ++info->depth;
    return info;
  }
  std::optional<StoredInfo> HeldOther(const ContentId& id) const override { return held_.HeldOther(id); }
  // The new chain runs down, away from the versions after it.
  uint32_t DistanceUp(size_t from, size_t to) const override { return held_.DistanceUp(from, to); }

 private:
  const StoredShape& held_;
  size_t position_;
  ContentId base_;
};

}  // namespace

std::optional<Placement> PlaceDemotedNext(const Store& store, SeriesAt at, const Placement& before) {
  const ContentId none{};  // no content has the zero id
  const StoredShape held(store, at.series());
  if (!before.base || at.position() == 0) return PlanDemoted(store.policy, held, at.position(), none, false);
  if (*before.base == at.version().id) {
    // The version before it becomes a delta of it: a stretch's second
    // half, where it will be a delta of the next or the base that ends
    // it, never a delta of an earlier version.
    Placement of_next;
    of_next.base = none;
    return of_next;
  }
  return PlanDemoted(store.policy, AfterDemotion(held, at.position() - 1, *before.base), at.position(), none, false);
}

BaseReason WhyBase(const Store& store, SeriesAt at) {
  return PlanWhyBase(store.policy, StoredShape(store, at.series()), at.position());
}

}  // namespace zipnn::store
