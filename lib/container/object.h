// Whole objects: encode a checkpoint (standalone or as a delta) into the
// container format, decode it back, and scan its chunk records for
// statistics. Work is cut into stripes of consecutive chunks of one region,
// coded in parallel on a thread pool and written in order; the bytes
// written do not depend on the number of threads.
//
// Memory stays bounded: at most 2 x threads stripes (each at most
// kStripeBytes of raw data, or one chunk when chunks are larger, plus its
// records) are in flight, and the threads are lowered so that these fit
// in kWorkingMemory whatever count is asked for (WorkingThreads).
// Functions are thread-safe; each call uses its own pool.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/codec/group_coder.h"
#include "lib/container/format.h"
#include "lib/container/free_list.h"

namespace zipnn::container {

// A stripe holds at most this many chunks and this many raw bytes.
inline constexpr size_t kStripeChunks = 16;
inline constexpr uint64_t kStripeBytes = 512u << 10;

// What the stripes in flight of one encode or decode, and its coders,
// may take: a .zipnn.yaml may ask for 4096 threads and 64 MiB chunks at
// once.
inline constexpr uint64_t kWorkingMemory = 1ull << 30;

// The threads an encode or decode of chunks of `chunk_size` bytes runs on
// when `threads` are asked for (0: all cores): as many, but no more than
// keep their work within kWorkingMemory, and at least 1. Each thread has
// up to two stripes in flight, each holding its raw bytes, its coded
// bytes and its base, and a coder whose scratch is about one more stripe.
// Objects are the same for any count.
int WorkingThreads(int threads, uint32_t chunk_size);

struct EncodeOptions {
  uint32_t chunk_size = kDefaultChunkSize;
  int threads = 0;  // 0: all cores
  int zstd_level = 3;
  codec::CoderPolicy policy = codec::CoderPolicy::kAuto;
  // How delta chunks are taken against the base (chunk_codec.h).
  codec::TransformPolicy transform = codec::kAutoTransform;
  // Each chunk decoded as soon as it is encoded, while its input and base
  // are at hand, and compared with its input: a Corruption if they differ.
  // CheckWritten then proves the object as written without decoding it
  // again, for an object that is to take a stored one's place.
  bool verify = false;
  // Called as each stripe is written, in order, with the raw bytes encoded
  // so far and in all (never twice at once, though not always from the
  // same thread).
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// A version a delta's regions may be taken against besides its base
// (format 8 on): a stored version holding some of its tensors' bytes.
struct ReferenceSource {
  const ByteSource* source = nullptr;
  ContentId id;
};

// The checkpoint a delta is taken against, and the versions it references
// (a region whose `source` is k reads references[k - 1]).
struct DeltaBase {
  const ByteSource* source = nullptr;
  ContentId id;
  BaseChoice choice = BaseChoice::kSeries;  // recorded in format 6 on
  std::vector<ReferenceSource> references;  // any makes the object format 8
};

// What a delta decodes against: its base, then the versions its header
// references, in the order of its reference table.
struct Sources {
  const ByteSource* base = nullptr;
  std::vector<const ByteSource*> references;
  const ByteSource* Of(uint32_t source) const { return source == 0 ? base : references[source - 1]; }
};
// What a delta encoded against `base` decodes against.
Sources SourcesOf(const DeltaBase& base);

struct EncodeResult {
  ContentId content_id;
  uint64_t raw_size = 0;
  uint64_t object_size = 0;
  // What was written, for CheckWritten; `verified` with the option.
  ObjectHeader header;
  std::vector<ChunkRef> chunks;
  bool verified = false;
};

// Encodes `input`, whose bytes `layout` describes, into `out`. With a base,
// the object is a delta and `layout`'s delta regions read from it.
Result<EncodeResult> EncodeObject(const ByteSource& input, const Layout& layout, const DeltaBase* base,
                                  const EncodeOptions& options, ByteSink& out);

// Whether `object` holds exactly what an encode with `verify` wrote as
// `encoded`: its header and chunk map are the bytes written and read back
// as written, and every chunk record has the checksum of the record that
// was decoded and compared with its input. Each chunk thus decodes to its
// input, and the whole to the content id the encode hashed: the object is
// proven without a second decode. Its ObjectInfo, or a Corruption (an
// InvalidArgument for an encode without `verify`).
Result<ObjectInfo> CheckWritten(const ByteSource& object, const EncodeResult& encoded);

struct DecodeOptions {
  int threads = 0;  // 0: all cores
  // Decode only this region (no content-id check is possible then; every
  // record checksum still is, and from format 5 each chunk's raw checksum).
  std::optional<size_t> only_region;
};

// Decodes `object` (described by `info`, from ReadObjectInfo) into `out`,
// verifying every chunk checksum and, for a whole decode, the content id.
// A delta needs `sources`: the checkpoint whose id the header names as its
// base, and each version its reference table names.
Status DecodeObject(const ByteSource& object, const ObjectInfo& info, const Sources& sources,
                    const DecodeOptions& options, ByteSink& out);
inline Status DecodeObject(const ByteSource& object, const ObjectInfo& info, const ByteSource* base,
                           const DecodeOptions& options, ByteSink& out) {
  return DecodeObject(object, info, Sources{base, {}}, options, out);
}

inline constexpr uint64_t kReaderCacheBytes = 4u << 20;

// Random access to the checkpoint an object holds. ReadAt decodes the
// chunks a range covers (each checksum verified) and keeps the last few it
// decoded, so reads that move front to back decode each chunk once. A
// delta reads its base through another ByteSource, usually the
// ObjectReader of the next link of its chain: a chain of deltas then
// decodes in one pass, chunk by chunk, each level applied onto the one
// below, and no level is ever written out whole. Partial reads cannot be
// checked against the content id; whoever reads the whole checkpoint does
// (DecodeObject of the top object, which reads its base through these).
//
// Thread-safe: ReadAt may be called from several threads at once (two
// threads that need one chunk decode it once). Memory: at most
// `cache_bytes` (kReaderCacheBytes unless told) of decoded chunks, and
// never fewer than two, plus the chunks being read. `object` and `base`
// must outlive the reader.
class ObjectReader : public ByteSource {
 public:
  // Fails when a delta's `base` is missing or of the wrong size. With
  // `check_raw`, every chunk read is checked against the raw checksum its
  // record carries (format 5 on; an older object has none): what the top
  // object of a partial read needs, for then no content id is checked, and
  // what the levels below it can skip, for a wrong byte there shows in the
  // top's chunks.
  // `cache_bytes` bounds the decoded chunks kept (never fewer than two).
  static Result<std::unique_ptr<ObjectReader>> Open(const ByteSource& object, ObjectInfo info, Sources sources,
                                                    bool check_raw = false, uint64_t cache_bytes = kReaderCacheBytes);
  static Result<std::unique_ptr<ObjectReader>> Open(const ByteSource& object, ObjectInfo info, const ByteSource* base,
                                                    bool check_raw = false, uint64_t cache_bytes = kReaderCacheBytes) {
    return Open(object, std::move(info), Sources{base, {}}, check_raw, cache_bytes);
  }
  ~ObjectReader() override;

  uint64_t size() const override { return info_.header.raw_size; }
  Status ReadAt(uint64_t offset, void* out, size_t n) const override;
  const std::string& name() const override { return object_.name(); }
  // A range that is exactly one chunk: that chunk, decoded (or taken from
  // the cache), shared.
  std::shared_ptr<const uint8_t[]> Shared(uint64_t offset, size_t n) const override;
  // That chunk, out of the cache (or decoded for the caller alone), when
  // nobody else holds it.
  std::shared_ptr<uint8_t[]> Take(uint64_t offset, size_t n) const override;

 private:
  using Decoded = Result<std::shared_ptr<const uint8_t[]>>;  // one chunk's bytes
  struct Slot {
    size_t index;
    std::shared_future<Decoded> ready;
  };
  struct Work;  // a decoder and its buffers

  ObjectReader(const ByteSource& object, ObjectInfo info, Sources sources, bool check_raw, uint64_t cache_bytes);
  Decoded Chunk(size_t index) const;
  // The index of the chunk that is exactly [offset, offset + n), if any.
  std::optional<size_t> ChunkAtRange(uint64_t offset, size_t n) const;
  Decoded DecodeChunkAt(size_t index) const;
  // For a delta chunk that changes nothing (codec::IsUnchangedDelta) whose
  // base holds that range as one decoded chunk: that very chunk (taken
  // from the base where it can be, else shared with it), checked against
  // the raw checksum where this reader checks them; null to decode the
  // chunk as any other.
  Decoded UnchangedChunk(size_t index, const uint8_t* record) const;

  const ByteSource& object_;
  const ObjectInfo info_;
  const Sources sources_;
  const bool check_raw_;
  size_t capacity_;  // decoded chunks kept
  mutable std::mutex mu_;
  mutable std::deque<Slot> cache_;  // guarded by mu_; oldest first
  mutable FreeList<Work> spare_;
};

struct GroupStats {
  uint64_t raw_bytes = 0;
  uint64_t stored_bytes = 0;  // payloads only
  std::array<uint64_t, codec::kMaxCoderValue + 1> chunks_by_coder{};
};

struct RegionStats {
  // By codec::Transform, then by group index: the chunks taken by each
  // transform (those stored as they are count as XOR's, the first), whose
  // groups are different bytes (codec::TransformInfo::grouping).
  std::array<std::vector<GroupStats>, codec::kTransformCount> groups;
  uint64_t record_bytes = 0;  // records including group tables
  std::array<uint64_t, codec::kTransformCount> chunks_by_transform{};
};

// Reads every chunk record and checks its checksum: the whole object is
// as it was written, short of decoding it (which also proves the content
// id). Cheap next to a decode: one read and one hash of the object.
Status CheckRecords(const ByteSource& object, const ObjectInfo& info);

// Reads every chunk record (checksums verified) and sums, per region and
// byte group, the coders chosen and the bytes stored.
Result<std::vector<RegionStats>> ScanObject(const ByteSource& object, const ObjectInfo& info);

}  // namespace zipnn::container
