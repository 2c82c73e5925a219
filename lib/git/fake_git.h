// FakeGit: lib/git's port (port.h) held in memory, for unit tests of the
// domain services (pointers, series versions, checkpoint_at, WhyBase).
// A test builds the repository it needs (blobs, commits with their trees,
// refs, the index of each work tree) and hands the fake to the code under
// test as a Port. It reads as Repository reads a real repository, with
// what the services rely on: each distinct text is one blob, history is
// newest first by committer time, a tag may lead to a blob, a blob may be
// missing (a partial clone's) until FetchMissing brings it.
//
// Test-only (testonly in Bazel). Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/git/port.h"

namespace zipnn::git {

class FakeGit final : public Port {
 public:
  // Files by path, as a tree or the index holds them: each path's text.
  using Files = std::map<std::string, std::string>;

  explicit FakeGit(std::string work_dir = "/fake/work") : work_dir_(std::move(work_dir)) {}

  // The blob holding `text` (the same text is the same blob).
  Oid Blob(const std::string& text);
  // A commit whose tree holds `files`, with `parents`, at committer time
  // `time` (0: a minute after the newest commit so far), and `subject`.
  Oid Commit(const Files& files, const std::vector<Oid>& parents = {}, int64_t time = 0,
             const std::string& subject = "");
  // A commit of `files` on HEAD's branch (refs/heads/main): its parent is
  // HEAD's commit, if any, and HEAD moves to it.
  Oid CommitOnHead(const Files& files, const std::string& subject = "");

  // Points `ref` ("HEAD", "refs/heads/main", "refs/tags/v1",
  // "refs/remotes/origin/main") at `object` (a commit or, for a tag, a
  // blob). HEAD set alone is a detached HEAD.
  void SetRef(const std::string& ref, const Oid& object);
  // The main work tree's index, and the index of a linked work tree.
  void SetIndex(const Files& files);
  void SetLinkedIndex(const std::string& worktree, const Files& files);
  // Makes `blob` missing until a FetchMissing asks for it (a partial
  // clone); reading it before is a Git error.
  void MakeMissing(const Oid& blob);

  // Every FetchMissing call, with what it asked for.
  const std::vector<std::vector<Oid>>& fetches() const { return fetches_; }
  // How many times each blob's bytes were read (SmallBlob).
  size_t reads(const Oid& blob) const;

  // Port.
  const std::string& work_dir() const override { return work_dir_; }
  Result<std::vector<FileEntry>> IndexFiles() const override;
  Result<std::vector<FileEntry>> AllIndexFiles() const override;
  Result<std::optional<Oid>> ResolveCommit(const std::string& rev) const override;
  Result<std::vector<FileEntry>> TreeFiles(const Oid& commit) const override;
  Result<std::optional<Oid>> FileAt(const Oid& commit, const std::string& path) const override;
  Result<uint64_t> BlobSize(const Oid& blob) const override;
  Result<std::optional<std::string>> SmallBlob(const Oid& blob, size_t max_bytes) const override;
  Status FetchMissing(const std::vector<Oid>& blobs) const override;
  Result<std::vector<CommitInfo>> Commits(const std::vector<std::string>& revs) const override;
  Result<std::vector<CommitInfo>> AllCommits() const override;
  Result<std::vector<std::pair<std::string, Oid>>> TagCommits() const override;
  Status VisitTaggedFiles(const std::function<void(const std::string& ref, const FileEntry&)>& visit) const override;
  Status VisitHistoryFiles(const std::vector<CommitInfo>& commits,
                           const std::function<void(size_t commit_index, const FileEntry&)>& visit) const override;

 private:
  struct StoredCommit {
    CommitInfo info;
    std::map<std::string, Oid> tree;  // path -> blob
    uint64_t order = 0;               // made later: greater
  };
  Oid NewId();
  // The object `rev` names: a ref (full, or short under refs/heads/,
  // refs/tags/, refs/remotes/), or a full hex id; nullopt for none.
  std::optional<Oid> Lookup(const std::string& rev) const;
  const StoredCommit* FindCommit(const Oid& id) const;
  std::vector<FileEntry> EntriesOf(const std::map<std::string, Oid>& files) const;
  // Every commit reachable from `tips` (parents that are not here end the
  // walk), newest first.
  std::vector<CommitInfo> Reachable(const std::vector<Oid>& tips, const std::set<Oid>& excluded) const;
  std::set<Oid> ReachableIds(const std::vector<Oid>& tips) const;

  std::string work_dir_;
  uint64_t next_id_ = 1;
  int64_t last_time_ = 1700000000;
  std::map<std::string, Oid> blob_of_text_;
  std::map<Oid, std::string> blobs_;
  std::map<Oid, StoredCommit> commits_;
  std::map<std::string, Oid> refs_;
  std::map<std::string, Oid> index_;
  std::map<std::string, std::map<std::string, Oid>> linked_indexes_;
  mutable std::set<Oid> missing_;
  mutable std::vector<std::vector<Oid>> fetches_;
  mutable std::map<Oid, size_t> reads_;
};

}  // namespace zipnn::git
