// What status and ls-files read of the repository: the checkpoints of a
// revision's tree, and of HEAD, the index and the work tree against one
// another. Only this clone is read: no remote is asked.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/status.h"
#include "lib/git/pointers.h"
#include "lib/ops/context.h"
#include "lib/store/pointer.h"

namespace zipnn::ops {

// The branch HEAD is on ("refs/heads/x"), nullopt when detached.
Result<std::optional<std::string>> HeadBranch(Context& context);

struct CheckpointStatus {
  bool has_head = false;                       // false in a repository with no commit yet
  std::map<std::string, ContentId> at_head;    // HEAD's checkpoints by path
  std::map<std::string, ContentId> staged;     // the index's
  // Versions in commits that no remote-tracking branch has, each once.
  std::vector<std::pair<store::Pointer, git::Place>> unpushed;
  // HEAD's files under a tracked pattern that git holds whole, not as a
  // pointer: added while the filter was not in force (not installed, or
  // before the pattern was tracked).
  std::vector<std::string> whole_in_git;
  bool has_remote = false;  // the repository names a remote
};
Result<CheckpointStatus> ReadStatus(Context& context);

// A file of a tracked pattern that the index holds whole, not as a
// pointer, where HEAD holds other bytes or none: what the commit being
// made would put whole into git's history (the pre-commit hook). Files
// HEAD holds whole already are status's (whole_in_git).
struct StagedWhole {
  std::string path;
  uint64_t size = 0;
};
Result<std::vector<StagedWhole>> StagedWholeFiles(Context& context);
// Every file of a tracked pattern the index holds whole (git::HeldWhole),
// committed already or not.
Result<std::vector<std::string>> HeldWholeInIndex(Context& context);

// The work tree against the index, as git status sees it: git's own
// status runs, so the filter cleans (and stores) files whose times
// changed; asked after what the store holds of HEAD and the index.
struct WorkTreeChanges {
  std::vector<std::pair<std::string, std::string>> changed;  // path, "modified" or "deleted"
  std::vector<std::string> untracked;                        // under a tracked pattern, not added
};
Result<WorkTreeChanges> ChangedInWorkTree();

// Which of `staged` (paths from the top of the work tree) the work tree
// holds as their pointers, not their checkpoints: left so by a checkout
// that wrote none (GIT_ZIPNN_SKIP_SMUDGE, an object out of reach, a
// large one after a command that runs no hook).
Result<std::vector<std::string>> PointersInWorkTree(const std::map<std::string, ContentId>& staged);

// The checkpoints git-zipnn stores at `rev`, in the order of their
// series and steps (checkpoint-20 before checkpoint-100): path and
// pointer.
Result<std::vector<std::pair<std::string, store::Pointer>>> CheckpointsAt(Context& context, const std::string& rev);

}  // namespace zipnn::ops
