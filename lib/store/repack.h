// Repacking: rewriting the stored versions of a series as the policy
// would store them if they were added now (after base_interval, max_chain
// or newest changed, to cut a long chain, or to bring a store written by
// git-zipnn 0.6, which kept every newest version as a delta, to today's
// placement). Content ids, pointers and the series index never change;
// only how each object is encoded does.
//
// Every delta is made against a version already in its final form, whose
// chain never comes back to it: with newest: delta in series order, each
// against a version before it; with newest: whole stretch by stretch
// (placement.h), the base that ends a stretch first, then its first half
// upwards and its second half downwards. So at every moment every chain
// ends at a base. An object is replaced atomically (rename) by a candidate
// that was decoded and verified against its content id first, and a crash
// leaves each object either as it was or as it is meant to be, both
// readable. A gc running meanwhile keeps what a repacked delta needs (its
// base chain is marked as used before it is read, as `git add` does).
//
// Thread-compatible; other processes may add and gc meanwhile.
#pragma once

#include <functional>
#include <vector>

#include "lib/base/status.h"
#include "lib/store/placement.h"
#include "lib/store/store.h"

namespace zipnn::store {

// What repacking did to one version.
struct RepackedVersion {
  Version version;
  bool missing = false;  // recorded, but no longer in the store: skipped
  Status error;          // could not be read or rewritten: left as it was
  bool rewritten = false;
  StoredInfo before, after;
};

// Rewrites the versions of `series` (in series order, all its history
// as git holds it) by store.policy, calling `each` for each version, in
// series order (with newest: whole, once the stretch it is in is done).
// Problems with one version are reported through `each` and the rest go
// on; the returned status is an error only when the store itself fails.
Status RepackSeries(const Store& store, const std::vector<Version>& series,
                    const std::function<void(const RepackedVersion&)>& each);

}  // namespace zipnn::store
