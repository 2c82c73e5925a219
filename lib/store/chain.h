// Walking the chain of a stored version: the version's object, the base
// it is a delta of, that one's base, and so on down to a standalone base.
// Each object is opened and checked on the way (in the store, holding the
// content it is filed under, no loop, no deeper than kMaxChainDepth), and
// only headers are read. Restore (restore.h) decodes what this opens;
// placement (placement.h) and gc read what it describes.
//
// Thread-compatible; objects are read, never written, except that
// TouchChain marks them as used.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/status.h"
#include "lib/config/policy.h"
#include "lib/container/object.h"
#include "lib/store/store.h"

namespace zipnn::store {

// A restore never follows a chain longer than this (a loop or a damaged
// store fails instead of running on), and no add or repack makes one.
inline constexpr int kMaxChainDepth = static_cast<int>(config::kMaxChainLimit);

// One object of the chain of `top`, opened and checked: in the store,
// holding the content it is filed under, and neither met before on the
// way down from `top` (`passed`, to which it is added) nor deeper than
// kMaxChainDepth (`above`: links above the first of `passed`).
struct Link {
  ReadFile file;
  container::ObjectInfo info;
};
Result<Link> OpenLink(const Store& store, const ContentId& top, const ContentId& id, std::vector<ContentId>& passed,
                      size_t above = 0);

// One object of a chain, as VisitChain shows it.
struct ChainLink {
  ContentId id;
  int depth = 0;  // 0 for the object asked about, then 1, 2, ... down to the base
  bool delta = false;
  ContentId base;  // for a delta
  uint64_t raw_size = 0;
  uint64_t object_size = 0;
  uint16_t format = 0;  // the object's format version
  container::BaseChoice choice = container::BaseChoice::kSeries;  // why its base, for a delta
};

// Calls `visit` for each object from `id` down to its base, reading
// headers only. A missing object ends the walk with NotFound naming it; a
// chain that comes back to an object it passed, or is longer than
// kMaxChainDepth, is Corruption; so is an object that holds other content
// than its id says.
Status VisitChain(const Store& store, const ContentId& id, const std::function<void(const ChainLink&)>& visit);

// The first link VisitChain shows: how `id` itself is stored, from its
// header alone.
Result<ChainLink> ReadLink(const Store& store, const ContentId& id);

// How an object is stored: its kind and base, and the depth of its chain.
struct StoredInfo {
  bool delta = false;
  ContentId base;
  int depth = 0;  // deltas to decode before it
  uint64_t object_size = 0;
  ContentId last_base;    // the base its chain ends at (itself for a base)
  double base_ratio = 0;  // that base's object size over its raw size
  uint16_t format = 0;    // the object's format version
  container::BaseChoice choice = container::BaseChoice::kSeries;  // why its base, for a delta
};
// Objects whose chains are known, so that walking a long series reads one
// object's header per version instead of its whole chain. Only for
// objects that will not be rewritten while it is in use (a repack keeps
// the versions it has passed).
using ChainMemo = std::map<ContentId, StoredInfo>;
// Reads the chain from `id` down to the first object `memo` knows (when
// given) or to its base.
Result<StoredInfo> Describe(const Store& store, const ContentId& id, const ChainMemo* memo = nullptr);

// Checks that `id` and every base of its chain are whole (each object's
// headers and every chunk record checksum: container::CheckRecords) and
// marks them as just used (ObjectStore::Touch), so that a gc running now
// keeps the whole chain. An error when the chain is not whole or an
// object is damaged: it must not be relied on, nor built on. Objects in
// `done` are taken as checked already, and those checked here are added.
Status TouchChain(const Store& store, const ContentId& id, std::set<ContentId>* done = nullptr);

}  // namespace zipnn::store
