// analyze's policy what-if: one storage policy played over a trajectory,
// version by version, as the clean filter would store it. Each version is
// placed by the store's own plan (lib/store/placement.h: PlanVersion,
// PlanDemoted) over a store simulated in memory (store::ListedShape), so
// the what-if cannot place a version otherwise than `git add` does; a
// delta is kept when its measured size pays (min_gain), as CheckIn keeps
// one (lib/store/checkin.h). The caller measures the sizes.
//
// Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "lib/analyze/analysis.h"
#include "lib/config/policy.h"
#include "lib/store/placement.h"

namespace zipnn::analyze {

struct Scenario {
  PolicyOutcome outcome;
  double min_gain = 0;
  store::ListedShape shape;  // how the simulated store holds each version
  // The last version stored whole (a kept checkpoint a delta may be made
  // against) and its standalone size.
  size_t last_base = 0;
  uint64_t last_base_size = 0;
  uint64_t previous_chain = 0;  // bytes of the previous version's chain (newest: delta)
  // Where the plan places the newest version: for newest: delta, as it is
  // stored; for newest: whole, as it is re-stored when the next arrives.
  store::Placement placed;
  // Newest: whole. The newest so far, stored whole until the next comes:
  // its index, standalone size, and the delta it takes if the next one
  // re-stores it as a delta of the version before it (or of its base).
  size_t pending = 0;
  uint64_t pending_size = 0;
  std::optional<uint64_t> pending_forward;
  uint32_t run = 0;  // the deltas of later versions chained up to `pending`

  bool Whole() const { return outcome.newest == config::Newest::kWhole; }
  // The policy the plan is asked with.
  config::Policy AsPolicy() const;

  // Version by version, oldest first: with the newest whole, Demote the
  // one before `at` (at > 0) with the size of its delta against `at`;
  // then Against(at), and Store(at) with the delta against what Against
  // named. Finish after the last.
  //
  // The version `at` would be a delta against, by the store's plan: for
  // newest: delta, as it is stored now, nullopt for a base; for newest:
  // whole, as the next version re-stores it, nullopt unless that is a
  // delta of an earlier one.
  std::optional<size_t> Against(size_t at);
  // Stores version `at`: standalone size `base_size`, or as a delta of
  // `delta_size` bytes when Against(at) named one (newest: whole: the
  // delta it takes when the next one re-stores it; Demote comes first).
  void Store(size_t at, uint64_t base_size, std::optional<uint64_t> delta_size);
  // Newest: whole. `pending`, now that a newer version follows it, as
  // the plan re-stores it (Against placed it); `reverse` is its delta
  // against the newer one.
  void Demote(uint64_t reverse);
  // The newest version stays whole.
  void Finish();

 private:
  void Base(size_t at, uint64_t size);
  void Delta(size_t at, size_t base, uint64_t delta_size);
};

// The what-if's policies: each newest, interval and delta_against in a
// grid, and `current` (of .zipnn.yaml) when the grid lacks it.
std::vector<Scenario> MakeScenarios(const config::Policy& current);

}  // namespace zipnn::analyze
