// Huffman-only entropy coder for one byte group (docs/format.md, "Huffman
// payload"). The input is cut into four equal segments, each coded as its
// own bit stream, so the decoder can run four independent dependency chains
// at once. Codes are canonical, at most kHuffmanMaxBits long, written
// least-significant bit first.
//
// HuffmanEncoder is used by one thread at a time; HuffmanDecoder is
// reentrant. The decoder may read up to kDecoderReadPadding bytes past the
// end of its input (never using them), so callers pad input buffers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "lib/base/buffer.h"
#include "lib/base/status.h"
#include "lib/codec/entropy.h"

namespace zipnn::codec {

inline constexpr int kHuffmanMaxBits = 11;
inline constexpr int kHuffmanStreams = kSegments;

// A coder of the shape in coders.h: Plan, EstimatedSize, Encode.
class HuffmanEncoder {
 public:
  // Builds a length-limited code for in[0..n) (n >= 1) from its counts.
  // `in` must stay valid and unchanged until Encode.
  void Plan(const uint8_t* in, size_t n, const GroupCounts& counts);
  // Size of the payload Encode appends; for Huffman it is exact.
  size_t EstimatedSize() const { return encoded_size_; }
  // Appends the payload to `out`.
  void Encode(Buffer& out);

 private:
  const uint8_t* in_ = nullptr;
  size_t n_ = 0;
  std::array<uint8_t, 256> length_{};
  std::array<uint16_t, 256> code_{};  // bit-reversed, ready to emit LSB first
  std::array<size_t, kHuffmanStreams> stream_bytes_{};
  int first_symbol_ = 0;
  int last_symbol_ = 0;
  size_t encoded_size_ = 0;
  std::unique_ptr<uint64_t[]> pair_;  // two-symbol entries, 2^16, made on first use
};

// Holds no state: one may serve any number of threads.
class HuffmanDecoder {
 public:
  // Decodes a payload made by HuffmanEncoder into exactly n bytes. `in`
  // must be readable up to in + size + kDecoderReadPadding.
  Status Decode(const uint8_t* in, size_t size, uint8_t* out, size_t n) const;
};

}  // namespace zipnn::codec
