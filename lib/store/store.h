// A Store: one object store and what working with it needs (its scratch
// and raw-copy folders, the work tree where earlier versions may still
// be, the policy in force). Every part of lib/store takes one. It is the
// store's view of a repository; git's own is git::Repository (lib/git).
//
// A plain value: copyable, thread-compatible.
#pragma once

#include <functional>
#include <string>

#include "lib/config/policy.h"
#include "lib/store/object_store.h"

namespace zipnn::store {

struct Store {
  ObjectStore objects;
  std::string temp_dir;   // spooled checkpoints and restored bases
  std::string cache_dir;  // raw copies kept for the next delta (raw_cache.h)
  std::string work_dir;   // the work tree's top, where earlier versions may still be; empty: none
  config::Policy policy;
  std::string rebased_dir = "";  // versions re-stored as deltas, for pushes (rebased.h); empty: none noted
  // Where encoding an object reports its progress (container::
  // EncodeOptions::progress): the clean filter's line on a terminal while
  // it stores one checkpoint. Unset: nowhere.
  std::function<void(uint64_t done, uint64_t total)> encoding;
};

}  // namespace zipnn::store
