// What the other repositories sharing an object store need, for gc: the
// store keeps a registry of the git folders that use it
// (ObjectStore::RegisterUser); each is read like this one, so a gc in one
// clone never removes what another still points at. Thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/store/store.h"
#include "lib/store/gc.h"

namespace zipnn::git {

struct OthersNeed {
  size_t pointers = 0;               // pointers the other repositories hold
  std::vector<std::string> sharing;  // the repositories read
  std::vector<std::string> forgot;   // dropped from the registry by `forget`
};

// Adds what the registered repositories other than `own_git_dir` need to
// `needed` (every pointer of theirs, their chains). A repository
// registered once that now uses another store is dropped from the
// registry. One that cannot be read is an error (what it needs is
// unknown) unless `forget` names it (a path as the user typed it);
// `forget` never drops one that can still be read and still uses the
// store. With `dry_run` nothing is dropped.
Result<OthersNeed> NeedOthers(const store::Store& store, const std::string& own_git_dir,
                              const std::vector<std::string>& forget, bool dry_run, store::Needed& needed);

}  // namespace zipnn::git
