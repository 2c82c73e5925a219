#include "lib/codec/rans.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "lib/base/cpu.h"
#include "lib/base/endian.h"
#include "lib/codec/rans_internal.h"

namespace zipnn::codec {

namespace {

using rans_internal::kLow;
using rans_internal::kStateBytes;
using rans_internal::kStreamSizeBytes;
using rans_internal::PutSymbol;
using rans_internal::ReadModel;
using rans_internal::ReadStreamSizes;
// Symbols decoded per stream between bounds checks: each may read 2 bytes,
// and the input is padded by kDecoderReadPadding.
constexpr size_t kSymbolsPerCheck = kDecoderReadPadding / 2;

// Frequency tables are Elias-gamma codes of f + 1 (f = 0: the value is
// absent), least-significant bit first: k zero bits, then the k + 1 bits of
// the value, most significant first. An absent value costs 1 bit, f = 1
// or 2 cost 3 bits: most of a mantissa XOR's 256 values are rare.
size_t GammaBits(uint32_t v) { return 2 * static_cast<size_t>(31 - __builtin_clz(v)) + 1; }

class BitPacker {
 public:
  explicit BitPacker(Buffer& out) : out_(out) {}
  void Put(uint32_t bit) {
    if (used_ == 0) out_.Extend(1)[0] = 0;
    out_.data()[out_.size() - 1] |= static_cast<uint8_t>(bit << used_);
    used_ = (used_ + 1) & 7;
  }
  void PutGamma(uint32_t v) {
    const int k = 31 - __builtin_clz(v);
    for (int i = 0; i < k; ++i) Put(0);
    for (int i = k; i >= 0; --i) Put((v >> i) & 1);
  }

 private:
  Buffer& out_;
  unsigned used_ = 0;
};

class BitUnpacker {
 public:
  BitUnpacker(const uint8_t* p, size_t size) : p_(p), size_(size) {}
  // False when the bits run out or a code is longer than 16 bits.
  bool GetGamma(uint32_t& v) {
    int k = 0;
    uint32_t bit;
    for (;;) {
      if (!Get(bit)) return false;
      if (bit == 1) break;
      if (++k > 16) return false;
    }
    v = 1;
    for (int i = 0; i < k; ++i) {
      if (!Get(bit)) return false;
      v = v << 1 | bit;
    }
    return true;
  }
  size_t bytes_used() const { return (pos_ + 7) / 8; }

 private:
  bool Get(uint32_t& bit) {
    if (pos_ >= 8 * size_) return false;
    bit = (p_[pos_ / 8] >> (pos_ % 8)) & 1;
    ++pos_;
    return true;
  }
  const uint8_t* p_;
  size_t size_;
  size_t pos_ = 0;
};

// Scales counts to frequencies summing to 2^bits, every present symbol at
// least 1, rounding to nearest and settling the difference on the largest.
void Normalise(const Histogram& h, size_t n, int bits, std::array<uint16_t, 256>& freq) {
  const uint32_t scale = 1u << bits;
  freq.fill(0);
  int64_t sum = 0;
  int largest = 0;
  for (int s = 0; s < 256; ++s) {
    if (h[s] == 0) continue;
    const uint64_t scaled = (h[s] * scale + n / 2) / n;
    freq[s] = static_cast<uint16_t>(std::max<uint64_t>(1, scaled));
    sum += freq[s];
    if (h[s] > h[largest]) largest = s;
  }
  if (sum <= scale) {
    freq[largest] = static_cast<uint16_t>(freq[largest] + (scale - sum));
    return;
  }
  // Too many rare symbols were rounded up to 1: take from the largest
  // frequencies, one at a time, never below 1.
  while (sum > scale) {
    int top = 0;
    for (int s = 1; s < 256; ++s) {
      if (freq[s] > freq[top]) top = s;
    }
    const uint16_t cut = static_cast<uint16_t>(std::min<int64_t>(sum - scale, freq[top] / 2));
    freq[top] = static_cast<uint16_t>(freq[top] - std::max<uint16_t>(cut, 1));
    sum -= std::max<uint16_t>(cut, 1);
  }
}

}  // namespace

// Encodes backwards: `next` points one past the next symbol to code, `p`
// at the first byte written so far (at least 2 bytes above the start of
// the stream's space: its 4-byte state goes there last).
struct RansEncoder::Writer {
  uint8_t* p;
  uint32_t x;
  const uint8_t* next;

  template <bool kRareFlush>
  void Put(const Symbol* table) {
    PutSymbol<kRareFlush>(p, x, table[*--next]);
  }
};

namespace {

// n symbols of each of the four streams, in lockstep. Locals, not array
// elements, so that states and positions stay in registers.
template <bool kRareFlush, typename Writer, typename Symbol>
void PutLockstep(Writer (&w)[kSegments], size_t n, const Symbol* sym) {
  Writer w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
  for (size_t t = 0; t < n; ++t) {
    w0.template Put<kRareFlush>(sym);
    w1.template Put<kRareFlush>(sym);
    w2.template Put<kRareFlush>(sym);
    w3.template Put<kRareFlush>(sym);
  }
  w[0] = w0, w[1] = w1, w[2] = w2, w[3] = w3;
}

struct Reader {
  const uint8_t* p;
  uint32_t x;
};

// The decoder's scale: M = 2^bits, slot = x mod M.
struct Scale {
  uint32_t bits;
  uint32_t mask;
};

// One decode step: slot -> symbol, then the state moves back by the
// symbol's share and takes 16 more bits when it falls below L.
// A stream spends about 16 / H symbols between refills, H its entropy in
// bits per symbol. Where H is high the refill is data a branch predictor
// cannot learn, so it is computed without a branch; where a group is
// skewed (a delta late in training: H below a bit) refills are rare and
// a predicted branch skips that work on nearly every symbol.
template <bool kRareRefill>
inline uint8_t Step(Reader& r, const uint32_t* step, const uint8_t* symbol, Scale scale) {
  const uint32_t slot = r.x & scale.mask;
  const uint32_t e = step[slot];
  r.x = (e >> 16) * (r.x >> scale.bits) + (e & 0xffff);
  if (kRareRefill) {
    if (__builtin_expect(r.x < kLow, 0)) {
      r.x = (r.x << 16) | LoadLE<uint16_t>(r.p);
      r.p += 2;
    }
  } else {
    const uint32_t refill = r.x < kLow;
    const uint32_t word = LoadLE<uint16_t>(r.p);
    r.x = (r.x << (refill << 4)) | (word & (0u - refill));
    r.p += refill << 1;
  }
  return symbol[slot];
}

// Entropy of the decoder's model in bits per symbol.
double ModelBits(const std::array<uint32_t, 256>& freq, uint32_t bits) {
  double h = 0;
  for (uint32_t f : freq) {
    if (f != 0) h += static_cast<double>(f) * (bits - std::log2(static_cast<double>(f)));
  }
  return h / static_cast<double>(1u << bits);
}

// Below this many bits per symbol a stream refills at most once in 16
// symbols, rarely enough for the branch.
constexpr double kRareRefillBits = 1.0;

// Four streams in lockstep, `rounds` times kSymbolsPerCheck symbols each,
// checking between rounds that no stream has read past its end (false
// then). Locals, not array elements, so that states and positions stay
// in registers.
template <bool kRareRefill>
bool Lockstep(Reader (&r)[kSegments], uint8_t* (&o)[kSegments], const uint8_t* const (&end)[kSegments], size_t rounds,
              const uint32_t* step, const uint8_t* symbol, Scale scale) {
  Reader r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
  uint8_t *o0 = o[0], *o1 = o[1], *o2 = o[2], *o3 = o[3];
  bool ok = true;
  for (size_t round = 0; round < rounds; ++round) {
    if (r0.p > end[0] || r1.p > end[1] || r2.p > end[2] || r3.p > end[3]) {
      ok = false;
      break;
    }
    for (size_t u = 0; u < kSymbolsPerCheck; ++u) {
      *o0++ = Step<kRareRefill>(r0, step, symbol, scale);
      *o1++ = Step<kRareRefill>(r1, step, symbol, scale);
      *o2++ = Step<kRareRefill>(r2, step, symbol, scale);
      *o3++ = Step<kRareRefill>(r3, step, symbol, scale);
    }
  }
  r[0] = r0, r[1] = r1, r[2] = r2, r[3] = r3;
  o[0] = o0, o[1] = o1, o[2] = o2, o[3] = o3;
  return ok;
}

}  // namespace

void RansEncoder::Plan(const uint8_t* in, size_t n, const GroupCounts& counts) {
  in_ = in;
  n_ = n;
  PlanModel(counts.total, n, kRansProbabilityBits);
}

void RansEncoder::PlanModel(const Histogram& h, size_t n, int bits) {
  bits_ = bits;
  const uint32_t scale = 1u << bits;
  Normalise(h, n, bits, freq_);
  first_ = 0;
  while (first_ < 255 && freq_[first_] == 0) ++first_;
  last_ = 255;
  while (last_ > first_ && freq_[last_] == 0) --last_;
  double cost = 0;  // bits
  size_t table_bits = 0;
  uint32_t cum = 0;
  for (int s = first_; s <= last_; ++s) {
    const uint32_t f = freq_[s];
    table_bits += GammaBits(f + 1);
    if (f == 0) continue;
    cost += static_cast<double>(h[s]) * (bits - std::log2(static_cast<double>(f)));
    // x' = floor(x / f) * M + x mod f + cum = x + cum + floor(x / f) * (M - f).
    // floor(x / f) is the high 64 bits of x * ceil(2^64 / f): the error is
    // below x / 2^64 < 2^-32, less than the 1/f that separates quotients,
    // for every 32-bit x. For f = 1 the reciprocal 2^64 - 1 yields x - 1,
    // and the bias adds the missing M - 1 (x + M - 1 + (x - 1)(M - 1) = xM).
    Symbol& sym = symbol_[s];
    sym.x_max = (uint64_t{kLow >> bits} << 16) * f;
    sym.complement = scale - f;
    if (f == 1) {
      sym.reciprocal = ~uint64_t{0};
      sym.bias = cum + scale - 1;
    } else {
      const unsigned __int128 one = 1;
      sym.reciprocal = static_cast<uint64_t>(((one << 64) + f - 1) / f);
      sym.bias = cum;
    }
    cum += f;
  }
  rare_flush_ = cost < kRareRefillBits * static_cast<double>(n);
  model_bytes_ = 3 + (table_bits + 7) / 8;
  payload_bytes_ = static_cast<size_t>(cost / 8);
  estimated_size_ = model_bytes_ + kStreamSizeBytes + kSegments * (kStateBytes + 2) + payload_bytes_;
}

size_t RansEncoder::EstimatedSingleSize() const { return model_bytes_ + kStateBytes + 2 + payload_bytes_; }

void RansEncoder::EncodeModel(Buffer& out) const {
  uint8_t* head = out.Extend(3);
  head[0] = static_cast<uint8_t>(bits_);
  head[1] = static_cast<uint8_t>(first_);
  head[2] = static_cast<uint8_t>(last_);
  BitPacker table(out);
  for (int s = first_; s <= last_; ++s) table.PutGamma(freq_[s] + 1u);
}

ZIPNN_HOT size_t RansEncoder::EncodeSinglePair(const uint8_t* in, RansEncoder& other, const uint8_t* other_in, size_t n,
                                               Buffer& out) {
  scratch_.Resize(kStateBytes + 2 * n);
  other.scratch_.Resize(kStateBytes + 2 * n);
  uint8_t* const end = scratch_.data() + scratch_.size();
  uint8_t* const other_end = other.scratch_.data() + other.scratch_.size();
  Writer a{end, kLow, in + n};
  Writer b{other_end, kLow, other_in + n};
  const Symbol* a_sym = symbol_.data();
  const Symbol* b_sym = other.symbol_.data();
  for (size_t t = 0; t < n; ++t) {
    a.Put<false>(a_sym);
    b.Put<false>(b_sym);
  }
  a.p -= kStateBytes;
  StoreLE<uint32_t>(a.p, a.x);
  b.p -= kStateBytes;
  StoreLE<uint32_t>(b.p, b.x);
  const size_t start = out.size();
  EncodeModel(out);
  out.Append(a.p, static_cast<size_t>(end - a.p));
  const size_t first = out.size() - start;
  other.EncodeModel(out);
  out.Append(b.p, static_cast<size_t>(other_end - b.p));
  return first;
}

ZIPNN_HOT void RansEncoder::Encode(Buffer& out) {
  const uint8_t* const in = in_;
  const size_t n = n_;
  EncodeModel(out);
  const size_t sizes_at = out.size();
  out.Extend(kStreamSizeBytes);

  // Symbols go in last to first and words come out back to front, so the
  // decoder reads each stream forwards, first symbol first. A state stays
  // below 2^32 and renormalises at most once per symbol. The four streams
  // are independent chains, advanced in lockstep for the processor's sake.
  size_t len[kSegments];
  size_t room = 0;
  for (int j = 0; j < kSegments; ++j) {
    len[j] = SegmentStart(n, j + 1) - SegmentStart(n, j);
    room += kStateBytes + 2 * len[j];
  }
  scratch_.Resize(room);
  Writer w[kSegments];
  uint8_t* ends[kSegments];
  uint8_t* at = scratch_.data();
  for (int j = 0; j < kSegments; ++j) {
    at += kStateBytes + 2 * len[j];
    ends[j] = at;
    w[j] = Writer{at, kLow, in + SegmentStart(n, j) + len[j]};
  }
  const Symbol* sym = symbol_.data();
  if (rare_flush_) {
    PutLockstep<true>(w, len[3], sym);
  } else {
    PutLockstep<false>(w, len[3], sym);
  }
  for (int j = 0; j < kSegments; ++j) {
    for (size_t t = len[3]; t < len[j]; ++t) w[j].Put<false>(sym);
    w[j].p -= kStateBytes;
    StoreLE<uint32_t>(w[j].p, w[j].x);
    const size_t bytes = static_cast<size_t>(ends[j] - w[j].p);
    if (j + 1 < kSegments) StoreLE<uint32_t>(out.data() + sizes_at + 4 * j, static_cast<uint32_t>(bytes));
    out.Append(w[j].p, bytes);
  }
}

ZIPNN_HOT Status RansDecoder::Decode(const uint8_t* in, size_t size, uint8_t* out, size_t n) {
  std::array<uint32_t, 256> freq;
  ZIPNN_ASSIGN_OR_RETURN(size_t pos, ReadModel(in, size, bits_, freq, step_.data(), symbol_.data()));
  ZIPNN_ASSIGN_OR_RETURN(const auto stream_size, ReadStreamSizes(in, size, pos));
  const Scale scale{bits_, (1u << bits_) - 1};
  const uint32_t* const step = step_.data();
  const uint8_t* const symbol = symbol_.data();

  Reader r[kSegments];
  const uint8_t* stream_end[kSegments];
  uint8_t* o[kSegments];
  uint8_t* o_end[kSegments];
  for (int j = 0; j < kSegments; ++j) {
    if (stream_size[j] < kStateBytes) return Corruption("rans stream " + std::to_string(j) + " has no state");
    r[j] = Reader{in + pos + kStateBytes, LoadLE<uint32_t>(in + pos)};
    pos += stream_size[j];
    stream_end[j] = in + pos;
    o[j] = out + SegmentStart(n, j);
    o_end[j] = out + SegmentStart(n, j + 1);
  }

  // Four streams in lockstep; the last segment is the shortest.
  const size_t rounds = static_cast<size_t>(o_end[3] - o[3]) / kSymbolsPerCheck;
  const bool rare_refill = ModelBits(freq, bits_) < kRareRefillBits;
  if (!(rare_refill ? Lockstep<true>(r, o, stream_end, rounds, step, symbol, scale)
                    : Lockstep<false>(r, o, stream_end, rounds, step, symbol, scale))) {
    return Corruption("rans stream overruns its payload");
  }
  for (int j = 0; j < kSegments; ++j) {
    while (o[j] < o_end[j]) {
      if (r[j].p > stream_end[j]) return Corruption("rans stream overruns its payload");
      *o[j]++ = Step<false>(r[j], step, symbol, scale);
    }
    // A faithful stream ends exactly where it was sized, in the state the
    // encoder started from.
    if (r[j].p != stream_end[j] || r[j].x != kLow) {
      return Corruption("rans stream " + std::to_string(j) + " does not end where it should");
    }
  }
  return OkStatus();
}

ZIPNN_HOT Status RansDecoder::DecodeSinglePair(const uint8_t* a, size_t a_size, uint8_t* a_out, RansDecoder& other,
                                               const uint8_t* b, size_t b_size, uint8_t* b_out, size_t n) {
  std::array<uint32_t, 256> freq;
  ZIPNN_ASSIGN_OR_RETURN(const size_t a_pos, ReadModel(a, a_size, bits_, freq, step_.data(), symbol_.data()));
  ZIPNN_ASSIGN_OR_RETURN(const size_t b_pos,
                         ReadModel(b, b_size, other.bits_, freq, other.step_.data(), other.symbol_.data()));
  if (a_size - a_pos < kStateBytes || b_size - b_pos < kStateBytes) {
    return Corruption("rans stream has no state");
  }
  Reader ra{a + a_pos + kStateBytes, LoadLE<uint32_t>(a + a_pos)};
  Reader rb{b + b_pos + kStateBytes, LoadLE<uint32_t>(b + b_pos)};
  const uint8_t* const a_end = a + a_size;
  const uint8_t* const b_end = b + b_size;
  const Scale sa{bits_, (1u << bits_) - 1};
  const Scale sb{other.bits_, (1u << other.bits_) - 1};
  const uint32_t *a_step = step_.data(), *b_step = other.step_.data();
  const uint8_t *a_symbol = symbol_.data(), *b_symbol = other.symbol_.data();

  // Both chains in lockstep, checked against their ends every
  // kSymbolsPerCheck symbols, the last few every symbol.
  for (size_t t = 0; t < n;) {
    if (ra.p > a_end || rb.p > b_end) return Corruption("rans stream overruns its payload");
    const size_t stop = n - t >= kSymbolsPerCheck ? t + kSymbolsPerCheck : t + 1;
    for (; t < stop; ++t) {
      a_out[t] = Step<false>(ra, a_step, a_symbol, sa);
      b_out[t] = Step<false>(rb, b_step, b_symbol, sb);
    }
  }
  if (ra.p != a_end || ra.x != kLow || rb.p != b_end || rb.x != kLow) {
    return Corruption("rans stream does not end where it should");
  }
  return OkStatus();
}

namespace rans_internal {

Result<size_t> ReadModel(const uint8_t* in, size_t size, uint32_t& bits, std::array<uint32_t, 256>& freq,
                         uint32_t* step, uint8_t* symbol) {
  if (size < 3) return Corruption("rans payload shorter than its header");
  bits = in[0];
  if (bits < kRansMinProbabilityBits || bits > kRansMaxProbabilityBits) {
    return Corruption("rans precision of " + std::to_string(bits) + " bits is out of range");
  }
  const uint32_t scale_size = 1u << bits;
  const int first = in[1], last = in[2];
  if (last < first) return Corruption("rans symbol range is empty");
  freq.fill(0);
  BitUnpacker table(in + 3, size - 3);
  uint32_t total = 0;
  for (int s = first; s <= last; ++s) {
    uint32_t v;
    if (!table.GetGamma(v)) return Corruption("rans frequency table is truncated or malformed");
    if (v - 1 > scale_size) return Corruption("rans frequency larger than the scale");
    freq[s] = v - 1;
    total += v - 1;
  }
  if (total != scale_size) return Corruption("rans frequencies do not add up to the scale");

  uint32_t cum = 0;
  for (int s = first; s <= last; ++s) {
    std::memset(symbol + cum, s, freq[s]);
    for (uint32_t k = 0; step != nullptr && k < freq[s]; ++k) step[cum + k] = freq[s] << 16 | k;
    cum += freq[s];
  }
  return 3 + table.bytes_used();
}

Result<std::array<size_t, kSegments>> ReadStreamSizes(const uint8_t* in, size_t size, size_t& pos) {
  if (size - pos < kStreamSizeBytes) return Corruption("rans payload shorter than its stream sizes");
  std::array<size_t, kSegments> stream_size;
  size_t total = 0;
  for (int j = 0; j + 1 < kSegments; ++j) {
    stream_size[j] = LoadLE<uint32_t>(in + pos + 4 * j);
    total += stream_size[j];
  }
  pos += kStreamSizeBytes;
  if (total > size - pos) return Corruption("rans stream sizes exceed the payload");
  stream_size[kSegments - 1] = size - pos - total;
  return stream_size;
}

}  // namespace rans_internal

}  // namespace zipnn::codec
