// Restoring a stored version: decoding its chain (chain.h) into the exact
// bytes of the checkpoint, whole or by parts, every result checked against
// its content id (a whole restore) or each chunk's raw checksum (a part).
// Memory stays bounded whatever the chain's depth: a restore decodes at
// most a fixed number of levels at once.
//
// Thread-compatible; VersionReader's reads are thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/container/object.h"
#include "lib/formats/checkpoint.h"
#include "lib/store/pointer.h"
#include "lib/store/store.h"

namespace zipnn::container {
class ObjectReader;
}  // namespace zipnn::container

namespace zipnn::store {

// A whole copy of a version's bytes that hashed to its id just now (a
// work-tree file restored a moment ago, a kept raw copy), or nothing.
using FindCopy = std::function<std::optional<ReadFile>(const ContentId&)>;

// Writes the exact bytes of `id` to `out`, verified. With `find_copy`, the
// chain is decoded only down to the first base it has a copy of, which
// then stands in for the rest (a checkout of versions in step order
// decodes each delta once, not its whole chain each time).
Status Restore(const Store& store, const ContentId& id, ByteSink& out, const FindCopy& find_copy = nullptr);

// Restore of the checkpoint a pointer names, for the file `path`: an object
// missing from its chain is named, with the path and the store.
Status RestoreFile(const Store& store, const Pointer& pointer, const std::string& path, ByteSink& out,
                   const FindCopy& find_copy = nullptr);
// The NotFound RestoreFile gives when an object of the chain of
// `pointer` is missing: which object, for which path, in which store.
Status MissingObject(const Store& store, const Pointer& pointer, const std::string& path);

// Restore and RestoreFile into a scratch file in temp_dir, verified, open
// for reading (its layout not read yet); the file goes with the
// Checkpoint.
Result<formats::Checkpoint> RestoreToScratch(const Store& store, const ContentId& id);
Result<formats::Checkpoint> RestoreFileToScratch(const Store& store, const Pointer& pointer, const std::string& path,
                                                 const FindCopy& find_copy = nullptr);

// Random access to the checkpoint `id`, through its chain, without
// restoring the rest: a read decodes only the chunks it covers, at every
// level, and checks each chunk of the top object against its raw checksum
// (docs/format.md, "Raw checksums"), so a part read is as trustworthy as a
// whole restore. Memory: container::kReaderCacheBytes of decoded chunks
// at the top, two chunks at each level below it.
// Unsupported when the top object is older than format 5 (it has no raw
// checksums; restore it whole instead); NotFound when an object of the
// chain is missing. Thread-safe reads, like container::ObjectReader.
class ReferencedVersions;
class VersionReader : public ByteSource {
 public:
  ~VersionReader() override;
  uint64_t size() const override;
  Status ReadAt(uint64_t offset, void* out, size_t n) const override;
  const std::string& name() const override;

 private:
  friend class ReferencedVersions;  // opens those a restore reads
  friend Result<std::unique_ptr<VersionReader>> OpenVersion(const Store& store, const ContentId& id);
  // OpenVersion of `id`, `above` links below the version a restore asked
  // for, reading the versions it references through `references` (its
  // own when null).
  static Result<std::unique_ptr<VersionReader>> Open(const Store& store, const ContentId& id, size_t above,
                                                     ReferencedVersions* references);
  struct Levels;  // the chain's object files, and a reader for each
  VersionReader();
  std::unique_ptr<Levels> levels_;
  const container::ObjectReader* top_ = nullptr;
};
Result<std::unique_ptr<VersionReader>> OpenVersion(const Store& store, const ContentId& id);

// The stored versions a decode reads besides a chain of bases: those an
// object of format 8 references (and, for a receiver, the base of a
// received delta), each opened once for every object that reads it. A
// version is read from a copy when `find_copy` has one, else part by part
// through its own chain (VersionReader), or restored whole into a scratch
// file when its object has no raw checksums. A version opened `depth`
// links below `top` (the version being decoded, which errors name) must
// keep within kMaxChainDepth, as every walk does; one that needs a version
// still being opened is a loop (Corruption). Thread-compatible; what it
// gives stays valid, and is read thread-safely, while it lives.
class ReferencedVersions {
 public:
  ReferencedVersions(const Store& store, const ContentId& top, const FindCopy& find_copy)
      : store_(store), top_(top), find_copy_(find_copy) {}
  ReferencedVersions(const ReferencedVersions&) = delete;
  ReferencedVersions& operator=(const ReferencedVersions&) = delete;

  // The versions the object `info` describes references, in the order of
  // its reference table; `depth`: that object's, below `top`.
  Result<std::vector<const ByteSource*>> Of(const container::ObjectInfo& info, size_t depth);
  // The version `id`, `depth` links below `top`.
  Result<const ByteSource*> Open(const ContentId& id, size_t depth);

 private:
  struct Opened {
    std::optional<formats::Checkpoint> whole;
    std::unique_ptr<VersionReader> reader;
    const ByteSource* source = nullptr;  // null while it is being opened
  };

  const Store& store_;
  const ContentId top_;
  const FindCopy find_copy_;
  std::map<ContentId, Opened> opened_;
};

// What fsck checks of one stored checkpoint: every object of its chain is
// in the store, names the content it is filed under, and the first holds
// the pointer's size; with `decode`, the chain also decodes to exactly
// the pointer's content (every checksum and the content id verified).
// NotFound names a missing object; Corruption the damaged one.
Status CheckStored(const Store& store, const Pointer& pointer, bool decode);

}  // namespace zipnn::store
