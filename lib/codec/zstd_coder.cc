#include "lib/codec/zstd_coder.h"

#include <string>

namespace zipnn::codec {

ZstdEncoder::ZstdEncoder() : zstd_(ZSTD_createCCtx()) {}
ZstdEncoder::~ZstdEncoder() { ZSTD_freeCCtx(zstd_); }

size_t ZstdEncoder::Encode(const uint8_t* in, size_t n, Buffer& out) {
  const size_t start = out.size();
  const size_t bound = ZSTD_compressBound(n);
  uint8_t* dst = out.Extend(bound);
  size_t got;
  if (prefix_size_ > 0) {
    // A prefix holds for one frame only; parameters are set anew each time.
    ZSTD_CCtx_reset(zstd_, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(zstd_, ZSTD_c_compressionLevel, level_);
    ZSTD_CCtx_refPrefix(zstd_, prefix_, prefix_size_);
    got = ZSTD_compress2(zstd_, dst, bound, in, n);
  } else {
    got = ZSTD_compressCCtx(zstd_, dst, bound, in, n, level_);
  }
  if (ZSTD_isError(got)) got = 0;
  out.Resize(start + got);
  return got;
}

ZstdDecoder::ZstdDecoder() : zstd_(ZSTD_createDCtx()) {}
ZstdDecoder::~ZstdDecoder() { ZSTD_freeDCtx(zstd_); }

Status ZstdDecoder::Decode(const uint8_t* in, size_t size, uint8_t* out, size_t n) {
  if (prefix_size_ > 0) {
    ZSTD_DCtx_reset(zstd_, ZSTD_reset_session_and_parameters);
    ZSTD_DCtx_refPrefix(zstd_, prefix_, prefix_size_);
  }
  const size_t got = ZSTD_decompressDCtx(zstd_, out, n, in, size);
  if (ZSTD_isError(got)) return Corruption(std::string("zstd group: ") + ZSTD_getErrorName(got));
  if (got != n)
    return Corruption("zstd group decodes to " + std::to_string(got) + " bytes, expected " + std::to_string(n));
  return OkStatus();
}

}  // namespace zipnn::codec
