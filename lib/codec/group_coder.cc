#include "lib/codec/group_coder.h"

#include <algorithm>
#include <cstring>

#include "lib/base/cpu.h"
#include "lib/base/endian.h"

namespace zipnn::codec {

std::string_view CoderName(Coder c) {
  switch (c) {
    case Coder::kRaw: return "raw";
    case Coder::kZero: return "zero";
    case Coder::kHuffman: return "huffman";
    case Coder::kZstd: return "zstd";
    case Coder::kRans: return "rans";
    case Coder::kSparse: return "sparse";
  }
  return "?";
}

std::optional<Coder> CoderFromByte(uint8_t v) {
  if (v > kMaxCoderValue) return std::nullopt;
  return static_cast<Coder>(v);
}

std::optional<CoderPolicy> ParseCoderPolicy(std::string_view name) {
  if (name == "auto") return CoderPolicy::kAuto;
  if (name == "huffman") return CoderPolicy::kHuffman;
  if (name == "zstd") return CoderPolicy::kZstd;
  if (name == "rans") return CoderPolicy::kRans;
  if (name == "sparse") return CoderPolicy::kSparse;
  if (name == "raw") return CoderPolicy::kRaw;
  return std::nullopt;
}

bool IsAllZero(const uint8_t* p, size_t n) {
  size_t i = 0;
  uint64_t acc = 0;
  // Word at a time with an early exit every 256 bytes: non-zero data (the
  // common case) leaves on the first block.
  for (; i + 256 <= n; i += 256) {
    for (size_t k = 0; k < 256; k += 8) acc |= LoadLE<uint64_t>(p + i + k);
    if (acc != 0) return false;
  }
  for (; i < n; ++i) acc |= p[i];
  return acc == 0;
}

ZIPNN_HOT bool HasZeroRunLongerThan(const uint8_t* p, size_t n, size_t length) {
  // Word at a time: a run grows by whole zero words and by the zero bytes
  // at either end of a non-zero word. Runs inside a word are under 8 bytes,
  // so for lengths of 8 or more they never matter.
  if (length < 8) {
    size_t run = 0;
    for (size_t i = 0; i < n; ++i) {
      run = p[i] == 0 ? run + 1 : 0;
      if (run > length) return true;
    }
    return false;
  }
  size_t run = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t w = LoadLE<uint64_t>(p + i);
    if (w == 0) {
      run += 8;
      if (run > length) return true;
      continue;
    }
    run += static_cast<size_t>(__builtin_ctzll(w)) / 8;  // low bytes come first in memory
    if (run > length) return true;
    run = static_cast<size_t>(__builtin_clzll(w)) / 8;
  }
  for (; i < n; ++i) {
    run = p[i] == 0 ? run + 1 : 0;
    if (run > length) return true;
  }
  return false;
}

GroupEncoder::GroupEncoder(CoderPolicy policy, int zstd_level, bool prefer_lz)
    : policy_(policy), zstd_level_(zstd_level), prefer_lz_(prefer_lz), zstd_(ZSTD_createCCtx()) {}

GroupEncoder::~GroupEncoder() { ZSTD_freeCCtx(zstd_); }

Coder GroupEncoder::EncodeRaw(const uint8_t* in, size_t n, Buffer& out) {
  out.Append(in, n);
  return Coder::kRaw;
}

namespace {

// Whether a payload of `size` bytes saves kMinSaving of an n-byte group.
bool Pays(size_t size, size_t n) {
  return static_cast<double>(size) <= static_cast<double>(n) * (1 - AutoRule::kMinSaving);
}

// For coders that estimate their size before encoding: encodes only if
// the estimate pays, and keeps the payload only if it really does.
template <typename Encode>
std::optional<Coder> TryEstimated(Coder coder, size_t estimate, size_t n, Buffer& out, Encode encode) {
  if (!Pays(estimate, n)) return std::nullopt;
  const size_t start = out.size();
  encode();
  if (!Pays(out.size() - start, n)) {
    out.Resize(start);
    return std::nullopt;
  }
  return coder;
}

}  // namespace

std::optional<Coder> GroupEncoder::TryHuffman(size_t n, Buffer& out) {
  const size_t size = huffman_.EncodedSize();
  if (!Pays(size, n)) return std::nullopt;
  const size_t start = out.size();
  out.Reserve(start + size + 8);  // the bit writer stores whole words
  huffman_.Encode(out.Extend(size));
  return Coder::kHuffman;
}

std::optional<Coder> GroupEncoder::TryRans(const uint8_t* in, size_t n, Buffer& out) {
  return TryEstimated(Coder::kRans, rans_.EstimatedSize(), n, out, [&] { rans_.Encode(in, n, out); });
}

std::optional<Coder> GroupEncoder::TrySparse(size_t n, Buffer& out) {
  return TryEstimated(Coder::kSparse, sparse_.EstimatedSize(), n, out, [&] { sparse_.Encode(out); });
}

std::optional<Coder> GroupEncoder::TryZstd(const uint8_t* in, size_t n, Buffer& out) {
  const size_t start = out.size();
  const size_t bound = ZSTD_compressBound(n);
  uint8_t* dst = out.Extend(bound);
  size_t got;
  if (prefix_size_ > 0) {
    // A prefix holds for one frame only; parameters are set anew each time.
    ZSTD_CCtx_reset(zstd_, ZSTD_reset_session_and_parameters);
    ZSTD_CCtx_setParameter(zstd_, ZSTD_c_compressionLevel, zstd_level_);
    ZSTD_CCtx_refPrefix(zstd_, prefix_, prefix_size_);
    got = ZSTD_compress2(zstd_, dst, bound, in, n);
  } else {
    got = ZSTD_compressCCtx(zstd_, dst, bound, in, n, zstd_level_);
  }
  if (ZSTD_isError(got) || !Pays(got, n)) {
    out.Resize(start);
    return std::nullopt;
  }
  out.Resize(start + got);
  return Coder::kZstd;
}

bool GroupEncoder::HasLongZeroRun(const uint8_t* in, size_t n, size_t chunk_len) const {
  const size_t run_floor = static_cast<size_t>(AutoRule::kZstdZeroRunShare * static_cast<double>(chunk_len));
  // Only scan for a run when there are enough zeros to hold one.
  return huffman_.histogram()[0] > run_floor && HasZeroRunLongerThan(in, n, run_floor);
}

std::optional<Coder> GroupEncoder::KeepSmaller(std::optional<Coder> coded, size_t start,
                                              const uint8_t* in, size_t n, Buffer& out) {
  // `out` holds the payload of `coded` (if any) from `start`; zstd goes
  // after it and, if smaller, moves into its place.
  const size_t mid = out.size();
  if (!TryZstd(in, n, out)) return coded;
  const size_t zstd_size = out.size() - mid;
  if (coded && zstd_size >= mid - start) {
    out.Resize(mid);
    return coded;
  }
  std::memmove(out.data() + start, out.data() + mid, zstd_size);
  out.Resize(start + zstd_size);
  return Coder::kZstd;
}

bool GroupEncoder::LooksIncompressible(const uint8_t* in, size_t n) {
  if (n < AutoRule::kSampleMinBytes) return false;
  Histogram h{};
  size_t taken = 0;
  for (size_t i = 0; i < n; i += AutoRule::kSampleStride, ++taken) ++h[in[i]];
  return EntropyBits(h) >= AutoRule::kSampleRawBits * static_cast<double>(taken);
}

Coder GroupEncoder::Encode(const uint8_t* in, size_t n, size_t chunk_len, Buffer& out) {
  std::optional<Coder> coded;
  switch (policy_) {
    case CoderPolicy::kRaw:
      break;
    case CoderPolicy::kHuffman:
      huffman_.Plan(in, n);
      coded = TryHuffman(n, out);
      break;
    case CoderPolicy::kZstd:
      coded = TryZstd(in, n, out);
      break;
    case CoderPolicy::kRans:
      rans_.Plan(CountBytes(in, n), n);
      coded = TryRans(in, n, out);
      break;
    case CoderPolicy::kSparse: {
      const Histogram h = CountBytes(in, n);
      if (h[0] == n) return Coder::kZero;
      sparse_.Plan(in, n, h);
      coded = TrySparse(n, out);
      break;
    }
    case CoderPolicy::kAuto: {
      if (IsAllZero(in, n)) return Coder::kZero;
      if (prefer_lz_) {
        coded = TryZstd(in, n, out);
        break;
      }
      if (LooksIncompressible(in, n)) break;
      const size_t start = out.size();
      huffman_.Plan(in, n);
      // Huffman spends at least one bit per byte and whole bits per
      // symbol; on a skewed group rANS can be much closer to the entropy.
      rans_.Plan(huffman_.histogram(), n);
      const double min_gain = delta_ ? AutoRule::kRansMinGainDelta : AutoRule::kRansMinGain;
      const bool rans = static_cast<double>(rans_.EstimatedSize()) <
                        static_cast<double>(huffman_.EncodedSize()) * (1 - min_gain);
      const size_t planned = rans ? rans_.EstimatedSize() : huffman_.EncodedSize();
      bool sparse = false;
      if (static_cast<double>(huffman_.histogram()[0]) >= AutoRule::kSparseMinZeros * static_cast<double>(n)) {
        sparse_.Plan(in, n, huffman_.histogram());
        sparse = static_cast<double>(sparse_.EstimatedSize()) <=
                 static_cast<double>(planned) * (1 + AutoRule::kSparseMaxLoss) + AutoRule::kSparseSlackBytes;
      }
      if (sparse) {
        coded = TrySparse(n, out);
      } else if (rans) {
        coded = TryRans(in, n, out);
      } else {
        coded = TryHuffman(n, out);
      }
      if (HasLongZeroRun(in, n, chunk_len)) coded = KeepSmaller(coded, start, in, n, out);
      break;
    }
  }
  return coded ? *coded : EncodeRaw(in, n, out);
}

GroupDecoder::GroupDecoder() : zstd_(ZSTD_createDCtx()) {}
GroupDecoder::~GroupDecoder() { ZSTD_freeDCtx(zstd_); }

Status GroupDecoder::Decode(Coder coder, const uint8_t* payload, size_t size, uint8_t* out,
                            size_t n) {
  switch (coder) {
    case Coder::kRaw:
      if (size != n) return Corruption("raw group holds " + std::to_string(size) + " bytes, expected " + std::to_string(n));
      std::memcpy(out, payload, n);
      return OkStatus();
    case Coder::kZero:
      if (size != 0) return Corruption("zero group has a payload");
      std::memset(out, 0, n);
      return OkStatus();
    case Coder::kHuffman:
      return HuffmanDecode(payload, size, out, n);
    case Coder::kRans:
      return rans_.Decode(payload, size, out, n);
    case Coder::kSparse:
      return sparse_.Decode(payload, size, out, n);
    case Coder::kZstd: {
      if (prefix_size_ > 0) {
        ZSTD_DCtx_reset(zstd_, ZSTD_reset_session_and_parameters);
        ZSTD_DCtx_refPrefix(zstd_, prefix_, prefix_size_);
      }
      const size_t got = ZSTD_decompressDCtx(zstd_, out, n, payload, size);
      if (ZSTD_isError(got)) return Corruption(std::string("zstd group: ") + ZSTD_getErrorName(got));
      if (got != n) return Corruption("zstd group decodes to " + std::to_string(got) + " bytes, expected " + std::to_string(n));
      return OkStatus();
    }
  }
  return Corruption("unknown coder");
}

}  // namespace zipnn::codec
