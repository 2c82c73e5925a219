// Applying retention rules (docs/retention.md) to a store: which versions
// of a series keep their exact bytes, and thinning or dropping the rest
// (retention.h says what a thinned or dropped version leaves behind).
//
// Nothing a kept version needs is removed, and an interrupted retain
// loses nothing kept. In order:
//   1. each version to thin is rounded, its approximate bytes stored as a
//      version of their own (proved to decode to their id), then its
//      record written; the approximate versions of a series are then
//      placed among themselves as the policy places a series (repack.h);
//   2. each version to drop gets its record;
//   3. the kept versions of each series are placed among themselves
//      (repack.h), and any other object still needed whose chain runs
//      through a version about to go is stored whole;
//   4. only then do the exact objects of thinned and dropped versions go.
// Each step replaces objects atomically, after proving them, so a kill
// at any point leaves every kept version readable; running retain again
// finishes the work. The caller holds the store's lock alone
// (Store::BeginRemoving) from before it reads what the plan is made of.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/status.h"
#include "lib/config/policy.h"
#include "lib/store/placement.h"
#include "lib/store/retention.h"
#include "lib/store/store.h"

namespace zipnn::store {

enum class Fate { kKeep, kThin, kDrop };
const char* FateName(Fate fate);  // "keep", "thin", "drop"

// What the caller knows of a version from git.
struct VersionFacts {
  int64_t committed = 0;          // when the first commit that holds it was made; 0: not committed
  std::vector<std::string> tags;  // tags whose commit holds it
  bool named = false;             // named by the rule's `keep` (or the command line)
};

struct PlannedVersion {
  Version version;
  Fate fate = Fate::kKeep;
  // Why it is kept ("newest 3", "tagged v1.0", "every 5th", "committed
  // since 2026-11-01", "named", "not committed"); empty for the rest.
  std::string why;
  std::optional<Retained> record;  // thinned or dropped by an earlier retain
  bool exact = true;               // the store holds its exact object
  codec::Precision precision;      // what thinning rounds to
  // The rule keeps it now (a tag since, a rule changed), though an
  // earlier retain took its exact bytes here: where they are still held
  // (a remote), they stay.
  bool rule_keeps = false;
  // The commit that brought it in, as `git zipnn log` names it
  // ("0aa4f7fdc6 2026-12-01 step 10"); empty for one no commit holds.
  std::string commit;
};

// The fate of each version of `series` (in series order) under `rule`,
// at time `now`. A version an earlier retain thinned or dropped stays so
// (its exact bytes are gone), and a thinned one the rule now drops is
// dropped.
std::vector<PlannedVersion> PlanSeries(const Store& store, const std::vector<Version>& series,
                                       const config::Policy::RetentionRule& rule,
                                       const std::function<VersionFacts(const ContentId&)>& facts, int64_t now);

// One content may be a version of several series (the best step copied
// to release/model.safetensors): its bytes stay while any of them keeps
// it. Each version a plan would thin or drop that git also holds at a
// path of another series whose plan does not take it too, or of a series
// no plan covers, is kept instead, and says where. `paths`: every path
// where git holds each version (git::CommittedVersions::paths);
// `series_of`: the series a path belongs to. A content that several
// plans take is then taken one way: thinned, at the precision of the
// first plan that thins it, when any does.
using Plans = std::vector<std::pair<std::string, std::vector<PlannedVersion>>>;
void KeepWhatOthersHold(Plans& plans, const std::map<ContentId, std::set<std::string>>& paths,
                        const std::function<std::string(const std::string&)>& series_of);

// What retain did to one version.
struct RetainedVersion {
  PlannedVersion planned;
  uint64_t before = 0;  // bytes of its objects before (exact; plus an earlier approximate one)
  uint64_t after = 0;   // and after (exact, or its approximate object; 0 dropped)
  std::optional<Retained> record;
  Status error;  // could not be thinned: left as it was
};

struct RetainOptions {
  int64_t now = 0;
  // Every content id a pointer in the repository names (all of history,
  // every branch and tag): what stays needed unless thinned or dropped.
  std::vector<ContentId> every_version;
  // Objects others need (by hex id: repositories sharing the store, gc.h's
  // Needed): never removed.
  std::set<std::string> also_needed;
  // Called as each series is done, with its versions.
  std::function<void(const std::string& series, const std::vector<RetainedVersion>&)> each;
  // Called before long steps ("thinning out/checkpoint-20 ...").
  std::function<void(const std::string&)> progress;
};

struct RetainTotals {
  uint64_t store_before = 0, store_after = 0;  // every object in the store
  size_t removed = 0;                          // exact objects removed
  size_t unthinned = 0;                        // approximate objects of versions thinned before, dropped now
  size_t restored_whole = 0;                   // other objects stored whole so as not to need one
};

// Carries out `plans` (one per series: its name and versions), holding
// the store's lock alone (`removing`): taken before the plan was read, so
// that no add builds on a version while it goes, and held until the
// retain ends.
Result<RetainTotals> ApplyRetention(const Store& store, const Removing& removing, const Plans& plans,
                                    const RetainOptions& options);

}  // namespace zipnn::store
