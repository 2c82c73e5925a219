// Unit tests of near-lossless thinning (thin.h).
#include "lib/codec/thin.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

namespace zipnn::codec {
namespace {

template <typename T>
std::vector<uint8_t> Pack(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

template <typename T>
std::vector<T> Unpack(const std::vector<uint8_t>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

template <typename T, typename V>
T BitsOf(V v) {
  T b;
  static_assert(sizeof(b) == sizeof(v));
  std::memcpy(&b, &v, sizeof(b));
  return b;
}

float F32(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double F64(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

double BF16(uint16_t bits) { return F32(uint32_t{bits} << 16); }

// fp16 decoded with ldexp, apart from the library's bit-level decoding.
double F16(uint16_t bits) {
  int exp = (bits >> 10) & 31;
  int man = bits & 1023;
  double sign = (bits & 0x8000) != 0 ? -1.0 : 1.0;
  if (exp == 31) return man != 0 ? NAN : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(man, -24);
  return sign * std::ldexp(1024 + man, exp - 25);
}

Precision Absolute(int b) { return {Precision::Kind::kAbsolute, b}; }
Precision Relative(int k) { return {Precision::Kind::kRelative, k}; }

ThinError Thin(DType t, const Precision& p, std::vector<uint8_t>& bytes) {
  auto err = ThinValues(t, p, bytes.data(), bytes.size());
  REQUIRE(err.has_value());
  return *err;
}

// The nearest multiple of 2^-b, ties to even, by the method the paper
// states: scale, round to an integer in double, scale back. Exact when
// ulp(x) < 2^-b and x is at most 53 bits; x itself otherwise.
double AbsoluteReference(double x, int b, double ulp) {
  if (!std::isfinite(x) || ulp >= std::ldexp(1.0, -b)) return x;
  return std::ldexp(std::nearbyint(std::ldexp(x, b)), -b);
}

// |x| = 2^e * 1.f rounded to k mantissa bits in double, or x when it is
// subnormal or would round to `overflow`.
double RelativeReference(double x, int k, double min_normal, double overflow) {
  if (!std::isfinite(x) || std::fabs(x) < min_normal) return x;
  int e;
  std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  double r = std::ldexp(std::nearbyint(std::ldexp(x, k - (e - 1))), (e - 1) - k);
  return std::fabs(r) >= overflow ? x : r;
}

// The bits of v's sign, compared for results that are zero.
bool SameValue(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

TEST_CASE("absolute 2^-23 makes fp32 weights the nearest multiples of 2^-23 and leaves |x| >= 1 bit-identical") {
  std::mt19937 rng(20240611);
  std::normal_distribution<float> normal(0.f, 0.02f);
  std::uniform_real_distribution<float> large(1.f, 1000.f);
  std::vector<float> in;
  for (int i = 0; i < 20000; ++i) in.push_back(normal(rng));
  for (int i = 0; i < 2000; ++i) in.push_back(i % 2 == 0 ? large(rng) : -large(rng));
  auto bytes = Pack(in);
  ThinError err = Thin(DType::kF32, Absolute(23), bytes);
  auto out = Unpack<float>(bytes);

  double max_abs = 0, max_rel = 0;
  uint64_t changed = 0, zeroed = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    CAPTURE(in[i]);
    if (in[i] != 0 && out[i] == 0) ++zeroed;
    double scaled = std::ldexp(static_cast<double>(out[i]), 23);
    CHECK(scaled == std::floor(scaled));
    double diff = std::fabs(static_cast<double>(out[i]) - in[i]);
    CHECK(diff <= 0x1p-24);
    CHECK(SameValue(out[i], AbsoluteReference(in[i], 23, std::ldexp(1.0, std::ilogb(in[i]) - 23))));
    if (std::fabs(in[i]) >= 1) CHECK(BitsOf<uint32_t>(out[i]) == BitsOf<uint32_t>(in[i]));
    if (BitsOf<uint32_t>(out[i]) != BitsOf<uint32_t>(in[i])) ++changed;
    max_abs = std::max(max_abs, diff);
    if (in[i] != 0) max_rel = std::max(max_rel, diff / std::fabs(in[i]));
  }
  CHECK(err.values == in.size());
  CHECK(err.changed == changed);
  CHECK(err.zeroed == zeroed);
  CHECK(changed > 15000);  // nearly every small weight has bits below 2^-23
  CHECK(err.max_abs == max_abs);
  CHECK(err.max_rel == max_rel);
  CHECK(err.max_abs <= Absolute(23).Bound());
}

TEST_CASE("absolute rounding sends a tie to the even multiple") {
  // With b = 24, x * 2^24 is 1.5, 2.5, 3.5, 0.5 and 0.75.
  std::vector<float> in = {0x3p-25f, 0x5p-25f, 0x7p-25f, 0x1p-25f, 0x3p-26f, -0x3p-25f, -0x1p-25f};
  std::vector<float> want = {0x1p-23f, 0x1p-23f, 0x1p-22f, 0.f, 0x1p-24f, -0x1p-23f, -0.f};
  auto bytes = Pack(in);
  ThinError err = Thin(DType::kF32, Absolute(24), bytes);
  auto out = Unpack<float>(bytes);
  for (size_t i = 0; i < in.size(); ++i) {
    CAPTURE(in[i]);
    CHECK(BitsOf<uint32_t>(out[i]) == BitsOf<uint32_t>(want[i]));
  }
  CHECK(err.max_abs == 0x1p-25);
  CHECK(err.max_rel == 1.0);  // 2^-25 became 0
  CHECK(err.changed == 7);
  CHECK(err.zeroed == 2);  // 2^-25 and -2^-25
}

TEST_CASE("a tiny negative value thinned to zero keeps its sign and counts |x| as its error") {
  std::vector<double> in = {-1e-300, 1e-300, -0x1p-42};
  auto bytes = Pack(in);
  ThinError err = Thin(DType::kF64, Absolute(40), bytes);
  auto out = Unpack<double>(bytes);
  CHECK(BitsOf<uint64_t>(out[0]) == 0x8000000000000000u);
  CHECK(BitsOf<uint64_t>(out[1]) == 0u);
  CHECK(BitsOf<uint64_t>(out[2]) == 0x8000000000000000u);
  CHECK(err.max_abs == 0x1p-42);
  CHECK(err.changed == 3);
  CHECK(err.zeroed == 3);  // -0 counts as zero
}

TEST_CASE("absolute rounding equals scaling, nearbyint and scaling back for every bf16 and fp16 pattern and every b") {
  for (DType t : {DType::kBF16, DType::kF16}) {
    CAPTURE(DTypeName(t));
    auto decode = t == DType::kBF16 ? BF16 : F16;
    int man = t == DType::kBF16 ? 7 : 10;
    double min_ulp = t == DType::kBF16 ? 0x1p-133 : 0x1p-24;
    std::vector<uint16_t> all(65536);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
    for (int b = 1; b <= 60; ++b) {
      CAPTURE(b);
      auto bytes = Pack(all);
      ThinError err = Thin(t, Absolute(b), bytes);
      auto out = Unpack<uint16_t>(bytes);
      int wrong = 0;
      for (size_t i = 0; i < all.size(); ++i) {
        double x = decode(all[i]);
        double ulp = std::isfinite(x) && x != 0 ? std::max(std::ldexp(1.0, std::ilogb(x) - man), min_ulp) : min_ulp;
        double want = AbsoluteReference(x, b, ulp);
        bool ok = SameValue(decode(out[i]), want);
        if (std::isnan(x)) ok = out[i] == all[i];
        if (!ok && ++wrong <= 3) FAIL_CHECK("pattern " << all[i] << " gave " << out[i]);
      }
      CHECK(wrong == 0);
      CHECK(err.max_abs <= Absolute(b).Bound());
    }
  }
}

TEST_CASE("absolute rounding equals scaling, nearbyint and scaling back for random fp32 and fp64 patterns") {
  std::mt19937_64 rng(7);
  std::vector<uint32_t> f32(200000);
  std::vector<uint64_t> f64(200000);
  for (auto& v : f32) v = static_cast<uint32_t>(rng());
  // fp64 patterns with exponents where some b in 1..60 matters, and all others.
  for (size_t i = 0; i < f64.size(); ++i) {
    uint64_t r = rng();
    if (i % 2 == 0) r = (r & 0x800FFFFFFFFFFFFFu) | (uint64_t{900 + rng() % 200} << 52);
    f64[i] = r;
  }
  for (int b : {1, 7, 23, 24, 31, 40, 52, 53, 60}) {
    CAPTURE(b);
    auto bytes = Pack(f32);
    ThinError err32 = Thin(DType::kF32, Absolute(b), bytes);
    auto out32 = Unpack<uint32_t>(bytes);
    int wrong = 0;
    for (size_t i = 0; i < f32.size(); ++i) {
      double x = F32(f32[i]);
      double ulp = x != 0 && std::isfinite(x) ? std::max(std::ldexp(1.0, std::ilogb(x) - 23), 0x1p-149) : 0x1p-149;
      bool ok = std::isnan(x) ? out32[i] == f32[i] : SameValue(F32(out32[i]), AbsoluteReference(x, b, ulp));
      if (!ok && ++wrong <= 3) FAIL_CHECK("fp32 pattern " << f32[i] << " gave " << out32[i]);
    }
    CHECK(wrong == 0);
    CHECK(err32.max_abs <= Absolute(b).Bound());

    bytes = Pack(f64);
    ThinError err64 = Thin(DType::kF64, Absolute(b), bytes);
    auto out64 = Unpack<uint64_t>(bytes);
    wrong = 0;
    for (size_t i = 0; i < f64.size(); ++i) {
      double x = F64(f64[i]);
      double ulp =
          x != 0 && std::isfinite(x) ? std::max(std::ldexp(1.0, std::ilogb(x) - 52), 0x1p-1074) : 0x1p-1074;
      bool ok = std::isnan(x) ? out64[i] == f64[i] : SameValue(F64(out64[i]), AbsoluteReference(x, b, ulp));
      if (!ok && ++wrong <= 3) FAIL_CHECK("fp64 pattern " << f64[i] << " gave " << out64[i]);
    }
    CHECK(wrong == 0);
    CHECK(err64.max_abs <= Absolute(b).Bound());
  }
}

TEST_CASE("absolute 2^-40 keeps fp64 values within 2^-41 and leaves a huge value unchanged") {
  std::mt19937 rng(40);
  std::normal_distribution<double> normal(0.0, 0.5);
  std::vector<double> in;
  for (int i = 0; i < 20000; ++i) in.push_back(normal(rng));
  in.push_back(1e300);
  in.push_back(-1e300);
  in.push_back(std::numeric_limits<double>::max());
  in.push_back(0x1p12 + 0x1p-40);  // ulp 2^-40: a multiple already
  auto bytes = Pack(in);
  ThinError err = Thin(DType::kF64, Absolute(40), bytes);
  auto out = Unpack<double>(bytes);
  double max_abs = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    CAPTURE(in[i]);
    double scaled = std::ldexp(out[i], 40);
    CHECK(scaled == std::floor(scaled));
    double diff = std::fabs(out[i] - in[i]);
    CHECK(diff <= 0x1p-41);
    max_abs = std::max(max_abs, diff);
  }
  for (size_t i = in.size() - 4; i < in.size(); ++i) CHECK(BitsOf<uint64_t>(out[i]) == BitsOf<uint64_t>(in[i]));
  CHECK(err.max_abs == max_abs);
  CHECK(err.max_abs <= Absolute(40).Bound());
  CHECK(err.changed > 19000);
}

// Relative rounding of `bits` (of type t, m mantissa bits) to k bits:
// within 2^-(k+1)|x|, low m - k bits of changed values zero.
template <typename T>
void CheckRelative(DType t, int m, int k, const std::vector<T>& in, double (*decode)(T)) {
  CAPTURE(DTypeName(t));
  CAPTURE(k);
  auto bytes = Pack(in);
  ThinError err = Thin(t, Relative(k), bytes);
  auto out = Unpack<T>(bytes);
  const T low_mask = static_cast<T>((T{1} << (m - k)) - 1);
  double max_rel = 0;
  uint64_t changed = 0;
  int wrong = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (out[i] == in[i]) continue;
    ++changed;
    double x = decode(in[i]), y = decode(out[i]);
    double rel = std::fabs(y - x) / std::fabs(x);
    max_rel = std::max(max_rel, rel);
    bool ok = rel <= std::ldexp(1.0, -(k + 1)) && (out[i] & low_mask) == 0 && std::signbit(x) == std::signbit(y);
    if (!ok && ++wrong <= 3) FAIL_CHECK("pattern " << +in[i] << " gave " << +out[i]);
  }
  CHECK(wrong == 0);
  CHECK(changed > in.size() / 2);
  CHECK(err.changed == changed);
  CHECK(err.max_rel == max_rel);
  CHECK(err.max_rel <= Relative(k).Bound());
}

TEST_CASE("relative k keeps bf16, fp32 and fp16 weights within 2^-(k+1)|x| with the low mantissa bits zero") {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 0.02f);
  std::vector<float> f32;
  for (int i = 0; i < 20000; ++i) f32.push_back(normal(rng) * (i % 3 == 0 ? 1e4f : 1.f));
  std::vector<uint32_t> f32_bits = Unpack<uint32_t>(Pack(f32));
  std::vector<uint16_t> bf16, f16;
  for (uint32_t b : f32_bits) bf16.push_back(static_cast<uint16_t>(b >> 16));
  for (float f : f32) {
    // fp16 patterns of normal values near f: exponent from f's, random mantissa.
    int e = std::clamp(std::ilogb(f) + 15, 1, 30);
    f16.push_back(static_cast<uint16_t>((f < 0 ? 0x8000 : 0) | e << 10 | (rng() & 1023)));
  }
  CheckRelative<uint16_t>(DType::kBF16, 7, 5, bf16, BF16);
  CheckRelative<uint32_t>(DType::kF32, 23, 5, f32_bits, [](uint32_t b) -> double { return F32(b); });
  CheckRelative<uint16_t>(DType::kF16, 10, 3, f16, F16);
}

TEST_CASE("relative rounding equals rounding the significand in double for every bf16 and fp16 pattern") {
  struct Case {
    DType t;
    int man;
    double (*decode)(uint16_t);
    double min_normal, overflow;
  };
  for (Case c : {Case{DType::kBF16, 7, BF16, 0x1p-126, 0x1p128}, Case{DType::kF16, 10, F16, 0x1p-14, 0x1p16}}) {
    CAPTURE(DTypeName(c.t));
    std::vector<uint16_t> all(65536);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
    // k = 0 is left out: its ties follow the exponent (a case of its own below).
    for (int k = 1; k <= c.man + 1; ++k) {
      CAPTURE(k);
      auto bytes = Pack(all);
      ThinError err = Thin(c.t, Relative(k), bytes);
      auto out = Unpack<uint16_t>(bytes);
      int wrong = 0;
      for (size_t i = 0; i < all.size(); ++i) {
        double x = c.decode(all[i]);
        bool ok = std::isnan(x) ? out[i] == all[i]
                                : SameValue(c.decode(out[i]), RelativeReference(x, k, c.min_normal, c.overflow));
        if (!ok && ++wrong <= 3) FAIL_CHECK("pattern " << all[i] << " gave " << out[i]);
      }
      CHECK(wrong == 0);
      CHECK(err.max_rel <= Relative(k).Bound());
      if (k >= c.man) CHECK(err.changed == 0);
    }
  }
}

TEST_CASE("relative rounding carries a mantissa of all ones into the exponent") {
  // 1.9921875 and -1.9921875 (mantissa 1111111) round to 2 and -2.
  std::vector<uint16_t> in = {0x3FFF, 0xBFFF, 0x3F7F};
  auto bytes = Pack(in);
  Thin(DType::kBF16, Relative(5), bytes);
  auto out = Unpack<uint16_t>(bytes);
  CHECK(out[0] == 0x4000);
  CHECK(out[1] == 0xC000);
  CHECK(out[2] == 0x3F80);
}

TEST_CASE("relative rounding with no mantissa bit kept sends a tie to the even exponent field") {
  // 1.5 (exponent field 127) rounds up to 2; 3 (field 128) down to 2;
  // 1.25 down to 1, 1.75 up to 2.
  std::vector<uint16_t> in = {0x3FC0, 0x4040, 0x3FA0, 0x3FE0};
  auto bytes = Pack(in);
  Thin(DType::kBF16, Relative(0), bytes);
  auto out = Unpack<uint16_t>(bytes);
  CHECK(out[0] == 0x4000);
  CHECK(out[1] == 0x4000);
  CHECK(out[2] == 0x3F80);
  CHECK(out[3] == 0x4000);
}

TEST_CASE("relative rounding leaves the largest finite value as it is rather than making it infinite") {
  std::vector<uint16_t> bf16 = {0x7F7F, 0xFF7F};
  auto bytes = Pack(bf16);
  CHECK(Thin(DType::kBF16, Relative(5), bytes).changed == 0);
  CHECK(Unpack<uint16_t>(bytes) == bf16);

  std::vector<uint16_t> f16 = {0x7BFF, 0xFBFF};
  bytes = Pack(f16);
  CHECK(Thin(DType::kF16, Relative(3), bytes).changed == 0);
  CHECK(Unpack<uint16_t>(bytes) == f16);

  std::vector<uint32_t> f32 = {0x7F7FFFFF, 0xFF7FFFFF};
  bytes = Pack(f32);
  CHECK(Thin(DType::kF32, Relative(5), bytes).changed == 0);
  CHECK(Unpack<uint32_t>(bytes) == f32);

  std::vector<uint64_t> f64 = {0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF};
  bytes = Pack(f64);
  CHECK(Thin(DType::kF64, Relative(10), bytes).changed == 0);
  CHECK(Unpack<uint64_t>(bytes) == f64);
}

TEST_CASE("relative rounding leaves subnormals unchanged") {
  // Every subnormal of fp16 (mantissa below 2^10) and of bf16 (below 2^7).
  for (const auto& case_ : {std::pair{DType::kF16, 1024}, std::pair{DType::kBF16, 128}}) {
    const DType t = case_.first;  // a plain name: clang captures no structured binding
    const int limit = case_.second;
    CAPTURE(DTypeName(t));
    std::vector<uint16_t> sub;
    for (int m = 1; m < limit; ++m) {
      sub.push_back(static_cast<uint16_t>(m));
      sub.push_back(static_cast<uint16_t>(0x8000 | m));
    }
    auto bytes = Pack(sub);
    CHECK(Thin(t, Relative(0), bytes).changed == 0);
    CHECK(Unpack<uint16_t>(bytes) == sub);
  }

  std::vector<uint32_t> f32 = {0x00000123, 0x807FFFFF, 0x00400001};
  auto bytes = Pack(f32);
  CHECK(Thin(DType::kF32, Relative(2), bytes).changed == 0);
  CHECK(Unpack<uint32_t>(bytes) == f32);

  std::vector<uint64_t> f64 = {0x000FFFFFFFFFFFFF, 0x8000000000000001};
  bytes = Pack(f64);
  CHECK(Thin(DType::kF64, Relative(2), bytes).changed == 0);
  CHECK(Unpack<uint64_t>(bytes) == f64);
}

TEST_CASE("relative rounding to as many mantissa bits as the dtype has, or more, changes nothing") {
  auto random = [](size_t n) {
    std::mt19937 rng(11);
    std::vector<uint8_t> v(n);
    for (auto& b : v) b = static_cast<uint8_t>(rng());
    return v;
  };
  struct Case {
    DType t;
    int man;
  };
  for (Case c : {Case{DType::kBF16, 7}, Case{DType::kF16, 10}, Case{DType::kF32, 23}, Case{DType::kF64, 52}}) {
    for (int k : {c.man, c.man + 1, 52}) {
      CAPTURE(DTypeName(c.t));
      CAPTURE(k);
      const auto in = random(8000);
      auto bytes = in;
      ThinError err = Thin(c.t, Relative(k), bytes);
      CHECK(bytes == in);
      CHECK(err.changed == 0);
      CHECK(err.values == 8000 / static_cast<uint64_t>(DTypeWidth(c.t)));
      CHECK(err.max_abs == 0);
    }
  }
}

TEST_CASE("NaNs, infinities and zeros stay bit-identical in both modes for every thinnable dtype") {
  std::vector<uint16_t> bf16 = {0x7FC0, 0x7F81, 0xFFFF, 0x7FBF, 0x7F80, 0xFF80, 0x8000, 0x0000};
  std::vector<uint16_t> f16 = {0x7E00, 0x7C01, 0xFFFF, 0x7DFF, 0x7C00, 0xFC00, 0x8000, 0x0000};
  std::vector<uint32_t> f32 = {0x7FC00000, 0x7F800001, 0xFFC12345, 0x7FBFFFFF, 0x7F800000, 0xFF800000,
                               0x80000000, 0x00000000};
  std::vector<uint64_t> f64 = {0x7FF8000000000000, 0x7FF0000000000001, 0xFFFFFFFFFFFFFFFF, 0x7FF7FFFFFFFFFFFF,
                               0x7FF0000000000000, 0xFFF0000000000000, 0x8000000000000000, 0x0000000000000000};
  for (Precision p : {Absolute(1), Absolute(23), Absolute(60), Relative(0), Relative(3), Relative(52)}) {
    CAPTURE(p.Text());
    auto check = [&p](DType t, const std::vector<uint8_t>& in) {
      CAPTURE(DTypeName(t));
      auto bytes = in;
      ThinError err = Thin(t, p, bytes);
      CHECK(bytes == in);
      CHECK(err.changed == 0);
      CHECK(err.values == 8);
    };
    check(DType::kBF16, Pack(bf16));
    check(DType::kF16, Pack(f16));
    check(DType::kF32, Pack(f32));
    check(DType::kF64, Pack(f64));
  }
}

TEST_CASE("types other than fp32, bf16, fp16 and fp64 are not thinnable and are left untouched") {
  for (DType t : {DType::kI32, DType::kBytes, DType::kF8E4M3, DType::kF8E5M2, DType::kBool, DType::kI8,
                  DType::kU16, DType::kI64}) {
    CAPTURE(DTypeName(t));
    CHECK_FALSE(Thinnable(t));
    std::vector<uint8_t> in(64);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 37 + 1);
    auto bytes = in;
    CHECK_FALSE(ThinValues(t, Absolute(1), bytes.data(), bytes.size()).has_value());
    CHECK_FALSE(ThinValues(t, Relative(0), bytes.data(), bytes.size()).has_value());
    CHECK(bytes == in);
  }
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64}) CHECK(Thinnable(t));
}

TEST_CASE("a trailing partial element is left as it is, at any alignment") {
  std::vector<float> values = {0.1234567f, -0.00731f, 3.14159f};
  auto packed = Pack(values);
  std::vector<uint8_t> buffer(1 + packed.size() + 3);
  buffer[0] = 0x55;
  std::memcpy(buffer.data() + 1, packed.data(), packed.size());
  const uint8_t tail[3] = {0x12, 0x34, 0x56};  // the bytes of a fourth float, cut short
  std::memcpy(buffer.data() + 1 + packed.size(), tail, 3);
  auto err = ThinValues(DType::kF32, Relative(2), buffer.data() + 1, packed.size() + 3);
  REQUIRE(err.has_value());
  CHECK(err->values == 3);
  CHECK(err->changed == 3);
  CHECK(buffer[0] == 0x55);
  CHECK(std::memcmp(buffer.data() + 1 + packed.size(), tail, 3) == 0);
  float first;
  std::memcpy(&first, buffer.data() + 1, 4);
  CHECK(first == 0.125f);  // 1.975... * 2^-4 with two mantissa bits: 2 * 2^-4
}

TEST_CASE("ParsePrecision accepts absolute 1..60 and relative 0..52 and names those forms otherwise") {
  auto a = ParsePrecision("absolute 23");
  REQUIRE(a.ok());
  CHECK(a->kind == Precision::Kind::kAbsolute);
  CHECK(a->bits == 23);
  auto r = ParsePrecision("relative 5");
  REQUIRE(r.ok());
  CHECK(r->kind == Precision::Kind::kRelative);
  CHECK(r->bits == 5);
  CHECK(ParsePrecision("  absolute\t60 ").ok());
  CHECK(ParsePrecision("absolute 1").ok());
  CHECK(ParsePrecision("relative 0").ok());
  CHECK(ParsePrecision("relative 52").ok());
  // As Text() prints them (what retain's plan shows).
  for (const Precision& shown : {Absolute(23), Absolute(1), Relative(5), Relative(1), Relative(0)}) {
    auto read = ParsePrecision(shown.Text());
    REQUIRE_MESSAGE(read.ok(), shown.Text());
    CHECK(read->kind == shown.kind);
    CHECK(read->bits == shown.bits);
  }

  for (const char* bad :
       {"absolute 0", "absolute 61", "relative -1", "relative 53", "fuzzy 3", "", "absolute", "absolute 2x",
        "absolute +5", "relative 5 6", "absolute 99999999999999999999", "absolute 2^-0", "absolute 2^-61",
        "absolute 2^23", "relative 2^-5", "relative 5 mantissa", "absolute 5 mantissa bits"}) {
    CAPTURE(bad);
    auto p = ParsePrecision(bad);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == StatusCode::kInvalidArgument);
  }
  CHECK(ParsePrecision("fuzzy 3").status().message() ==
        "precision \"fuzzy 3\" is not one of \"absolute B\" (values become multiples of 2^-B, B from 1 to 60) or "
        "\"relative K\" (K mantissa bits kept, K from 0 to 52)");
}

TEST_CASE("a precision reads as text and states its bound") {
  CHECK(Absolute(23).Text() == "absolute 2^-23");
  CHECK(Relative(5).Text() == "relative 5 mantissa bits");
  CHECK(Relative(1).Text() == "relative 1 mantissa bit");
  CHECK(Absolute(23).Bound() == 0x1p-24);
  CHECK(Relative(5).Bound() == 0x1p-6);
}

TEST_CASE("merging errors keeps the larger maxima and adds the counts") {
  ThinError a{0.5, 0.01, 3, 10, 1};
  ThinError b{0.25, 0.02, 4, 20, 2};
  a.Merge(b);
  CHECK(a.max_abs == 0.5);
  CHECK(a.max_rel == 0.02);
  CHECK(a.changed == 7);
  CHECK(a.values == 30);
  CHECK(a.zeroed == 3);
}

}  // namespace
}  // namespace zipnn::codec
