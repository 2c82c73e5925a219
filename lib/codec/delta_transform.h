// The arithmetic delta of a region against its base (issue 20), beside
// the XOR delta of grouping.h. A small training update moves a weight by
// a few units in the last place; XOR turns a step across a bit boundary
// (0x3F7F -> 0x3F80) into eight flipped bits, a difference does not.
//
// Each element's bits are first mapped to an unsigned integer that orders
// like the value: for sign-magnitude floats (fp64, fp32, bf16, fp16, fp8)
// a negative value's bits are all inverted and a positive value's sign
// bit set; integers are taken as they are. The delta is target minus
// base modulo 2^bits, zigzagged (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...) so
// that small steps either way have zero high bytes. Every step is a
// bijection on bit patterns, NaNs and infinities included, so the inverse
// is exact; equal elements give zero. Bytes after the last whole element
// (a tail) are XORed.
//
// The result is grouped without the sign rotation of floats (the zigzag
// already keeps the sign in bit 0): DifferenceGrouping names the type to
// group it as. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lib/codec/dtype.h"

namespace zipnn::codec {

// How a chunk of a delta region was taken against its base: the byte
// stored in its chunk index entry from object format 3 on (docs/format.md).
enum class Transform : uint8_t { kXor = 0, kDifference = 1 };
inline constexpr uint8_t kMaxTransformValue = 1;
const char* TransformName(Transform t);

// What the encoder may use for delta regions: the cheaper of the two per
// chunk (ChunkEncoder estimates both), or always one.
enum class TransformPolicy : uint8_t { kAuto, kXor, kDifference };
// "auto", "xor" or "difference".
std::optional<TransformPolicy> ParseTransformPolicy(std::string_view name);
const char* TransformPolicyName(TransformPolicy p);

// Whether the difference is defined for regions of type t: every numeric
// type; not opaque bytes (which zstd codes, matching repeats, not values)
// nor bool.
bool DifferenceApplies(DType t);
// The transforms `policy` tries on a delta chunk of type t (one of them,
// or both for the automatic choice): the difference where it applies
// unless the policy is xor, and XOR unless the difference is forced.
bool TriesDifference(TransformPolicy policy, DType t);
bool TriesXor(TransformPolicy policy, DType t);

// dst = zigzag(order(target) - order(base)) element-wise, n bytes of type
// t. dst may be target.
void DifferenceTo(DType t, uint8_t* dst, const uint8_t* target, const uint8_t* base, size_t n);
// The inverse: out = the target whose difference against `base` is
// `delta`. out may be delta.
void UndoDifference(DType t, uint8_t* out, const uint8_t* delta, const uint8_t* base, size_t n);

// The unsigned type of t's width: how a difference of type t is grouped.
DType DifferenceGrouping(DType t);
// The name of group g of a difference of type t: "d0" (the lowest byte,
// whose bit 0 is the step's direction) up to "d7", or "tail".
std::string DifferenceGroupLabel(DType t, int g);

}  // namespace zipnn::codec
