// Walking the chain of a stored version: the version's object, the base
// it is a delta of, that one's base, and so on down to a standalone base,
// and from each delta of object format 8 also the versions it references
// (it takes some tensors from them) and their chains: a chain is a graph
// with no cycle, each object of which is read once. Each object is opened
// and checked on the way (in the store, holding the content it is filed
// under, no loop, no way down longer than kMaxChainDepth, no more than
// kMaxChainObjects objects), and only headers are read. Restore (restore.h) decodes what this opens;
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
// Nor one that needs more objects than this, bases and references
// together (an add keeps far below: parents.h).
inline constexpr size_t kMaxChainObjects = 4096;

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
  // Links from the object asked about on the way the walk first met it:
  // 0 for that one, then 1, 2, ... down to the base.
  int depth = 0;
  bool delta = false;
  ContentId base;                     // for a delta
  std::vector<ContentId> references;  // for a delta of format 8: the versions it takes tensors from besides its base
  // What decoding it reads: its base, then its references (none for a base).
  std::vector<ContentId> needs() const;
  uint64_t raw_size = 0;
  uint64_t object_size = 0;
  uint16_t format = 0;  // the object's format version
  container::BaseChoice choice = container::BaseChoice::kSeries;  // why its base, for a delta
};

// Calls `visit` for each object `id` needs, each once, reading headers
// only: `id` first, then depth first down each object's base and then its
// references, so that a chain without references is shown from `id` down
// to its base, and an object is shown after one that needs it. A missing
// object ends the walk with NotFound naming it, after the objects met
// before it; a chain that comes back to an object it passed, is longer
// than kMaxChainDepth or needs more than kMaxChainObjects objects is
// Corruption; so is an object that holds other content than its id says.
Status VisitChain(const Store& store, const ContentId& id, const std::function<void(const ChainLink&)>& visit);

// The first link VisitChain shows: how `id` itself is stored, from its
// header alone.
Result<ChainLink> ReadLink(const Store& store, const ContentId& id);

// How an object is stored: its kind and base, and the depth of its chain.
struct StoredInfo {
  bool delta = false;
  ContentId base;
  std::vector<ContentId> references;  // ChainLink's
  // Deltas to decode before it on the longest way down, through bases
  // and references alike: 0 for a base, else one more than the deepest
  // of the versions it needs.
  int depth = 0;
  uint64_t object_size = 0;
  ContentId last_base;    // the base its chain of bases ends at (itself for a base)
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

// Checks that `id` and every object of its chain are whole (each object's
// headers and every chunk record checksum: container::CheckRecords) and
// marks them as just used (ObjectStore::Touch), so that a gc running now
// keeps the whole chain. An error when the chain is not whole or an
// object is damaged: it must not be relied on, nor built on. Objects in
// `done` are taken as checked already, and those checked here are added.
Status TouchChain(const Store& store, const ContentId& id, std::set<ContentId>* done = nullptr);

}  // namespace zipnn::store
