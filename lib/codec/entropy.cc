#include "lib/codec/entropy.h"

#include <cmath>
#include <numeric>

#include "lib/base/cpu.h"
#include "lib/base/endian.h"

namespace zipnn::codec {

ZIPNN_HOT void CountGroup(const uint8_t* in, size_t n, GroupCounts& counts) {
  // All four segments in one pass, two counter tables each (alternate
  // bytes), so a run of one value never waits on its own counter and the
  // tables are cleared once per group.
  std::array<std::array<std::array<uint32_t, 256>, 2>, kSegments> c{};
  const uint8_t* seg[kSegments];
  size_t len[kSegments];
  for (int j = 0; j < kSegments; ++j) {
    seg[j] = in + SegmentStart(n, j);
    len[j] = SegmentStart(n, j + 1) - SegmentStart(n, j);
  }
  const size_t common = len[kSegments - 1] & ~size_t{7};
  for (size_t i = 0; i < common; i += 8) {
    for (int j = 0; j < kSegments; ++j) {
      const uint64_t v = LoadLE<uint64_t>(seg[j] + i);
      for (int k = 0; k < 8; ++k) ++c[j][k & 1][(v >> (8 * k)) & 0xff];
    }
  }
  for (int j = 0; j < kSegments; ++j) {
    for (size_t i = common; i < len[j]; ++i) ++c[j][0][seg[j][i]];
    for (int s = 0; s < 256; ++s) counts.segment[j][s] = uint64_t{c[j][0][s]} + c[j][1][s];
  }
  counts.total.fill(0);
  for (int j = 0; j < kSegments; ++j) {
    for (int s = 0; s < 256; ++s) counts.total[s] += counts.segment[j][s];
  }
}

namespace {

// Eight tables, one per byte of a word: skewed data (a few exponent
// values) would otherwise increment one counter back to back and wait on
// its own store.
using WordTables = std::array<std::array<uint32_t, 256>, 8>;

Histogram Total(const WordTables& c) {
  Histogram h;
  for (int s = 0; s < 256; ++s) {
    uint64_t t = 0;
    for (int k = 0; k < 8; ++k) t += c[k][s];
    h[s] = t;
  }
  return h;
}

}  // namespace

ZIPNN_HOT Histogram CountBytes(const uint8_t* in, size_t n) {
  WordTables c{};
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const uint64_t v = LoadLE<uint64_t>(in + i);
    const uint64_t u = LoadLE<uint64_t>(in + i + 8);
    for (int k = 0; k < 8; ++k) ++c[k][(v >> (8 * k)) & 0xff];
    for (int k = 0; k < 8; ++k) ++c[k][(u >> (8 * k)) & 0xff];
  }
  for (; i < n; ++i) ++c[0][in[i]];
  return Total(c);
}

ZIPNN_HOT Histogram CountSample(const uint8_t* in, size_t n, size_t block) {
  WordTables c{};
  for (size_t i = 0; i + block <= n; i += block) {
    const uint64_t v = LoadLE<uint64_t>(in + i);
    for (int k = 0; k < 8; ++k) ++c[k][(v >> (8 * k)) & 0xff];
  }
  return Total(c);
}

double EntropyBits(const Histogram& h) {
  const uint64_t n = std::accumulate(h.begin(), h.end(), uint64_t{0});
  double bits = 0;
  for (uint64_t c : h) {
    if (c != 0) bits += static_cast<double>(c) * std::log2(static_cast<double>(n) / static_cast<double>(c));
  }
  return bits;
}

}  // namespace zipnn::codec
