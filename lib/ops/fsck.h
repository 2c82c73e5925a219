// fsck's use case: every checkpoint the repository points at can be
// restored. The pointers in HEAD's tree (with `all`: in every commit
// reachable from a ref, a reflog or a stash, and in the index), each
// distinct checkpoint checked once: every object of its chain present
// and filed under the right id, and (unless `fast`) decoded to exactly
// its content. Or, for a remote, the same of the remote's store.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/git/pointers.h"
#include "lib/ops/context.h"

namespace zipnn::ops {

struct FsckRequest {
  bool all = false;
  bool fast = false;
};

struct FsckProblem {
  git::Place place;
  std::string id;  // empty for a damaged pointer, or a file git holds whole
  std::string what;
};

struct FsckResult {
  size_t pointers = 0;     // found, damaged ones included
  size_t checkpoints = 0;  // distinct ones
  size_t thinned = 0;      // by retention: checked as their approximate versions
  size_t dropped = 0;      // by retention: nothing left to check
  std::vector<FsckProblem> problems;
  // Versions this store lacks that the default remote holds (a clone
  // fetches what it checks out): counted, said in `not_fetched_line`
  // (with those retention took there), and no problem.
  size_t not_fetched = 0;
  std::string not_fetched_line;
};
Result<FsckResult> Fsck(Context& context, const FsckRequest& request);

// fsck --remote: the store of `remote` ("" for the default remote), not
// this one (lib/remote/transfer.h CheckRemote).
struct RemoteFsckResult {
  std::string remote;
  std::string where;
  size_t checkpoints = 0, objects = 0, temporaries = 0;
  std::vector<std::pair<git::Place, std::string>> problems;
};
Result<RemoteFsckResult> FsckRemote(Context& context, bool all, const std::string& remote);

}  // namespace zipnn::ops
