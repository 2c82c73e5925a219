// Removing the objects of a store that nothing needs (`git zipnn gc`).
// Needed are the objects of every checkpoint a pointer names, every base
// of their chains, and every object used within a grace period (with the
// bases of its chain); the caller finds the pointers (lib/git) and holds
// the store's lock exclusive, so running adds (whose filter processes
// hold it shared until git has recorded their pointers) are done and new
// ones wait. As a second guard, an add marks what it stores or reuses,
// with every base of its chain (ObjectStore::Touch), before git records a
// pointer.
//
// An object is removed by renaming it aside (`<object>.gc`), checking
// that no add marked it meanwhile, then unlinking; one marked meanwhile
// is put back. A gc interrupted between the two steps leaves the `.gc`
// file, which the next gc puts back first. Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/status.h"
#include "lib/store/chain.h"
#include "lib/store/store.h"
#include "lib/store/object_store.h"

namespace zipnn::store {

// The objects a gc keeps, by hex id. An object that cannot be read (a
// damaged header) is needed all the same, since gc never turns damaged
// into missing; `unreadable` holds its id and why. A missing object is
// fsck's to report: there is nothing to keep.
struct Needed {
  std::set<std::string> ids;
  std::map<std::string, std::string> unreadable;
};

// Adds `id` and every base of its chain.
void NeedChain(const Store& store, const ContentId& id, Needed& needed);

// Puts back every object an interrupted gc left aside (only files named
// <id>.gc in that object's folder).
Status PutBackSetAside(const Store& store, const Removing& removing);

struct SweepOptions {
  bool dry_run = false;    // remove nothing, list what would go
  int64_t started = 0;     // when the gc began (seconds since the epoch)
  int64_t keep_since = 0;  // objects used since then are kept, with their chains
  // Scratch files and unfinished objects of any age are leftovers (not
  // only those older than an hour), once no live process holds them.
  bool now = false;
};
struct Swept {
  // Removed (or, in a dry run, to be removed): objects, raw copies and
  // leftover files of processes that died, in the order they were met.
  std::vector<std::pair<ContentId, uint64_t>> objects, raw_copies;
  std::vector<std::string> leftovers;
  // Files and folders under the store's root that git-zipnn did not
  // write (ObjectStore::Kind::kForeign), named from the root, a folder
  // with a trailing '/': left as they are, for the caller to warn about.
  std::vector<std::string> foreign;
  uint64_t freed = 0;        // bytes of the objects
  uint64_t kept = 0;         // objects kept
  uint64_t cache_freed = 0;     // bytes of the raw copies
  uint64_t prepared_freed = 0;  // bytes of deltas prepared for the next add (checkin.h)
  // Leftovers younger than an hour that no live process holds (a git add
  // stopped with Ctrl-C): kept, unless options.now.
  size_t young_files = 0;
  uint64_t young_bytes = 0;
  // With options.now on a file system whose locks hold nothing
  // (LocksWork): leftovers were taken only once an hour old.
  bool locks_hold_nothing = false;
};

// Adds the objects used since options.keep_since (and their chains) to
// `needed`, then removes every other object, the raw copies no needed id
// names (and any beyond the cache's budget), and scratch files and
// unfinished objects older than an hour (of any age with `now`) that no
// live process holds (InUse). Only names git-zipnn gives what
// it writes are removed (ObjectStore::Kind); anything else in the store's
// folder is listed in Swept::foreign and left.
Result<Swept> Sweep(const Store& store, const Removing& removing, Needed& needed, const SweepOptions& options);

// What a stopped command left in the scratch folder (store.temp_dir): the
// files there last changed more than kStoppedSeconds ago that no live
// process holds are removed, so that the next git add after a Ctrl-C
// frees its disk. Only where locks work: `probe`, a scratch file this
// process holds, must show as held (on a file system without locks a
// live process's file would look left). Returns the files and bytes
// removed.
struct Freed {
  size_t files = 0;
  uint64_t bytes = 0;
};
Freed RemoveStoppedScratch(const Store& store, const std::string& probe);

// The folders `<prefix>-XXXXXX` of the scratch folder that hold a store
// of their own for one command (lib/remote/transfer.cc), which gc removes
// once a killed command left them and they are empty.
inline constexpr char kRefetchScratch[] = "refetch";          // reads of versions retention removed here
inline constexpr char kCheckRemoteScratch[] = "fsck-remote";  // fsck --remote's copies
// Younger files may be ones a live process has created and not yet
// locked.
inline constexpr int64_t kStoppedSeconds = 10;

}  // namespace zipnn::store
