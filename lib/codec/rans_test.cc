// Unit tests of the rANS coder (rans.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "lib/codec/codec_test_util.h"
#include "lib/codec/huffman.h"
#include "lib/codec/rans.h"

namespace zipnn::codec {
namespace {

TEST_CASE("rans round-trips skewed, uniform, single-symbol and tiny inputs") {
  std::vector<std::vector<uint8_t>> inputs = {ToBF16(NormalFloats(100000, 31)),
                                              RandomBytes(65536, 32),
                                              std::vector<uint8_t>(5000, 9),
                                              {7},
                                              {1, 2},
                                              {1, 2, 3},
                                              RandomBytes(17, 33),
                                              DeltaExponents(70001, 0.77, 34)};
  // Every byte value present, one of them dominant: normalisation must
  // give all 256 a frequency and still sum to the scale.
  std::vector<uint8_t> all(200000, 5);
  for (int s = 0; s < 256; ++s) all[static_cast<size_t>(s) * 700] = static_cast<uint8_t>(s);
  inputs.push_back(all);
  for (const auto& in : inputs) {
    CAPTURE(in.size());
    CHECK(RansRoundTrip(in) == in);
  }
}

TEST_CASE("rans codes skewed groups within 1% of their entropy, where huffman cannot") {
  for (double zeros : {0.0, 0.5, 0.77, 0.9}) {
    CAPTURE(zeros);
    auto in = DeltaExponents(1 << 17, zeros, 35);
    const double bound = EntropyBits(CountBytes(in.data(), in.size())) / 8;
    size_t size = 0;
    RansRoundTrip(in, &size);
    CHECK(static_cast<double>(size) < bound * 1.01 + 64);  // + table and states
    HuffmanEncoder huff;
    huff.Plan(in.data(), in.size(), Counts(in.data(), in.size()));
    if (zeros >= 0.77) CHECK(static_cast<double>(huff.EstimatedSize()) > bound * 1.10);
  }
}

void CheckRansRejectsDamage(double zeros) {
  CAPTURE(zeros);
  auto in = DeltaExponents(20000, zeros, 38);
  RansEncoder enc;
  enc.Plan(in.data(), in.size(), Counts(in.data(), in.size()));
  Buffer payload;
  enc.Encode(payload);
  const size_t size = payload.size();
  std::vector<uint8_t> out(in.size());
  RansDecoder dec;
  auto decode = [&](std::vector<uint8_t> p, size_t n) { return dec.Decode(p.data(), n, out.data(), out.size()); };
  auto good = Padded(payload.data(), size);

  CHECK(!decode(Padded(payload.data(), 0), 0).ok());
  auto bad_bits = good;
  bad_bits[0] = 20;
  CHECK(decode(bad_bits, size).message() == "rans precision of 20 bits is out of range");
  for (size_t cut : {size_t{1}, size_t{3}, size / 2, size - 1}) {
    CAPTURE(cut);
    CHECK(!decode(Padded(payload.data(), cut), cut).ok());
  }
  auto bad_freq = good;
  bad_freq[3] ^= 1;  // first frequency off by one: the sum is wrong
  CHECK(decode(bad_freq, size).message() == "rans frequencies do not add up to the scale");
  // Flipped bits in the streams: the final state or the stream end no
  // longer match.
  size_t caught = 0, tried = 0;
  for (size_t pos = size / 3; pos < size; pos += 37, ++tried) {
    auto flipped = good;
    flipped[pos] ^= 0x04;
    if (!decode(flipped, size).ok()) ++caught;
  }
  CHECK(caught == tried);
}

// Zero shares on both sides of the decoder's rare-refill model (about 2.2
// and 0.4 bits per symbol), so both of its loops meet the damage.
TEST_CASE("rans decoder rejects damaged payloads") {
  CheckRansRejectsDamage(0.6);
  CheckRansRejectsDamage(0.95);
}

}  // namespace
}  // namespace zipnn::codec
