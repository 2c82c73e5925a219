// Coding of one byte group of one chunk: the coders, and the "auto" rule
// that picks one per group per chunk (docs/codec.md, "Choosing a coder").
//
// GroupEncoder and GroupDecoder hold scratch state (a zstd context, Huffman
// tables); each thread owns its own.
#pragma once

#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "lib/base/buffer.h"
#include "lib/base/status.h"
#include "lib/codec/huffman.h"
#include "lib/codec/rans.h"
#include "lib/codec/sparse.h"

namespace zipnn::codec {

// Stored in chunk records (docs/format.md, "Chunk record"); values are fixed.
enum class Coder : uint8_t {
  kRaw = 0,      // the group's bytes as they are
  kZero = 1,     // every byte is zero; no payload
  kHuffman = 2,  // HuffmanEncoder payload
  kZstd = 3,     // one zstd frame
  kRans = 4,     // RansEncoder payload
  kSparse = 5,   // SparseEncoder payload (object format 2 on)
};
inline constexpr uint8_t kMaxCoderValue = 5;
inline constexpr Coder kNewestCoder = Coder::kSparse;
std::string_view CoderName(Coder c);
std::optional<Coder> CoderFromByte(uint8_t v);

// What the encoder may choose from.
enum class CoderPolicy {
  kAuto,     // the ZipNN rule below
  kHuffman,  // Huffman for every group that it shrinks, else raw
  kZstd,     // zstd for every group that it shrinks, else raw
  kRans,     // rANS for every group that it shrinks, else raw
  kSparse,   // the sparse coder for every group it shrinks, else raw
  kRaw,      // no entropy coding (grouping still applies)
};
std::optional<CoderPolicy> ParseCoderPolicy(std::string_view name);

// The thresholds of the auto rule, all in one place. The figures behind
// each value are in docs/codec.md.
struct AutoRule {
  // A coded group must be at least this much smaller than its raw bytes,
  // or it is stored raw (decoding raw is a copy).
  static constexpr double kMinSaving = 0.03;
  // A group holding a run of zeros longer than this share of its chunk is
  // also tried with zstd, whose matches can beat any order-0 coder on long
  // runs; the smaller result is kept. (The ZipNN papers send such groups,
  // and groups where one byte value covers more than 90%, to zstd instead
  // of Huffman. With rANS in the set, measurements on real deltas show
  // rANS smaller than zstd on nearly all of them: tests/bench/auto_rule_bench.)
  static constexpr double kZstdZeroRunShare = 0.03;
  // rANS replaces Huffman when its estimate is at least this much smaller.
  // It decodes at about half of Huffman's speed. Standalone regions are
  // decoded by every restore (they are the bases of chains) and hold the
  // speed targets: there Huffman is 1.5-3.4% above the entropy of exponent
  // groups, not worth halving the speed. Delta regions hold the ratio
  // target (within 2% of their entropy): a mid-training mantissa XOR is
  // 3.4% smaller with rANS, a delta's exponent XOR 15-20%.
  static constexpr double kRansMinGain = 0.05;
  static constexpr double kRansMinGainDelta = 0.01;
  // The sparse coder is planned for groups with at least this share of
  // zeros: it then decodes and encodes faster than rANS, which works on
  // every byte. It is kept when its estimate exceeds the order-0 coder's
  // chosen above by at most kSparseMaxLoss plus kSparseSlackBytes. The
  // slack matters for a delta's exponent group: about 2 KB per chunk
  // mid-training, where the 20 bytes sparse may lose are 0.05% of the
  // chunk's payload while rANS spends half the chunk's decode time on it.
  static constexpr double kSparseMinZeros = 0.75;
  static constexpr double kSparseMaxLoss = 0.01;
  static constexpr double kSparseSlackBytes = 32;
  // After a group is stored raw, that group of the next chunks in the same
  // stripe is stored raw without trying, then tried again.
  static constexpr int kRawSkipChunks = 7;
  // Before counting a group of at least kSampleMinBytes, one byte in
  // kSampleStride is counted; if that sample's entropy is at least
  // kSampleRawBits per byte, no order-0 coder can save kMinSaving (a
  // sample underestimates entropy) and the group is stored raw.
  static constexpr size_t kSampleMinBytes = 16384;
  static constexpr size_t kSampleStride = 16;
  static constexpr double kSampleRawBits = 7.8;
};

class GroupEncoder {
 public:
  GroupEncoder(CoderPolicy policy, int zstd_level, bool prefer_lz);
  ~GroupEncoder();
  GroupEncoder(const GroupEncoder&) = delete;
  GroupEncoder& operator=(const GroupEncoder&) = delete;

  // Codes n bytes (n >= 1) of one group whose chunk is chunk_len bytes,
  // appends the payload to `out` and returns the coder used.
  Coder Encode(const uint8_t* in, size_t n, size_t chunk_len, Buffer& out);
  // Appends the bytes raw (the skip path of the auto rule).
  static Coder EncodeRaw(const uint8_t* in, size_t n, Buffer& out);

  void set_prefer_lz(bool v) { prefer_lz_ = v; }
  void set_zstd_level(int level) { zstd_level_ = level; }
  // zstd frames of the following groups use these bytes as history (a
  // base's header for a header); empty for none. Must outlive Encode.
  void set_zstd_prefix(const uint8_t* p, size_t n) { prefix_ = p, prefix_size_ = n; }
  // Groups of a delta region (XOR with a base) weigh size over speed.
  void set_delta(bool v) { delta_ = v; }

 private:
  std::optional<Coder> TryHuffman(size_t n, Buffer& out);  // after huffman_.Plan
  std::optional<Coder> TryRans(const uint8_t* in, size_t n, Buffer& out);  // after rans_.Plan
  std::optional<Coder> TrySparse(size_t n, Buffer& out);  // after sparse_.Plan
  std::optional<Coder> TryZstd(const uint8_t* in, size_t n, Buffer& out);
  bool HasLongZeroRun(const uint8_t* in, size_t n, size_t chunk_len) const;
  std::optional<Coder> KeepSmaller(std::optional<Coder> coded, size_t start, const uint8_t* in,
                                   size_t n, Buffer& out);
  static bool LooksIncompressible(const uint8_t* in, size_t n);

  CoderPolicy policy_;
  int zstd_level_;
  bool prefer_lz_;
  bool delta_ = false;
  const uint8_t* prefix_ = nullptr;
  size_t prefix_size_ = 0;
  ZSTD_CCtx* zstd_ = nullptr;
  HuffmanEncoder huffman_;
  RansEncoder rans_;
  SparseEncoder sparse_;
};

class GroupDecoder {
 public:
  GroupDecoder();
  ~GroupDecoder();
  GroupDecoder(const GroupDecoder&) = delete;
  GroupDecoder& operator=(const GroupDecoder&) = delete;

  // Decodes `size` payload bytes into exactly n bytes. The payload must be
  // readable kDecoderReadPadding bytes past its end.
  Status Decode(Coder coder, const uint8_t* payload, size_t size, uint8_t* out, size_t n);
  // The history zstd frames were made with (GroupEncoder::set_zstd_prefix).
  void set_zstd_prefix(const uint8_t* p, size_t n) { prefix_ = p, prefix_size_ = n; }

 private:
  ZSTD_DCtx* zstd_ = nullptr;
  const uint8_t* prefix_ = nullptr;
  size_t prefix_size_ = 0;
  RansDecoder rans_;
  SparseDecoder sparse_;
};

bool IsAllZero(const uint8_t* p, size_t n);
// Whether some run of zero bytes is longer than `length`.
bool HasZeroRunLongerThan(const uint8_t* p, size_t n, size_t length);

}  // namespace zipnn::codec
