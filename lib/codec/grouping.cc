#include "lib/codec/grouping.h"

#include <cstring>

#include "lib/base/cpu.h"
#include "lib/base/endian.h"

namespace zipnn::codec {

namespace {

template <typename U>
constexpr U RotateLeft1(U v) {
  return static_cast<U>((v << 1) | (v >> (sizeof(U) * 8 - 1)));
}

template <typename U>
constexpr U RotateRight1(U v) {
  return static_cast<U>((v >> 1) | (v << (sizeof(U) * 8 - 1)));
}

// Element-wise loops written so that gcc vectorises them: each group is a
// separate output stream and the body has no cross-iteration dependency.
template <typename U, bool kRotate>
void SplitWhole(const uint8_t* in, size_t count, uint8_t* out) {
  constexpr int kWidth = sizeof(U);
  uint8_t* g[kWidth];
  for (int k = 0; k < kWidth; ++k) g[k] = out + k * count;
  for (size_t i = 0; i < count; ++i) {
    U v = LoadLE<U>(in + i * kWidth);
    if (kRotate) v = RotateLeft1(v);
    for (int k = 0; k < kWidth; ++k) g[k][i] = static_cast<uint8_t>(v >> (8 * k));
  }
}

template <typename U, bool kRotate>
void MergeWhole(const uint8_t* in, size_t count, uint8_t* out) {
  constexpr int kWidth = sizeof(U);
  const uint8_t* g[kWidth];
  for (int k = 0; k < kWidth; ++k) g[k] = in + k * count;
  for (size_t i = 0; i < count; ++i) {
    U v = 0;
    for (int k = 0; k < kWidth; ++k) v |= static_cast<U>(static_cast<U>(g[k][i]) << (8 * k));
    if (kRotate) v = RotateRight1(v);
    StoreLE<U>(out + i * kWidth, v);
  }
}

template <bool kSplit>
ZIPNN_HOT void Regroup(DType t, const uint8_t* in, size_t n, uint8_t* out) {
  if (n == 0) return;  // buffers of empty groups may be null
  const int width = DTypeWidth(t);
  const size_t count = n / static_cast<size_t>(width);
  const size_t whole = count * static_cast<size_t>(width);
  const bool rotate = DTypeRotatesSign(t);
  switch (width) {
    case 1:
      std::memcpy(out, in, whole);
      break;
    case 2:
      if (kSplit)
        rotate ? SplitWhole<uint16_t, true>(in, count, out) : SplitWhole<uint16_t, false>(in, count, out);
      else
        rotate ? MergeWhole<uint16_t, true>(in, count, out) : MergeWhole<uint16_t, false>(in, count, out);
      break;
    case 4:
      if (kSplit)
        rotate ? SplitWhole<uint32_t, true>(in, count, out) : SplitWhole<uint32_t, false>(in, count, out);
      else
        rotate ? MergeWhole<uint32_t, true>(in, count, out) : MergeWhole<uint32_t, false>(in, count, out);
      break;
    case 8:
      if (kSplit)
        rotate ? SplitWhole<uint64_t, true>(in, count, out) : SplitWhole<uint64_t, false>(in, count, out);
      else
        rotate ? MergeWhole<uint64_t, true>(in, count, out) : MergeWhole<uint64_t, false>(in, count, out);
      break;
  }
  std::memcpy(out + whole, in + whole, n - whole);  // the tail, as it is
}

}  // namespace

int GroupCount(DType t, size_t n) {
  const size_t width = static_cast<size_t>(DTypeWidth(t));
  return static_cast<int>(width) + (n % width != 0 ? 1 : 0);
}

size_t GroupSize(DType t, size_t n, int g) {
  const size_t width = static_cast<size_t>(DTypeWidth(t));
  return static_cast<size_t>(g) < width ? n / width : n % width;
}

size_t GroupOffset(DType t, size_t n, int g) {
  return static_cast<size_t>(g) * (n / static_cast<size_t>(DTypeWidth(t)));
}

void SplitGroups(DType t, const uint8_t* in, size_t n, uint8_t* out) { Regroup<true>(t, in, n, out); }

void MergeGroups(DType t, const uint8_t* in, size_t n, uint8_t* out) { Regroup<false>(t, in, n, out); }

ZIPNN_HOT void XorInto(uint8_t* dst, const uint8_t* src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    StoreLE<uint64_t>(dst + i, LoadLE<uint64_t>(dst + i) ^ LoadLE<uint64_t>(src + i));
  }
  for (; i < n; ++i) dst[i] ^= src[i];
}

ZIPNN_HOT void XorTo(uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    StoreLE<uint64_t>(dst + i, LoadLE<uint64_t>(a + i) ^ LoadLE<uint64_t>(b + i));
  }
  for (; i < n; ++i) dst[i] = a[i] ^ b[i];
}

}  // namespace zipnn::codec
