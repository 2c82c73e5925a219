// The versions of checkpoint series as git holds them, for placing a new
// version (store::CheckIn) and for repack: the pointers in the index and
// in HEAD's tree, and on demand every pointer in HEAD's history; plus the
// versions stored earlier by the same process, since git writes its index
// only when an add ends (ten step files added at once still chain). Every
// clone, linked worktree and teammate's repository therefore sees the
// same series; nothing about series is kept per clone.
//
// git is read through the port (port.h). The index and HEAD are read
// once, when first needed, and the history once, when first asked for:
// one instance serves one git command. Not thread-safe.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/git/port.h"
#include "lib/git/repository.h"
#include "lib/series/series.h"
#include "lib/store/checkin.h"

namespace zipnn::git {

// The files of `rev`'s tree that are versions of the series of `path`
// (by `rules`), in step order (files of one step in tree order), each
// with its step; run in the repository around `cwd`.
struct SeriesFile {
  std::string step, path;
};
Result<std::vector<SeriesFile>> SeriesFilesAt(const series::Rules& rules, const std::string& rev,
                                              const std::string& path, const std::string& cwd = "");

// A version of a checkpoint to read for analysis: what to call it, where
// it is ("<rev>:<path>", or a file), its commit's subject, and (in git)
// the revision and path it is read from.
struct VersionToRead {
  std::string label, source, subject;
  std::string rev, path;
};
// The versions of the tracked `path` (from the top of the work tree) to
// analyse over `range` (empty: HEAD), oldest first: the files of its
// step-numbered series that the range's history holds (each from the
// newest commit holding it, labelled by its step) when there are several,
// else the commits of the range that changed it (labelled by short commit
// and subject). The range is checked (CheckRange) before git reads it.
Result<std::vector<VersionToRead>> VersionsToAnalyze(const series::Rules& rules, const std::string& path,
                                                     const std::string& range);

class SeriesVersions {
 public:
  // Reads git through `git` (port.h): a Repository, or a FakeGit in tests.
  SeriesVersions(std::unique_ptr<Port> git, series::Rules rules) : git_(std::move(git)), rules_(std::move(rules)) {}
  SeriesVersions(Repository repo, series::Rules rules)
      : SeriesVersions(std::make_unique<Repository>(std::move(repo)), std::move(rules)) {}

  const series::Rules& rules() const { return rules_; }
  const Port& repository() const { return *git_; }

  // The versions of the series `name` git holds, in series order (by
  // step; among equal steps, history before HEAD, HEAD before the index,
  // the index before this process's own), each content id once. With
  // `deep`, HEAD's whole history too.
  Result<std::vector<store::Version>> Of(const std::string& name, bool deep);

  // The versions of other series than `name` that a new version of it may
  // be a delta of (store::ParentCandidate): the newest of each series in
  // HEAD's tree, the index or this process, and every version this
  // process stored, the latest first.
  Result<std::vector<store::Version>> Recent(const std::string& name);

  // The version git holds at `path`: the last this process stored there,
  // else the index's, else HEAD's; nullopt when it holds none.
  Result<std::optional<store::Version>> At(const std::string& path);

  // A path where git holds version `id` (HEAD's history, the index, this
  // process), or nullopt; the paths are read once.
  Result<std::optional<std::string>> PathOf(const ContentId& id);

  // A version this process stored (or found stored) at `path`.
  void Add(const std::string& path, const ContentId& id);

  // Every series with a pointer anywhere in HEAD's history, the index or
  // this process, by name, in series order.
  Result<std::map<std::string, std::vector<store::Version>>> All();

 private:
  struct Held {
    std::string path;
    Oid blob;
  };
  Status ReadShallow();
  Status ReadHistory();
  // The pointer a blob holds, read once; nullopt when it holds none.
  Result<std::optional<ContentId>> PointerIn(const Oid& blob);

  std::unique_ptr<Port> git_;
  series::Rules rules_;
  bool shallow_read_ = false, history_read_ = false;
  std::map<std::string, std::vector<Held>> shallow_;  // by series name: HEAD's tree, then the index
  std::map<std::string, std::vector<Held>> history_;  // by series name: oldest first
  std::map<std::string, std::vector<store::Version>> session_;
  std::map<Oid, std::optional<ContentId>> pointers_;
  std::optional<std::map<ContentId, std::string>> paths_;  // PathOf's
};

}  // namespace zipnn::git
