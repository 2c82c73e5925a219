// What commands ask of the repository around the current folder, in the
// words of lib/git: which files git tracks and where, what a revision
// names, the remotes. cmd/ reaches git through these and the Context
// rather than through lib/git itself. Stateless; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/store/pointer.h"

namespace zipnn::ops {

// The pointer `spec` names ("<rev>:<path>", ":<path>" for the index).
Result<store::Pointer> PointerAt(const std::string& spec);
// "<rev>:<path>" as git spells it (the path from the top of the work
// tree, or from the current folder with "./"); a bare path is HEAD's
// version of that file, from the current folder (cat, show).
std::string GitSpec(const std::string& spec);
// The tracked path `given` (from the current folder) names, from the top
// of the work tree; an error when git does not track it.
Result<std::string> TrackedPath(const std::string& given);
// Every tracked checkpoint path of the index, from the top.
Result<std::vector<std::string>> TrackedPaths();
// The top of the work tree.
Result<std::string> TopLevel();
// An error unless `rev` is a revision (and no option in disguise).
Status CheckRevision(const std::string& rev);
// Brings the index's record of `paths` (restored files that are what it
// names) up to date, so that git status need not read them again.
void RestageUnchanged(const std::vector<std::string>& paths, const std::string& top = "");
// The git remotes, by name.
Result<std::vector<std::string>> Remotes();
// A git config value (nullopt when unset); at one scope ("--local",
// "--global", "--system").
Result<std::optional<std::string>> ConfigGet(const std::string& key);
Result<std::optional<std::string>> ConfigGetAt(const std::string& scope, const std::string& key);
// `git --version`'s version.
Result<std::string> GitVersion();

// The folders of the repository around the current folder (lib/git/git.h):
// its git folder, hooks folder, and work tree's top (nullopt when bare).
struct Folders {
  std::string git_dir;
  std::string hooks;
  std::optional<std::string> top;
};
Result<Folders> RepositoryFolders();

// The object store of the git repository at `path` (its zipnn.storepath,
// else <git dir>/zipnn/objects), as serve-store serves it.
Result<std::string> StoreOfRepository(const std::string& path);

}  // namespace zipnn::ops
