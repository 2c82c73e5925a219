// What `git zipnn commit` (lib/ops/commit.h) asks of git: which files of
// a save are tracked by git-zipnn, which tracked files went away beside
// it, and staging and committing those paths and no others. Paths are
// from the top of the work tree `top` and are taken literally (a folder
// may be named "[x]" or "*").
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"

namespace zipnn::git {

// Those of `files` whose filter attribute is zipnn, in the order given.
Result<std::vector<std::string>> TrackedByZipnn(const std::vector<std::string>& files, const std::string& top);

// The files the index holds under `folder` (empty: the whole tree) that
// are gone from the work tree.
Result<std::vector<std::string>> DeletedUnder(const std::string& folder, const std::string& top);

// `git add -A` of `paths`. With `parent` not empty, clean is told that
// what it stores is a fine-tune of it (GIT_ZIPNN_PARENT).
Status AddPaths(const std::vector<std::string>& paths, const std::string& parent, const std::string& top);

// Whether `path` is one of `paths` (from the top; "." the whole tree) or
// under one of them.
bool AtOrUnderAny(const std::string& path, const std::vector<std::string>& paths);

// Whether the index differs from HEAD anywhere in `paths`.
Result<bool> StagedIn(const std::vector<std::string>& paths, const std::string& top);

// Commits what the index holds at `paths`, and nothing else staged, with
// `message`; the new commit's id.
Result<std::string> CommitPaths(const std::string& message, const std::vector<std::string>& paths,
                                const std::string& top);

// HEAD's commit id; empty on a branch with no commit yet.
Result<std::string> HeadId(const std::string& top);

// For the clone of a node of a job that commits elsewhere (lib/ops/commit.h):
// fetches `remote` and moves HEAD's branch to what the remote holds of
// it (its upstream, else <remote>/<branch>) when HEAD is an ancestor of
// that. The index follows. Of the files the new commits added or
// changed, those the work tree lacks, and those it holds as HEAD had
// them, are written (a checkpoint as its pointer, as
// GIT_ZIPNN_SKIP_SMUDGE leaves it); files changed here stay as they are,
// and nothing is written through a folder that is a symbolic link.
// InvalidArgument when the index has changes the move would lose.
struct Followed {
  std::string commit;  // what HEAD moved to; empty when it stayed
  std::string stayed;  // why it stayed, when there was somewhere to go or something amiss
};
Result<Followed> FollowRemoteBranch(const std::string& remote, const std::string& top);

// Those of `paths` (from the top, none of them tracked) that git's
// ignore rules leave out of `git add`.
Result<std::vector<std::string>> IgnoredOf(const std::vector<std::string>& paths, const std::string& top);

// `git push <remote> HEAD`, hooks included (so git-zipnn's pre-push
// sends what the remote's store lacks).
Status PushHead(const std::string& remote, const std::string& top);

}  // namespace zipnn::git
