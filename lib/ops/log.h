// log's use case: how each version of tracked checkpoints is stored. For
// each path (every tracked one in the index, or those named, newest of a
// series first), its versions along HEAD's history, each with how the
// store holds it, why a base is one or where a delta's parent is, and the
// sums printed under them.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/ops/context.h"
#include "lib/ops/held.h"

namespace zipnn::ops {

struct LogRequest {
  std::vector<std::string> paths;  // empty: every tracked checkpoint in the index
  // Every path the series of each given checkpoint has had in HEAD's
  // history or the index (checkpoint-N folders deleted since included).
  bool whole_series = false;
};

struct LogRow {
  std::string commit;  // hex
  std::string author_date, subject;
  store::Pointer pointer;
  HeldVersion held;
  // A later version whose bytes were committed before: stored once,
  // counted and described where they first were.
  bool same = false;
  std::string same_path, same_commit;  // where the bytes first were (commit hex)
  uint64_t stored = 0;                 // the object's size, at the row where the bytes were first
  std::string reason;                  // why a base, where a delta's parent is, what retention did, or "stored once"
  // Of a delta whose parent holds some of its tensors under other names,
  // those tensors (when both versions are here to read).
  std::vector<SharedTensor> shared;
};

struct LogPath {
  std::string path;
  std::vector<LogRow> rows;  // newest first
  // Over the versions in this store: one not fetched (or dropped) has
  // no stored size, and its raw size would make the ratio a false one.
  uint64_t raw_total = 0, stored_total = 0;
  size_t versions = 0;  // distinct contents
  size_t held = 0;      // of them, those in this store
};

struct LogResult {
  std::vector<LogPath> paths;
  // Over every path, each object counted once; objects, raw and stored
  // over those in this store.
  size_t versions = 0, objects = 0;
  uint64_t raw = 0, stored = 0;
  size_t chains = 0;  // distinct bases the listed versions rest on
  int longest = 0;    // the longest run of deltas above one
  size_t unreadable = 0;
};
Result<LogResult> Log(Context& context, const LogRequest& request);

}  // namespace zipnn::ops
