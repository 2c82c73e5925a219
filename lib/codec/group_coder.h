// Coding of one byte group of one chunk: the coders, and the "auto" rule
// that picks one per group per chunk (docs/codec.md, "Choosing a coder").
//
// GroupEncoder and GroupDecoder hold every coder's scratch state (zstd
// contexts, code tables); each thread owns its own. The coders themselves
// are listed once, in coders.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "lib/base/buffer.h"
#include "lib/base/status.h"
#include "lib/codec/classed_rans.h"
#include "lib/codec/coders.h"
#include "lib/codec/entropy.h"
#include "lib/codec/huffman.h"
#include "lib/codec/rans.h"
#include "lib/codec/sparse.h"
#include "lib/codec/zstd_coder.h"

namespace zipnn::codec {

// What the encoder may choose from: the auto rule below, or one coder
// (kCoders' `encode`) for every group it shrinks, the rest raw.
class CoderPolicy {
 public:
  constexpr CoderPolicy() = default;  // the auto rule
  static constexpr CoderPolicy Only(Coder c) { return CoderPolicy(c); }
  // Shorthands for callers; a new coder needs none (Only does it).
  static const CoderPolicy kAuto, kHuffman, kZstd, kRans, kSparse, kRaw;

  bool is_auto() const { return !only_; }
  Coder only() const { return *only_; }

 private:
  explicit constexpr CoderPolicy(Coder c) : only_(c) {}
  std::optional<Coder> only_;
};
inline constexpr CoderPolicy CoderPolicy::kAuto{};
inline constexpr CoderPolicy CoderPolicy::kHuffman = CoderPolicy::Only(Coder::kHuffman);
inline constexpr CoderPolicy CoderPolicy::kZstd = CoderPolicy::Only(Coder::kZstd);
inline constexpr CoderPolicy CoderPolicy::kRans = CoderPolicy::Only(Coder::kRans);
inline constexpr CoderPolicy CoderPolicy::kSparse = CoderPolicy::Only(Coder::kSparse);
inline constexpr CoderPolicy CoderPolicy::kRaw = CoderPolicy::Only(Coder::kRaw);

// "auto", or a name CoderFromName knows.
std::optional<CoderPolicy> ParseCoderPolicy(std::string_view name);

// The thresholds of the auto rule, all in one place. The figures behind
// each value are in docs/codec.md.
struct AutoRule {
  // A coded group must be at least this much smaller than its raw bytes,
  // or it is stored raw (decoding raw is a copy).
  static constexpr double kMinSaving = 0.03;
  // The same for groups of a delta region, which carry the ratio target
  // (within 1% of the order-0 bound): the lowest byte of an fp16 or bf16
  // difference often holds 97-99% of its raw information, and stored raw
  // it would cost a trajectory 1-2% of its deltas.
  static constexpr double kMinSavingDelta = 0.01;
  // A group holding a run of zeros longer than this share of its chunk is
  // also tried with zstd, whose matches can beat any order-0 coder on long
  // runs; the smaller result is kept. (The ZipNN papers send such groups,
  // and groups where one byte value covers more than 90%, to zstd instead
  // of Huffman. With rANS in the set, measurements on real deltas show
  // rANS smaller than zstd on nearly all of them: tests/bench/auto_rule_bench.)
  static constexpr double kZstdZeroRunShare = 0.03;
  // Groups of a delta region this small are also tried with zstd: on a
  // few kilobytes an order-0 coder's table is a large share of the
  // payload, and zstd's matches can win (a 1.6 KB mantissa difference of
  // a 10 KB checkpoint: zstd 1219 bytes, Huffman 1257). Standalone groups
  // keep their coders, so base objects keep their bytes.
  static constexpr size_t kZstdSmallDeltaGroup = 4096;
  // rANS replaces Huffman when its estimate is at least this much smaller.
  // It decodes at about half of Huffman's speed. Standalone regions are
  // decoded by every restore (they are the bases of chains) and hold the
  // speed targets: there Huffman is 1.5-3.4% above the entropy of exponent
  // groups, not worth halving the speed. Delta regions hold the ratio
  // target (within 1% of their entropy): a mid-training mantissa XOR is
  // 3.4% smaller with rANS, a delta's exponent XOR 15-20%. In deltas the
  // bar was 0.2% while rANS had no classes; with them a 1% bar keeps delta
  // encoding within 10% of 0.2's speed on a 57 MB CNN run (Huffman codes
  // faster) and still lands every trajectory within 1% of its bound.
  static constexpr double kRansMinGain = 0.05;
  static constexpr double kRansMinGainDelta = 0.01;
  // A group of a difference of floats is coded with one model per class
  // of element (rans-classed) when that is at least this much smaller
  // than the coder chosen without classes: rANS, or Huffman, which
  // encodes faster, so classes must then pay more.
  static constexpr double kClassedMinGain = 0.005;
  static constexpr double kClassedMinGainOverHuffman = 0.03;
  // A group of a difference chunk rANS codes, of at least this many
  // bytes, takes the lanes coder with one model when classes do not pay.
  static constexpr size_t kLanesMinGroup = 16384;
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
  static constexpr double kSampleRawBitsDelta = 7.92;  // for kMinSavingDelta
};

// Every coder's encoder, for one thread; the functions kCoders names and
// the auto rule work on it.
struct EncoderSet {
  GroupCounts counts;  // of the group being coded, once counted
  HuffmanEncoder huffman;
  RansEncoder rans;
  SparseEncoder sparse;
  ZstdEncoder zstd;
  ClassedRansEncoder classed;
  // The chunk's element keys (none outside a difference of floats), and
  // their classes, found when a group first asks (Classes).
  ClassKeys keys;
  bool lanes = false;  // a difference chunk: rANS groups may take the lanes coder
  bool classified = false;
  ElementClasses classes;
  Buffer class_of;
};
// The classes of the chunk's elements, for a group of n bytes: count 0
// unless the group is one of a difference of floats' whole groups.
const ElementClasses& Classes(EncoderSet& s, size_t n);

// Every coder's decoder, for one thread.
struct DecoderSet {
  HuffmanDecoder huffman;
  RansDecoder rans;
  SparseDecoder sparse;
  ZstdDecoder zstd;
  ClassedRansDecoder classed;
  ClassKeys keys;  // of the chunk's elements; none outside a difference of floats
};

class GroupEncoder {
 public:
  GroupEncoder(CoderPolicy policy, int zstd_level, bool prefer_lz);
  GroupEncoder(const GroupEncoder&) = delete;
  GroupEncoder& operator=(const GroupEncoder&) = delete;

  // Codes n bytes (n >= 1) of one group whose chunk is chunk_len bytes,
  // appends the payload to `out` and returns the coder used.
  Coder Encode(const uint8_t* in, size_t n, size_t chunk_len, Buffer& out);
  // Appends the bytes raw (the skip path of the auto rule).
  static Coder EncodeRaw(const uint8_t* in, size_t n, Buffer& out);

  void set_prefer_lz(bool v) { prefer_lz_ = v; }
  void set_zstd_level(int level) { coders_.zstd.set_level(level); }
  // zstd frames of the following groups use these bytes as history (a
  // base's header for a header); empty for none. Must outlive Encode.
  void set_zstd_prefix(const uint8_t* p, size_t n) { coders_.zstd.set_prefix(p, n); }
  // Groups of a delta region (XOR with a base) weigh size over speed.
  void set_delta(bool v) { delta_ = v; }
  // The keys of the chunk's elements (a difference of floats), by whose
  // classes groups of exactly that many bytes may be coded; none for none.
  void set_class_keys(const ClassKeys& k) {
    coders_.keys = k;
    coders_.classified = false;
  }
  // Whether the next groups are of a difference chunk, whose rANS groups
  // may take the lanes coder (rans-classed).
  void set_lanes(bool v) { coders_.lanes = v; }

 private:
  std::optional<Coder> EncodeAuto(const uint8_t* in, size_t n, size_t chunk_len, Buffer& out);
  bool HasLongZeroRun(const uint8_t* in, size_t n, size_t chunk_len) const;
  std::optional<Coder> KeepSmaller(std::optional<Coder> coded, size_t start, const uint8_t* in, size_t n, Buffer& out);
  bool LooksIncompressible(const uint8_t* in, size_t n) const;
  double MinSaving() const { return delta_ ? AutoRule::kMinSavingDelta : AutoRule::kMinSaving; }

  CoderPolicy policy_;
  bool prefer_lz_;
  bool delta_ = false;
  EncoderSet coders_;
};

class GroupDecoder {
 public:
  GroupDecoder() = default;
  GroupDecoder(const GroupDecoder&) = delete;
  GroupDecoder& operator=(const GroupDecoder&) = delete;

  // Decodes `size` payload bytes into exactly n bytes. The payload must be
  // readable kDecoderReadPadding bytes past its end.
  Status Decode(Coder coder, const uint8_t* payload, size_t size, uint8_t* out, size_t n);
  // The history zstd frames were made with (GroupEncoder::set_zstd_prefix).
  void set_zstd_prefix(const uint8_t* p, size_t n) { coders_.zstd.set_prefix(p, n); }
  // Where the following groups' element keys are (GroupEncoder::set_class_keys).
  void set_class_keys(const ClassKeys& k) { coders_.keys = k; }

 private:
  DecoderSet coders_;
};

bool IsAllZero(const uint8_t* p, size_t n);
// Whether some run of zero bytes is longer than `length`.
bool HasZeroRunLongerThan(const uint8_t* p, size_t n, size_t length);

}  // namespace zipnn::codec
