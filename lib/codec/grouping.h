// Byte grouping: the regrouping step of the ZipNN method. A run of n bytes
// of one dtype of width w becomes w groups of n/w bytes (group k holds byte
// k of every element, little-endian) plus a "tail" group of the n % w bytes
// that do not fill a whole element. For floating-point types the element is
// first rotated left by one bit, which moves the sign from the top bit to
// bit 0 so that the top byte group holds exponent bits only (docs/codec.md).
//
// Groups are stored back to back in one buffer: group k starts at k*(n/w),
// the tail at w*(n/w). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/codec/dtype.h"

namespace zipnn::codec {

// Number of groups for n bytes of type t (width, plus one if a tail exists).
int GroupCount(DType t, size_t n);
// Size of group g for n bytes of type t.
size_t GroupSize(DType t, size_t n, int g);
size_t GroupOffset(DType t, size_t n, int g);

// in: n bytes of elements; out: n bytes of groups. Buffers must not overlap.
void SplitGroups(DType t, const uint8_t* in, size_t n, uint8_t* out);
// Inverse of SplitGroups.
void MergeGroups(DType t, const uint8_t* in, size_t n, uint8_t* out);

// dst[i] ^= src[i]: the XOR delta against a base.
void XorInto(uint8_t* dst, const uint8_t* src, size_t n);
// dst[i] = a[i] ^ b[i], in one pass.
void XorTo(uint8_t* dst, const uint8_t* a, const uint8_t* b, size_t n);

}  // namespace zipnn::codec
