#include "lib/git/pointers.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "lib/git/git.h"
#include "lib/git/run.h"

namespace zipnn::git {

namespace {

// Each distinct blob with the first place it was found.
using Blobs = std::map<Oid, Place>;

// Every file of `rev`'s tree.
Status AddTree(const Port& repo, const std::string& rev, Blobs& blobs) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<Oid> commit, repo.ResolveCommit(rev));
  if (!commit) return NotFound("unknown revision '" + rev + "' (not a branch, tag or commit in this repository)");
  ZIPNN_ASSIGN_OR_RETURN(std::vector<FileEntry> files, repo.TreeFiles(*commit));
  for (const FileEntry& f : files) blobs.emplace(f.blob, Place{rev, f.path});
  return OkStatus();
}

// Every file of the trees of `commits`, at the first (newest) commit that
// has it, except what `boundary` (commits whose history is excluded) has
// at the same path: as git log's diff of each commit against each parent
// would show them.
Status AddHistory(const Port& repo, const std::vector<CommitInfo>& commits, const std::vector<Oid>& boundary,
                  Blobs& blobs) {
  std::vector<CommitInfo> walked;
  walked.reserve(boundary.size() + commits.size());
  for (const Oid& id : boundary) {
    CommitInfo boundary_commit;
    boundary_commit.id = id;
    walked.push_back(boundary_commit);
  }
  walked.insert(walked.end(), commits.begin(), commits.end());
  return repo.VisitHistoryFiles(walked, [&](size_t i, const FileEntry& f) {
    if (i >= boundary.size()) blobs.emplace(f.blob, Place{walked[i].id.Hex(), f.path});
  });
}

// Staged files not seen in a tree, in the index of every work tree.
Status AddIndex(const Port& repo, Blobs& blobs) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<FileEntry> files, repo.AllIndexFiles());
  for (const FileEntry& f : files) blobs.emplace(f.blob, Place{"index", f.path});
  return OkStatus();
}

// What refs lead to that is no commit: the files of tagged trees, and
// tagged blobs.
Status AddTagged(const Port& repo, Blobs& blobs) {
  return repo.VisitTaggedFiles([&](const std::string& ref, const FileEntry& f) {
    blobs.emplace(f.blob, Place{ref, f.path});
  });
}

// The parents of `commits` that are outside them and present.
Result<std::vector<Oid>> Boundary(const Port& repo, const std::vector<CommitInfo>& commits) {
  std::set<Oid> inside;
  for (const CommitInfo& c : commits) inside.insert(c.id);
  std::vector<Oid> boundary;
  for (const CommitInfo& c : commits) {
    for (const Oid& parent : c.parents) {
      if (!inside.insert(parent).second) continue;
      ZIPNN_ASSIGN_OR_RETURN(std::optional<Oid> present, repo.ResolveCommit(parent.Hex()));
      if (present) boundary.push_back(parent);  // a shallow clone lacks the parents of its oldest commits
    }
  }
  return boundary;
}

// The pointers among `blobs`: only small blobs are read, once each.
Result<FoundPointers> PointersAmong(const Port& repo, const Blobs& blobs) {
  std::vector<Oid> ids;
  ids.reserve(blobs.size());
  for (const auto& [blob, place] : blobs) ids.push_back(blob);
  ZIPNN_RETURN_IF_ERROR(repo.FetchMissing(ids));  // a partial clone's, all at once
  FoundPointers found;
  for (const auto& [blob, place] : blobs) {
    Result<std::optional<store::Pointer>> pointer = PointerInBlob(repo, blob);
    if (pointer.ok()) {
      if (*pointer) {
        Place at = place;
        at.blob = blob.Hex();
        found.pointers.emplace_back(**pointer, std::move(at));
      }
    } else if (pointer.status().code() == StatusCode::kGit) {
      return pointer.status();
    } else {
      found.damaged.emplace_back(place, "damaged pointer: " + pointer.status().message());
    }
  }
  return found;
}

}  // namespace

Result<std::optional<store::Pointer>> PointerInBlob(const Port& repo, const Oid& blob) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> text, repo.SmallBlob(blob, store::kMaxPointerBytes));
  if (!text || !store::LooksLikePointer(*text)) return std::optional<store::Pointer>();
  ZIPNN_ASSIGN_OR_RETURN(store::Pointer pointer, store::ParsePointer(*text));
  return std::optional<store::Pointer>(pointer);
}

Result<FoundPointers> FindPointers(const Port& repo, bool all) {
  Blobs blobs;
  if (all) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<CommitInfo> commits, repo.AllCommits());
    ZIPNN_ASSIGN_OR_RETURN(std::vector<Oid> boundary, Boundary(repo, commits));
    ZIPNN_RETURN_IF_ERROR(AddHistory(repo, commits, boundary, blobs));
    ZIPNN_RETURN_IF_ERROR(AddIndex(repo, blobs));
    ZIPNN_RETURN_IF_ERROR(AddTagged(repo, blobs));
  } else {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<Oid> head, repo.ResolveCommit("HEAD"));
    if (head) ZIPNN_RETURN_IF_ERROR(AddTree(repo, "HEAD", blobs));
  }
  return PointersAmong(repo, blobs);
}

Result<FoundPointers> FindPointersIn(const Port& repo, const std::vector<std::string>& revs) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<CommitInfo> commits, repo.Commits(revs));
  ZIPNN_ASSIGN_OR_RETURN(std::vector<Oid> boundary, Boundary(repo, commits));
  Blobs blobs;
  ZIPNN_RETURN_IF_ERROR(AddHistory(repo, commits, boundary, blobs));
  return PointersAmong(repo, blobs);
}

Result<FoundPointers> FindPointersInTrees(const Port& repo, const std::vector<std::string>& revs) {
  Blobs blobs;
  for (const std::string& rev : revs) ZIPNN_RETURN_IF_ERROR(AddTree(repo, rev, blobs));
  return PointersAmong(repo, blobs);
}

Result<CommittedVersions> FindCommittedVersions(const Port& repo, const std::vector<ExtraTip>& extra) {
  CommittedVersions found;
  std::map<Oid, std::optional<ContentId>> read;  // each blob parsed once
  auto pointer_of = [&](const Oid& blob) -> std::optional<ContentId> {
    auto [it, fresh] = read.emplace(blob, std::nullopt);
    if (fresh) {
      auto pointer = PointerInBlob(repo, blob);
      if (pointer.ok() && *pointer) it->second = (*pointer)->id;
    }
    return it->second;
  };
  ZIPNN_ASSIGN_OR_RETURN(std::vector<CommitInfo> commits, repo.AllCommits());
  if (!extra.empty()) {
    std::set<Oid> seen;
    for (const CommitInfo& c : commits) seen.insert(c.id);
    std::vector<std::string> revs;
    for (const ExtraTip& tip : extra) revs.push_back(tip.commit.Hex());
    ZIPNN_ASSIGN_OR_RETURN(std::vector<CommitInfo> more, repo.Commits(revs));
    for (CommitInfo& c : more) {
      if (seen.insert(c.id).second) commits.push_back(std::move(c));
    }
    // Newest first again, so that oldest first below is the order of time.
    std::stable_sort(commits.begin(), commits.end(),
                     [](const CommitInfo& a, const CommitInfo& b) { return a.time > b.time; });
  }
  // VisitHistoryFiles reports a file at the first commit given that holds
  // it; given oldest first, that is the commit that brought it in.
  std::vector<CommitInfo> oldest_first(commits.rbegin(), commits.rend());
  ZIPNN_RETURN_IF_ERROR(repo.VisitHistoryFiles(oldest_first, [&](size_t at, const FileEntry& e) {
    const std::optional<ContentId> id = pointer_of(e.blob);
    if (!id) return;
    found.paths[*id].insert(e.path);
    const int64_t time = oldest_first[at].time;
    auto [it, fresh] = found.first_committed.emplace(*id, time);
    if (fresh || time < it->second) {
      it->second = time;
      found.first_commit[*id] = oldest_first[at];
    }
  }));
  ZIPNN_ASSIGN_OR_RETURN(std::vector<FileEntry> staged, repo.AllIndexFiles());
  for (const FileEntry& f : staged) {
    if (std::optional<ContentId> id = pointer_of(f.blob)) found.paths[*id].insert(f.path);
  }
  ZIPNN_RETURN_IF_ERROR(repo.VisitTaggedFiles([&](const std::string&, const FileEntry& f) {
    if (std::optional<ContentId> id = pointer_of(f.blob)) found.paths[*id].insert(f.path);
  }));
  ZIPNN_ASSIGN_OR_RETURN(auto tags, repo.TagCommits());
  for (const ExtraTip& tip : extra) {
    if (!tip.tag.empty()) tags.emplace_back(tip.tag, tip.commit);
  }
  for (const auto& [tag, commit] : tags) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<FileEntry> files, repo.TreeFiles(commit));
    std::set<ContentId> held;
    for (const FileEntry& f : files) {
      if (std::optional<ContentId> id = pointer_of(f.blob)) held.insert(*id);
    }
    found.tags.emplace_back(tag, std::move(held));
  }
  return found;
}

Result<RemoteTips> ReadRemoteTips(const Port& repo, const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<RemoteRef> refs, RemoteRefs(remote));
  RemoteTips found;
  for (const RemoteRef& ref : refs) {
    // git-zipnn's own data (tensor listings, Git LFS's object map) holds
    // no checkout, and `git fetch` does not bring it.
    if (ref.name.rfind("refs/zipnn/", 0) == 0) continue;
    Result<std::optional<Oid>> commit = repo.ResolveCommit(ref.object);
    if (commit.ok() && *commit) {
      const bool tag = ref.name.rfind("refs/tags/", 0) == 0;
      found.tips.push_back(ExtraTip{tag ? ref.name.substr(10) + " on " + remote : "", **commit});
      continue;
    }
    if (!commit.ok()) {
      // Here, but no commit (a tag of a tree or blob): read as the local
      // ref of that name reads it, if that leads to the same object.
      Result<std::string> local = GitOutput({"rev-parse", "--verify", "-q", ref.name + "^{}"});
      if (local.ok() && *local == ref.object) continue;
    }
    found.missing.push_back(ref);
  }
  return found;
}

Result<std::map<std::string, ContentId>> StagedPointers(const Port& repo) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<FileEntry> entries, repo.IndexFiles());
  std::vector<Oid> ids;
  for (const FileEntry& e : entries) ids.push_back(e.blob);
  ZIPNN_RETURN_IF_ERROR(repo.FetchMissing(ids));  // those outside a sparse checkout of a partial clone
  std::map<std::string, ContentId> staged;
  for (const FileEntry& e : entries) {
    auto pointer = PointerInBlob(repo, e.blob);
    if (pointer.ok() && *pointer) staged.emplace(e.path, (*pointer)->id);
  }
  return staged;
}

Result<std::vector<std::string>> HeldWhole(const Port& repo) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> tracked, TrackedPaths(repo.work_dir()));
  std::vector<std::string> whole;
  if (tracked.empty()) return whole;
  ZIPNN_ASSIGN_OR_RETURN(std::vector<FileEntry> staged, repo.IndexFiles());
  std::map<std::string, Oid> blobs;
  for (const FileEntry& f : staged) blobs.emplace(f.path, f.blob);
  for (const std::string& path : tracked) {
    auto blob = blobs.find(path);
    if (blob == blobs.end()) continue;
    Result<std::optional<store::Pointer>> pointer = PointerInBlob(repo, blob->second);
    if (pointer.ok() && !*pointer) whole.push_back(path);
  }
  return whole;
}

Result<PathHistory> PathHistory::Of(const Port& repo) {
  PathHistory history(repo);
  ZIPNN_ASSIGN_OR_RETURN(std::optional<Oid> head, repo.ResolveCommit("HEAD"));
  if (head) {
    ZIPNN_ASSIGN_OR_RETURN(history.commits_, repo.Commits({"HEAD"}));
  }
  for (size_t i = 0; i < history.commits_.size(); ++i) history.position_.emplace(history.commits_[i].id, i);
  return history;
}

Result<std::vector<PathVersion>> PathHistory::Versions(const std::string& path) {
  std::vector<std::optional<Oid>> blobs(commits_.size());
  for (size_t i = 0; i < commits_.size(); ++i) {
    ZIPNN_ASSIGN_OR_RETURN(blobs[i], repo_->FileAt(commits_[i].id, path));
  }
  std::vector<Oid> unread;
  for (const std::optional<Oid>& blob : blobs) {
    if (blob && pointers_.count(*blob) == 0) unread.push_back(*blob);
  }
  ZIPNN_RETURN_IF_ERROR(repo_->FetchMissing(unread));  // a partial clone's, all at once
  std::vector<PathVersion> versions;
  for (size_t i = 0; i < commits_.size(); ++i) {
    if (!blobs[i]) continue;
    bool same_as_parent = false;
    for (const Oid& parent : commits_[i].parents) {
      auto at = position_.find(parent);  // absent in a shallow clone
      if (at != position_.end() && blobs[at->second] == blobs[i]) same_as_parent = true;
    }
    if (same_as_parent) continue;
    auto cached = pointers_.find(*blobs[i]);
    if (cached == pointers_.end()) {
      Result<std::optional<store::Pointer>> read = PointerInBlob(*repo_, *blobs[i]);
      if (!read.ok() && read.status().code() == StatusCode::kGit) return read.status();
      cached = pointers_.emplace(*blobs[i], read.ok() ? *read : std::nullopt).first;
    }
    if (cached->second) versions.push_back(PathVersion{&commits_[i], *cached->second});
  }
  return versions;
}

}  // namespace zipnn::git
