// Unit tests of byte grouping per dtype (grouping.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "lib/codec/codec_test_util.h"
#include "lib/codec/grouping.h"

namespace zipnn::codec {
namespace {

TEST_CASE("grouping round-trips every dtype at every length, tails included") {
  for (DType t : kAllTypes) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{1001}, size_t{4096}}) {
      CAPTURE(DTypeName(t));
      CAPTURE(n);
      std::vector<uint8_t> in = RandomBytes(n, static_cast<uint32_t>(n));
      std::vector<uint8_t> grouped(n), back(n);
      SplitGroups(t, in.data(), n, grouped.data());
      MergeGroups(t, grouped.data(), n, back.data());
      CHECK(back == in);
      size_t total = 0;
      for (int g = 0; g < GroupCount(t, n); ++g) total += GroupSize(t, n, g);
      CHECK(total == n);
    }
  }
}

TEST_CASE("grouping moves the sign out so the exponent group is pure exponent") {
  // -1.0f and +1.0f differ only in the sign bit; their exponent bytes must
  // be equal after grouping, and the sign must land in the low group.
  const float values[2] = {1.0f, -1.0f};
  uint8_t grouped[8];
  SplitGroups(DType::kF32, reinterpret_cast<const uint8_t*>(values), 8, grouped);
  const int exp = ExponentGroup(DType::kF32);
  CHECK(grouped[exp * 2] == 127);  // biased exponent of 1.0
  CHECK(grouped[exp * 2 + 1] == 127);
  CHECK(grouped[0] == 0);  // mantissa byte 0 of +1.0: sign bit clear
  CHECK(grouped[1] == 1);  // -1.0: sign now in bit 0

  // bf16 1.0 is 0x3F80: exponent 127 after rotation.
  const uint8_t bf16[4] = {0x80, 0x3F, 0x80, 0xBF};
  SplitGroups(DType::kBF16, bf16, 4, grouped);
  CHECK(grouped[2] == 127);
  CHECK(grouped[3] == 127);
  CHECK(grouped[0] == 0x00);
  CHECK(grouped[1] == 0x01);

  // fp64 1.0: exponent 1023 = 0x3FF; the top group holds its high 8 bits.
  const double d[1] = {-1.0};
  uint8_t g64[8];
  SplitGroups(DType::kF64, reinterpret_cast<const uint8_t*>(d), 8, g64);
  CHECK(g64[7] == 0x7F);
  CHECK(g64[0] == 0x01);
}

}  // namespace
}  // namespace zipnn::codec
