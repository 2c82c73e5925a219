// Unit tests of the arithmetic delta (delta_transform.h): exact for every
// bit pattern, zero where nothing changed, small where a value moved by a
// few units in the last place.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "lib/codec/codec_test_util.h"
#include "lib/codec/delta_transform.h"
#include "lib/codec/grouping.h"

namespace zipnn::codec {
namespace {

TEST_CASE("the difference round-trips every dtype at every length, tails and any bit pattern included") {
  for (DType t : kAllTypes) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{1001}, size_t{4096}}) {
      CAPTURE(DTypeName(t));
      CAPTURE(n);
      const std::vector<uint8_t> target = RandomBytes(n, static_cast<uint32_t>(n) + 1);
      const std::vector<uint8_t> base = RandomBytes(n, static_cast<uint32_t>(n) + 2);
      std::vector<uint8_t> delta(n), back(n);
      DifferenceTo(t, delta.data(), target.data(), base.data(), n);
      UndoDifference(t, back.data(), delta.data(), base.data(), n);
      CHECK(back == target);
      // In place both ways.
      std::vector<uint8_t> inplace = target;
      DifferenceTo(t, inplace.data(), inplace.data(), base.data(), n);
      CHECK(inplace == delta);
      UndoDifference(t, inplace.data(), inplace.data(), base.data(), n);
      CHECK(inplace == target);
    }
  }
}

TEST_CASE("every 16-bit pattern against every step of a few ulps, NaNs, infinities and both zeros included") {
  std::vector<uint8_t> target(2 * 65536), base(2 * 65536), delta(target.size()), back(target.size());
  for (uint32_t v = 0; v < 65536; ++v) {
    const uint16_t b = static_cast<uint16_t>(v), t = static_cast<uint16_t>(v * 40503u);
    std::memcpy(&base[2 * v], &b, 2);
    std::memcpy(&target[2 * v], &t, 2);
  }
  for (DType t : {DType::kBF16, DType::kF16, DType::kI16, DType::kU16}) {
    CAPTURE(DTypeName(t));
    DifferenceTo(t, delta.data(), target.data(), base.data(), target.size());
    UndoDifference(t, back.data(), delta.data(), base.data(), target.size());
    CHECK(back == target);
    DifferenceTo(t, delta.data(), base.data(), base.data(), base.size());
    CHECK(std::all_of(delta.begin(), delta.end(), [](uint8_t b) { return b == 0; }));  // unchanged: zero
  }
}

TEST_CASE("a step of a few ulps is a small number either way, across exponent boundaries and zero") {
  struct Step {
    uint16_t base, target, zigzag;
  };
  const Step steps[] = {
      {0x3F7F, 0x3F80, 2},  // just under 1.0 to 1.0: +1 ulp (XOR: 0x00FF, eight bits)
      {0x3F80, 0x3F7F, 1},  // and back: -1
      {0xBF7F, 0xBF80, 1},  // -0.996 to -1.0: one ulp down
      {0x0000, 0x8000, 1},  // +0 to -0: -0 sorts just below +0
      {0x8001, 0x0001, 6},  // the smallest negative to the smallest positive: three steps up
      {0x7F80, 0x7F80, 0},  // infinity unchanged
  };
  for (const Step& s : steps) {
    CAPTURE(s.base);
    CAPTURE(s.target);
    uint16_t delta = 0xFFFF;
    DifferenceTo(DType::kBF16, reinterpret_cast<uint8_t*>(&delta), reinterpret_cast<const uint8_t*>(&s.target),
                 reinterpret_cast<const uint8_t*>(&s.base), 2);
    CHECK(delta == s.zigzag);
  }
}

TEST_CASE("a difference is grouped as the unsigned type of its width") {
  CHECK(DifferenceGrouping(DType::kF32) == DType::kU32);
  CHECK(DifferenceGrouping(DType::kBF16) == DType::kU16);
  CHECK(DifferenceGrouping(DType::kF64) == DType::kU64);
  CHECK(DifferenceGrouping(DType::kF8E4M3) == DType::kU8);
  CHECK(!DTypeRotatesSign(DifferenceGrouping(DType::kF16)));
}

}  // namespace
}  // namespace zipnn::codec
