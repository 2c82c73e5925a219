// The adapter of lib/git's port (port.h) to a real repository, read
// in-process with libgit2: the index as it is on disk, the trees of
// commits, small blobs, and the history behind a set of revisions.
// Nothing here writes to the repository, and nothing here runs a filter:
// what must follow the user's own git exactly (filters, config writes,
// index refreshes) goes through git.h instead.
//
// Where libgit2 cannot read what git wrote, git is asked instead, so that
// no reader sees less than git holds: an index libgit2 does not know
// (split, sparse) is listed by `git ls-files`, and the blobs a partial
// clone lacks are fetched from its promisor remote as git would.
//
// A Repository owns its libgit2 handle; it is movable, not copyable, and
// not thread-safe (one per thread). libgit2 itself is initialised once per
// process, on first use.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/git/port.h"

namespace zipnn::git {

// The libgit2 adapter of the port (port.h).
class Repository final : public Port {
 public:
  // The repository around `start` (a folder inside a work tree, or a git
  // folder); NotFound outside one.
  static Result<Repository> Discover(const std::string& start = ".");
  ~Repository();
  Repository(Repository&&) noexcept;
  Repository& operator=(Repository&&) noexcept;

  // The work tree's top folder, with no trailing '/'; empty for a bare
  // repository.
  const std::string& work_dir() const override { return work_dir_; }
  // The common git folder (linked worktrees share it).
  const std::string& common_dir() const { return common_dir_; }

  // The files in the index, as the index file on disk holds them now,
  // stage 0 only, in index order (by path). A sparse index is read whole
  // (the files outside the sparse checkout too).
  Result<std::vector<FileEntry>> IndexFiles() const override;
  // The files of the index of every work tree of the repository (the main
  // one and each linked one), as IndexFiles reads each. A linked work tree
  // is read from its administrative folder in the common one, so one whose
  // folder was moved, is on a disk not mounted now, or is locked counts as
  // git counts it; one whose index cannot be read is an error naming it.
  Result<std::vector<FileEntry>> AllIndexFiles() const override;

  // The commit `rev` names (any revision git rev-parse accepts: "HEAD",
  // a branch, an abbreviated id, "HEAD~3"); nullopt when it names nothing
  // (an unborn HEAD, an unknown name, an id too short to look up); a Git
  // error when it names an object that is no commit (a tag of a blob).
  Result<std::optional<Oid>> ResolveCommit(const std::string& rev) const override;

  // Every file of `commit`'s tree, recursively.
  Result<std::vector<FileEntry>> TreeFiles(const Oid& commit) const override;
  // The file at `path` in `commit`'s tree; nullopt when there is none.
  Result<std::optional<Oid>> FileAt(const Oid& commit, const std::string& path) const override;

  // The blob's size in bytes, read from its header only. In a partial
  // clone a blob that is not here is fetched first (FetchMissing).
  Result<uint64_t> BlobSize(const Oid& blob) const override;
  // The blob's bytes when it is at most `max_bytes` long; nullopt for a
  // larger blob (its bytes are not read).
  Result<std::optional<std::string>> SmallBlob(const Oid& blob, size_t max_bytes) const override;

  // Makes the blobs of a partial clone that are not here present, fetched
  // from its promisor remotes in one request for all of them (git itself
  // asks for them one at a time as it reads them). Nothing happens for
  // blobs that are here, nor in a repository without a promisor remote,
  // where a missing blob is read as missing. A Git error when the fetch
  // fails (the remote cannot be reached), naming the remote.
  Status FetchMissing(const std::vector<Oid>& blobs) const override;

  // The commits reachable from `revs`, newest first (committer time
  // order, as git log's default: parents after children unless clocks
  // were wrong). `revs` reads as git rev-list's: revisions as
  // ResolveCommit takes them, "^<rev>" to exclude what a revision reaches,
  // "<a>..<b>", "--not" to flip the meaning of "^" for the revisions after
  // it, "--all" (every ref and every work tree's HEAD), "--remotes=<name>"
  // (that remote's tracking refs). An unknown revision is NotFound. A
  // parent that is not there (a shallow clone) ends the walk there.
  Result<std::vector<CommitInfo>> Commits(const std::vector<std::string>& revs) const override;
  // Every commit a branch, tag, remote-tracking ref, any work tree's HEAD
  // or own refs (refs/bisect/*, refs/worktree/*), any reflog entry or the
  // stash (and its reflog) leads to, newest first; reflog entries whose
  // commits are gone are skipped. Linked work trees are read as
  // AllIndexFiles reads them.
  Result<std::vector<CommitInfo>> AllCommits() const override;
  // What the refs and reflogs AllCommits reads lead to that is no commit
  // (a tag of a tree or of a blob, lightweight or annotated, peeled through
  // any tags of tags): every file of such a tree, and such a blob itself
  // (with the ref's name as its path). `visit(ref, entry)`: `ref` is the
  // short name of a ref that leads there ("v1" for refs/tags/v1).
  // The commit each tag (refs/tags/*) leads to, annotated tags peeled,
  // by the tag's short name; tags of trees or blobs are left out.
  Result<std::vector<std::pair<std::string, Oid>>> TagCommits() const override;
  Status VisitTaggedFiles(const std::function<void(const std::string& ref, const FileEntry&)>& visit) const override;

  // Every file of the trees of `commits`, each distinct (path, blob) once,
  // at the first commit of `commits` (in the order given) whose tree holds
  // it. A subtree met before at the same path is not read again, so a
  // history of N commits costs about what its changes cost, not N whole
  // trees.
  // `visit(commit_index, entry)`: commit_index indexes `commits`.
  Status VisitHistoryFiles(const std::vector<CommitInfo>& commits,
                           const std::function<void(size_t commit_index, const FileEntry&)>& visit) const override;

 private:
  struct Handle;
  explicit Repository(std::unique_ptr<Handle> handle);
  std::unique_ptr<Handle> handle_;
  std::string work_dir_;
  std::string common_dir_;
};

}  // namespace zipnn::git
