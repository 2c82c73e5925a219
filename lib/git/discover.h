// git-zipnn's side of a git repository, found from git: the object store
// and the folders beside it, the policy of .zipnn.yaml, and the series
// git holds. Thread-compatible (each call runs its own git or opens its
// own libgit2 handle).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/status.h"
#include "lib/git/git.h"
#include "lib/git/series_versions.h"
#include "lib/store/placement.h"

namespace zipnn::git {

// The store of the repository around the current folder (Store::Open):
// its place as git says, its object store at git config zipnn.storepath
// or <git dir>/zipnn/objects (shared by linked worktrees), the work tree
// whose .zipnn.yaml holds the policy. zipnn.storepath is read as git
// reads a path: "~/" expanded, and a relative path from the top of the
// main work tree (the folder holding .git), or from the git folder of a
// bare repository, whatever the current folder. Warnings about the path
// come first, then .zipnn.yaml's (Store::Open); none stops git (status,
// checkout, add).
Result<store::OpenedStore> OpenStore();
// The scratch folder (Store::temp_dir) of the repository whose git folder
// is `git_dir`.
std::string ScratchDirOf(const std::string& git_dir);
// The same from folders and config already read (the filter reads them
// once for all it needs to start); `config` holds at least kStartKeys.
Result<store::OpenedStore> OpenStore(const Folders& folders, const ConfigSnapshot& config);
// The config keys git-zipnn reads as it starts (the sections zipnn and
// diff.zipnn), as ConfigSnapshot::Read takes them.
inline constexpr char kStartKeys[] = "^(zipnn|diff\\.zipnn)\\.";

// The object store of the git repository at `path` (its work tree or, if
// bare, its git folder): its zipnn.storepath (read as above, so from any
// folder the same as the repository's own commands find it), else
// <git dir>/zipnn/objects.
// git is told the folder with --git-dir, which wins over the GIT_DIR that
// git exports to filters and hooks.
Result<std::string> StoreOfRepository(const std::string& path);

// The series of the repository around the current folder, as git holds
// them, by the rules of `store`'s policy.
Result<std::unique_ptr<SeriesVersions>> OpenSeries(const store::Store& store);

// Why the stored version `id` is a base: its base note (store/base_note.h),
// or else its place among the versions of the series of `path` (HEAD's
// history and the index) under today's policy: "first of its series",
// "due every 10", ...; empty when it is not a base or not in that series.
std::string WhyBase(const store::Store& store, SeriesVersions& series, const std::string& path, const ContentId& id);

// For a delta whose base was taken as a parent from another series (its
// header's choice, store/parents.h): "a delta of <path> (<why>)", the
// path where git holds the parent (HEAD's history, the index), or its id
// when git holds it nowhere; `detail`, when given, follows the why after
// a colon. Empty for a delta of its own series.
std::string ParentNote(SeriesVersions& series, container::BaseChoice choice, const ContentId& base,
                       const std::string& detail = "");

// The version before the file at `path` (from the top of the work tree)
// in its series: the one of the greatest step below the path's own,
// among those git holds (HEAD's history, HEAD, the index) at other paths.
// What a diff compares a new step file with. nullopt for a path without a
// step, or the first of its series.
Result<std::optional<store::Version>> PreviousInSeries(SeriesVersions& series, const std::string& path);

}  // namespace zipnn::git
