// The pre-push hook that sends checkpoint objects to a remote's store
// before git sends the pointers that name them. `install` writes it (and
// keeps a hook that was there, run after ours); the filter writes it too
// when a repository has no pre-push hook at all (a clone, or one where
// install ran only with --global), so that a plain `git push` never sends
// pointers without their objects, as git-lfs does from its smudge.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"

namespace zipnn::git {

// Writes the hook, moving a pre-push hook that is not ours aside to be
// run after it. Nothing outside a repository. Returns what it did, a
// line each, for the user.
Result<std::vector<std::string>> InstallHook();
// Removes our hook and puts back the one it kept; what it did.
Result<std::vector<std::string>> UninstallHook();
// For the filter: writes the hook into `hooks_folder` (HooksFolder, or
// RepositoryFolders' hooks) when there is none; when another
// program's hook is there, leaves it (`install` chains the two). Never
// fails, since git's own work comes first: returns a line for the user
// when it wrote the hook or could not, or when pushes will not send
// checkpoints; empty when the hook was there.
std::string EnsureHook(const std::string& hooks_folder);

}  // namespace zipnn::git
