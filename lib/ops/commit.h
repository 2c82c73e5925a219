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
// and each returns what rank 0 did. Nodes that share no file system each
// have a clone, and meet in the remote's store instead (store_only,
// stored_elsewhere, follow_only below).
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
  // Ranks on nodes that share no file system (each node its own clone):
  // `store_only` stores this rank's files and sends their objects to the
  // remote's store, findable there, after moving this clone to the
  // remote's branch (git::FollowRemoteBranch) so that each is placed
  // after the versions before it; it commits nothing and returns each
  // file's pointer. The process that commits gets those of the other
  // nodes in `stored_elsewhere` (pointer lists, the text PointerListText
  // writes) and commits each as its pointer once the remote's store is
  // shown to hold it.
  // `follow_only`: only that move, once the commit is made, so that every
  // clone ends at it.
  bool store_only = false;
  bool follow_only = false;
  std::vector<std::string> stored_elsewhere;
};

// One file stored: where (from the top of the work tree) and its pointer
// (one line, no LF).
struct StoredFile {
  std::string path, pointer;
};

struct Committed {
  std::string commit;               // the new commit's id; empty when nothing changed
  std::vector<std::string> stored;  // the files this rank stored itself (a rank of a job)
  uint64_t stored_bytes = 0;
  std::vector<StoredFile> pointers;  // with store_only: what this rank stored, and as what
  std::string pushed_to;             // the remote HEAD was pushed to, by this process
};

// A pointer list: a line "<pointer>\t<path>" per file. InvalidArgument
// for a path that no line can carry (a tab or a newline in it).
Result<std::string> PointerListText(const std::vector<StoredFile>& files);

// Commits the save `request` names (each path a file or folder as it is
// in the work tree, or for one gone from it, what the index holds there);
// on a rank of a job, once every rank has stored its files. Runs at the
// top of the work tree from then on (it changes the current folder, as
// git's filter runs there). InvalidArgument for a path outside the work
// tree or one git-zipnn does not track, NotFound for a path that names
// nothing; on a job, every rank fails alike when one could not store.
Result<Committed> CommitSave(Context& context, const CommitRequest& request);

}  // namespace zipnn::ops
