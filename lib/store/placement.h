// Where a version goes in the store: as a delta against which version of
// its series, or standalone, and why. Placement reads the chains of the
// versions around it (chain.h) and the policy, never the versions'
// bytes; whether a delta pays is weighed when it is encoded (checkin.h).
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
// version is a delta of the one before it (chains of k - 1).
//
// Thread-compatible.
#pragma once

#include <cstdint>
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

// What the version at `position` of `series` (in series order) is stored
// against, by the policy and by how the versions before it are stored
// now: the nearest earlier version whose chain the store holds whole (or,
// with delta_against base, the base of that chain), unless the version is
// the first, is due to be a base (base_interval versions after the last
// base, counted in `series`), or would exceed max_chain. nullopt when
// `series` is not `complete` and does not reach back to the last base:
// the caller reads the whole history and asks again.
struct Placement {
  std::optional<ContentId> base;
  BaseReason reason = BaseReason::kNotBase;  // when there is no base
  // The last base's stored share of its raw size: what this version alone
  // would most likely store at (0 when unknown).
  double base_ratio = 0;
};
// `memo` (Describe) speeds up the walks down earlier versions' chains;
// `max_chain` lowers the policy's limit for this one version.
std::optional<Placement> PlaceVersion(const Store& store, const std::vector<Version>& series, size_t position,
                                      bool complete, const ChainMemo* memo = nullptr,
                                      uint32_t max_chain = config::kMaxChainLimit);

// How the version at `position` of `series` (in series order), stored
// whole as the newest so far, is re-stored now that `newer` follows it
// (newest: whole): a delta of the version before it, of its stretch's base,
// or of `newer`; or it stays whole as the base that ends its stretch (and
// begins the next), with the reason. nullopt when `series` is not
// `complete` and does not reach back to the base that begins the stretch.
// `elsewhere`: how far up the chains of versions of other series reach
// above this one (parents.h, HangingElsewhere), counted as the versions of
// its own series that hang on it are.
std::optional<Placement> PlaceDemoted(const Store& store, const std::vector<Version>& series, size_t position,
                                      const ContentId& newer, bool complete, const ChainMemo* memo = nullptr,
                                      uint32_t elsewhere = 0);

// Why the stored version at `position` of `series` (in series order,
// its whole history) is a base, by the policy in force now: the reason its
// place gives, or kNoGainOrPolicy when its place would make it a delta.
BaseReason WhyBase(const Store& store, const std::vector<Version>& series, size_t position);

}  // namespace zipnn::store
