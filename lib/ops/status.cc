#include "lib/ops/status.h"

#include <algorithm>
#include <map>
#include <set>

#include "lib/git/git.h"
#include "lib/git/repository.h"
#include "lib/series/series.h"

namespace zipnn::ops {

Result<std::optional<std::string>> HeadBranch(Context& context) {
  ZIPNN_RETURN_IF_ERROR(context.Git().status());
  return git::HeadBranch();
}

Result<CheckpointStatus> ReadStatus(Context& context) {
  ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
  CheckpointStatus status;
  ZIPNN_ASSIGN_OR_RETURN(std::optional<git::Oid> head, git_repo->ResolveCommit("HEAD"));
  status.has_head = head.has_value();
  if (head) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<git::FileEntry> files, git_repo->TreeFiles(*head));
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> tracked, git::TrackedPaths());
    const std::set<std::string> under_pattern(tracked.begin(), tracked.end());
    for (const git::FileEntry& f : files) {
      auto pointer = git::PointerInBlob(*git_repo, f.blob);
      if (pointer.ok() && *pointer) {
        status.at_head.emplace(f.path, (*pointer)->id);
      } else if (pointer.ok() && under_pattern.count(f.path) != 0) {
        status.whole_in_git.push_back(f.path);
      }
    }
  }
  ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> remotes, git::Remotes());
  status.has_remote = !remotes.empty();
  ZIPNN_ASSIGN_OR_RETURN(status.staged, git::StagedPointers(*git_repo));
  if (head) {
    ZIPNN_ASSIGN_OR_RETURN(git::FoundPointers found, git::FindPointersIn(*git_repo, {"HEAD", "--not", "--remotes"}));
    std::set<ContentId> listed;
    for (auto& [pointer, place] : found.pointers) {
      if (!listed.insert(pointer.id).second) continue;
      status.unpushed.emplace_back(pointer, place);
    }
  }
  return status;
}

Result<std::vector<std::string>> HeldWholeInIndex(Context& context) {
  ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
  return git::HeldWhole(*git_repo);
}

Result<std::vector<StagedWhole>> StagedWholeFiles(Context& context) {
  ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
  std::vector<StagedWhole> found;
  ZIPNN_ASSIGN_OR_RETURN(const std::vector<git::StagedPath> changed, git::TrackedPathsStaged(git_repo->work_dir()));
  for (const git::StagedPath& f : changed) {
    // A damaged pointer is fsck's to name, not a checkpoint staged whole.
    const Result<std::optional<store::Pointer>> pointer = git::PointerInBlob(*git_repo, f.blob);
    if (!pointer.ok() || *pointer) continue;
    ZIPNN_ASSIGN_OR_RETURN(const uint64_t size, git_repo->BlobSize(f.blob));
    found.push_back(StagedWhole{f.path, size});
  }
  return found;
}

Result<std::vector<std::string>> PointersInWorkTree(const std::map<std::string, ContentId>& staged) {
  ZIPNN_ASSIGN_OR_RETURN(const std::string top, git::TopLevel());
  std::vector<std::string> pointers;
  for (const auto& [path, id] : staged) {
    const Result<std::optional<store::Pointer>> held = store::PointerInFile(top + "/" + path);
    if (held.ok() && *held) pointers.push_back(path);
  }
  return pointers;
}

Result<WorkTreeChanges> ChangedInWorkTree() {
  ZIPNN_ASSIGN_OR_RETURN(git::WorkTreeChanges changes, git::TrackedChanges());
  return WorkTreeChanges{std::move(changes.changed), std::move(changes.untracked)};
}

Result<std::vector<std::pair<std::string, store::Pointer>>> CheckpointsAt(Context& context, const std::string& rev) {
  ZIPNN_RETURN_IF_ERROR(git::CheckRevision(rev));
  ZIPNN_ASSIGN_OR_RETURN(store::Store * store, context.Store());
  ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
  ZIPNN_ASSIGN_OR_RETURN(std::optional<git::Oid> commit, git_repo->ResolveCommit(rev));
  if (!commit) return NotFound("unknown revision '" + rev + "' (not a branch, tag or commit in this repository)");
  ZIPNN_ASSIGN_OR_RETURN(std::vector<git::FileEntry> files, git_repo->TreeFiles(*commit));
  // By series and step: checkpoint-20 before checkpoint-100.
  series::Rules rules;
  if (auto with = series::Rules::WithPatterns(store->policy.series); with.ok()) rules = *with;
  std::stable_sort(files.begin(), files.end(), [&](const git::FileEntry& x, const git::FileEntry& y) {
    const series::Placed a = rules.Place(x.path), b = rules.Place(y.path);
    return a.name != b.name ? a.name < b.name : series::StepLess(a.step, b.step);
  });
  std::vector<std::pair<std::string, store::Pointer>> checkpoints;
  for (const git::FileEntry& file : files) {
    // Pointers are small blobs: only those are read.
    Result<std::optional<store::Pointer>> pointer = git::PointerInBlob(*git_repo, file.blob);
    if (!pointer.ok() && pointer.status().code() == StatusCode::kGit) return pointer.status();
    if (!pointer.ok() || !*pointer) continue;
    checkpoints.emplace_back(file.path, **pointer);
  }
  return checkpoints;
}

}  // namespace zipnn::ops
