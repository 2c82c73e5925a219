// The pre-push hook that sends checkpoint objects to a remote's store
// before git sends the pointers that name them. `install` writes it (and
// keeps a hook that was there, run after ours); the filter writes it too
// when a repository has no pre-push hook at all (a clone, or one where
// install ran only with --global), so that a plain `git push` never sends
// pointers without their objects, as git-lfs does from its smudge.
#pragma once

#include "lib/base/status.h"

namespace zipnn::cmd {

// Writes the hook, moving a pre-push hook that is not ours aside to be
// run after it. Prints what it did. Nothing outside a repository.
Status InstallHook();
// Removes our hook and puts back the one it kept.
Status UninstallHook();
// For the filter: writes the hook when there is none, saying so on
// stderr; when another program's hook is there, warns that pushes will
// not send checkpoints (`install` chains the two). Never fails: git's
// own work comes first.
void EnsureHook();

}  // namespace zipnn::cmd
