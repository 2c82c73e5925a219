// `git zipnn commit`: commits what a training job just saved (files or
// folders such as checkpoint-500/), the tracked checkpoints removed beside
// it, and nothing else staged.
//
// In a distributed job each rank calls it with the same paths: each
// stores its own files (those it names, else its share of the paths'
// files, balanced by size) into the store, and with `push` into the
// remote's store too, all at once; rank 0 then waits until every rank has
// stored, and commits them with one `git add`, in which clean finds each
// file stored already and only checks its bytes (added.h). The ranks meet
// through files in .git/zipnn/commit/ (a shared file system, as sharded
// saves need anyway): no rank goes on until the commit is made or failed,
// and each returns what rank 0 did.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/ops/context.h"

namespace zipnn::ops {

struct CommitRequest {
  std::vector<std::string> paths;  // files or folders, from the current folder
  std::string message;             // empty: "checkpoint at step <step>", else "checkpoint <paths>"
  std::optional<int64_t> step;
  std::string parent;  // what a fine-tune started from (GIT_ZIPNN_PARENT), from the current folder
  bool push = false;   // also send the commit to the remote (the upstream, else origin)
  // The job's ranks (torchrun's RANK and WORLD_SIZE): 1 is no job.
  int rank = 0;
  int world_size = 1;
  std::vector<std::string> rank_files;  // the files this rank wrote; empty: its share of the paths' files
  // What tells this job's rounds from another job's in the same
  // repository (torchrun's run id and master address); empty: none.
  std::string job;
  int timeout_seconds = 3600;  // how long a rank waits for the others
};

struct Committed {
  std::string commit;               // the new commit's id; empty when nothing changed
  std::vector<std::string> stored;  // the files this rank stored itself (a rank of a job)
  uint64_t stored_bytes = 0;
};

// Commits the save `request` names (each path a file or folder as it is
// in the work tree, or for one gone from it, what the index holds there);
// on a rank of a job, once every rank has stored its files. Runs at the
// top of the work tree from then on (it changes the current folder, as
// git's filter runs there). InvalidArgument for a path outside the work
// tree or one git-zipnn does not track, NotFound for a path that names
// nothing; on a job, every rank fails alike when one could not store.
Result<Committed> CommitSave(Context& context, const CommitRequest& request);

}  // namespace zipnn::ops
