// The lanes coder, rans-classed (docs/format.md, "Classed rANS payload";
// object format 4): rANS whose four streams each carry eight states, so
// that encoder and decoder step them with vector instructions, and whose
// symbols may each take the model of their element's class, set by the
// exponent of the base element of a difference (docs/codec.md).
//
// ClassedRansEncoder and ClassedRansDecoder are each used by one thread at
// a time; the decoder may read up to kDecoderReadPadding bytes past the
// end of its input. The vector paths (AVX2) and the scalar ones write and
// read the same bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "lib/base/buffer.h"
#include "lib/base/status.h"
#include "lib/codec/entropy.h"
#include "lib/codec/rans.h"

namespace zipnn::codec {

// Classes of the elements of a delta chunk, by the exponent of the base
// element each is taken against (docs/format.md, "Classed rANS payload"):
// the class of an element is the number of thresholds at or below its
// key, the base element's top byte without the sign bit. A training step
// moves a weight by about the same amount whatever its size, so how many
// units in the last place it moves, and with it every byte of the
// difference, depends on the weight's exponent; one model per class
// codes the deltas of a GPT bf16 run 3.7% smaller than one model for all.
inline constexpr int kMaxClasses = 4;
// The precision of every model of a classed payload: one fixed value lets
// the decoder's shifts be constants, which it needs for its speed.
inline constexpr uint32_t kClassedProbabilityBits = kRansProbabilityBits;
struct ElementClasses {
  int count = 0;                                     // classes: 1, one model for all (`of` unused); 0, none found
  std::array<uint8_t, kMaxClasses - 1> threshold{};  // strictly increasing keys
  const uint8_t* of = nullptr;                       // class of each element
  size_t elements = 0;
};
// The decoder's side: where each element's key is (the base element's top
// byte, `stride` bytes apart).
struct ClassKeys {
  const uint8_t* key = nullptr;
  size_t stride = 0;
  size_t elements = 0;  // 0: none (not a difference of floats)
};
// The class of each of `elements` keys (an element's top byte) under
// thresholds chosen from the quantiles of a sample of them, into `of`; the
// count of classes (1 when the keys hold no spread) and the thresholds.
// A class may be empty.
inline constexpr size_t kClassSampleStep = 8;
ElementClasses ClassifyByKey(const uint8_t* key, size_t stride, size_t elements, uint8_t* of);
// The class of each of `elements` keys under count - 1 thresholds, into `of`.
void ClassesOf(const uint8_t* key, size_t stride, size_t elements, const uint8_t* threshold, int count, uint8_t* of);

// The share of a group's information that one model per class would save
// over one model for all, estimated on a sample (the first
// kClassSampleWindow bytes of every kClassSampleStride): cheaper than the
// counts a plan takes, to pass over groups whose classes cannot pay.
inline constexpr size_t kClassSampleWindow = 64;
inline constexpr size_t kClassSampleStride = 2048;
double SampledClassGain(const uint8_t* in, size_t n, const ElementClasses& classes);

// A symbol of a classed model as the vector encoder reads it: four 32-bit
// fields, loaded at once.
struct LaneSymbol {
  uint32_t x_max;  // minus 1: a state above this is renormalised first
  uint32_t cum;
  uint32_t complement;  // M - freq
  uint32_t freq;
};

// A group whose elements are coded each with the model of its class
// (ElementClasses, or one model), in four streams of eight lanes.
class ClassedRansEncoder {
 public:
  // `in` (n bytes, one per element) and `classes.of` must stay valid and
  // unchanged until Encode; classes.elements == n.
  // With one class, `counts` may give the group's counts, taken already.
  void Plan(const uint8_t* in, size_t n, const ElementClasses& classes, const GroupCounts* counts = nullptr);
  size_t EstimatedSize() const { return estimated_size_; }
  void Encode(Buffer& out);

 private:
  const uint8_t* in_ = nullptr;
  size_t n_ = 0;
  ElementClasses classes_;
  using Symbol = RansEncoder::Symbol;
  std::array<RansEncoder, kMaxClasses> model_;
  std::array<Symbol, 256 * kMaxClasses> tables_;           // the models' symbols side by side, class c's from 256 c
  std::array<LaneSymbol, 256 * kMaxClasses> lane_tables_;  // the same for the vector encoder
  size_t estimated_size_ = 0;
  bool rare_flush_ = false;
  Buffer scratch_;
};

class ClassedRansDecoder {
 public:
  // Decodes a ClassedRansEncoder payload into exactly n bytes, element i
  // with the model of the class of keys.key[i * keys.stride]; keys.elements
  // must be n. `in` must be readable up to in + size + kDecoderReadPadding.
  Status Decode(const uint8_t* in, size_t size, uint8_t* out, size_t n, const ClassKeys& keys);

 private:
  // The models one after another: each 2^precision slots of symbols, and
  // 256 entries of freq << 16 | cum.
  std::vector<uint8_t> symbol_ = std::vector<uint8_t>(kMaxClasses << kRansMaxProbabilityBits);
  std::array<uint32_t, kMaxClasses * 256> freq_cum_{};
  Buffer classes_;  // the class of each element
};

}  // namespace zipnn::codec
