// zstd as a group coder: one zstd frame per group, optionally made with a
// prefix as history (a base's header for a header). zstd cannot tell its
// size before it has coded, so its encoder codes at once instead of
// planning first like the entropy coders (coders.h).
//
// ZstdEncoder and ZstdDecoder own a zstd context each and are used by one
// thread at a time.
#pragma once

#include <zstd.h>

#include <cstddef>
#include <cstdint>

#include "lib/base/buffer.h"
#include "lib/base/status.h"

namespace zipnn::codec {

class ZstdEncoder {
 public:
  ZstdEncoder();
  ~ZstdEncoder();
  ZstdEncoder(const ZstdEncoder&) = delete;
  ZstdEncoder& operator=(const ZstdEncoder&) = delete;

  void set_level(int level) { level_ = level; }
  // Frames made after this use these bytes as history; empty for none.
  // They must outlive Encode.
  void set_prefix(const uint8_t* p, size_t n) { prefix_ = p, prefix_size_ = n; }
  // Appends one frame of in[0..n) to `out` and returns its size, or
  // returns 0 and appends nothing when zstd fails.
  size_t Encode(const uint8_t* in, size_t n, Buffer& out);

 private:
  ZSTD_CCtx* zstd_ = nullptr;
  int level_ = 3;
  const uint8_t* prefix_ = nullptr;
  size_t prefix_size_ = 0;
};

class ZstdDecoder {
 public:
  ZstdDecoder();
  ~ZstdDecoder();
  ZstdDecoder(const ZstdDecoder&) = delete;
  ZstdDecoder& operator=(const ZstdDecoder&) = delete;

  // The history frames were made with (ZstdEncoder::set_prefix).
  void set_prefix(const uint8_t* p, size_t n) { prefix_ = p, prefix_size_ = n; }
  // Decodes one frame of `size` bytes into exactly n bytes.
  Status Decode(const uint8_t* in, size_t size, uint8_t* out, size_t n);

 private:
  ZSTD_DCtx* zstd_ = nullptr;
  const uint8_t* prefix_ = nullptr;
  size_t prefix_size_ = 0;
};

}  // namespace zipnn::codec
