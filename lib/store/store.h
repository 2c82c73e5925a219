// A Store: one object store and what working with it needs (its scratch
// and raw-copy folders, the work tree where earlier versions may still
// be, the policy in force). Every part of lib/store takes one. It is the
// store's view of a repository; git's own is git::Repository (lib/git).
//
// A value (copyable, thread-compatible) that keeps one rule of its own:
// the store's lock is taken only through it (BeginAdding, BeginRemoving),
// and what must hold the lock takes the proof that it is held.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/config/policy.h"
#include "lib/store/object_store.h"
#include "lib/store/retention.h"

namespace zipnn::store {

// Proof, for as long as it lives, that this process holds the store's
// lock shared: it may write objects and record them in git (git add,
// repack), beside any number of others doing the same, and no gc or
// retain removes anything meanwhile. Only a Store hands one out.
class Adding {
 public:
  Adding(Adding&&) = default;
  Adding& operator=(Adding&&) = default;

 private:
  friend struct Store;
  explicit Adding(StoreLock lock) : lock_(std::move(lock)) {}
  StoreLock lock_;
};

// Proof that this process holds the store's lock alone: it may remove
// objects (gc, retain), since no add is building on them. Only a Store
// hands one out.
class Removing {
 public:
  Removing(Removing&&) = default;
  Removing& operator=(Removing&&) = default;

 private:
  friend struct Store;
  explicit Removing(StoreLock lock) : lock_(std::move(lock)) {}
  StoreLock lock_;
};

// How the store holds a version (Store::Resolve).
struct Resolved {
  enum class Kind {
    kExact,        // its own object is here (whole or not: restoring says)
    kApproximate,  // retention thinned it: `retained` names the approximate version
    kDropped,      // retention dropped it: `retained` says when
    kAbsent,       // neither its object nor a record of it is here
  };
  Kind kind = Kind::kAbsent;
  std::optional<Retained> retained;  // kApproximate and kDropped
};

// Where a repository keeps its store and what works beside it, as git
// says (lib/git/discover.h finds it): all Store::Open needs.
struct StorePlace {
  std::string objects;    // the object store's folder (zipnn.storepath, or <git dir>/zipnn/objects)
  std::string zipnn_dir;  // <git dir>/zipnn: scratch, raw copies, rebased versions
  std::string user;       // the git folder registered as a user of a shared store
  std::optional<std::string> work_dir;  // the work tree's top; none: a bare repository
};

struct OpenedStore;

struct Store {
  // The store at `place`, with the policy of the work tree's .zipnn.yaml
  // (the defaults without one, or in a bare repository). A mistake in
  // .zipnn.yaml costs its key the default and comes back in `warnings`,
  // each saying what it costs: it never stops git. `place.user` is
  // registered as a user of the store, so that a gc from another
  // repository sharing it keeps what this one needs; a store it cannot
  // write to is one it does not add to either, so that may fail quietly.
  static OpenedStore Open(const StorePlace& place);

  ObjectStore objects;
  std::string temp_dir;   // spooled checkpoints and restored bases
  std::string cache_dir;  // raw copies kept for the next delta (raw_cache.h)
  std::string work_dir;   // the work tree's top, where earlier versions may still be; empty: none
  config::Policy policy;
  std::string rebased_dir = "";  // versions re-stored as deltas, for pushes (rebased.h); empty: none noted
  // Checkpoints stored ahead of `git add` by `git zipnn commit` on each
  // rank (lib/ops/added.h); empty: none are noted.
  std::string added_dir = "";
  // Where encoding an object reports its progress (container::
  // EncodeOptions::progress). Set only by CheckIn, on its own copy, from
  // NewVersion::progress; unset: nowhere.
  std::function<void(uint64_t done, uint64_t total)> encoding = nullptr;

  // Takes the lock shared (creating the store's folder if needed). When a
  // gc or retain holds it, says "<command>: waiting for a gc of the store
  // to finish" on stderr and waits.
  Result<Adding> BeginAdding(const std::string& command) const;
  // Takes the lock alone. When adds hold it, says "<command>: waiting for
  // running adds to finish" on stderr and waits.
  Result<Removing> BeginRemoving(const std::string& command) const;

  // How version `id` is held here: its object, else what retention made
  // of it (its record; Corruption for a damaged one), else absent.
  Result<Resolved> Resolve(const ContentId& id) const;
};

struct OpenedStore {
  Store store;
  std::vector<std::string> warnings;  // .zipnn.yaml's mistakes
};

}  // namespace zipnn::store
