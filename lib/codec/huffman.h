// Huffman-only entropy coder for one byte group (docs/format.md, "Huffman
// payload"). The input is cut into four equal segments, each coded as its
// own bit stream, so the decoder can run four independent dependency chains
// at once. Codes are canonical, at most kHuffmanMaxBits long, written
// least-significant bit first.
//
// HuffmanEncoder is used by one thread at a time; HuffmanDecode is
// reentrant. The decoder may read up to kDecoderReadPadding bytes past the
// end of its input (never using them), so callers pad input buffers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "lib/base/status.h"

namespace zipnn::codec {

inline constexpr int kHuffmanMaxBits = 11;
inline constexpr int kHuffmanStreams = 4;
inline constexpr size_t kDecoderReadPadding = 8;

using Histogram = std::array<uint64_t, 256>;

Histogram CountBytes(const uint8_t* in, size_t n);
// Order-0 Shannon information of the counted bytes, in bits.
double EntropyBits(const Histogram& h);

class HuffmanEncoder {
 public:
  // Counts `in` and builds a length-limited code. `in` must stay valid and
  // unchanged until Encode. n must be at least 1.
  void Plan(const uint8_t* in, size_t n);

  const Histogram& histogram() const { return total_; }
  // Exact size of the payload Encode writes.
  size_t EncodedSize() const { return encoded_size_; }
  // Writes EncodedSize() bytes to `out`, which must have room for
  // EncodedSize() + 8 (the bit writer stores whole 64-bit words).
  void Encode(uint8_t* out);

 private:
  const uint8_t* in_ = nullptr;
  size_t n_ = 0;
  Histogram total_{};
  std::array<Histogram, kHuffmanStreams> segment_{};
  std::array<uint8_t, 256> length_{};
  std::array<uint16_t, 256> code_{};  // bit-reversed, ready to emit LSB first
  std::array<size_t, kHuffmanStreams> stream_bytes_{};
  int first_symbol_ = 0;
  int last_symbol_ = 0;
  size_t encoded_size_ = 0;
  std::unique_ptr<uint64_t[]> pair_;  // two-symbol entries, 2^16, made on first use
};

// Decodes a payload made by HuffmanEncoder into exactly n bytes. `in` must
// be readable up to in + size + kDecoderReadPadding.
Status HuffmanDecode(const uint8_t* in, size_t size, uint8_t* out, size_t n);

}  // namespace zipnn::codec
