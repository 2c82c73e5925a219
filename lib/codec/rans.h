// rANS entropy coder for one byte group (docs/format.md, "rANS payload"):
// order-0 static model with 13-bit probabilities (the payload names its
// precision), 32-bit states and 16-bit renormalisation. Where one byte value dominates a group (the exponent
// XOR of a delta, say 77% zeros), Huffman cannot spend less than one bit
// per byte and lands far above the entropy; rANS codes fractional bits and
// stays within a fraction of a percent of it. Like the Huffman coder, the
// group is cut into four segments coded as independent streams so that
// the decoder runs four dependency chains at once.
//
// RansEncoder and RansDecoder are each used by one thread at a time (they
// keep scratch and tables); the decoder may read up to kDecoderReadPadding
// bytes past the end of its input.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "lib/base/buffer.h"
#include "lib/base/status.h"
#include "lib/codec/entropy.h"

namespace zipnn::codec {

// Precision the encoder writes. 12 bits cost a delta's mantissa XOR (256
// symbols, most of them rare) 2.1% over its entropy, 13 bits 1.3%, 14 bits
// 1.05%; 13 keeps the decode tables (40 KB) in L1.
inline constexpr int kRansProbabilityBits = 13;
// Precisions a decoder accepts.
inline constexpr int kRansMinProbabilityBits = 8;
inline constexpr int kRansMaxProbabilityBits = 14;  // frequencies are stored in 15 bits

// A coder of the shape in coders.h (Plan, EstimatedSize, Encode), and the
// single-stream parts the sparse coder is made of.
class RansEncoder {
 public:
  // Builds the model for in[0..n) (n >= 1) from its counts, at
  // kRansProbabilityBits. `in` must stay valid and unchanged until Encode.
  void Plan(const uint8_t* in, size_t n, const GroupCounts& counts);
  // Size of the payload Encode will write, to within a few bytes (the
  // cost of each symbol under the model plus headers and final states).
  size_t EstimatedSize() const { return estimated_size_; }
  // Appends the payload for the bytes Plan was given to `out`.
  void Encode(Buffer& out);

  // A single-stream part (docs/format.md, "Sparse payload"): the model,
  // built by PlanModel from the histogram `h` of n >= 1 symbols at `bits`
  // of precision (kRansMinProbabilityBits to kRansMaxProbabilityBits),
  // then one stream. For short sequences, where the three stream sizes and
  // four states of a full payload would weigh.
  void PlanModel(const Histogram& h, size_t n, int bits);
  size_t EstimatedSingleSize() const;
  // Appends two single-stream parts of n symbols each, in[0..n) with this
  // encoder's model and then other_in[0..n) with `other`'s, their two
  // dependency chains interleaved (the sparse payload's codes and
  // values); returns the first part's size.
  size_t EncodeSinglePair(const uint8_t* in, RansEncoder& other, const uint8_t* other_in, size_t n, Buffer& out);

 private:
  friend class ClassedRansEncoder;  // plans and writes its class models with these
  struct Symbol {
    uint64_t x_max = 0;       // a state at or above this is renormalised first
    uint64_t reciprocal = 0;  // floor(x / freq) is the high half of x * reciprocal
    uint32_t bias = 0;
    uint32_t complement = 0;  // M - freq
  };
  struct Writer;
  void EncodeModel(Buffer& out) const;
  const uint8_t* in_ = nullptr;
  size_t n_ = 0;
  std::array<uint16_t, 256> freq_{};
  std::array<Symbol, 256> symbol_{};
  int bits_ = kRansProbabilityBits;
  int first_ = 0;
  int last_ = 0;
  size_t estimated_size_ = 0;
  size_t model_bytes_ = 0;    // header and frequency table
  size_t payload_bytes_ = 0;  // the coded symbols, by the model's costs
  bool rare_flush_ = false;   // under a bit per symbol: renormalising is rare
  Buffer scratch_;            // one stream, written back to front
};

class RansDecoder {
 public:
  // Decodes a payload made by RansEncoder into exactly n bytes. `in` must
  // be readable up to in + size + kDecoderReadPadding.
  Status Decode(const uint8_t* in, size_t size, uint8_t* out, size_t n);

  // Decodes two single-stream parts (RansEncoder::EncodeSinglePair) of n
  // symbols each at once, `a` with this decoder's tables and `b` with
  // `other`'s, their two dependency chains interleaved.
  Status DecodeSinglePair(const uint8_t* a, size_t a_size, uint8_t* a_out, RansDecoder& other, const uint8_t* b,
                          size_t b_size, uint8_t* b_out, size_t n);

 private:
  // Per slot: freq << 16 | (slot - cum), and the symbol.
  std::array<uint32_t, 1u << kRansMaxProbabilityBits> step_;
  std::array<uint8_t, 1u << kRansMaxProbabilityBits> symbol_;
  uint32_t bits_ = 0;  // precision of the model last read
};

}  // namespace zipnn::codec
