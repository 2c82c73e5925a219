// Sparse coder for one byte group (docs/format.md, "Sparse payload"): the
// group as its non-zero bytes, each with the length of the run of zeros
// before it. An XOR delta is mostly zeros: a delta's exponent group has
// 0.03-2% non-zero bytes, a mantissa group late in training 3-12%. rANS
// spends work on every byte of a group; this coder spends it on the
// non-zero bytes only, so such groups encode and decode several times
// faster, at about the same size (the order-0 information of the bytes is
// that of the zero/non-zero positions plus that of the non-zero values).
//
// A run length L is sent as a length code, rANS-coded, and extra bits
// sent raw: codes 0..15 are the lengths themselves; code 12 + k, for k
// from 4, covers [2^k, 2^(k+1)) and takes k extra bits (L - 2^k). The
// values are rANS-coded too. Zeros after the last value are implied by
// the group size.
//
// SparseEncoder is used by one thread at a time; SparseDecoder likewise
// (it keeps scratch buffers). The decoder may read up to
// kDecoderReadPadding bytes past the end of its input.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/base/buffer.h"
#include "lib/base/status.h"
#include "lib/codec/entropy.h"
#include "lib/codec/rans.h"

namespace zipnn::codec {

// A coder of the shape in coders.h: Plan, EstimatedSize, Encode.
class SparseEncoder {
 public:
  // Splits in[0..n) into runs and values and models both. `counts` are
  // those bytes' counts, which must include at least one non-zero byte.
  // `in` must stay valid and unchanged until Encode.
  void Plan(const uint8_t* in, size_t n, const GroupCounts& counts);
  // Size of the payload Encode will write, to within a few bytes.
  size_t EstimatedSize() const { return estimated_size_; }
  // Appends the payload to `out`.
  void Encode(Buffer& out);

 private:
  Buffer codes_;  // a length code per value
  Buffer values_;
  Buffer extra_;  // the extra bits, packed
  RansEncoder code_coder_;
  RansEncoder value_coder_;
  size_t estimated_size_ = 0;
};

class SparseDecoder {
 public:
  // Decodes a payload made by SparseEncoder into exactly n bytes. `in`
  // must be readable up to in + size + kDecoderReadPadding.
  Status Decode(const uint8_t* in, size_t size, uint8_t* out, size_t n);
  // The same payload as its non-zero bytes only: count() of them, at
  // positions() (ascending, each below n) with values(), valid until the
  // next call. For a patch applied where the bytes go, in work
  // proportional to them rather than to n.
  Status DecodeNonZero(const uint8_t* in, size_t size, size_t n);
  size_t count() const { return count_; }
  const uint32_t* positions() const { return reinterpret_cast<const uint32_t*>(positions_.data()); }
  const uint8_t* values() const { return values_.data(); }
  // The number of non-zero bytes a payload declares (0 when it is too
  // short to say), read before anything is decoded.
  static size_t DeclaredCount(const uint8_t* in, size_t size);

 private:
  // Decodes the codes and values into values_, then calls put(i,
  // position) for the i-th non-zero byte, in order.
  template <typename Put>
  Status Walk(const uint8_t* in, size_t size, size_t n, Put&& put);

  RansDecoder code_decoder_;
  RansDecoder value_decoder_;
  Buffer codes_;
  Buffer values_;
  Buffer positions_;  // uint32_t each
  size_t count_ = 0;
};

}  // namespace zipnn::codec
