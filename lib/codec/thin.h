// Near-lossless thinning of floating-point values, in place: what an old
// checkpoint kept for retention is rounded to before it is stored, so
// that its low mantissa bits become zeros the coders take for free.
//
// Two precisions (the ZipNN near-lossless paper's two):
// - absolute 2^-b: each value becomes the nearest multiple of 2^-b, ties
//   to even; the error is at most 2^-(b+1). There is no scaling: a value
//   whose own spacing (ulp) is 2^-b or more is a multiple already and
//   stays bit-identical (for fp32 and b <= 23, every |x| >= 1).
// - relative k: each normal value keeps k explicit mantissa bits, rounded
//   to nearest by rounding its magnitude bits as an integer, ties to even
//   (a carry into the exponent is right); the error is at most
//   2^-(k+1)|x|. Subnormals, and a value that would round up to infinity,
//   stay as they are, so the bound holds for every value that changes.
// In both, NaN and +-Inf stay bit-identical and the sign is kept (a tiny
// negative value may become -0.0; its error is |x|). Every result is a
// value of the dtype, made from its bits, never converted back.
//
// Elements are little-endian, at any alignment. Pure functions;
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/status.h"
#include "lib/codec/dtype.h"

namespace zipnn::codec {

struct Precision {
  enum class Kind : uint8_t { kAbsolute, kRelative };
  Kind kind = Kind::kAbsolute;
  // Absolute: values become multiples of 2^-bits (1..60). Relative:
  // mantissa bits kept (0..52); as many as the dtype has or more keeps
  // every value. Other values are taken as the nearest end of the range.
  int bits = 23;

  // "absolute 2^-23", "relative 5 mantissa bits".
  std::string Text() const;
  // The stated bound: 2^-(bits+1), absolute or relative to |x|.
  double Bound() const;
};

// Parses "absolute 23" or "relative 5", the spelling of .zipnn.yaml and
// the command line, or the same as Text() prints it ("absolute 2^-23",
// "relative 5 mantissa bits").
Result<Precision> ParsePrecision(std::string_view text);

// Whether ThinValues applies to type t: fp32, bf16, fp16, fp64.
bool Thinnable(DType t);

// What thinning did, measured against the original values in double
// (exact for the differences of every thinnable type).
struct ThinError {
  double max_abs = 0;  // max |x' - x|
  double max_rel = 0;  // max |x' - x| / |x| over x != 0
  uint64_t changed = 0;
  uint64_t values = 0;
  uint64_t zeroed = 0;  // of those changed, rounded to zero

  void Merge(const ThinError& other);
};

// Rounds the whole elements of data[0..bytes) of type t in place (bytes
// after the last whole element are left). Nullopt, and data untouched,
// when t is not Thinnable.
std::optional<ThinError> ThinValues(DType t, const Precision& p, uint8_t* data, size_t bytes);

}  // namespace zipnn::codec
