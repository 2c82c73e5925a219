// The port through which lib/git's domain services (pointers.h,
// series_versions.h, checkpoint_at.h, discover.h's WhyBase and
// PreviousInSeries) read a git repository: exactly the primitives they
// use, and nothing about how they are read. Two implementations:
// Repository (repository.h: libgit2 in-process, with the git binary where
// libgit2 cannot read what git wrote), and FakeGit (fake_git.h, tests
// only: commits, trees, blobs, the index and refs held in memory).
//
// Objects, the index and refs are only read here; what writes to the
// repository or must follow the user's own git exactly (filters, config,
// index refreshes, fetch and push) is in git.h and run.h.
//
// A Port is not thread-safe unless its implementation says so (Repository
// is not: one per thread).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"

namespace zipnn::git {

// A git object id (SHA-1, 20 bytes).
struct Oid {
  std::array<uint8_t, 20> bytes{};
  std::string Hex() const;
  bool operator==(const Oid& o) const { return bytes == o.bytes; }
  bool operator!=(const Oid& o) const { return bytes != o.bytes; }
  bool operator<(const Oid& o) const { return bytes < o.bytes; }
};

// A file as a tree or the index lists it: a regular or executable file
// (modes 100644, 100755); links, submodules and folders are left out.
struct FileEntry {
  std::string path;  // from the top of the work tree, '/'-separated
  Oid blob;
};

// One commit of a history walk.
struct CommitInfo {
  Oid id;
  int64_t time = 0;          // committer time, seconds since the epoch
  std::string author_date;   // ISO 8601, as git log's %aI
  std::string subject;       // as git log's %s: the first paragraph, on one line
  std::vector<Oid> parents;  // as the commit names them, first parent first; some may be absent (a shallow clone)
};

class Port {
 public:
  virtual ~Port() = default;

  // The work tree's top folder, with no trailing '/'; empty for a bare
  // repository.
  virtual const std::string& work_dir() const = 0;

  // The files in the index, stage 0 only, in index order (by path).
  virtual Result<std::vector<FileEntry>> IndexFiles() const = 0;
  // The files of the index of every work tree of the repository (the main
  // one and each linked one).
  virtual Result<std::vector<FileEntry>> AllIndexFiles() const = 0;

  // The commit `rev` names (any revision git rev-parse accepts: "HEAD",
  // a branch, an id); nullopt when it names nothing (an unborn HEAD, an
  // unknown name); a Git error when it names an object that is no commit.
  virtual Result<std::optional<Oid>> ResolveCommit(const std::string& rev) const = 0;

  // Every file of `commit`'s tree, recursively.
  virtual Result<std::vector<FileEntry>> TreeFiles(const Oid& commit) const = 0;
  // The file at `path` in `commit`'s tree; nullopt when there is none.
  virtual Result<std::optional<Oid>> FileAt(const Oid& commit, const std::string& path) const = 0;

  // The blob's size in bytes.
  virtual Result<uint64_t> BlobSize(const Oid& blob) const = 0;
  // The blob's bytes when it is at most `max_bytes` long; nullopt for a
  // larger blob (its bytes are not read). A Git error when it cannot be
  // read.
  virtual Result<std::optional<std::string>> SmallBlob(const Oid& blob, size_t max_bytes) const = 0;
  // Makes blobs a partial clone lacks present, all in one request; a
  // no-op where nothing is missing.
  virtual Status FetchMissing(const std::vector<Oid>& blobs) const = 0;

  // The commits reachable from `revs` (git rev-list's words: revisions,
  // "^<rev>", "<a>..<b>", "--not", "--all", "--remotes=<name>"), newest
  // first. An unknown revision is NotFound.
  virtual Result<std::vector<CommitInfo>> Commits(const std::vector<std::string>& revs) const = 0;
  // Every commit any ref, work tree HEAD, reflog entry or the stash leads
  // to, newest first.
  virtual Result<std::vector<CommitInfo>> AllCommits() const = 0;
  // The commit each tag (refs/tags/*) leads to, by the tag's short name;
  // tags of trees or blobs are left out.
  virtual Result<std::vector<std::pair<std::string, Oid>>> TagCommits() const = 0;
  // What refs lead to that is no commit: every file of a tagged tree, and
  // a tagged blob itself (with the ref's name as its path); `ref` is the
  // ref's short name.
  virtual Status VisitTaggedFiles(const std::function<void(const std::string& ref, const FileEntry&)>& visit) const = 0;
  // Every file of the trees of `commits`, each distinct (path, blob) once,
  // at the first commit of `commits` (in the order given) whose tree holds
  // it. `visit(commit_index, entry)`: commit_index indexes `commits`.
  virtual Status VisitHistoryFiles(const std::vector<CommitInfo>& commits,
                                   const std::function<void(size_t commit_index, const FileEntry&)>& visit) const = 0;

 protected:
  Port() = default;
  Port(const Port&) = default;
  Port(Port&&) = default;
  Port& operator=(const Port&) = default;
  Port& operator=(Port&&) = default;
};

}  // namespace zipnn::git
