#include "lib/codec/delta_transform.h"

#include <cstring>
#include <type_traits>

#include "lib/base/cpu.h"
#include "lib/base/endian.h"
#include "lib/codec/grouping.h"

namespace zipnn::codec {

namespace {

bool SignMagnitude(DType t) {
  switch (t) {
    case DType::kF64:
    case DType::kF32:
    case DType::kBF16:
    case DType::kF16:
    case DType::kF8E4M3:
    case DType::kF8E5M2:
      return true;
    default:
      return false;
  }
}

template <typename U>
constexpr U kSign = static_cast<U>(U{1} << (sizeof(U) * 8 - 1));

// Bits of a sign-magnitude value to an unsigned integer of the same order,
// and back.
template <typename U>
constexpr U Ordered(U v) {
  return (v & kSign<U>) != 0 ? static_cast<U>(~v) : static_cast<U>(v | kSign<U>);
}
template <typename U>
constexpr U FromOrdered(U o) {
  return (o & kSign<U>) != 0 ? static_cast<U>(o & ~kSign<U>) : static_cast<U>(~o);
}

template <typename U>
constexpr U ZigZag(U d) {
  using S = std::make_signed_t<U>;
  return static_cast<U>(static_cast<U>(d << 1) ^ static_cast<U>(static_cast<S>(d) >> (sizeof(U) * 8 - 1)));
}
template <typename U>
constexpr U UnZigZag(U z) {
  return static_cast<U>((z >> 1) ^ static_cast<U>(U{0} - (z & 1)));
}

// Element loops without cross-iteration dependencies, for gcc to vectorise.
template <typename U, bool kOrdered>
ZIPNN_INLINE void Forward(uint8_t* dst, const uint8_t* target, const uint8_t* base, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    U t = LoadLE<U>(target + i * sizeof(U)), b = LoadLE<U>(base + i * sizeof(U));
    if (kOrdered) t = Ordered(t), b = Ordered(b);
    StoreLE<U>(dst + i * sizeof(U), ZigZag(static_cast<U>(t - b)));
  }
}
template <typename U, bool kOrdered>
ZIPNN_INLINE void Backward(uint8_t* out, const uint8_t* delta, const uint8_t* base, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    U b = LoadLE<U>(base + i * sizeof(U));
    if (kOrdered) b = Ordered(b);
    U t = static_cast<U>(b + UnZigZag(LoadLE<U>(delta + i * sizeof(U))));
    if (kOrdered) t = FromOrdered(t);
    StoreLE<U>(out + i * sizeof(U), t);
  }
}

template <bool kForward, typename U>
ZIPNN_INLINE void Run(bool ordered, uint8_t* dst, const uint8_t* a, const uint8_t* base, size_t count) {
  if (kForward) {
    ordered ? Forward<U, true>(dst, a, base, count) : Forward<U, false>(dst, a, base, count);
  } else {
    ordered ? Backward<U, true>(dst, a, base, count) : Backward<U, false>(dst, a, base, count);
  }
}

template <bool kForward>
ZIPNN_HOT void Apply(DType t, uint8_t* dst, const uint8_t* a, const uint8_t* base, size_t n) {
  if (n == 0) return;
  const size_t width = static_cast<size_t>(DTypeWidth(t));
  const size_t count = n / width, whole = count * width;
  const bool ordered = SignMagnitude(t);
  switch (width) {
    case 1:
      Run<kForward, uint8_t>(ordered, dst, a, base, count);
      break;
    case 2:
      Run<kForward, uint16_t>(ordered, dst, a, base, count);
      break;
    case 4:
      Run<kForward, uint32_t>(ordered, dst, a, base, count);
      break;
    case 8:
      Run<kForward, uint64_t>(ordered, dst, a, base, count);
      break;
  }
  for (size_t i = whole; i < n; ++i) dst[i] = static_cast<uint8_t>(a[i] ^ base[i]);
}

}  // namespace

void DifferenceTo(DType t, uint8_t* dst, const uint8_t* target, const uint8_t* base, size_t n) {
  Apply<true>(t, dst, target, base, n);
}

void UndoDifference(DType t, uint8_t* out, const uint8_t* delta, const uint8_t* base, size_t n) {
  Apply<false>(t, out, delta, base, n);
}

bool XorApplies(DType) { return true; }

void XorTake(DType, uint8_t* dst, const uint8_t* target, const uint8_t* base, size_t n) { XorTo(dst, target, base, n); }

void XorUndo(DType, uint8_t* out, const uint8_t* delta, const uint8_t* base, size_t n) {
  if (out == base) return XorInto(out, delta, n);
  if (out != delta) std::memmove(out, delta, n);
  XorInto(out, base, n);
}

DType XorGrouping(DType t) { return t; }

const char* TransformName(Transform t) { return static_cast<size_t>(t) < kTransformCount ? InfoOf(t).name : "?"; }

void StandaloneTake(DType, uint8_t* dst, const uint8_t* target, const uint8_t*, size_t n) {
  if (dst != target) std::memmove(dst, target, n);
}

void StandaloneUndo(DType, uint8_t* out, const uint8_t* delta, const uint8_t*, size_t n) {
  if (out != delta) std::memmove(out, delta, n);
}

std::vector<std::string> TransformPolicyNames() {
  std::vector<std::string> names = {"auto"};
  for (const TransformInfo& t : kTransforms) {
    if (t.from_base) names.push_back(t.name);
  }
  return names;
}

Result<TransformPolicy> ParseTransformPolicy(std::string_view name) {
  if (name == "auto") return kAutoTransform;
  for (const TransformInfo& t : kTransforms) {
    if (t.from_base && name == t.name) return TransformPolicy(t.transform);
  }
  std::string choices;
  for (const std::string& n : TransformPolicyNames()) choices += (choices.empty() ? "" : ", ") + n;
  return InvalidArgument("unknown transform '" + std::string(name) + "' (one of: " + choices + ")");
}

const char* TransformPolicyName(TransformPolicy p) { return p ? TransformName(*p) : "auto"; }

bool DifferenceApplies(DType t) { return t != DType::kBytes && t != DType::kBool; }

bool Tries(TransformPolicy policy, Transform t, DType dtype) {
  if (!InfoOf(t).applies(dtype)) return false;
  if (!policy || *policy == t) return true;
  return t == kTransforms[0].transform && !InfoOf(*policy).applies(dtype);
}

DType DifferenceGrouping(DType t) {
  switch (DTypeWidth(t)) {
    case 2:
      return DType::kU16;
    case 4:
      return DType::kU32;
    case 8:
      return DType::kU64;
    default:
      return DType::kU8;
  }
}

std::string DifferenceGroupLabel(DType t, int g) { return g >= DTypeWidth(t) ? "tail" : "d" + std::to_string(g); }

}  // namespace zipnn::codec
