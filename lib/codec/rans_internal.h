// What the two rANS coders (rans.h, classed_rans.h) share: the state
// bounds, the model table's reader, and one encode step. Internal to
// lib/codec; plain functions, reentrant.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "lib/base/endian.h"
#include "lib/base/status.h"
#include "lib/codec/entropy.h"

namespace zipnn::codec::rans_internal {

inline constexpr uint32_t kLow = 1u << 16;  // L: states live in [L, 2^32)
inline constexpr size_t kStateBytes = 4;
// The sizes of streams 1 to kSegments - 1 that open a payload's streams
// (docs/format.md, "rANS payload" and "Classed rANS payload").
inline constexpr size_t kStreamSizeBytes = 4 * (kSegments - 1);

// Reads a model (precision, symbol range, frequency table; docs/format.md,
// "rANS payload") into `bits` and `freq`, and fills the tables `symbol`
// and, unless it is null, `step` (2^precision slots each: the symbol, and
// freq << 16 | (slot - cum)); returns the bytes read.
Result<size_t> ReadModel(const uint8_t* in, size_t size, uint32_t& bits, std::array<uint32_t, 256>& freq,
                         uint32_t* step, uint8_t* symbol);

// Reads the table of stream sizes at in + pos: the sizes of the first
// kSegments - 1 streams, the last stream taking the rest of the payload;
// moves pos past the table.
Result<std::array<size_t, kSegments>> ReadStreamSizes(const uint8_t* in, size_t size, size_t& pos);

// Codes one symbol into state x, whose words go down from p. As the
// decoder's refill, renormalising is a predicted branch where it is rare
// and branch-free elsewhere. Symbol: RansEncoder::Symbol.
template <bool kRareFlush, typename Symbol>
inline void PutSymbol(uint8_t*& p, uint32_t& x, const Symbol& sym) {
  if (kRareFlush) {
    if (__builtin_expect(x >= sym.x_max, 0)) {
      p -= 2;
      StoreLE<uint16_t>(p, static_cast<uint16_t>(x));
      x >>= 16;
    }
  } else {
    // The low word is always stored just below the stream (the space is
    // free), and kept only if needed.
    StoreLE<uint16_t>(p - 2, static_cast<uint16_t>(x));
    const uint32_t flush = x >= sym.x_max;
    p -= flush << 1;
    x >>= flush << 4;
  }
  const uint32_t q = static_cast<uint32_t>((static_cast<unsigned __int128>(x) * sym.reciprocal) >> 64);
  x += sym.bias + q * sym.complement;
}

}  // namespace zipnn::codec::rans_internal
