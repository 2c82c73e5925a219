// One chunk: up to chunk_size bytes of one region, taken against the base
// when the region is a delta (XOR, or the arithmetic difference of
// delta_transform.h, whichever the encoder finds cheaper), split into byte
// groups, each group coded on its own. The result is a chunk record
// (docs/format.md, "Chunk record"); the transform is recorded beside it,
// in the chunk index:
//
//   u8 group count, then per group {u8 coder, u32 payload size},
//   then the payloads in group order.
//
// ChunkEncoder/ChunkDecoder own scratch buffers and coder contexts; each
// thread uses its own. The encoder's raw-skip memory (AutoRule) lives from
// one Reset to the next, which the pipeline calls at the start of every
// stripe, so output never depends on how stripes are spread over threads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "lib/base/buffer.h"
#include "lib/base/status.h"
#include "lib/codec/delta_transform.h"
#include "lib/codec/dtype.h"
#include "lib/codec/group_coder.h"
#include "lib/codec/sparse.h"

namespace zipnn::codec {

inline constexpr int kMaxGroups = 9;  // 8-byte elements plus a tail
// Chunks of opaque bytes up to this size (headers, pickles, zip
// directories) are coded with zstd at kSmallOpaqueLevel at least: a few
// kilobytes at level 19 cost microseconds and save 3-7% of them.
inline constexpr size_t kSmallOpaqueBytes = 64u << 10;
inline constexpr int kSmallOpaqueLevel = 19;
inline constexpr size_t kGroupEntryBytes = 5;

struct GroupEntry {
  Coder coder;
  uint32_t stored;  // payload bytes
  uint32_t raw;     // group bytes after decoding
};

struct ChunkGroups {
  int count = 0;
  std::array<GroupEntry, kMaxGroups> group{};
  size_t payload_start = 0;  // offset of the first payload in the record
};

// Reads a record's group table and checks it against the region type and
// the chunk's length: group count, coder values (up to `newest`: objects
// of older formats know fewer coders), sizes that add up.
Result<ChunkGroups> ParseChunkRecord(DType dtype, const uint8_t* record, size_t size, size_t chunk_len,
                                     Coder newest = kNewestCoder);

// Whether a delta's record changes nothing: every group zero. Every
// transform gives back the base itself for a zero delta, so the chunk is
// its base's bytes. False for a record that does not parse (decoding it
// says why).
bool IsUnchangedDelta(DType dtype, const uint8_t* record, size_t size, size_t chunk_len);

// Where the class keys of a chunk's elements are (rans.h, ElementClasses):
// the top byte of each base element of a difference of floats; none for
// any other chunk.
ClassKeys KeysOf(DType dtype, Transform transform, const uint8_t* base, size_t n);

// One chunk to encode: `n` bytes at `raw`, taken against the `n` bytes at
// `base` when that is not null, with `prefix` as the history its zstd
// groups may refer to (none when empty).
struct ChunkInput {
  DType dtype = DType::kBytes;
  const uint8_t* raw = nullptr;
  size_t n = 0;
  const uint8_t* base = nullptr;
  const uint8_t* prefix = nullptr;
  size_t prefix_size = 0;
};

// One chunk's record to decode: `size` bytes at `record` (readable
// kDecoderReadPadding bytes past them) that restore `n` bytes, `transform`
// undone against `base` when that is not null, `prefix` the history its
// zstd groups were made with.
struct ChunkRecord {
  DType dtype = DType::kBytes;
  const uint8_t* record = nullptr;
  size_t size = 0;
  size_t n = 0;
  Transform transform = Transform::kXor;
  const uint8_t* base = nullptr;
  const uint8_t* prefix = nullptr;
  size_t prefix_size = 0;
};

class ChunkEncoder {
 public:
  ChunkEncoder(CoderPolicy policy, int zstd_level, TransformPolicy transform = kAutoTransform);

  void Reset() {
    skip_.fill(0);
    last_ = Transform::kXor;
  }
  // Appends the record of `chunk` to `out` and returns the transform used
  // (kXor without a base).
  Transform Encode(const ChunkInput& chunk, Buffer& out);

  // The estimate the automatic choice compares: the order-0 information
  // of each byte group of n grouped bytes, capped at the group's size (a
  // group that codes no smaller is stored raw), in bytes. Groups of at
  // least kChooserSampleBytes are counted on a sample of one 8-byte word
  // in kChooserSampleBlock bytes.
  static double EstimatedBytes(DType grouping, const uint8_t* grouped, size_t n);
  static constexpr size_t kChooserSampleBytes = 16384;
  static constexpr size_t kChooserSampleBlock = 32;
  // The automatic choice estimates both transforms on a sample of the
  // chunk: the first kChooserWindow bytes of every kChooserStride, for
  // chunks of at least kChooserSampleBytes.
  static constexpr size_t kChooserWindow = 64;
  static constexpr size_t kChooserStride = 2048;

 private:
  // Takes the chunk against its base as the policy says, leaving the
  // grouped result in grouped_; returns the transform.
  Transform TakeDelta(DType dtype, const uint8_t* raw, size_t n, const uint8_t* base);
  // The automatic choice between XOR and difference for a chunk.
  Transform ChooseTransform(DType dtype, const uint8_t* raw, size_t n, const uint8_t* base);

  GroupEncoder groups_;
  int zstd_level_;
  TransformPolicy transform_;
  Buffer delta_;
  Buffer grouped_;
  Buffer other_;   // a candidate of the automatic choice, grouped
  Buffer sample_;  // the chunk's and the base's sampled windows
  std::array<int, kMaxGroups> skip_{};
  Transform last_ = Transform::kXor;  // of the previous chunk; skip_ holds for it
};

class ChunkDecoder {
 public:
  // Accepts coders up to `newest` (ParseChunkRecord).
  explicit ChunkDecoder(Coder newest = kNewestCoder) : newest_(newest) {}

  // Decodes `chunk` into its n bytes at `out`, which may be the base
  // (a delta applied in place).
  Status Decode(const ChunkRecord& chunk, uint8_t* out);

  // A delta chunk whose groups are all zero or sparse, with at most one
  // non-zero byte in kPatchShare, is applied as a patch: the base copied,
  // then only the elements the delta touches undone against it, instead
  // of every group merged and every element transformed.
  static constexpr size_t kPatchShare = 64;

 private:
  // The patch path of Decode, for a chunk Patchable says it is.
  Status Patch(const ChunkRecord& chunk, const ChunkGroups& g, uint8_t* out);
  static bool Patchable(const ChunkRecord& chunk, const ChunkGroups& g);

  Coder newest_;
  GroupDecoder groups_;
  Buffer grouped_;
  Buffer merged_;  // the merged delta of a chunk decoded in place
  SparseDecoder sparse_;
  // Patch's delta, element by element in grouped byte order: all zero
  // between calls (Patch clears what it wrote, on errors too).
  Buffer delta_;
  std::vector<uint32_t> touched_;  // elements Patch wrote to delta_
};

}  // namespace zipnn::codec
