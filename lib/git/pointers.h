// Finding git-zipnn pointers in what git holds: HEAD's tree, the index,
// the trees of given revisions, or every blob of a history. Pointers are
// small blobs, so only blobs of at most store::kMaxPointerBytes are read,
// and each distinct blob is read once. All in-process.
//
// Each reads git through the port (port.h), so it runs as well on a
// FakeGit as on a Repository. Functions are thread-compatible: one port
// per thread.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"
#include "lib/git/git.h"
#include "lib/git/port.h"
#include "lib/git/repository.h"  // callers pass a Repository, the port's adapter
#include "lib/store/pointer.h"

namespace zipnn::git {

// Where git holds a pointer: the revision (a full commit id, "HEAD" or
// "index") and the path where it was first found.
struct Place {
  std::string rev, path;
  std::string blob;  // the pointer blob's id, hex
};

struct FoundPointers {
  std::vector<std::pair<store::Pointer, Place>> pointers;  // one per distinct blob
  std::vector<std::pair<Place, std::string>> damaged;      // text that claims to be a pointer and is not
};

// The pointer `blob` holds; nullopt when it holds something else (or is
// too big to be one). A Git error when the blob cannot be read; when it
// claims to be a pointer and is not one this build reads, ParsePointer's
// error (InvalidArgument, or Unsupported for a newer version).
Result<std::optional<store::Pointer>> PointerInBlob(const Port& repo, const Oid& blob);

// The pointers in HEAD's tree (none for an unborn HEAD), or with `all` in
// every commit Repository::AllCommits walks, in the index of every work
// tree (a version staged only in a linked work tree is needed too), and
// in every tree or blob a ref tags (Repository::VisitTaggedFiles): every
// pointer git would keep. A partial clone fetches the blobs it lacks.
Result<FoundPointers> FindPointers(const Port& repo, bool all);

// The pointers in every commit `revs` reach (as Repository::Commits reads
// them: "HEAD", "main", "<oid>", "^<oid>", "--not", "--remotes=origin"),
// except those a parent outside them holds at the same path: what those
// commits brought in, as git log's diff against each parent shows it.
Result<FoundPointers> FindPointersIn(const Port& repo, const std::vector<std::string>& revs);

// The pointers in the trees of `revs` (their files as they are there, not
// their history).
Result<FoundPointers> FindPointersInTrees(const Port& repo, const std::vector<std::string>& revs);

// For retention (lib/store/retain.h): when each version a pointer in a
// commit names was first committed (the earliest committer time of the
// commits, of every ref's history, that hold it), the versions each
// tag's commit holds, and every path where git holds each version.
struct CommittedVersions {
  std::map<ContentId, int64_t> first_committed;
  // The commit that brought each in (the one of first_committed's time),
  // as `git zipnn log` names a version.
  std::map<ContentId, CommitInfo> first_commit;
  std::vector<std::pair<std::string, std::set<ContentId>>> tags;
  // Each path, in any commit AllCommits walks, in the index of any work
  // tree, or in a tagged tree (a tagged blob: the tag's name): one
  // content may be a version of several series.
  std::map<ContentId, std::set<std::string>> paths;
};
// Tips read as if refs of this repository led to them: another
// repository's refs (a remote's, which this clone has the commits of but
// not the refs). A tip with a tag name counts as a tag.
struct ExtraTip {
  std::string tag;  // empty: not a tag
  Oid commit;
};
Result<CommittedVersions> FindCommittedVersions(const Port& repo, const std::vector<ExtraTip>& extra = {});

// The refs the git remote `remote` holds now (RemoteRefs), as tips to
// read: each whose commit this clone has (a tag's named "<tag> on
// <remote>"). `missing`: the refs whose object this clone lacks (a
// teammate's push since the last fetch), and those that lead to a tree or
// blob no local ref of the same name leads to: what they hold is unknown
// here.
struct RemoteTips {
  std::vector<ExtraTip> tips;
  std::vector<RemoteRef> missing;
};
Result<RemoteTips> ReadRemoteTips(const Port& repo, const std::string& remote);

// The checkpoint each path of the index names, for those whose entry is
// a valid pointer.
Result<std::map<std::string, ContentId>> StagedPointers(const Port& repo);

// Tracked paths (TrackedPaths) whose index entry is the file itself, not
// a pointer: added before the filter was installed (`track` first,
// `install` later). A damaged pointer is not among them.
Result<std::vector<std::string>> HeldWhole(const Port& repo);

// The versions of tracked paths along HEAD's history, as `git log --
// <path>` lists them: each commit (newest first) where the path's blob
// changed, with the pointer it holds there. A commit whose blob is the
// same as a parent's (a merge that took one side's version) or that does
// not hold the path shows nothing; neither does a blob that is not a
// pointer. HEAD's history is walked once, and each blob read once, for
// every path asked for.
struct PathVersion {
  const CommitInfo* commit;
  store::Pointer pointer;
};
class PathHistory {
 public:
  // `repo` must outlive the history.
  static Result<PathHistory> Of(const Port& repo);
  Result<std::vector<PathVersion>> Versions(const std::string& path);

 private:
  explicit PathHistory(const Port& repo) : repo_(&repo) {}
  const Port* repo_;
  std::vector<CommitInfo> commits_;
  std::map<Oid, size_t> position_;
  std::map<Oid, std::optional<store::Pointer>> pointers_;
};

}  // namespace zipnn::git
