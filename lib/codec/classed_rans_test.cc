// Unit tests of the lanes coder, rans-classed (classed_rans.h).
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/codec/classed_rans.h"
#include "lib/codec/codec_test_util.h"
#include "lib/codec/rans.h"

namespace zipnn::codec {
namespace {

// A group of n bytes whose values depend on the class of their element:
// the key (a base element's top byte, `stride` bytes apart) sets how wide
// the values spread, as a weight's exponent sets how many ulps it moves.
struct ClassedGroup {
  std::vector<uint8_t> base;  // n elements of `stride` bytes
  std::vector<uint8_t> group;
  size_t stride;
};
ClassedGroup MakeClassedGroup(size_t n, size_t stride, uint32_t seed) {
  std::mt19937 rng(seed);
  ClassedGroup g{std::vector<uint8_t>(n * stride), std::vector<uint8_t>(n), stride};
  for (size_t i = 0; i < n; ++i) {
    const uint8_t key = static_cast<uint8_t>(0x30 + rng() % 32 | (rng() & 0x80));
    g.base[i * stride + stride - 1] = key;
    const uint32_t spread = 1u << ((key & 0x7f) - 0x30) / 4;  // 1 to 128
    g.group[i] = static_cast<uint8_t>(rng() % spread);
  }
  return g;
}

struct ClassedCoded {
  Buffer payload;
  int classes = 0;
};
ClassedCoded EncodeClassed(const ClassedGroup& g, bool one_class) {
  const size_t n = g.group.size();
  std::vector<uint8_t> of(n);
  ElementClasses classes;
  if (!one_class) classes = ClassifyByKey(g.base.data() + g.stride - 1, g.stride, n, of.data());
  if (classes.count < 2) classes = ElementClasses{1, {}, nullptr, n};
  ClassedRansEncoder enc;
  enc.Plan(g.group.data(), n, classes);
  ClassedCoded c;
  enc.Encode(c.payload);
  c.classes = classes.count;
  CHECK(c.payload.size() <= enc.EstimatedSize() + 16);
  return c;
}
Status DecodeClassed(const ClassedGroup& g, const std::vector<uint8_t>& payload, size_t size,
                     std::vector<uint8_t>& out) {
  out.assign(g.group.size(), 0);
  ClassedRansDecoder dec;
  return dec.Decode(payload.data(), size, out.data(), out.size(),
                    ClassKeys{g.base.data() + g.stride - 1, g.stride, g.group.size()});
}

TEST_CASE("classed rans round-trips groups of every length, with one to four classes") {
  // Lengths around the eight lanes and the four segments: rounds the
  // vector decoder takes, rounds it leaves near a stream's end, and
  // symbols after the last whole round.
  for (size_t n : {size_t{1}, size_t{7}, size_t{8}, size_t{31}, size_t{33}, size_t{100}, size_t{1000}, size_t{4099},
                   size_t{65536}, size_t{100003}}) {
    for (size_t stride : {size_t{2}, size_t{4}}) {
      for (bool one_class : {true, false}) {
        CAPTURE(n);
        CAPTURE(stride);
        CAPTURE(one_class);
        const ClassedGroup g = MakeClassedGroup(n, stride, static_cast<uint32_t>(n + stride));
        const ClassedCoded c = EncodeClassed(g, one_class);
        if (!one_class && n >= 1000) CHECK(c.classes == kMaxClasses);
        std::vector<uint8_t> out;
        const auto padded = Padded(c.payload.data(), c.payload.size());
        REQUIRE(DecodeClassed(g, padded, c.payload.size(), out).ok());
        CHECK(out == g.group);
      }
    }
  }
}

// The vector encoder and the scalar one (a build without AVX2, or
// --config=baseline) must write the same bytes: objects never depend on
// the machine. These checksums were taken from the vector encoder; a
// deliberate change of the encoder's output updates them.
TEST_CASE("classed rans writes the same payload on every machine") {
  const ClassedGroup g = MakeClassedGroup(100003, 4, 7);
  const ClassedCoded classed = EncodeClassed(g, false);
  const ClassedCoded one = EncodeClassed(g, true);
  CHECK(classed.classes == kMaxClasses);
  CHECK(Checksum64(classed.payload.data(), classed.payload.size()) == 16452316601241797799ull);
  CHECK(Checksum64(one.payload.data(), one.payload.size()) == 16026729392640199753ull);
}

TEST_CASE("classed rans codes a group whose values follow their class smaller than one model can") {
  const ClassedGroup g = MakeClassedGroup(1 << 17, 4, 41);
  const size_t classed = EncodeClassed(g, false).payload.size();
  const size_t one = EncodeClassed(g, true).payload.size();
  CHECK(static_cast<double>(classed) < 0.95 * static_cast<double>(one));
  RansEncoder plain;
  plain.Plan(g.group.data(), g.group.size(), Counts(g.group.data(), g.group.size()));
  CHECK(static_cast<double>(one) < 1.01 * static_cast<double>(plain.EstimatedSize()));
}

TEST_CASE("classed rans decoder rejects damaged payloads and missing keys") {
  const ClassedGroup g = MakeClassedGroup(20000, 2, 43);
  const ClassedCoded c = EncodeClassed(g, false);
  REQUIRE(c.classes == kMaxClasses);
  const size_t size = c.payload.size();
  const auto good = Padded(c.payload.data(), size);
  std::vector<uint8_t> out;
  CHECK(DecodeClassed(g, good, size, out).ok());

  CHECK(DecodeClassed(g, good, 0, out).message() == "classed rans payload is empty");
  auto bad = good;
  bad[0] = 5;
  CHECK(DecodeClassed(g, bad, size, out).message() == "classed rans payload has 5 classes");
  bad = good;
  bad[2] = bad[1];  // thresholds must increase
  CHECK(DecodeClassed(g, bad, size, out).message() == "classed rans thresholds are not increasing keys from 1 to 127");
  bad = good;
  bad[1 + kMaxClasses - 1] = 14;  // the first model's precision
  CHECK(DecodeClassed(g, bad, size, out).message() == "classed rans model has a precision of 14 bits, not 13");
  ClassedRansDecoder dec;
  CHECK(dec.Decode(good.data(), size, out.data(), out.size(), ClassKeys{}).message() ==
        "classed rans group outside a difference of floats");
  for (size_t cut : {size_t{1}, size_t{4}, size / 2, size - 1}) {
    CAPTURE(cut);
    CHECK(!DecodeClassed(g, Padded(c.payload.data(), cut), cut, out).ok());
  }
  size_t caught = 0, tried = 0;
  for (size_t pos = size / 3; pos < size; pos += 37, ++tried) {
    auto flipped = good;
    flipped[pos] ^= 0x04;
    if (!DecodeClassed(g, flipped, size, out).ok()) ++caught;
  }
  CHECK(caught == tried);
}

}  // namespace
}  // namespace zipnn::codec
