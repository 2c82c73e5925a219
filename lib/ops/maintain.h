// What gc and repack ask of git: every object the repositories sharing
// the store need (gc), and the series to repack, each with its whole
// history as git holds it (repack). The store's own work is lib/store's
// (gc.h, repack.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/git/pointers.h"
#include "lib/git/shared_store.h"
#include "lib/ops/context.h"
#include "lib/store/gc.h"
#include "lib/store/placement.h"

namespace zipnn::ops {

struct GcNeeds {
  git::FoundPointers found;  // of every commit reachable from a ref, a reflog or a stash, and the index
  git::OthersNeed others;    // the other repositories sharing the store
  store::Needed needed;      // the chains of all of them
};
// Fails, saying that nothing was removed, when what git holds cannot be
// read (it may need any object).
Result<GcNeeds> NeededObjects(Context& context, const std::vector<std::string>& forget, bool dry_run);

// The series to repack by name (every one in history when `paths` is
// empty, else those of the tracked checkpoints named), each with its
// whole history as git holds it (HEAD's history and the index), so a
// fresh clone or a fetched store repacks like the repository that stored
// it.
Result<std::map<std::string, std::vector<store::Version>>> SeriesToRepack(Context& context,
                                                                           const std::vector<std::string>& paths);

}  // namespace zipnn::ops
