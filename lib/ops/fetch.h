// fetch's and pull's use cases: which pointers a fetch gets the objects
// of (revisions, --all, --recent as Git LFS chooses them, narrowed by
// path patterns), getting them from a remote's object store, and pull's
// writing the checkpoints where the work tree holds pointers; and push's
// choice of pointers.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/status.h"
#include "lib/git/pointers.h"
#include "lib/ops/context.h"
#include "lib/remote/transfer.h"

namespace zipnn::ops {

// Path patterns as Git LFS takes them (--include, --exclude): several to
// a word, comma-separated ("*.pt, *.bin"), the spaces around a comma no
// part of a pattern.
std::vector<std::string> PatternList(const std::vector<std::string>& given);

struct FetchRequest {
  std::string remote;  // "": the default remote
  std::vector<std::string> refs;  // default: HEAD
  bool all = false;
  bool recent = false;
  std::vector<std::string> include, exclude;  // path patterns, several to a word with commas
};

// What a fetch gets: the remote, and the pointers (damaged ones apart,
// to be warned about; they are skipped).
struct FetchPlan {
  std::string remote;
  git::FoundPointers found;
};
Result<FetchPlan> PlanFetch(Context& context, const FetchRequest& request);
// Gets the objects `plan`'s pointers need into the context's store.
Result<remote::Transferred> Fetch(Context& context, const FetchPlan& plan);

// Pull's second half: every tracked file of the work tree that holds a
// pointer (those --include and --exclude choose) written as its
// checkpoint. Restores what it can: a file whose object is out of reach
// stays a pointer. `on_file` hears of each pointer file as it is done:
// the id written, nullopt when the file was no pointer after all, or why
// it was not (kRemoved: retention took its version).
using OnRestored = std::function<void(const std::string& path, const Result<std::optional<ContentId>>& written)>;
struct PullResult {
  size_t restored = 0;
  size_t failed = 0;  // kRemoved not counted: left as pointers, as a checkout leaves them
};
Result<PullResult> RestorePointerFiles(Context& context, const FetchRequest& request, const OnRestored& on_file);

// Where smudge names the checkpoints it left as pointers for being larger
// than git's filter takes (filters::SmudgeOptions::outside_list):
// zipnn/checkout-outside in the work tree's git folder, each path ended
// by a NUL.
Result<std::string> LeftOutsideList();
// The post-checkout and post-merge hooks' work: each checkpoint the list
// names written where the work tree holds its pointer, as pull writes
// them (what the store lacks fetched; the index brought up to date); the
// list goes. Nothing, at the cost of one git run, when there is none.
Result<PullResult> WriteLeftOutside(Context& context, const OnRestored& on_file);

// push's pointers: those the commits of `refs` (default HEAD; `all`:
// every ref's) need.
Result<git::FoundPointers> PointersToPush(Context& context, const std::vector<std::string>& refs, bool all);
// pre-push's: git feeds the hook "<local ref> SP <local oid> SP <remote
// ref> SP <remote oid>" per ref it is about to push; the commits to look
// at are the local ones the remote does not have yet. Empty when there
// is nothing to push.
Result<git::FoundPointers> PointersBeforePush(Context& context, const std::string& remote,
                                              const std::vector<std::string>& lines);

}  // namespace zipnn::ops
