// The git hooks git-zipnn runs from (docs/commands/install.md):
// pre-push, which sends checkpoint objects to a remote's store before git
// sends the pointers that name them; post-checkout and post-merge, which
// write the checkpoints too large to pass through git's filter
// (zipnn.checkoutOutsideAbove: git holds every file a filter hands it
// whole in memory) once git's checkout, clone, switch, pull or merge has
// left their pointers; pre-commit, which stops a commit that would put
// files of tracked patterns whole into git's history (staged without the
// filter). `install` writes them (and keeps a hook that was
// there, run after ours); the filter writes them too when a repository
// has none of its own (a clone, or one where install ran only with
// --global), as git-lfs does from its smudge.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"

namespace zipnn::git {

// Writes the hooks, moving each one that is not ours aside to be run
// after it. Nothing outside a repository. Returns what it did, a line
// each, for the user.
Result<std::vector<std::string>> InstallHook();
// Removes our hooks and puts back the ones they kept; what it did.
Result<std::vector<std::string>> UninstallHook();

// What the filter found or did to the hooks of `hooks_folder` (HooksFolder,
// or RepositoryFolders' hooks).
struct EnsuredHooks {
  // Lines for the user: a hook written, or one it could not (another
  // program's is there: `install` chains the two); none when ours were
  // there.
  std::vector<std::string> said;
  // Whether git runs ours after a checkout and a merge (both post-checkout
  // and post-merge are git-zipnn's), so that the filter may leave large
  // checkpoints for them to write.
  bool writes_after_checkout = false;
};
// Writes each hook that is missing. Never fails, since git's own work
// comes first.
EnsuredHooks EnsureHooks(const std::string& hooks_folder);

}  // namespace zipnn::git
