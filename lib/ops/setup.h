// install, uninstall, track and untrack: the git configuration and hook
// git-zipnn needs, and the lines of the work tree's .gitattributes. These
// use cases are lib/git's own (setup.h, hook.h: each writes git's files
// and runs git config); cmd/ reaches them here, as it reaches the rest of
// git through lib/ops. Stateless; thread-compatible.
#pragma once

#include "lib/git/hook.h"
#include "lib/git/setup.h"

namespace zipnn::ops {

using git::FilterInstalled;
using git::InstallFilter;
using git::InstallHook;
using git::MistypedPatterns;
using git::PatternFromHere;
using git::Track;
using git::TrackedPatterns;
using git::TrackResult;
using git::UninstallFilter;
using git::UninstallHook;
using git::Unmatched;
using git::Untrack;

}  // namespace zipnn::ops
