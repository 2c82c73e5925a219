// Storing and restoring checkpoints in an object store, by the policy of
// .zipnn.yaml: the versions of a path form a series (an append-only list
// of content ids under <zipnn dir>/series), and so do files in one folder
// whose names differ only in their digits (step-000100.safetensors,
// step-000200.safetensors), ordered by those digits. A version is stored as
// a delta against the one before it (or the series' last base) unless it
// is due to be a base (every base_interval-th version, a chain at max_chain, or a
// delta that does not save min_gain against the last base's size).
// Restoring decodes the chain of bases, and every result is checked
// against its content id.
//
// Thread-compatible; separate processes may store at once (objects and
// series appends are atomic).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/config/policy.h"
#include "lib/store/object_store.h"
#include "lib/store/pointer.h"

namespace zipnn::store {

// A restore never follows a chain longer than this (a loop or a damaged
// store fails instead of running on).
inline constexpr int kMaxChainDepth = 1000;

struct Repository {
  ObjectStore objects;
  std::string series_dir;  // one file per series
  std::string temp_dir;    // spooled checkpoints and restored bases
  config::Policy policy;
};

// The series a path belongs to: its folder and its file name with every
// run of digits replaced by '#' ("run/step-#.safetensors").
std::string SeriesName(const std::string& path);

// The digit runs of a path's file name joined by '.' ("000100"), which
// order the versions of a series.
std::string StepOf(const std::string& path);

// Orders StepOf values by their numbers in turn, by value (so 20 < 100).
bool StepLess(const std::string& a, const std::string& b);

// A version of a series, as `git add` recorded it in the series index.
struct Version {
  ContentId id;
  std::string step;  // StepOf its path
};

// The versions recorded for the series of `path`, in series order: by
// step, then in the order they were added; each id once (its first place).
std::vector<Version> SeriesVersions(const Repository& repo, const std::string& path);

// The name of the series index of `path`'s series (a hash of SeriesName).
std::string SeriesKey(const std::string& path);

// Every series recorded under series_dir, by key, each in series order.
Result<std::map<std::string, std::vector<Version>>> RecordedSeries(const Repository& repo);

// Stores the checkpoint in `file` (its content id already known) as a
// version of the series of `path`, unless the store has it. Returns its
// pointer.
Result<Pointer> CheckIn(const Repository& repo, const std::string& path, const std::string& file,
                        const ContentId& id);

// Marks `id` and every base of its chain as just used (ObjectStore::Touch),
// so that a gc running now keeps the whole chain. An error when the chain
// is not whole: the object must not be relied on.
Status TouchChain(const Repository& repo, const ContentId& id);

// Writes the exact bytes of `id` to `out`, verified.
Status Restore(const Repository& repo, const ContentId& id, ByteSink& out);

// Restore of the checkpoint a pointer names, for the file `path`: an object
// missing from its chain is named, with the path and the store.
Status RestoreFile(const Repository& repo, const Pointer& pointer, const std::string& path, ByteSink& out);

// One object of a chain, as VisitChain shows it.
struct ChainLink {
  ContentId id;
  int depth = 0;  // 0 for the object asked about, then 1, 2, ... down to the base
  bool delta = false;
  ContentId base;  // for a delta
  uint64_t raw_size = 0;
  uint64_t object_size = 0;
};

// Calls `visit` for each object from `id` down to its base, reading
// headers only. A missing object ends the walk with NotFound naming it; a
// chain that comes back to an object it passed, or is longer than
// kMaxChainDepth, is Corruption; so is an object that holds other content
// than its id says.
Status VisitChain(const Repository& repo, const ContentId& id, const std::function<void(const ChainLink&)>& visit);

// What fsck checks of one stored checkpoint: every object of its chain is
// in the store, names the content it is filed under, and the first holds
// the pointer's size; with `decode`, the chain also decodes to exactly
// the pointer's content (every checksum and the content id verified).
// NotFound names a missing object; Corruption the damaged one.
Status CheckStored(const Repository& repo, const Pointer& pointer, bool decode);

// How an object is stored: its kind and base, and the depth of its chain.
struct StoredInfo {
  bool delta = false;
  ContentId base;
  int depth = 0;  // deltas to decode before it
  uint64_t object_size = 0;
};
Result<StoredInfo> Describe(const Repository& repo, const ContentId& id);

}  // namespace zipnn::store
