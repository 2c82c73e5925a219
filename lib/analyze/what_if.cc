#include "lib/analyze/what_if.h"

#include <algorithm>

namespace zipnn::analyze {

using config::DeltaAgainst;

config::Policy Scenario::AsPolicy() const {
  config::Policy p;
  p.base_interval = outcome.base_interval == 0 ? UINT32_MAX : outcome.base_interval;
  p.delta_against = outcome.against;
  p.newest = outcome.newest;
  p.max_chain = outcome.max_chain == kNoChainLimit ? UINT32_MAX : outcome.max_chain;
  return p;
}

std::optional<size_t> Scenario::Against(size_t at) {
  shape.Append();
  if (Whole()) {
    shape.HoldWhole(at);  // the newest, whole
    placed = *store::PlanDemoted(AsPolicy(), shape, at, store::ListedShape::IdAt(at + 1), /*complete=*/true);
  } else {
    placed = *store::PlanVersion(AsPolicy(), shape, at, /*complete=*/true);
  }
  const std::optional<size_t> base = placed.base ? shape.PositionOf(*placed.base) : std::nullopt;
  if (base && *base < at) return base;
  return std::nullopt;
}

void Scenario::Base(size_t at, uint64_t size) {
  outcome.stored_bytes += size;
  ++outcome.bases;
  last_base = at;
  last_base_size = size;
  previous_chain = size;
  shape.HoldWhole(at);
}

void Scenario::Delta(size_t at, size_t base, uint64_t delta_size) {
  shape.HoldAsDelta(at, base);
  outcome.stored_bytes += delta_size;
}

void Scenario::Store(size_t at, uint64_t base_size, std::optional<uint64_t> delta_size) {
  if (Whole()) {
    pending = at;
    pending_size = base_size;
    pending_forward = delta_size;
    outcome.latest_bytes = base_size;
    return;
  }
  const bool pays = delta_size.has_value() &&
                    static_cast<double>(*delta_size) <= static_cast<double>(last_base_size) * (1 - min_gain);
  if (!pays) {
    Base(at, base_size);
    outcome.latest_bytes = base_size;
    return;
  }
  Delta(at, *shape.PositionOf(*placed.base), *delta_size);
  outcome.worst_chain = std::max(outcome.worst_chain, shape.Held(at)->depth);
  previous_chain = *delta_size + (outcome.against == DeltaAgainst::kBase ? last_base_size : previous_chain);
  outcome.latest_bytes = previous_chain;
}

void Scenario::Demote(uint64_t reverse) {
  auto pays = [&](uint64_t delta) {
    return static_cast<double>(delta) <= static_cast<double>(pending_size) * (1 - min_gain);
  };
  if (placed.base == store::ListedShape::IdAt(pending + 1)) {
    // A delta of the next one, whole.
    if (pays(reverse)) {
      Delta(pending, pending + 1, reverse);
      outcome.worst_chain = std::max(outcome.worst_chain, static_cast<int>(++run));
      return;
    }
  } else if (placed.base && pending_forward && pays(*pending_forward)) {
    // A delta of an earlier one, measured when it came (Against).
    Delta(pending, *shape.PositionOf(*placed.base), *pending_forward);
    outcome.worst_chain = std::max(outcome.worst_chain, shape.Held(pending)->depth);
    return;
  }
  Base(pending, pending_size);
  run = 0;
}

void Scenario::Finish() {
  if (Whole() && outcome.latest_bytes > 0) Base(pending, pending_size);
}

std::vector<Scenario> MakeScenarios(const config::Policy& current) {
  std::vector<Scenario> scenarios;
  bool current_listed = false;
  for (config::Newest newest : {config::Newest::kWhole, config::Newest::kDelta}) {
    for (uint32_t k : {1u, 2u, 5u, 7u, 10u, 20u, 0u}) {
      for (DeltaAgainst against : {DeltaAgainst::kPrevious, DeltaAgainst::kBase}) {
        Scenario s;
        s.outcome.base_interval = k;
        s.outcome.against = against;
        s.outcome.newest = newest;
        s.outcome.max_chain = WhatIfMaxChain(k, newest);
        s.min_gain = current.min_gain;
        s.outcome.current = k == current.base_interval && against == current.delta_against &&
                            newest == current.newest && s.outcome.max_chain == current.max_chain;
        current_listed = current_listed || s.outcome.current;
        scenarios.push_back(s);
      }
    }
  }
  if (!current_listed) {
    Scenario s;
    s.outcome.base_interval = current.base_interval;
    s.outcome.against = current.delta_against;
    s.outcome.newest = current.newest;
    s.outcome.max_chain = current.max_chain;
    s.outcome.current = true;
    s.min_gain = current.min_gain;
    scenarios.push_back(s);
  }
  return scenarios;
}

}  // namespace zipnn::analyze
