// Where a version goes in the store: as a delta against which version of
// its series, or standalone, and why. One model for every caller: `git
// add` (CheckIn), repack and analyze's what-if all ask the pure plan
// below (PlanVersion, PlanDemoted, PlanStretch: the policy and the shape
// of a series in, a placement out, no I/O), so none can disagree with
// another. Only thin adapters read the store (PlaceVersion, PlaceDemoted,
// WhyBase: a StoredShape over the chains of the versions around it,
// chain.h); analyze answers from the store it simulates (ListedShape).
// Placement never reads the versions' bytes; whether a delta pays is
// weighed when it is encoded (checkin.h), or, in analyze, from its sizes.
//
// With `newest: whole` (the default) the newest version of a series is
// stored standalone, so the version a clone or checkout reads most costs
// what a base costs; when a newer one arrives, the one it follows is
// re-stored as a delta ("demoted"). Between two bases k versions apart
// (base_interval), the first half are deltas of the version before them,
// chaining down to the older base, and the second half deltas of the
// version after them, chaining up to the newer base:
//
//   B  f1 f2 f3  r4 r5 r6  B        f: forward, r: reverse (k = 7)
//   B <-- <-- <--  --> --> -->  B
//
// so no chain is longer than k / 2, and while the newer base is not there
// yet, the newest version stands in for it. With `newest: delta` every
// version is a delta of the one before it (chains of k - 1). max_chain,
// when .zipnn.yaml leaves it out, follows from base_interval and newest
// (config::DefaultMaxChain, the one place that says how).
//
// The plan is pure and thread-safe; a shape answers as thread-safely as
// what it reads. The adapters are thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/config/policy.h"
#include "lib/store/chain.h"
#include "lib/store/store.h"

namespace zipnn::store {

// A version of a series, as git holds it.
struct Version {
  ContentId id;
  std::string step;  // series::Placed::step of its path
  std::string path;  // where git holds it, from the top of the work tree
};

// Orders versions by step (series::StepLess), keeping the given order
// among equal steps, and keeps each id once (at its first place).
void SortSeries(std::vector<Version>& versions);

// Where a new version with `step` goes in `series` (in series order):
// after every version whose step is not greater, so a path overwritten in
// place follows the order git got its versions in, and step-numbered
// files the order of their numbers.
size_t PositionOf(const std::vector<Version>& series, const std::string& step);

// A place in a series (its versions in series order): the version at
// `position()`, or, at the end, the place after the last version where a
// new one goes. What the store's writers and the adapters below take for
// "this version of that series"; a cheap value that refers to `series`,
// which must outlive it.
class SeriesAt {
 public:
  SeriesAt(const std::vector<Version>& series, size_t position) : series_(&series), position_(position) {}
  // Where a new version with `step` goes (PositionOf).
  static SeriesAt ForStep(const std::vector<Version>& series, const std::string& step) {
    return SeriesAt(series, PositionOf(series, step));
  }
  // The place of `id` in `series`; nullopt when it is not there.
  static std::optional<SeriesAt> Find(const std::vector<Version>& series, const ContentId& id);

  const std::vector<Version>& series() const { return *series_; }
  size_t position() const { return position_; }
  // The place after the last version (a new newest one's).
  bool at_end() const { return position_ == series_->size(); }
  // The version here (not at_end).
  const Version& version() const { return (*series_)[position_]; }
  // Another version of the same series (at `position` < size).
  const Version& operator[](size_t position) const { return (*series_)[position]; }

 private:
  const std::vector<Version>* series_;
  size_t position_;
};

// Why a version was stored standalone.
enum class BaseReason {
  kNotBase,         // stored as a delta
  kFirst,           // no earlier version of its series
  kNotStored,       // no earlier version of its series is in this store
  kDue,             // every base_interval-th version is a base
  kChain,           // a delta would make a chain longer than max_chain
  kNoGain,          // the delta did not save min_gain against standalone
  kNoGainOrPolicy,  // found later: its place makes it a delta now, so the
                    // delta did not pay, or another policy was in force
  kDamagedBase,     // the version it would be a delta of is damaged in the store
  kNewest,          // the newest of its series (newest: whole)
};
// The policy's figure `reason` names: base_interval (kDue), max_chain
// (kChain), min_gain in percent (kNoGain, kNoGainOrPolicy); else 0.
uint32_t ReasonFigure(BaseReason reason, const config::Policy& policy);
// "first of its series", "due every 10", ..., with `figure` as
// ReasonFigure gives it (from the policy now, or as a base note kept it).
std::string BaseReasonText(BaseReason reason, uint32_t figure);
inline std::string BaseReasonText(BaseReason reason, const config::Policy& policy) {
  return BaseReasonText(reason, ReasonFigure(reason, policy));
}

// Where one version goes.
struct Placement {
  std::optional<ContentId> base;
  BaseReason reason = BaseReason::kNotBase;  // when there is no base
  // The last base's stored share of its raw size: what this version alone
  // would most likely store at (0 when unknown).
  double base_ratio = 0;
};

// ---------------------------------------------------------------------------
// The plan: pure functions of the policy and the shape of a series.

// What the plan reads of a series, and all it reads: its versions in
// series order, how the store holds each now, and how their chains run.
// The plan asks only about the few versions nearest the one it places
// (down to the nearest one held, or the base that begins its stretch), so
// a shape answers as it is asked: StoredShape reads the store then,
// ListedShape answers from memory.
class SeriesShape {
 public:
  virtual ~SeriesShape() = default;
  virtual size_t size() const = 0;
  virtual const ContentId& id(size_t position) const = 0;
  // How the store holds the version at `position` now, its chain walked
  // down to its base; nullopt when the store does not hold that chain.
  virtual std::optional<StoredInfo> Held(size_t position) const = 0;
  // How the version with `id`, not of the series (the newer version a
  // demoted one may become a delta of), is held; nullopt as for Held.
  virtual std::optional<StoredInfo> HeldOther(const ContentId& id) const = 0;
  // How far up the chain of the version at `from` the version at `to` is
  // (1: `from` is a delta of it), or 0 when the chain does not pass it.
  virtual uint32_t DistanceUp(size_t from, size_t to) const = 0;
};

// What the version at `position` of `shape` is stored against, by the
// policy and by how the versions before it are stored now: the nearest
// earlier version whose chain the store holds whole (or, with
// delta_against base, the base of that chain), unless the version is the
// first, is due to be a base (base_interval versions after the last base,
// counted in the series), or would exceed max_chain (`max_chain` lowers
// the policy's limit for this one version). nullopt when the series is
// not `complete` and does not reach back to the last base: the caller
// reads the whole history and asks again. The plan of `git add` with
// newest: delta, of repack's newest: delta, and of analyze's what-if.
std::optional<Placement> PlanVersion(const config::Policy& policy, const SeriesShape& shape, size_t position,
                                     bool complete, uint32_t max_chain = config::kMaxChainLimit);

// How the version at `position` of `shape`, stored whole as the newest so
// far, is re-stored now that `newer` (not of the shape) follows it
// (newest: whole): a delta of the version before it, of its stretch's
// base, or of `newer`; or it stays whole as the base that ends its
// stretch (and begins the next), with the reason. nullopt when the series
// is not `complete` and does not reach back to the base that begins the
// stretch. `elsewhere`: how far up the chains of versions of other series
// reach above this one (parents.h, HangingElsewhere), counted as the
// versions of its own series that hang on it are.
std::optional<Placement> PlanDemoted(const config::Policy& policy, const SeriesShape& shape, size_t position,
                                     const ContentId& newer, bool complete, uint32_t elsewhere = 0);

// Newest: whole, a whole series at once (repack): the stretch that begins
// with the base at `start` of a series of `size` versions. The base that
// ends it (`end`, the newest when the series ends first) is made first;
// the versions after `start` up to `forward_end` are deltas of the one
// before them (of `start`, with delta_against base), those after it up to
// `end` deltas of the one after them. The layout PlanDemoted gives version
// by version when every delta pays.
struct StretchPlan {
  size_t start = 0;
  size_t end = 0;
  size_t forward_end = 0;
  BaseReason end_reason = BaseReason::kDue;  // kNewest for the newest
  bool against_base = false;
  // The version the one at `i` (start < i < end) is a delta of.
  size_t Target(size_t i) const { return i <= forward_end ? (against_base ? start : i - 1) : i + 1; }
};
// `start` + 1 < `size`.
StretchPlan PlanStretch(const config::Policy& policy, size_t start, size_t size);

// Why the stored version at `position` of `shape` (its whole history) is
// a base, by the policy in force now: the reason its place gives, or
// kNoGainOrPolicy when its place would make it a delta.
BaseReason PlanWhyBase(const config::Policy& policy, const SeriesShape& shape, size_t position);

// A shape held in memory: a store that holds each version whole or as a
// delta of another version of the series. analyze's what-if plays a
// policy over one, version by version; tests state shapes with it. Ids
// are made up from positions (IdAt), so equal checkpoints stay apart.
class ListedShape : public SeriesShape {
 public:
  // A new version at the end, not held yet; its position.
  size_t Append();
  // The store holds the version at `position` whole (`ratio`: its stored
  // share of its raw size), or as a delta of the one at `base`, which may
  // be the next one to be appended.
  void HoldWhole(size_t position, double ratio = 0);
  void HoldAsDelta(size_t position, size_t base);
  void Forget(size_t position);  // the store lacks it

  static ContentId IdAt(size_t position);
  // The position of `id` (an IdAt), when it is of this shape.
  std::optional<size_t> PositionOf(const ContentId& id) const;

  size_t size() const override { return versions_.size(); }
  const ContentId& id(size_t position) const override { return versions_[position].id; }
  std::optional<StoredInfo> Held(size_t position) const override;
  std::optional<StoredInfo> HeldOther(const ContentId& id) const override;
  uint32_t DistanceUp(size_t from, size_t to) const override;

 private:
  struct Listed {
    ContentId id;
    bool held = false;
    std::optional<size_t> base;  // a delta of the version there
    double ratio = 0;
  };
  void Changed();
  std::vector<Listed> versions_;
  // What the chains are known to be until the shape changes: so that a
  // plan over a long series walks each chain once.
  mutable std::map<size_t, std::optional<StoredInfo>> held_;
  mutable size_t up_to_ = SIZE_MAX;
  mutable std::map<size_t, uint32_t> up_;  // distance up to `up_to_`
};

// ---------------------------------------------------------------------------
// The adapters: the plan over what the store holds now.

// The series as the store holds it: each version's chain described
// (Describe) when the plan asks, through `memo` when given.
class StoredShape : public SeriesShape {
 public:
  StoredShape(const Store& store, const std::vector<Version>& series, const ChainMemo* memo = nullptr)
      : store_(store), series_(series), memo_(memo) {}
  size_t size() const override { return series_.size(); }
  const ContentId& id(size_t position) const override { return series_[position].id; }
  std::optional<StoredInfo> Held(size_t position) const override { return HeldOther(series_[position].id); }
  std::optional<StoredInfo> HeldOther(const ContentId& id) const override;
  uint32_t DistanceUp(size_t from, size_t to) const override;

 private:
  const Store& store_;
  const std::vector<Version>& series_;
  const ChainMemo* memo_;
};

// PlanVersion by store.policy over the series of `at` as the store holds it.
// `memo` (Describe) speeds up the walks down earlier versions' chains.
std::optional<Placement> PlaceVersion(const Store& store, SeriesAt at, bool complete, const ChainMemo* memo = nullptr,
                                      uint32_t max_chain = config::kMaxChainLimit);

// PlanDemoted by store.policy over the series of `at` as the store holds it.
std::optional<Placement> PlaceDemoted(const Store& store, SeriesAt at, const ContentId& newer, bool complete, const ChainMemo* memo = nullptr,
                                      uint32_t elsewhere = 0);

// PlaceDemoted for the newest version `at` (stored whole, the last of its
// series, nothing newer yet) as a later add will run it: with the version
// before it held as `before` places it (Demote's placement of it, made
// while the add of `at` re-stores it). `before` without a base: as the
// store holds that version now. Its base is the zero id where the later
// add will make it a delta of the version that follows it (or, in a
// stretch's second half, may make it the base that ends the stretch).
std::optional<Placement> PlaceDemotedNext(const Store& store, SeriesAt at, const Placement& before);

// PlanWhyBase by store.policy over the series of `at` as the store holds it.
BaseReason WhyBase(const Store& store, SeriesAt at);

}  // namespace zipnn::store
