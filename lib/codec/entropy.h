// What the entropy coders (huffman.h, rans.h, sparse.h) share: the byte
// counts their models are built from, the four segments a group is cut
// into, and how far past its input a decoder may read.
//
// Huffman and rANS code the four segments of a group as independent
// streams, so that a decoder runs four dependency chains at once; the
// counts are therefore taken per segment, in the same single pass that
// totals them, and every coder's Plan takes them (coders.h, "one shape").
//
// Plain values and reentrant functions.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace zipnn::codec {

inline constexpr int kSegments = 4;
// Decoders may read up to this many bytes past the end of a payload
// (never using them), so callers pad their input buffers.
inline constexpr size_t kDecoderReadPadding = 8;

using Histogram = std::array<uint64_t, 256>;

// The counts of one group of n bytes: in all, and per segment.
struct GroupCounts {
  Histogram total{};
  std::array<Histogram, kSegments> segment{};
};

// Segment j of an n-byte group is [SegmentStart(n, j), SegmentStart(n, j + 1)).
inline size_t SegmentStart(size_t n, int j) {
  const size_t length = (n + kSegments - 1) / kSegments;
  return std::min(n, static_cast<size_t>(j) * length);
}

Histogram CountBytes(const uint8_t* in, size_t n);
// A sample's counts: the 8 bytes at the start of every whole `block`
// bytes (block a multiple of 8), for estimates that need not see all.
Histogram CountSample(const uint8_t* in, size_t n, size_t block);
void CountGroup(const uint8_t* in, size_t n, GroupCounts& counts);
// Order-0 Shannon information of the counted bytes, in bits.
double EntropyBits(const Histogram& h);

}  // namespace zipnn::codec
