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
#include <vector>

#include "lib/base/status.h"
#include "lib/codec/dtype.h"

namespace zipnn::codec {

// How a chunk of a delta region was taken against its base: the byte
// stored in its chunk index entry from object format 3 on (docs/format.md).
// One row each in kTransforms.
enum class Transform : uint8_t { kXor = 0, kDifference = 1, kStandalone = 2 };

// Whether the difference is defined for regions of type t: every numeric
// type; not opaque bytes (which zstd codes, matching repeats, not values)
// nor bool.
bool DifferenceApplies(DType t);

// The XOR delta as a row of kTransforms: every type, grouped as itself.
bool XorApplies(DType t);
void XorTake(DType t, uint8_t* dst, const uint8_t* target, const uint8_t* base, size_t n);
void XorUndo(DType t, uint8_t* out, const uint8_t* delta, const uint8_t* base, size_t n);
DType XorGrouping(DType t);

// A chunk of a delta region coded on its own, not taken against its base
// (object format 6): what a renewed tensor (Adam's first moment, a layer
// trained from scratch) costs less as. Numeric types only, grouped as
// themselves, like a chunk of a base.
void StandaloneTake(DType t, uint8_t* dst, const uint8_t* target, const uint8_t* base, size_t n);
void StandaloneUndo(DType t, uint8_t* out, const uint8_t* delta, const uint8_t* base, size_t n);

struct TransformInfo {
  Transform transform;
  const char* name;          // in .zipnn.yaml, --transform, inspect and analyze
  const char* short_name;    // analyze's column heading in its text report
  uint16_t first_format;     // the first object format that may hold it
  bool (*applies)(DType t);  // the region types it is defined for
  // dst = the delta of `target` against `base`, n bytes of type t; dst
  // may be target.
  void (*take)(DType t, uint8_t* dst, const uint8_t* target, const uint8_t* base, size_t n);
  // The inverse: out = the target whose delta against `base` is `delta`;
  // out may be delta, or base (applied in place on the base).
  void (*undo)(DType t, uint8_t* out, const uint8_t* delta, const uint8_t* base, size_t n);
  DType (*grouping)(DType t);                  // the type its delta is grouped as
  std::string (*group_label)(DType t, int g);  // the name of group g of that grouping
  // Whether its groups may be coded rans-classed (lanes classed by the
  // base's top byte, coders.h).
  bool classed;
  // Whether a zero delta means the base's bytes: a decoder may then keep
  // an all-zero chunk as its base and patch a sparse one in place. False
  // for the standalone chunk, whose zeros are zeros. Only transforms that
  // are taken from the base are a policy's choice (.zipnn.yaml
  // delta_transform); the standalone one is the encoder's, per chunk.
  bool from_base;
};

// The name of group g of a difference of type t: "d0" (the lowest byte,
// whose bit 0 is the step's direction) up to "d7", or "tail".
std::string DifferenceGroupLabel(DType t, int g);
// The unsigned type of t's width: how a difference of type t is grouped.
DType DifferenceGrouping(DType t);
void DifferenceTo(DType t, uint8_t* dst, const uint8_t* target, const uint8_t* base, size_t n);
void UndoDifference(DType t, uint8_t* out, const uint8_t* delta, const uint8_t* base, size_t n);

// In Transform's order, values from 0 without gaps. The first is also
// how a region without a base is stored (as it is), and the fallback of a
// policy whose transform does not apply to a region. Adding a transform
// is a row here (with the next value in Transform) and its functions;
// docs/architecture.md, "Adding a transform".
inline constexpr TransformInfo kTransforms[] = {
    {Transform::kXor, "xor", "xor", 1, &XorApplies, &XorTake, &XorUndo, &XorGrouping, &GroupLabel, false, true},
    {Transform::kDifference, "difference", "diff", 3, &DifferenceApplies, &DifferenceTo, &UndoDifference,
     &DifferenceGrouping, &DifferenceGroupLabel, true, true},
    {Transform::kStandalone, "standalone", "alone", 6, &DifferenceApplies, &StandaloneTake, &StandaloneUndo,
     &XorGrouping, &GroupLabel, false, false},
};
inline constexpr size_t kTransformCount = sizeof kTransforms / sizeof kTransforms[0];
inline constexpr uint8_t kMaxTransformValue = static_cast<uint8_t>(kTransformCount - 1);

constexpr bool TransformTableIsOrdered() {
  for (size_t i = 0; i < kTransformCount; ++i) {
    if (static_cast<size_t>(kTransforms[i].transform) != i) return false;
    if (i > 0 && kTransforms[i].first_format < kTransforms[i - 1].first_format) return false;
  }
  return true;
}
static_assert(TransformTableIsOrdered(), "kTransforms must list every Transform in value order, oldest first");

constexpr const TransformInfo& InfoOf(Transform t) { return kTransforms[static_cast<size_t>(t)]; }
const char* TransformName(Transform t);

// What the encoder may use for delta regions: one transform always, or
// none for the automatic choice, the cheapest per chunk of those that
// apply (ChunkEncoder estimates each).
using TransformPolicy = std::optional<Transform>;
inline constexpr TransformPolicy kAutoTransform = std::nullopt;
// "auto" or the name of a transform taken from the base; InvalidArgument
// names the choices.
Result<TransformPolicy> ParseTransformPolicy(std::string_view name);
// "auto", then the names of the transforms taken from the base.
std::vector<std::string> TransformPolicyNames();
const char* TransformPolicyName(TransformPolicy p);

// Whether `policy` tries transform t on a delta chunk of type `dtype`:
// one that applies, and is the policy's or the policy is auto; or the
// first (XOR) when the policy's transform does not apply.
bool Tries(TransformPolicy policy, Transform t, DType dtype);

// DifferenceTo: dst = zigzag(order(target) - order(base)) element-wise,
// n bytes of type t (dst may be target); UndoDifference its inverse (out
// may be delta). Declared above, for the table.

}  // namespace zipnn::codec
