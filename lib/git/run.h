// Running the git binary: the only place git-zipnn starts git, visible to
// lib/git alone. Commands are argument vectors (never a shell string), so
// paths and patterns from users or repositories cannot inject anything.
// Thread-safe (each call runs its own process, through lib/base/process.h
// like every other child).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lib/base/process.h"
#include "lib/base/status.h"

namespace zipnn::git {

using GitRun = Captured;

// Runs `git <args>` in `cwd` (empty: the current folder), with `input`
// on its standard input (empty: none).
Result<GitRun> RunGit(const std::vector<std::string>& args, const std::string& cwd = "", const std::string& input = "");

// RunGit with one more variable in git's environment (`env`, NAME=value):
// what git has no option for (GIT_OBJECT_DIRECTORY, for one).
Result<GitRun> RunGitWith(const std::string& env, const std::vector<std::string>& args, const std::string& cwd,
                          const std::string& input = "");

// Starts `git <args>` in `cwd` (empty: the current folder) to read from
// as it writes (a blob too large to hold in memory).
Result<std::unique_ptr<Process>> StartGit(const std::vector<std::string>& args, const std::string& cwd = "");

// `git <args>`, its stdout without the trailing newline; a non-zero exit
// is a Git error quoting git's message.
Result<std::string> GitOutput(const std::vector<std::string>& args, const std::string& cwd = "");

// `git <args>` reading the index file `index`, whatever GIT_INDEX_FILE the
// caller's environment holds (git sets it for its hooks): what --git-dir
// is to GIT_DIR, which git has no option for. Errors as GitOutput.
Result<std::string> GitOutputOnIndex(const std::string& index, const std::vector<std::string>& args);

// `git <args>` whose output is paths ended by NULs, as `-z` makes git write
// them (`args` must hold -z): each path byte for byte as the file is
// named. Without -z git quotes names outside printable ASCII, or holding
// quotes ("mod\303\250le"), which then name no file. Errors as GitOutput.
Result<std::vector<std::string>> GitPaths(const std::vector<std::string>& args, const std::string& cwd = "");

}  // namespace zipnn::git
