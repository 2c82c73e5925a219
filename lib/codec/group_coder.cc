#include "lib/codec/group_coder.h"

#include <algorithm>
#include <cstring>

#include "lib/base/cpu.h"
#include "lib/base/endian.h"

namespace zipnn::codec {

std::optional<CoderPolicy> ParseCoderPolicy(std::string_view name) {
  if (name == "auto") return CoderPolicy::kAuto;
  const std::optional<Coder> c = CoderFromName(name);
  if (!c) return std::nullopt;
  return CoderPolicy::Only(*c);
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

namespace {

// Whether a payload of `size` bytes saves `min_saving` of an n-byte group.
bool Pays(size_t size, size_t n, double min_saving) {
  return static_cast<double>(size) <= static_cast<double>(n) * (1 - min_saving);
}

// For an entropy coder after its Plan: encodes only if the estimate
// pays, and keeps the payload only if it really does.
template <typename Encoder>
std::optional<Coder> TryPlanned(Encoder& encoder, Coder coder, size_t n, Buffer& out,
                                double min_saving = AutoRule::kMinSaving) {
  if (!Pays(encoder.EstimatedSize(), n, min_saving)) return std::nullopt;
  const size_t start = out.size();
  encoder.Encode(out);
  if (!Pays(out.size() - start, n, min_saving)) {
    out.Resize(start);
    return std::nullopt;
  }
  return coder;
}

std::optional<Coder> TryZstd(ZstdEncoder& zstd, const uint8_t* in, size_t n, Buffer& out,
                             double min_saving = AutoRule::kMinSaving) {
  const size_t start = out.size();
  const size_t got = zstd.Encode(in, n, out);
  if (got == 0) return std::nullopt;
  if (!Pays(got, n, min_saving)) {
    out.Resize(start);
    return std::nullopt;
  }
  return Coder::kZstd;
}

}  // namespace

// The functions kCoders names (coders.h).

std::optional<Coder> EncodeRawGroup(EncoderSet&, const uint8_t* in, size_t n, Buffer& out) {
  return GroupEncoder::EncodeRaw(in, n, out);
}

std::optional<Coder> EncodeHuffmanGroup(EncoderSet& s, const uint8_t* in, size_t n, Buffer& out) {
  CountGroup(in, n, s.counts);
  s.huffman.Plan(in, n, s.counts);
  return TryPlanned(s.huffman, Coder::kHuffman, n, out);
}

std::optional<Coder> EncodeZstdGroup(EncoderSet& s, const uint8_t* in, size_t n, Buffer& out) {
  return TryZstd(s.zstd, in, n, out);
}

std::optional<Coder> EncodeRansGroup(EncoderSet& s, const uint8_t* in, size_t n, Buffer& out) {
  CountGroup(in, n, s.counts);
  s.rans.Plan(in, n, s.counts);
  return TryPlanned(s.rans, Coder::kRans, n, out);
}

std::optional<Coder> EncodeSparseGroup(EncoderSet& s, const uint8_t* in, size_t n, Buffer& out) {
  CountGroup(in, n, s.counts);
  if (s.counts.total[0] == n) return Coder::kZero;  // nothing for the sparse model to hold
  s.sparse.Plan(in, n, s.counts);
  return TryPlanned(s.sparse, Coder::kSparse, n, out);
}

const ElementClasses& Classes(EncoderSet& s, size_t n) {
  static const ElementClasses kNone;
  if (s.keys.elements == 0 || s.keys.elements != n) return kNone;
  if (!s.classified) {
    s.class_of.Resize(n);
    s.classes = ClassifyByKey(s.keys.key, s.keys.stride, n, s.class_of.data());
    s.classified = true;
  }
  return s.classes;
}

std::optional<Coder> EncodeClassedRansGroup(EncoderSet& s, const uint8_t* in, size_t n, Buffer& out) {
  // Outside a difference chunk the group takes the plain rANS coder (an
  // object of an older format may not name this one); without classes
  // (not a difference of floats, or a tail) the lanes coder has one model.
  if (!s.lanes) return EncodeRansGroup(s, in, n, out);
  const ElementClasses& classes = Classes(s, n);
  s.classed.Plan(in, n, classes.count >= 2 ? classes : ElementClasses{1, {}, nullptr, n});
  return TryPlanned(s.classed, Coder::kClassedRans, n, out);
}

Status DecodeRawGroup(DecoderSet&, const uint8_t* payload, size_t size, uint8_t* out, size_t n) {
  if (size != n) return Corruption("raw group holds " + std::to_string(size) + " bytes, expected " + std::to_string(n));
  std::memcpy(out, payload, n);
  return OkStatus();
}

Status DecodeZeroGroup(DecoderSet&, const uint8_t*, size_t size, uint8_t* out, size_t n) {
  if (size != 0) return Corruption("zero group has a payload");
  std::memset(out, 0, n);
  return OkStatus();
}

Status DecodeHuffmanGroup(DecoderSet& s, const uint8_t* payload, size_t size, uint8_t* out, size_t n) {
  return s.huffman.Decode(payload, size, out, n);
}

Status DecodeZstdGroup(DecoderSet& s, const uint8_t* payload, size_t size, uint8_t* out, size_t n) {
  return s.zstd.Decode(payload, size, out, n);
}

Status DecodeRansGroup(DecoderSet& s, const uint8_t* payload, size_t size, uint8_t* out, size_t n) {
  return s.rans.Decode(payload, size, out, n);
}

Status DecodeSparseGroup(DecoderSet& s, const uint8_t* payload, size_t size, uint8_t* out, size_t n) {
  return s.sparse.Decode(payload, size, out, n);
}

Status DecodeClassedRansGroup(DecoderSet& s, const uint8_t* payload, size_t size, uint8_t* out, size_t n) {
  return s.classed.Decode(payload, size, out, n, s.keys);
}

GroupEncoder::GroupEncoder(CoderPolicy policy, int zstd_level, bool prefer_lz)
    : policy_(policy), prefer_lz_(prefer_lz) {
  coders_.zstd.set_level(zstd_level);
}

Coder GroupEncoder::EncodeRaw(const uint8_t* in, size_t n, Buffer& out) {
  out.Append(in, n);
  return Coder::kRaw;
}

bool GroupEncoder::HasLongZeroRun(const uint8_t* in, size_t n, size_t chunk_len) const {
  const size_t run_floor = static_cast<size_t>(AutoRule::kZstdZeroRunShare * static_cast<double>(chunk_len));
  // Only scan for a run when there are enough zeros to hold one.
  return coders_.counts.total[0] > run_floor && HasZeroRunLongerThan(in, n, run_floor);
}

std::optional<Coder> GroupEncoder::KeepSmaller(std::optional<Coder> coded, size_t start, const uint8_t* in, size_t n,
                                               Buffer& out) {
  // `out` holds the payload of `coded` (if any) from `start`; zstd goes
  // after it and, if smaller, moves into its place.
  const size_t mid = out.size();
  if (!TryZstd(coders_.zstd, in, n, out, MinSaving())) return coded;
  const size_t zstd_size = out.size() - mid;
  if (coded && zstd_size >= mid - start) {
    out.Resize(mid);
    return coded;
  }
  std::memmove(out.data() + start, out.data() + mid, zstd_size);
  out.Resize(start + zstd_size);
  return Coder::kZstd;
}

bool GroupEncoder::LooksIncompressible(const uint8_t* in, size_t n) const {
  if (n < AutoRule::kSampleMinBytes) return false;
  Histogram h{};
  size_t taken = 0;
  for (size_t i = 0; i < n; i += AutoRule::kSampleStride, ++taken) ++h[in[i]];
  const double raw_bits = delta_ ? AutoRule::kSampleRawBitsDelta : AutoRule::kSampleRawBits;
  return EntropyBits(h) >= raw_bits * static_cast<double>(taken);
}

Coder GroupEncoder::Encode(const uint8_t* in, size_t n, size_t chunk_len, Buffer& out) {
  std::optional<Coder> coded;
  if (policy_.is_auto()) {
    coded = EncodeAuto(in, n, chunk_len, out);
  } else if (const EncodeGroupFn encode = kCoders[static_cast<uint8_t>(policy_.only())].encode) {
    coded = encode(coders_, in, n, out);
  }
  return coded ? *coded : EncodeRaw(in, n, out);
}

std::optional<Coder> GroupEncoder::EncodeAuto(const uint8_t* in, size_t n, size_t chunk_len, Buffer& out) {
  if (IsAllZero(in, n)) return Coder::kZero;
  if (prefer_lz_) return TryZstd(coders_.zstd, in, n, out, MinSaving());
  if (LooksIncompressible(in, n)) return std::nullopt;
  const size_t start = out.size();
  EncoderSet& c = coders_;
  CountGroup(in, n, c.counts);
  const Histogram& counts = c.counts.total;
  c.huffman.Plan(in, n, c.counts);
  // Huffman spends at least one bit per byte and whole bits per
  // symbol; on a skewed group rANS can be much closer to the entropy.
  c.rans.Plan(in, n, c.counts);
  const double min_gain = delta_ ? AutoRule::kRansMinGainDelta : AutoRule::kRansMinGain;
  const bool rans =
      static_cast<double>(c.rans.EstimatedSize()) < static_cast<double>(c.huffman.EstimatedSize()) * (1 - min_gain);
  const size_t planned = rans ? c.rans.EstimatedSize() : c.huffman.EstimatedSize();
  bool sparse = false;
  if (static_cast<double>(counts[0]) >= AutoRule::kSparseMinZeros * static_cast<double>(n)) {
    c.sparse.Plan(in, n, c.counts);
    sparse = static_cast<double>(c.sparse.EstimatedSize()) <=
             static_cast<double>(planned) * (1 + AutoRule::kSparseMaxLoss) + AutoRule::kSparseSlackBytes;
  }
  // In a difference chunk a group rANS would code takes the lanes coder
  // (rans-classed), whose decoder steps eight states of a stream at once:
  // with classes of element where they pay (a difference of floats), or
  // with one model where the group is large enough for its 112 bytes of
  // extra states to weigh little.
  bool classed = false;
  if (c.lanes && !sparse && Pays(planned, n, MinSaving())) {
    const ElementClasses& classes = Classes(c, n);
    const double min_gain = rans ? AutoRule::kClassedMinGain : AutoRule::kClassedMinGainOverHuffman;
    if (classes.count >= 2 && SampledClassGain(in, n, classes) >= min_gain) {
      c.classed.Plan(in, n, classes);
      classed = static_cast<double>(c.classed.EstimatedSize()) < static_cast<double>(planned) * (1 - min_gain);
    }
    if (!classed && rans && n >= AutoRule::kLanesMinGroup) {
      c.classed.Plan(in, n, ElementClasses{1, {}, nullptr, n}, &c.counts);
      classed = true;
    }
  }
  std::optional<Coder> coded;
  if (classed) {
    coded = TryPlanned(c.classed, Coder::kClassedRans, n, out, MinSaving());
  } else if (sparse) {
    coded = TryPlanned(c.sparse, Coder::kSparse, n, out, MinSaving());
  } else if (rans) {
    coded = TryPlanned(c.rans, Coder::kRans, n, out, MinSaving());
  } else {
    coded = TryPlanned(c.huffman, Coder::kHuffman, n, out, MinSaving());
  }
  if ((delta_ && n <= AutoRule::kZstdSmallDeltaGroup) || HasLongZeroRun(in, n, chunk_len)) {
    coded = KeepSmaller(coded, start, in, n, out);
  }
  return coded;
}

Status GroupDecoder::Decode(Coder coder, const uint8_t* payload, size_t size, uint8_t* out, size_t n) {
  const auto v = static_cast<uint8_t>(coder);
  if (v > kMaxCoderValue) return Corruption("unknown coder");
  return kCoders[v].decode(coders_, payload, size, out, n);
}

}  // namespace zipnn::codec
