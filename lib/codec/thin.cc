#include "lib/codec/thin.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

#include "lib/base/endian.h"

namespace zipnn::codec {

namespace {

constexpr int kMinAbsoluteBits = 1;
constexpr int kMaxAbsoluteBits = 60;
constexpr int kMinRelativeBits = 0;
constexpr int kMaxRelativeBits = 52;  // fp64's mantissa

// The layout of one IEEE binary format: Bits holds an element, kMan is the
// number of explicit mantissa bits, kExp of exponent bits.
template <typename B, int kManBits, int kExpBits>
struct Format {
  using Bits = B;
  static constexpr int kMan = kManBits;
  static constexpr uint64_t kExpMax = (uint64_t{1} << kExpBits) - 1;  // NaN and Inf
  static constexpr int kBias = (1 << (kExpBits - 1)) - 1;
  static constexpr uint64_t kSign = uint64_t{1} << (kManBits + kExpBits);
  static constexpr uint64_t kManMask = (uint64_t{1} << kManBits) - 1;
};

struct F32 : Format<uint32_t, 23, 8> {
  static double ToDouble(uint64_t x) {
    float f;
    uint32_t b = static_cast<uint32_t>(x);
    std::memcpy(&f, &b, 4);
    return f;
  }
};

struct BF16 : Format<uint16_t, 7, 8> {
  static double ToDouble(uint64_t x) { return F32::ToDouble(x << 16); }
};

struct F16 : Format<uint16_t, 10, 5> {
  static double ToDouble(uint64_t x) {
    uint64_t exp = (x >> kMan) & kExpMax;
    uint64_t man = x & kManMask;
    bool negative = (x & kSign) != 0;
    if (exp == 0) {
      double v = static_cast<double>(man) * 0x1p-24;  // exact: man < 2^10
      return negative ? -v : v;
    }
    // The same value with fp64's exponent bias and mantissa width.
    uint64_t d_exp = exp == kExpMax ? 2047 : exp - kBias + 1023;
    uint64_t d = (negative ? uint64_t{1} << 63 : 0) | d_exp << 52 | man << (52 - kMan);
    double v;
    std::memcpy(&v, &d, 8);
    return v;
  }
};

struct F64 : Format<uint64_t, 52, 11> {
  static double ToDouble(uint64_t x) {
    double v;
    std::memcpy(&v, &x, 8);
    return v;
  }
};

// x rounded to the nearest multiple of 2^-b, ties to even.
//
// Write |x| = M * 2^E, M the significand as an integer (hidden bit
// included, M < 2^(kMan+1)) and 2^E its ulp. With s = -b - E: if s <= 0,
// 2^-b divides 2^E and x is a multiple already. Otherwise
// x * 2^b = M / 2^s, rounded to n, and the result is n * 2^s * 2^E: M
// rounded to a multiple of 2^s. That is at most 2^(kMan+1), so it is the
// significand of a value of the type in the same binade, or the bottom of
// the next one (a carry of one into the exponent field); ulp(x) < 2^-b <=
// 1/2 keeps x so far below the largest finite value that the carry never
// reaches Inf. When s > kMan + 1, |x| < 2^(kMan+1+E) <= 2^-(b+1) and n is
// 0. So every result is exactly representable and built from its bits.
template <typename F>
uint64_t RoundAbsolute(uint64_t x, int b) {
  uint64_t sign = x & F::kSign;
  uint64_t mag = x & ~F::kSign;
  uint64_t exp = mag >> F::kMan;
  if (exp == F::kExpMax) return x;
  // Subnormals share the ulp of the lowest binade.
  int e = static_cast<int>(std::max<uint64_t>(exp, 1)) - F::kBias - F::kMan;
  int s = -b - e;
  if (s <= 0) return x;
  if (s > F::kMan + 1) return sign;
  uint64_t m = (mag & F::kManMask) | (exp != 0 ? uint64_t{1} << F::kMan : 0);
  uint64_t step = uint64_t{1} << s;
  uint64_t low = m & (step - 1);
  uint64_t half = step >> 1;
  uint64_t rounded = m - low;
  // The parity of n is bit s of M, which is the hidden bit when s = kMan.
  if (low > half || (low == half && ((m >> s) & 1) != 0)) rounded += step;
  if (rounded == 0) return sign;
  // mag is M plus (exp - 1) * 2^kMan for normals (M alone for subnormals),
  // linear in M across the carry.
  return sign | (mag - m + rounded);
}

// x with the low s mantissa bits rounded away (0 < s <= kMan), rounding
// the magnitude bits as an integer, ties to even.
template <typename F>
uint64_t RoundRelative(uint64_t x, int s) {
  uint64_t sign = x & F::kSign;
  uint64_t mag = x & ~F::kSign;
  uint64_t exp = mag >> F::kMan;
  if (exp == 0 || exp == F::kExpMax) return x;
  uint64_t step = uint64_t{1} << s;
  uint64_t low = mag & (step - 1);
  uint64_t half = step >> 1;
  uint64_t rounded = mag - low;
  // With s = kMan (no mantissa bit kept) the parity is the exponent's.
  if (low > half || (low == half && ((rounded >> s) & 1) != 0)) rounded += step;
  if ((rounded >> F::kMan) == F::kExpMax) return x;
  return sign | rounded;
}

template <typename F, typename Round>
ThinError ThinEach(uint8_t* data, size_t bytes, Round round) {
  using Bits = typename F::Bits;
  ThinError err;
  constexpr Bits kMagnitude = static_cast<Bits>(~Bits{0}) >> 1;  // all but the sign
  size_t n = bytes / sizeof(Bits);
  err.values = n;
  for (size_t i = 0; i < n; ++i) {
    uint8_t* p = data + i * sizeof(Bits);
    uint64_t x = LoadLE<Bits>(p);
    uint64_t y = round(x);
    if (y == x) continue;
    StoreLE<Bits>(p, static_cast<Bits>(y));
    ++err.changed;
    if ((static_cast<Bits>(y) & kMagnitude) == 0) ++err.zeroed;
    // Exact for every type here: x' and x are multiples of ulp(x) and
    // |x' - x| <= |x|, so the difference has no more bits than x.
    double before = F::ToDouble(x);
    double diff = std::fabs(F::ToDouble(y) - before);
    err.max_abs = std::max(err.max_abs, diff);
    err.max_rel = std::max(err.max_rel, diff / std::fabs(before));  // x != 0: zero never changes
  }
  return err;
}

template <typename F>
ThinError Thin(const Precision& p, uint8_t* data, size_t bytes) {
  if (p.kind == Precision::Kind::kAbsolute) {
    int b = std::clamp(p.bits, kMinAbsoluteBits, kMaxAbsoluteBits);
    return ThinEach<F>(data, bytes, [b](uint64_t x) { return RoundAbsolute<F>(x, b); });
  }
  int s = F::kMan - std::clamp(p.bits, kMinRelativeBits, kMaxRelativeBits);
  if (s <= 0) return ThinEach<F>(data, bytes, [](uint64_t x) { return x; });
  return ThinEach<F>(data, bytes, [s](uint64_t x) { return RoundRelative<F>(x, s); });
}

std::string AcceptedForms() {
  return "\"absolute B\" (values become multiples of 2^-B, B from " + std::to_string(kMinAbsoluteBits) + " to " +
         std::to_string(kMaxAbsoluteBits) + ") or \"relative K\" (K mantissa bits kept, K from " +
         std::to_string(kMinRelativeBits) + " to " + std::to_string(kMaxRelativeBits) + ")";
}

// The whitespace-separated words of s.
std::vector<std::string_view> Words(std::string_view s) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > start) words.push_back(s.substr(start, i - start));
  }
  return words;
}

}  // namespace

std::string Precision::Text() const {
  if (kind == Kind::kAbsolute) return "absolute 2^-" + std::to_string(bits);
  return "relative " + std::to_string(bits) + " mantissa bit" + (bits == 1 ? "" : "s");
}

double Precision::Bound() const { return std::ldexp(1.0, -(bits + 1)); }

Result<Precision> ParsePrecision(std::string_view text) {
  auto invalid = [&text] {
    return InvalidArgument("precision \"" + std::string(text) + "\" is not one of " + AcceptedForms());
  };
  std::vector<std::string_view> words = Words(text);
  // As Text() prints it too: "relative 5 mantissa bits".
  if (words.size() == 4 && words[0] == "relative" && words[2] == "mantissa" &&
      (words[3] == "bits" || words[3] == "bit")) {
    words.resize(2);
  }
  if (words.size() != 2) return invalid();
  Precision p;
  int lo, hi;
  if (words[0] == "absolute") {
    p.kind = Precision::Kind::kAbsolute;
    lo = kMinAbsoluteBits;
    hi = kMaxAbsoluteBits;
  } else if (words[0] == "relative") {
    p.kind = Precision::Kind::kRelative;
    lo = kMinRelativeBits;
    hi = kMaxRelativeBits;
  } else {
    return invalid();
  }
  std::string_view number = words[1];
  // "absolute 2^-23" as Text() prints it.
  if (p.kind == Precision::Kind::kAbsolute && number.substr(0, 3) == "2^-") number.remove_prefix(3);
  // Digits only: from_chars would take a leading minus.
  if (number.empty() || number[0] < '0' || number[0] > '9') return invalid();
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), p.bits);
  if (ec != std::errc() || end != number.data() + number.size() || p.bits < lo || p.bits > hi) return invalid();
  return p;
}

bool Thinnable(DType t) {
  return t == DType::kF32 || t == DType::kBF16 || t == DType::kF16 || t == DType::kF64;
}

void ThinError::Merge(const ThinError& other) {
  max_abs = std::max(max_abs, other.max_abs);
  max_rel = std::max(max_rel, other.max_rel);
  changed += other.changed;
  zeroed += other.zeroed;
  values += other.values;
}

std::optional<ThinError> ThinValues(DType t, const Precision& p, uint8_t* data, size_t bytes) {
  switch (t) {
    case DType::kF32:
      return Thin<F32>(p, data, bytes);
    case DType::kBF16:
      return Thin<BF16>(p, data, bytes);
    case DType::kF16:
      return Thin<F16>(p, data, bytes);
    case DType::kF64:
      return Thin<F64>(p, data, bytes);
    default:
      return std::nullopt;
  }
}

}  // namespace zipnn::codec
