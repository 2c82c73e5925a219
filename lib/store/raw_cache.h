// The raw cache: full copies of recent versions, kept so that the next
// version of a series can be made a delta without decoding its base's
// chain, when the base's bytes will not be in the work tree any more (one
// path overwritten in place, or a trainer that deletes old saves). One
// copy per series, the newest's, and all of them within a byte budget
// (.zipnn.yaml raw_cache); the oldest go first. One, not two: a second
// copy, of the version before the newest (which a newer version may
// re-store as a delta of its own predecessor: placement.h), spared that
// re-store a decode of the predecessor's chain from the store, and held a
// whole checkpoint for it, which left .git larger than Git LFS's
// uncompressed objects (docs/policy.md, "Bytes of the base").
// Only a cache: any entry may go at any time, and a copy is used only
// after its hash matched.
//
// Files are <dir>/<series hash>.<content id>, hard links to the spooled
// input (on another file system nothing is kept). Thread-compatible; processes may share a folder
// (every change is a link, rename or unlink).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/file.h"

namespace zipnn::store {

inline constexpr size_t kCopiesPerSeries = 1;

class RawCache {
 public:
  RawCache(std::string dir, uint64_t budget) : dir_(std::move(dir)), budget_(budget) {}

  // The kept copy of `id`, open, when its bytes hash to `id`
  // (ReadFile::OpenHolding: later reads are checked too); a copy that
  // does not is removed.
  std::optional<ReadFile> Find(const ContentId& id) const;

  // Keeps `file` (a finished file holding `id`) as the newest copy for
  // `series`, removing the series' copies beyond kCopiesPerSeries, then
  // the oldest copies until the cache fits its budget. Best effort: a
  // failure keeps nothing.
  void Keep(const std::string& series, const ContentId& id, const std::string& file) const;

  struct Entry {
    std::string path;
    ContentId id;
    uint64_t size = 0;
    int64_t mtime = 0;     // seconds since the epoch
    int64_t mtime_ns = 0;  // the same in nanoseconds, which orders copies saved in one second
  };
  // Every copy, oldest first.
  std::vector<Entry> List() const;

  // Removes the copies `needed` says no pointer names, then the oldest
  // until the rest fit the budget. Returns the bytes freed.
  uint64_t Prune(const std::function<bool(const ContentId&)>& needed) const;

 private:
  void FitBudget() const;
  std::string dir_;
  uint64_t budget_;
};

}  // namespace zipnn::store
