// Unit tests of the Huffman coder (huffman.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "lib/codec/codec_test_util.h"
#include "lib/codec/huffman.h"

namespace zipnn::codec {
namespace {

TEST_CASE("huffman round-trips skewed, uniform, single-symbol and tiny inputs") {
  std::vector<std::vector<uint8_t>> inputs;
  inputs.push_back(ToBF16(NormalFloats(100000, 1)));
  inputs.push_back(RandomBytes(65536, 2));
  inputs.push_back(std::vector<uint8_t>(5000, 0x7e));
  inputs.push_back({1});
  inputs.push_back({1, 2, 3});
  inputs.push_back(RandomBytes(17, 3));
  for (const auto& in : inputs) {
    CAPTURE(in.size());
    HuffmanEncoder enc;
    enc.Plan(in.data(), in.size(), Counts(in.data(), in.size()));
    Buffer payload;
    enc.Encode(payload);
    auto padded = Padded(payload.data(), enc.EstimatedSize());
    std::vector<uint8_t> out(in.size());
    REQUIRE(HuffmanDecoder().Decode(padded.data(), enc.EstimatedSize(), out.data(), out.size()).ok());
    CHECK(out == in);
  }
}

// Huffman spends whole bits per symbol: on Gaussian weights the two most
// common exponents (p ~ 0.30 and 0.27) both get 2-bit codes, which costs
// about 2% over the order-0 entropy. The bound below is that redundancy.
TEST_CASE("huffman codes skewed exponent bytes within 2.5% of their entropy") {
  auto f32 = NormalFloats(1 << 18, 7);
  std::vector<uint8_t> grouped(f32.size());
  SplitGroups(DType::kF32, f32.data(), f32.size(), grouped.data());
  const size_t n = f32.size() / 4;
  const uint8_t* exp = grouped.data() + GroupOffset(DType::kF32, f32.size(), 3);
  HuffmanEncoder enc;
  enc.Plan(exp, n, Counts(exp, n));
  const double bound = EntropyBits(CountBytes(exp, n)) / 8;
  CHECK(static_cast<double>(enc.EstimatedSize()) < bound * 1.025);
  CHECK(static_cast<double>(enc.EstimatedSize()) > bound);
}

TEST_CASE("huffman decoder rejects damaged payloads without reading out of bounds") {
  auto in = ToBF16(NormalFloats(4096, 9));
  HuffmanEncoder enc;
  enc.Plan(in.data(), in.size(), Counts(in.data(), in.size()));
  Buffer payload;
  enc.Encode(payload);
  const size_t size = enc.EstimatedSize();
  std::vector<uint8_t> out(in.size());
  const HuffmanDecoder dec;
  auto HuffmanDecode = [&dec](const uint8_t* p, size_t n, uint8_t* o, size_t on) { return dec.Decode(p, n, o, on); };

  SUBCASE("empty") { CHECK(!HuffmanDecode(Padded(payload.data(), 0).data(), 0, out.data(), out.size()).ok()); }
  SUBCASE("truncated streams") {
    for (size_t cut : {size / 2, size - 40, size - 1}) {
      auto p = Padded(payload.data(), cut);
      CHECK(!HuffmanDecode(p.data(), cut, out.data(), out.size()).ok());
    }
  }
  SUBCASE("stream sizes larger than the payload") {
    auto p = Padded(payload.data(), size);
    const size_t table = 2 + (p[1] - p[0] + 2) / 2;
    p[table] = 0xff;
    p[table + 1] = 0xff;
    p[table + 2] = 0xff;
    CHECK(HuffmanDecode(p.data(), size, out.data(), out.size()).message() == "huffman stream sizes exceed the payload");
  }
  SUBCASE("oversubscribed code table") {
    auto p = Padded(payload.data(), size);
    const size_t nibbles = 2 + (p[1] - p[0] + 2) / 2;
    for (size_t i = 2; i < nibbles; ++i) p[i] = 0x11;  // every symbol 1 bit
    CHECK(HuffmanDecode(p.data(), size, out.data(), out.size()).message() == "huffman code table is not a prefix code");
  }
  SUBCASE("inverted symbol range") {
    auto p = Padded(payload.data(), size);
    p[0] = 200;
    p[1] = 100;
    CHECK(!HuffmanDecode(p.data(), size, out.data(), out.size()).ok());
  }
}

}  // namespace
}  // namespace zipnn::codec
