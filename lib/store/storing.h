// How one version of a series is stored, shared by CheckIn (a new
// version) and RepackSeries (a stored one, rewritten): the choice of its
// base by the policy, and its encoding into a candidate object file that
// the caller then links into the store. Internal to lib/store.
//
// Thread-compatible; separate processes may store at once.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/formats/checkpoint.h"
#include "lib/store/checkpoints.h"

namespace zipnn::store {

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
std::optional<Placement> PlaceVersion(const Repository& repo, const std::vector<Version>& series, size_t position,
                                      bool complete, const ChainMemo* memo = nullptr,
                                      uint32_t max_chain = config::kMaxChainLimit);

// An object written to a scratch file in temp_dir/candidates, fsynced,
// for the caller to link into the store; removed with the Candidate.
struct Candidate {
  TempFile file;
  bool delta = false;
  uint64_t size = 0;
};

// Encodes `input` as a delta against `base` when that saves min_gain
// against `input` coded standalone, else standalone. Cheapest first: a
// delta that pays by a clear margin (kHintMargin) against `base_ratio`
// (the series' last base, Placement) is kept at once; else the standalone
// size is bounded by the order-0 entropy of its groups (container/
// estimate.h: the auto coders land within about 1% above it); only a delta
// that does not pay against that bound either is weighed against a real
// standalone encoding.
inline constexpr double kHintMargin = 0.95;
Result<Candidate> EncodeCandidate(const Repository& repo, const formats::CheckpointView& input, const formats::CheckpointView* base,
                                  double base_ratio = 0);

// `id` decoded into a scratch file in temp_dir, verified (its layout not
// read yet).
Result<formats::Checkpoint> RestoreToScratch(const Repository& repo, const ContentId& id);

}  // namespace zipnn::store
