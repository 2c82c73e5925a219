// Storing and restoring checkpoints in an object store, by the policy of
// .zipnn.yaml. A new version of a series (lib/series) is stored as a
// delta against the nearest earlier version the store holds, or as a base
// when it is the first, when it is due (every base_interval-th), when the
// delta would exceed max_chain, or when the delta does not save min_gain
// against the version coded standalone. The caller says which versions
// came before (read from git: lib/git/series_versions.h), so every clone
// and worktree continues the same chains. Restoring decodes the chain of
// bases, and every result is checked against its content id.
//
// Thread-compatible; separate processes may store at once (objects are
// written atomically).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/config/policy.h"
#include "lib/formats/checkpoint.h"
#include "lib/store/object_store.h"
#include "lib/store/pointer.h"

namespace zipnn::container {
class ObjectReader;
}  // namespace zipnn::container

namespace zipnn::store {

// A restore never follows a chain longer than this (a loop or a damaged
// store fails instead of running on), and no add or repack makes one.
inline constexpr int kMaxChainDepth = static_cast<int>(config::kMaxChainLimit);

struct Repository {
  ObjectStore objects;
  std::string temp_dir;   // spooled checkpoints and restored bases
  std::string cache_dir;  // raw copies kept for the next delta (raw_cache.h)
  std::string work_dir;   // the work tree's top, where earlier versions may still be; empty: none
  config::Policy policy;
};

// A version of a series, as git holds it.
struct Version {
  ContentId id;
  std::string step;  // series::Placed::step of its path
  std::string path;  // where git holds it, from the top of the work tree
};

// Orders versions by step (series::StepLess), keeping the given order
// among equal steps, and keeps each id once (at its first place).
void SortSeries(std::vector<Version>& versions);

// Why a version was stored standalone.
enum class BaseReason {
  kNotBase,    // stored as a delta
  kFirst,      // no earlier version of its series
  kNotStored,  // no earlier version of its series is in this store
  kDue,        // every base_interval-th version is a base
  kChain,      // a delta would make a chain longer than max_chain
  kNoGain,     // the delta did not save min_gain against standalone
  kNoGainOrPolicy,  // found later: its place makes it a delta now, so the
                    // delta did not pay, or another policy was in force
  kDamagedBase,     // the version it would be a delta of is damaged in the store
};
// "first of its series", "due every 10", ...
std::string BaseReasonText(BaseReason reason, const config::Policy& policy);

// The versions of the new one's series that git holds, in series order;
// with `deep`, its whole history too (asked for only when the last base
// before the new version is not among the shallow ones).
using EarlierVersions = std::function<Result<std::vector<Version>>(bool deep)>;

// A checkpoint to store: its bytes in `file` (content id known), where
// git will hold it, and its place in its series.
struct NewVersion {
  std::string file;
  ContentId id;
  std::string path;
  std::string series;  // series::Placed::name
  std::string step;
};

struct CheckedIn {
  Pointer pointer;
  bool stored = false;  // false: the store had it already
  BaseReason reason = BaseReason::kNotBase;
  // What was found damaged on the way: this version's own object (stored
  // anew in its place), or the chain of the version it would have been a
  // delta of (made a base instead). Empty when nothing was.
  std::string damaged;
};

// Why the stored version at `position` of `series` (in series order,
// its whole history) is a base, by the policy in force now: the reason its
// place gives, or kNoGainOrPolicy when its place would make it a delta.
BaseReason WhyBase(const Repository& repo, const std::vector<Version>& series, size_t position);

// Stores `version` unless the store has it (whole). Returns its pointer
// and how it was stored.
Result<CheckedIn> CheckIn(const Repository& repo, const NewVersion& version, const EarlierVersions& earlier);

// Checks that `id` and every base of its chain are whole (each object's
// headers and every chunk record checksum: container::CheckRecords) and
// marks them as just used (ObjectStore::Touch), so that a gc running now
// keeps the whole chain. An error when the chain is not whole or an
// object is damaged: it must not be relied on, nor built on. Objects in
// `done` are taken as checked already, and those checked here are added.
Status TouchChain(const Repository& repo, const ContentId& id, std::set<ContentId>* done = nullptr);

// A whole copy of a version's bytes that hashed to its id just now (a
// work-tree file restored a moment ago, a kept raw copy), or nothing.
using FindCopy = std::function<std::optional<ReadFile>(const ContentId&)>;

// Writes the exact bytes of `id` to `out`, verified. With `find_copy`, the
// chain is decoded only down to the first base it has a copy of, which
// then stands in for the rest (a checkout of versions in step order
// decodes each delta once, not its whole chain each time).
Status Restore(const Repository& repo, const ContentId& id, ByteSink& out, const FindCopy& find_copy = nullptr);

// Random access to the checkpoint `id`, through its chain, without
// restoring the rest: a read decodes only the chunks it covers, at every
// level, and checks each chunk of the top object against its raw checksum
// (docs/format.md, "Raw checksums"), so a part read is as trustworthy as a
// whole restore. Memory: container::kReaderCacheBytes of decoded chunks
// at the top, two chunks at each level below it.
// Unsupported when the top object is older than format 5 (it has no raw
// checksums; restore it whole instead); NotFound when an object of the
// chain is missing. Thread-safe reads, like container::ObjectReader.
class VersionReader : public ByteSource {
 public:
  ~VersionReader() override;
  uint64_t size() const override;
  Status ReadAt(uint64_t offset, void* out, size_t n) const override;
  const std::string& name() const override;

 private:
  friend Result<std::unique_ptr<VersionReader>> OpenVersion(const Repository& repo, const ContentId& id);
  struct Levels;  // the chain's object files, and a reader for each
  VersionReader();
  std::unique_ptr<Levels> levels_;
  const container::ObjectReader* top_ = nullptr;
};
Result<std::unique_ptr<VersionReader>> OpenVersion(const Repository& repo, const ContentId& id);

// Restore of the checkpoint a pointer names, for the file `path`: an object
// missing from its chain is named, with the path and the store.
Status RestoreFile(const Repository& repo, const Pointer& pointer, const std::string& path, ByteSink& out,
                   const FindCopy& find_copy = nullptr);
// The NotFound RestoreFile gives when an object of the chain of
// `pointer` is missing: which object, for which path, in which store.
Status MissingObject(const Repository& repo, const Pointer& pointer, const std::string& path);
// RestoreFile into a scratch file in temp_dir, open for reading (its
// layout not read yet); the file goes with the Checkpoint.
Result<formats::Checkpoint> RestoreToScratch(const Repository& repo, const Pointer& pointer, const std::string& path,
                                             const FindCopy& find_copy = nullptr);

// One object of a chain, as VisitChain shows it.
struct ChainLink {
  ContentId id;
  int depth = 0;  // 0 for the object asked about, then 1, 2, ... down to the base
  bool delta = false;
  ContentId base;  // for a delta
  uint64_t raw_size = 0;
  uint64_t object_size = 0;
  uint16_t format = 0;  // the object's format version
};

// Calls `visit` for each object from `id` down to its base, reading
// headers only. A missing object ends the walk with NotFound naming it; a
// chain that comes back to an object it passed, or is longer than
// kMaxChainDepth, is Corruption; so is an object that holds other content
// than its id says.
Status VisitChain(const Repository& repo, const ContentId& id, const std::function<void(const ChainLink&)>& visit);

// The first link VisitChain shows: how `id` itself is stored, from its
// header alone.
Result<ChainLink> ReadLink(const Repository& repo, const ContentId& id);

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
  ContentId last_base;  // the base its chain ends at (itself for a base)
  double base_ratio = 0;  // that base's object size over its raw size
  uint16_t format = 0;    // the object's format version
};
// Objects whose chains are known, so that walking a long series reads one
// object's header per version instead of its whole chain. Only for
// objects that will not be rewritten while it is in use (a repack keeps
// the versions it has passed).
using ChainMemo = std::map<ContentId, StoredInfo>;
// Reads the chain from `id` down to the first object `memo` knows (when
// given) or to its base.
Result<StoredInfo> Describe(const Repository& repo, const ContentId& id, const ChainMemo* memo = nullptr);

}  // namespace zipnn::store
