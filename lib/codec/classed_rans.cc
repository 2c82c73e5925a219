#include "lib/codec/classed_rans.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

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

// of[i] = the number of thresholds at or below key i (its low 7 bits), for
// keys `kStride` bytes apart: compares, not a table, so that the loop runs
// on vectors.
template <size_t kStride>
void ClassesByStride(const uint8_t* key, size_t elements, const std::array<uint8_t, 3>& t, uint8_t* of) {
  for (size_t i = 0; i < elements; ++i) {
    const uint8_t k = key[i * kStride] & 0x7f;
    of[i] = static_cast<uint8_t>((k >= t[0]) + (k >= t[1]) + (k >= t[2]));
  }
}

}  // namespace

ZIPNN_HOT void ClassesOf(const uint8_t* key, size_t stride, size_t elements, const uint8_t* threshold, int count,
                         uint8_t* of) {
  static_assert(kMaxClasses == 4, "ClassesByStride compares three thresholds");
  std::array<uint8_t, 3> t;
  for (int i = 0; i < 3; ++i) t[i] = i + 1 < count ? threshold[i] : 0x80;  // 0x80: above every key
  switch (stride) {
    case 1:
      return ClassesByStride<1>(key, elements, t, of);
    case 2:
      return ClassesByStride<2>(key, elements, t, of);
    case 4:
      return ClassesByStride<4>(key, elements, t, of);
    case 8:
      return ClassesByStride<8>(key, elements, t, of);
    default:
      for (size_t i = 0; i < elements; ++i) {
        const uint8_t k = key[i * stride] & 0x7f;
        of[i] = static_cast<uint8_t>((k >= t[0]) + (k >= t[1]) + (k >= t[2]));
      }
  }
}

ElementClasses ClassifyByKey(const uint8_t* key, size_t stride, size_t elements, uint8_t* of) {
  // Thresholds near the quantiles j / kMaxClasses of the keys of one
  // element in kClassSampleStep; none that would leave a class of the
  // sample empty.
  std::array<size_t, 128> count{};
  size_t sampled = 0;
  for (size_t i = 0; i < elements; i += kClassSampleStep, ++sampled) ++count[key[i * stride] & 0x7f];
  ElementClasses c;
  c.count = 1;
  size_t below = 0, below_last = 0;
  for (int v = 1; v < 128 && c.count < kMaxClasses; ++v) {
    below += count[v - 1];
    const size_t target = sampled * static_cast<size_t>(c.count) / kMaxClasses;
    if (below >= target && below > below_last && below < sampled) {
      c.threshold[c.count - 1] = static_cast<uint8_t>(v);
      ++c.count;
      below_last = below;
    }
  }
  if (c.count < 2) return ElementClasses{};
  ClassesOf(key, stride, elements, c.threshold.data(), c.count, of);
  c.of = of;
  c.elements = elements;
  return c;
}

namespace {

// A classed payload's stream carries eight rANS states, its lanes: symbol
// t of a segment is coded in lane t mod 8, and the lanes share the
// stream's words in lane order. Eight independent states let a decoder
// step a stream with vector arithmetic (RoundsAvx2).
constexpr int kLanes = 8;
constexpr size_t kLaneStateBytes = kLanes * kStateBytes;

// One stream of a classed payload being written, back to front.
struct LaneOut {
  const uint8_t* in;  // the segment's symbols
  const uint8_t* of;  // their classes; null with one class
  size_t len;
  size_t rounds;  // whole rounds of eight not written yet
  uint32_t x[kLanes];
  uint8_t* p;  // the first byte written so far
};

#if defined(__x86_64__) && defined(__GNUC__)
bool HasAvx2() {
#ifdef ZIPNN_NO_CLONES
  return false;
#else
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2");
  return has;
#endif
}

// Which lane's word goes where when the lanes flush (bit l: lane l), in
// 4-bit fields by position: the flushing lanes in ascending order in the
// top positions, so that stored below the stream they read in lane order.
struct FlushOrder {
  uint32_t of[256];
  constexpr FlushOrder() : of{} {
    for (uint32_t m = 0; m < 256; ++m) {
      uint32_t at = 8 - static_cast<uint32_t>(__builtin_popcount(m));
      for (uint32_t l = 0; l < kLanes; ++l) {
        if (m >> l & 1) of[m] |= l << (4 * at++);
      }
    }
  }
};
constexpr FlushOrder kFlushOrder;

// Two lanes' symbols, one in each half of a register.
__attribute__((target("avx2"), always_inline)) inline __m256i TwoSymbols(const LaneSymbol* low,
                                                                         const LaneSymbol* high) {
  return _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(high), reinterpret_cast<const __m128i*>(low));
}

// One round of one stream, its eight symbols at in[0..8) (classes at
// of[0..8)), with the lanes in an AVX2 register: every lane computes what
// PutSymbol does. The quotient x div f is taken in double precision:
// x < 2^32 and f <= 2^14, so the correctly rounded x / f lies at least
// 2^-14 - 2^-33 below the next integer and truncates to the quotient.
template <bool kClasses>
__attribute__((target("avx2,bmi2"), always_inline)) inline void PutRoundAvx2(__m256i& state, uint8_t*& p,
                                                                             const uint8_t* in, const uint8_t* of,
                                                                             const LaneSymbol* table) {
  const __m256i sign = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  __m256i index = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in)));
  if (kClasses) {
    const __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(of)));
    index = _mm256_or_si256(index, _mm256_slli_epi32(c, 8));
  }
  alignas(32) uint32_t at[kLanes];
  _mm256_store_si256(reinterpret_cast<__m256i*>(at), index);
  const __m256i r04 = TwoSymbols(table + at[0], table + at[4]), r15 = TwoSymbols(table + at[1], table + at[5]);
  const __m256i r26 = TwoSymbols(table + at[2], table + at[6]), r37 = TwoSymbols(table + at[3], table + at[7]);
  const __m256i a0 = _mm256_unpacklo_epi32(r04, r15), a1 = _mm256_unpackhi_epi32(r04, r15);
  const __m256i a2 = _mm256_unpacklo_epi32(r26, r37), a3 = _mm256_unpackhi_epi32(r26, r37);
  const __m256i x_max = _mm256_unpacklo_epi64(a0, a2);  // the LaneSymbol fields, lane by lane
  const __m256i cum = _mm256_unpackhi_epi64(a0, a2);
  const __m256i complement = _mm256_unpacklo_epi64(a1, a3);
  const __m256i freq = _mm256_unpackhi_epi64(a1, a3);

  const __m256i flush = _mm256_cmpgt_epi32(_mm256_xor_si256(state, sign), _mm256_xor_si256(x_max, sign));
  const uint32_t lanes = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(flush)));
  const __m256i order = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(kFlushOrder.of[lanes])),
                                                           _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                         _mm256_set1_epi32(7));
  const __m256i words = _mm256_permutevar8x32_epi32(_mm256_and_si256(state, _mm256_set1_epi32(0xffff)), order);
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(words, words), 0x08);
  // The words end at p; what the store puts below them is overwritten
  // by the next round or the states.
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p - 16), _mm256_castsi256_si128(packed));
  p -= 2 * static_cast<size_t>(__builtin_popcount(lanes));
  state = _mm256_blendv_epi8(state, _mm256_srli_epi32(state, 16), flush);

  const __m256d two31 = _mm256_set1_pd(2147483648.0);
  const __m256i biased = _mm256_xor_si256(state, sign);
  const __m256d low = _mm256_add_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(biased)), two31);
  const __m256d high = _mm256_add_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(biased, 1)), two31);
  const __m128i q_low = _mm256_cvttpd_epi32(_mm256_div_pd(low, _mm256_cvtepi32_pd(_mm256_castsi256_si128(freq))));
  const __m128i q_high =
      _mm256_cvttpd_epi32(_mm256_div_pd(high, _mm256_cvtepi32_pd(_mm256_extracti128_si256(freq, 1))));
  const __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(q_low), q_high, 1);
  state = _mm256_add_epi32(_mm256_add_epi32(state, cum), _mm256_mullo_epi32(q, complement));
}

// The whole rounds of the four streams, each from its last down to 0, the
// rounds all four have in lockstep (four independent chains).
template <bool kClasses>
__attribute__((target("avx2,bmi2"))) void PutRoundsAvx2(LaneOut (&s)[kSegments], const LaneSymbol* table) {
  for (LaneOut& st : s) {
    __m256i state = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(st.x));
    for (size_t r = st.rounds; r-- > s[kSegments - 1].rounds;) {
      PutRoundAvx2<kClasses>(state, st.p, st.in + kLanes * r, kClasses ? st.of + kLanes * r : nullptr, table);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(st.x), state);
  }
  __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s[0].x));
  __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s[1].x));
  __m256i x2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s[2].x));
  __m256i x3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s[3].x));
  uint8_t *p0 = s[0].p, *p1 = s[1].p, *p2 = s[2].p, *p3 = s[3].p;
  for (size_t r = s[kSegments - 1].rounds; r-- > 0;) {
    const size_t at = kLanes * r;
    PutRoundAvx2<kClasses>(x0, p0, s[0].in + at, kClasses ? s[0].of + at : nullptr, table);
    PutRoundAvx2<kClasses>(x1, p1, s[1].in + at, kClasses ? s[1].of + at : nullptr, table);
    PutRoundAvx2<kClasses>(x2, p2, s[2].in + at, kClasses ? s[2].of + at : nullptr, table);
    PutRoundAvx2<kClasses>(x3, p3, s[3].in + at, kClasses ? s[3].of + at : nullptr, table);
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(s[0].x), x0);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(s[1].x), x1);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(s[2].x), x2);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(s[3].x), x3);
  s[0].p = p0, s[1].p = p1, s[2].p = p2, s[3].p = p3;
  for (LaneOut& st : s) st.rounds = 0;
}
#endif

// Codes the symbols of stream s from `from` down to `to` (to a multiple
// of eight), element t with the table of its class of[t] (class c's from
// tables + 256 c; class 0 without classes), in lane t mod 8. Locals, not
// the stream's fields, so that states and position stay in registers.
template <bool kRareFlush, bool kClasses, typename Symbol>
void PutLanes(LaneOut& s, size_t from, size_t to, const Symbol* tables) {
  uint32_t x[kLanes];
  std::copy(s.x, s.x + kLanes, x);
  uint8_t* p = s.p;
  const uint8_t* in = s.in;
  const uint8_t* of = s.of;
  const auto put = [&](size_t t, uint32_t& lane) {
    PutSymbol<kRareFlush>(p, lane, tables[kClasses ? static_cast<size_t>(of[t]) << 8 | in[t] : in[t]]);
  };
  size_t t = from;
  while (t % kLanes != 0 && t > to) {
    --t;
    put(t, x[t % kLanes]);
  }
  while (t > to) {
    t -= kLanes;
#pragma GCC unroll 8
    for (int l = kLanes - 1; l >= 0; --l) put(t + static_cast<size_t>(l), x[l]);
  }
  std::copy(x, x + kLanes, s.x);
  s.p = p;
}

// The four streams of an n-byte group, last symbol first, so that the
// decoder reads forwards: each stream's symbols after its last whole round
// of eight, then the rounds, lanes 7 down to 0 (eight at once where the
// vector path runs).
template <bool kRareFlush, bool kClasses, typename Symbol>
void PutStreams(LaneOut (&s)[kSegments], const Symbol* tables, const LaneSymbol* lane_tables) {
  for (LaneOut& st : s) PutLanes<kRareFlush, kClasses>(st, st.len, st.rounds * kLanes, tables);
#if defined(__x86_64__) && defined(__GNUC__)
  if (HasAvx2()) PutRoundsAvx2<kClasses>(s, lane_tables);
#endif
  for (LaneOut& st : s) {
    PutLanes<kRareFlush, kClasses>(st, st.rounds * kLanes, 0, tables);
    st.p -= kLaneStateBytes;
    for (int l = 0; l < kLanes; ++l) StoreLE<uint32_t>(st.p + kStateBytes * static_cast<size_t>(l), st.x[l]);
  }
}

}  // namespace

namespace {

// The counts of in[0..n) by class of[i], in one pass, two counter tables
// (alternate bytes) so that a run of one value never waits on its own
// counter.
ZIPNN_HOT void CountByClass(const uint8_t* in, const uint8_t* of, size_t n, std::array<Histogram, kMaxClasses>& h) {
  std::array<std::array<uint32_t, 256 * kMaxClasses>, 2> c{};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = LoadLE<uint64_t>(in + i);
    const uint64_t w = LoadLE<uint64_t>(of + i);
    for (int k = 0; k < 8; ++k) ++c[k & 1][(w >> (8 * k) & 0xff) << 8 | (v >> (8 * k) & 0xff)];
  }
  for (; i < n; ++i) ++c[0][static_cast<size_t>(of[i]) << 8 | in[i]];
  for (int cl = 0; cl < kMaxClasses; ++cl) {
    for (int s = 0; s < 256; ++s) h[cl][s] = uint64_t{c[0][cl << 8 | s]} + c[1][cl << 8 | s];
  }
}

}  // namespace

namespace {

// c log2 c for the counts of a sample, looked up: a plan may not spend
// more on this estimate than on the counts it saves.
struct CLog2C {
  std::array<double, 4096> of;
  CLog2C() {
    for (size_t c = 0; c < of.size(); ++c)
      of[c] = c == 0 ? 0 : static_cast<double>(c) * std::log2(static_cast<double>(c));
  }
  double operator()(uint32_t c) const {
    return c < of.size() ? of[c] : static_cast<double>(c) * std::log2(static_cast<double>(c));
  }
};

// Order-0 information of a sample's counts (values 0..255 of c, n in
// all) in bits, with the Miller-Madow correction: the counts of a sample
// make a distribution look more skewed than it is, by about (values seen
// - 1) / (2 ln 2) bits in all, which for several models of one sample
// would otherwise favour them.
double SampleBits(const uint32_t* c, const CLog2C& clogc) {
  uint32_t n = 0;
  int seen = 0;
  double sum = 0;
  for (int v = 0; v < 256; ++v) {
    n += c[v];
    seen += c[v] != 0;
    sum += clogc(c[v]);
  }
  if (n == 0) return 0;
  return clogc(n) - sum + std::max(0, seen - 1) / (2 * std::log(2.0));
}

}  // namespace

double SampledClassGain(const uint8_t* in, size_t n, const ElementClasses& classes) {
  static const CLog2C clogc;
  std::array<uint32_t, 256 * kMaxClasses> by_class{};
  for (size_t at = 0; at < n; at += kClassSampleStride) {
    const size_t end = std::min(n, at + kClassSampleWindow);
    for (size_t i = at; i < end; ++i) ++by_class[static_cast<size_t>(classes.of[i]) << 8 | in[i]];
  }
  std::array<uint32_t, 256> all{};
  double split = 0;
  for (int c = 0; c < classes.count; ++c) {
    const uint32_t* h = by_class.data() + 256 * c;
    split += SampleBits(h, clogc);
    for (int v = 0; v < 256; ++v) all[v] += h[v];
  }
  const double one = SampleBits(all.data(), clogc);
  return one <= 0 ? 0 : 1 - split / one;
}

void ClassedRansEncoder::Plan(const uint8_t* in, size_t n, const ElementClasses& classes, const GroupCounts* counts) {
  in_ = in;
  n_ = n;
  classes_ = classes;
  std::array<Histogram, kMaxClasses> h{};
  std::array<size_t, kMaxClasses> total{};
  if (classes.count == 1) {
    h[0] = counts != nullptr ? counts->total : CountBytes(in, n);
  } else {
    CountByClass(in, classes.of, n, h);
  }
  for (int c = 0; c < classes.count; ++c) {
    for (uint64_t v : h[c]) total[c] += v;
  }
  size_t model_bytes = 0, payload_bytes = 0;
  for (int c = 0; c < classes.count; ++c) {
    // A class no element of this group falls in (ClassifyByKey leaves
    // none) still needs a model: one symbol.
    if (total[c] == 0) {
      h[c][0] = 1;
      total[c] = 1;
    }
    model_[c].PlanModel(h[c], total[c], kClassedProbabilityBits);
    model_bytes += model_[c].model_bytes_;
    payload_bytes += model_[c].payload_bytes_;
  }
  rare_flush_ = payload_bytes * 8 < n;
  estimated_size_ = static_cast<size_t>(classes.count) + model_bytes + kStreamSizeBytes +
                    kSegments * (kLaneStateBytes + 2) + payload_bytes;
}

ZIPNN_HOT void ClassedRansEncoder::Encode(Buffer& out) {
  const int count = classes_.count;
  out.Extend(1)[0] = static_cast<uint8_t>(count);
  out.Append(classes_.threshold.data(), static_cast<size_t>(count - 1));
  for (int c = 0; c < count; ++c) {
    model_[c].EncodeModel(out);
    std::copy(model_[c].symbol_.begin(), model_[c].symbol_.end(), tables_.begin() + 256 * c);
    uint32_t cum = 0;
    for (int v = 0; v < 256; ++v) {
      const uint32_t f = model_[c].freq_[v];
      // x_max - 1, which fits 32 bits even for f = 2^13 (one symbol).
      const uint32_t x_max = static_cast<uint32_t>((uint64_t{f} << (32 - kClassedProbabilityBits)) - 1);
      lane_tables_[256 * c + v] = LaneSymbol{x_max, cum, (1u << kClassedProbabilityBits) - f, f};
      cum += f;
    }
  }
  const size_t sizes_at = out.size();
  out.Extend(kStreamSizeBytes);
  const size_t n = n_;
  const size_t room = kLaneStateBytes + 2 * SegmentStart(n, 1);
  scratch_.Resize(kSegments * room);
  LaneOut s[kSegments];
  for (int j = 0; j < kSegments; ++j) {
    const size_t at = SegmentStart(n, j);
    const size_t len = SegmentStart(n, j + 1) - at;
    s[j] = LaneOut{in_ + at, count == 1 ? nullptr : classes_.of + at, len, len / kLanes, {}, nullptr};
    std::fill(s[j].x, s[j].x + kLanes, kLow);
    s[j].p = scratch_.data() + room * static_cast<size_t>(j + 1);
  }
  if (count == 1) {
    rare_flush_ ? PutStreams<true, false>(s, tables_.data(), lane_tables_.data())
                : PutStreams<false, false>(s, tables_.data(), lane_tables_.data());
  } else {
    rare_flush_ ? PutStreams<true, true>(s, tables_.data(), lane_tables_.data())
                : PutStreams<false, true>(s, tables_.data(), lane_tables_.data());
  }
  for (int j = 0; j < kSegments; ++j) {
    const uint8_t* end = scratch_.data() + room * static_cast<size_t>(j + 1);
    const size_t bytes = static_cast<size_t>(end - s[j].p);
    if (j + 1 < kSegments) StoreLE<uint32_t>(out.data() + sizes_at + 4 * j, static_cast<uint32_t>(bytes));
    out.Append(s[j].p, bytes);
  }
}

namespace {

// The eight lanes of one stream of a classed payload, being decoded.
struct LaneStream {
  uint32_t x[kLanes];
  const uint8_t* p;    // the next word
  const uint8_t* end;  // of the stream
  uint8_t* o;          // where the next symbol goes
  const uint8_t* c;    // its class; null with one class
};

// The classed decoder's tables at its fixed precision.
struct LaneTables {
  static constexpr uint32_t kBits = kClassedProbabilityBits;
  static constexpr uint32_t kMask = (1u << kBits) - 1;
  const uint8_t* symbol;     // class c's slots from c << kBits
  const uint32_t* freq_cum;  // class c's symbol s at c << 8 | s: freq << 16 | cum
};

// One symbol of one lane: slot -> symbol -> its share, then the lane takes
// a word from its stream if its state fell below L.
inline uint8_t LaneStep(uint32_t& x, const uint8_t*& p, uint32_t c, LaneTables t) {
  const uint32_t slot = x & LaneTables::kMask;
  const uint8_t s = t.symbol[c << LaneTables::kBits | slot];
  const uint32_t fc = t.freq_cum[c << 8 | s];
  x = (fc >> 16) * (x >> LaneTables::kBits) + slot - (fc & 0xffff);
  const uint32_t refill = x < kLow;
  const uint32_t word = LoadLE<uint16_t>(p);
  x = (x << (refill << 4)) | (word & (0u - refill));
  p += refill << 1;
  return s;
}

// A round of a stream reads at most this many bytes (a word per lane);
// rounds run unchecked while every stream has that much left, counting
// the padding a decoder may read.
constexpr size_t kRoundBytes = 2 * kLanes;
inline bool RoundFits(const LaneStream& s) { return s.p + kRoundBytes <= s.end + kDecoderReadPadding; }

// Whole rounds of all four streams in lockstep, without vector
// instructions; returns the rounds done (fewer when a stream nears its end).
size_t RoundsScalar(LaneStream (&s)[kSegments], size_t rounds, LaneTables t) {
  for (size_t r = 0; r < rounds; ++r) {
    for (const LaneStream& st : s) {
      if (!RoundFits(st)) return r;
    }
    for (int l = 0; l < kLanes; ++l) {
      for (LaneStream& st : s) {
        *st.o++ = LaneStep(st.x[l], st.p, st.c == nullptr ? 0 : *st.c++, t);
      }
    }
  }
  return rounds;
}

#if defined(__x86_64__) && defined(__GNUC__)
// Which waiting words go to which lanes: for each set of lanes that refill
// (bit l: lane l), the index among the round's words of lane l's word, in
// 4-bit fields; lanes that do not refill take word 0 and discard it.
struct RefillOrder {
  uint32_t of[256];
  constexpr RefillOrder() : of{} {
    for (uint32_t m = 0; m < 256; ++m) {
      uint32_t k = 0;
      for (uint32_t l = 0; l < kLanes; ++l) {
        if (m >> l & 1) of[m] |= k++ << (4 * l);
      }
    }
  }
};
constexpr RefillOrder kRefillOrder;

// One round of one stream with its eight lanes in an AVX2 register: the
// arithmetic and the refill are vector operations, the two table lookups
// per symbol scalar loads (a gather is slower on the processors we
// measured). The stream's position and output are locals of the caller,
// so that they stay in registers.
template <bool kClasses>
__attribute__((target("avx2,bmi2"), always_inline)) inline void RoundAvx2(__m256i& x, const uint8_t*& p, uint8_t*& o,
                                                                          const uint8_t*& c, LaneTables t) {
  const __m256i slot = _mm256_and_si256(x, _mm256_set1_epi32(LaneTables::kMask));
  __m256i index = slot;
  if (kClasses) {
    const __m256i cls = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c)));
    index = _mm256_or_si256(slot, _mm256_slli_epi32(cls, LaneTables::kBits));
    c += kLanes;
  }
  alignas(32) uint32_t at[kLanes];
  _mm256_store_si256(reinterpret_cast<__m256i*>(at), index);
  const auto share = [&](int l) {
    const uint8_t sym = t.symbol[at[l]];
    o[l] = sym;
    return static_cast<int>(t.freq_cum[(kClasses ? (at[l] >> LaneTables::kBits) << 8 : 0) | sym]);
  };
  // Built in registers lane by lane: a wide load of eight narrow stores
  // would stall.
  __m128i low = _mm_cvtsi32_si128(share(0));
  low = _mm_insert_epi32(low, share(1), 1);
  low = _mm_insert_epi32(low, share(2), 2);
  low = _mm_insert_epi32(low, share(3), 3);
  __m128i high = _mm_cvtsi32_si128(share(4));
  high = _mm_insert_epi32(high, share(5), 1);
  high = _mm_insert_epi32(high, share(6), 2);
  high = _mm_insert_epi32(high, share(7), 3);
  o += kLanes;
  const __m256i f = _mm256_inserti128_si256(_mm256_castsi128_si256(low), high, 1);
  __m256i y = _mm256_mullo_epi32(_mm256_srli_epi32(f, 16), _mm256_srli_epi32(x, LaneTables::kBits));
  y = _mm256_add_epi32(y, _mm256_sub_epi32(slot, _mm256_and_si256(f, _mm256_set1_epi32(0xffff))));
  const __m256i refill = _mm256_cmpeq_epi32(_mm256_srli_epi32(y, 16), _mm256_setzero_si256());
  const uint32_t lanes = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(refill)));
  const __m256i order = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(kRefillOrder.of[lanes])),
                                                           _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
                                         _mm256_set1_epi32(7));
  const __m256i words =
      _mm256_permutevar8x32_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), order);
  x = _mm256_blendv_epi8(y, _mm256_or_si256(_mm256_slli_epi32(y, 16), words), refill);
  p += 2 * static_cast<size_t>(__builtin_popcount(lanes));
}

// The rounds of RoundsScalar, four streams of eight lanes in AVX2 registers.
template <bool kClasses>
__attribute__((target("avx2,bmi2"))) size_t RoundsAvx2(LaneStream (&s)[kSegments], size_t rounds, LaneTables t) {
  __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s[0].x));
  __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s[1].x));
  __m256i x2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s[2].x));
  __m256i x3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s[3].x));
  const uint8_t *p0 = s[0].p, *p1 = s[1].p, *p2 = s[2].p, *p3 = s[3].p;
  const uint8_t *c0 = s[0].c, *c1 = s[1].c, *c2 = s[2].c, *c3 = s[3].c;
  uint8_t *o0 = s[0].o, *o1 = s[1].o, *o2 = s[2].o, *o3 = s[3].o;
  // Each stream may take its round's 16 bytes while it has 8 left (the
  // padding a decoder may read covers the rest).
  const uint8_t* const e0 = s[0].end + kDecoderReadPadding - kRoundBytes;
  const uint8_t* const e1 = s[1].end + kDecoderReadPadding - kRoundBytes;
  const uint8_t* const e2 = s[2].end + kDecoderReadPadding - kRoundBytes;
  const uint8_t* const e3 = s[3].end + kDecoderReadPadding - kRoundBytes;
  size_t r = 0;
  for (; r < rounds && p0 <= e0 && p1 <= e1 && p2 <= e2 && p3 <= e3; ++r) {
    RoundAvx2<kClasses>(x0, p0, o0, c0, t);
    RoundAvx2<kClasses>(x1, p1, o1, c1, t);
    RoundAvx2<kClasses>(x2, p2, o2, c2, t);
    RoundAvx2<kClasses>(x3, p3, o3, c3, t);
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(s[0].x), x0);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(s[1].x), x1);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(s[2].x), x2);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(s[3].x), x3);
  s[0].p = p0, s[1].p = p1, s[2].p = p2, s[3].p = p3;
  s[0].c = c0, s[1].c = c1, s[2].c = c2, s[3].c = c3;
  s[0].o = o0, s[1].o = o1, s[2].o = o2, s[3].o = o3;
  return r;
}
#endif

}  // namespace

Status ClassedRansDecoder::Decode(const uint8_t* in, size_t size, uint8_t* out, size_t n, const ClassKeys& keys) {
  if (size < 1) return Corruption("classed rans payload is empty");
  const int count = in[0];
  if (count < 1 || count > kMaxClasses) {
    return Corruption("classed rans payload has " + std::to_string(count) + " classes");
  }
  if (count > 1 && keys.elements == 0) return Corruption("classed rans group outside a difference of floats");
  if (count > 1 && keys.elements != n) {
    return Corruption("classed rans group of " + std::to_string(n) + " bytes for " + std::to_string(keys.elements) +
                      " elements");
  }
  if (size < static_cast<size_t>(count)) return Corruption("classed rans payload shorter than its thresholds");
  const uint8_t* threshold = in + 1;
  for (int t = 0; t + 1 < count; ++t) {
    if (threshold[t] == 0 || threshold[t] > 0x7f || (t > 0 && threshold[t] <= threshold[t - 1])) {
      return Corruption("classed rans thresholds are not increasing keys from 1 to 127");
    }
  }
  size_t pos = static_cast<size_t>(count);
  constexpr uint32_t bits = kClassedProbabilityBits;
  for (int c = 0; c < count; ++c) {
    // One fixed precision keeps the decoder's shifts constant.
    if (pos < size && in[pos] != kClassedProbabilityBits) {
      return Corruption("classed rans model has a precision of " + std::to_string(in[pos]) + " bits, not " +
                        std::to_string(kClassedProbabilityBits));
    }
    std::array<uint32_t, 256> freq;
    uint32_t model_bits = 0;
    ZIPNN_ASSIGN_OR_RETURN(const size_t used, ReadModel(in + pos, size - pos, model_bits, freq, nullptr,
                                                        symbol_.data() + (static_cast<size_t>(c) << bits)));
    uint32_t cum = 0;
    for (int v = 0; v < 256; ++v) {
      freq_cum_[c << 8 | v] = freq[v] << 16 | cum;
      cum += freq[v];
    }
    pos += used;
  }
  const uint8_t* class_of_element = nullptr;
  if (count > 1) {
    // Read past the end by the vector rounds' 8-byte loads.
    classes_.Resize(n + kLanes);
    uint8_t* const of = classes_.data();
    ClassesOf(keys.key, keys.stride, n, threshold, count, of);
    class_of_element = of;
  }

  ZIPNN_ASSIGN_OR_RETURN(const auto stream_size, ReadStreamSizes(in, size, pos));
  LaneStream s[kSegments];
  for (int j = 0; j < kSegments; ++j) {
    if (stream_size[j] < kLaneStateBytes) {
      return Corruption("classed rans stream " + std::to_string(j) + " is shorter than its states");
    }
    for (int l = 0; l < kLanes; ++l) s[j].x[l] = LoadLE<uint32_t>(in + pos + kStateBytes * l);
    s[j].p = in + pos + kLaneStateBytes;
    pos += stream_size[j];
    s[j].end = in + pos;
    s[j].o = out + SegmentStart(n, j);
    s[j].c = class_of_element == nullptr ? nullptr : class_of_element + SegmentStart(n, j);
  }

  // Whole rounds of the four streams in lockstep while the last (the
  // shortest) segment lasts; then each stream to its end, checked word by word.
  const LaneTables tables{symbol_.data(), freq_cum_.data()};
  const size_t rounds = (SegmentStart(n, kSegments) - SegmentStart(n, kSegments - 1)) / kLanes;
  size_t done = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (HasAvx2()) {
    done = count == 1 ? RoundsAvx2<false>(s, rounds, tables) : RoundsAvx2<true>(s, rounds, tables);
  }
#endif
  done += RoundsScalar(s, rounds - done, tables);
  for (int j = 0; j < kSegments; ++j) {
    LaneStream& st = s[j];
    uint8_t* const o_end = out + SegmentStart(n, j + 1);
    for (size_t t = static_cast<size_t>(st.o - (out + SegmentStart(n, j))); st.o < o_end; ++t) {
      if (st.p > st.end) return Corruption("rans stream overruns its payload");
      *st.o++ = LaneStep(st.x[t % kLanes], st.p, st.c == nullptr ? 0 : *st.c++, tables);
    }
    bool start_state = true;
    for (uint32_t x : st.x) start_state = start_state && x == kLow;
    if (st.p != st.end || !start_state) {
      return Corruption("rans stream " + std::to_string(j) + " does not end where it should");
    }
  }
  return OkStatus();
}

}  // namespace zipnn::codec
