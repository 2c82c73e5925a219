#include "lib/codec/delta_transform.h"

#include <type_traits>

#include "lib/base/cpu.h"
#include "lib/base/endian.h"

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
    case 1: Run<kForward, uint8_t>(ordered, dst, a, base, count); break;
    case 2: Run<kForward, uint16_t>(ordered, dst, a, base, count); break;
    case 4: Run<kForward, uint32_t>(ordered, dst, a, base, count); break;
    case 8: Run<kForward, uint64_t>(ordered, dst, a, base, count); break;
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

const char* TransformName(Transform t) { return t == Transform::kDifference ? "difference" : "xor"; }

std::optional<TransformPolicy> ParseTransformPolicy(std::string_view name) {
  if (name == "auto") return TransformPolicy::kAuto;
  if (name == "xor") return TransformPolicy::kXor;
  if (name == "difference") return TransformPolicy::kDifference;
  return std::nullopt;
}

const char* TransformPolicyName(TransformPolicy p) {
  switch (p) {
    case TransformPolicy::kXor: return "xor";
    case TransformPolicy::kDifference: return "difference";
    default: return "auto";
  }
}

bool DifferenceApplies(DType t) { return t != DType::kBytes && t != DType::kBool; }

bool TriesDifference(TransformPolicy policy, DType t) { return DifferenceApplies(t) && policy != TransformPolicy::kXor; }

bool TriesXor(TransformPolicy policy, DType t) {
  return policy == TransformPolicy::kAuto || !TriesDifference(policy, t);
}

DType DifferenceGrouping(DType t) {
  switch (DTypeWidth(t)) {
    case 2: return DType::kU16;
    case 4: return DType::kU32;
    case 8: return DType::kU64;
    default: return DType::kU8;
  }
}

std::string DifferenceGroupLabel(DType t, int g) {
  return g >= DTypeWidth(t) ? "tail" : "d" + std::to_string(g);
}

}  // namespace zipnn::codec
