// Unit tests of the sparse coder (sparse.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "lib/codec/codec_test_util.h"
#include "lib/codec/sparse.h"

namespace zipnn::codec {
namespace {

// A group with `share` of its bytes non-zero, scattered, plus stretches
// of the kinds real deltas hold: a long zero run and a dense patch.
std::vector<uint8_t> SparseGroup(size_t n, double share, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (std::uniform_real_distribution<double>(0, 1)(rng) < share) v[i] = static_cast<uint8_t>(1 + rng() % 40);
  }
  if (n > 4000) {
    std::fill(v.begin() + n / 4, v.begin() + n / 4 + 2000, 0);
    for (size_t i = n / 2; i < n / 2 + 300; ++i) v[i] = static_cast<uint8_t>(rng() | 1);
  }
  return v;
}

std::vector<uint8_t> SparseRoundTrip(const std::vector<uint8_t>& in, size_t* size = nullptr) {
  SparseEncoder enc;
  enc.Plan(in.data(), in.size(), Counts(in.data(), in.size()));
  Buffer payload;
  enc.Encode(payload);
  if (size != nullptr) *size = payload.size();
  CHECK(payload.size() <= enc.EstimatedSize() + 8);
  auto padded = Padded(payload.data(), payload.size());
  std::vector<uint8_t> out(in.size(), 0xAB);
  SparseDecoder dec;
  Status s = dec.Decode(padded.data(), payload.size(), out.data(), out.size());
  REQUIRE(s.ok());
  return out;
}

TEST_CASE("DecodeNonZero gives exactly the non-zero bytes Decode writes, in order, and the count the header declares") {
  for (double share : {0.001, 0.03, 0.5}) {
    CAPTURE(share);
    const auto in = SparseGroup(100000, share, 7);
    SparseEncoder enc;
    enc.Plan(in.data(), in.size(), Counts(in.data(), in.size()));
    Buffer payload;
    enc.Encode(payload);
    auto padded = Padded(payload.data(), payload.size());
    SparseDecoder dec;
    REQUIRE(dec.DecodeNonZero(padded.data(), payload.size(), in.size()).ok());
    std::vector<uint32_t> want;
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i] != 0) want.push_back(static_cast<uint32_t>(i));
    }
    REQUIRE(dec.count() == want.size());
    CHECK(SparseDecoder::DeclaredCount(payload.data(), payload.size()) == want.size());
    CHECK(std::equal(want.begin(), want.end(), dec.positions()));
    for (size_t j = 0; j < want.size(); ++j) CHECK(dec.values()[j] == in[want[j]]);
    // A group smaller than the positions reach is refused, with nothing kept.
    Status s = dec.DecodeNonZero(padded.data(), payload.size(), want.back());
    REQUIRE(!s.ok());
    CHECK(dec.count() == 0);
  }
  CHECK(SparseDecoder::DeclaredCount(nullptr, 3) == 0);
}

TEST_CASE("sparse round-trips groups from one non-zero byte to mostly non-zero") {
  std::vector<std::vector<uint8_t>> inputs = {SparseGroup(131072, 0.0005, 40),
                                              SparseGroup(131072, 0.034, 41),
                                              SparseGroup(131072, 0.3, 42),
                                              SparseGroup(4096, 0.9, 43),
                                              SparseGroup(17, 0.5, 44),
                                              {0, 0, 7},
                                              {7},
                                              {9, 0, 0, 0}};
  std::vector<uint8_t> one(100000, 0);
  one[99999] = 1;  // a run far longer than the escape
  inputs.push_back(one);
  one[99999] = 0;
  one[0] = 200;  // only trailing zeros
  inputs.push_back(one);
  // Every value, and runs at the edges of every length code up to 2^12.
  std::vector<uint8_t> every;
  for (int k = 0; k < 256; ++k) {
    const size_t run = k < 16 ? k : (size_t{1} << (4 + (k - 16) % 9)) - (k % 2);
    every.insert(every.end(), run, 0);
    every.push_back(static_cast<uint8_t>(k == 0 ? 255 : k));
  }
  inputs.push_back(every);
  for (const auto& in : inputs) {
    CAPTURE(in.size());
    CHECK(SparseRoundTrip(in) == in);
  }
}

TEST_CASE("sparse stays within 1% of rans on delta groups that are mostly zeros") {
  for (double share : {0.001, 0.01, 0.034, 0.1}) {
    CAPTURE(share);
    auto in = SparseGroup(131072, share, 45);
    size_t sparse = 0, rans = 0;
    SparseRoundTrip(in, &sparse);
    RansRoundTrip(in, &rans);
    CHECK(static_cast<double>(sparse) <= static_cast<double>(rans) * 1.01 + 16);
  }
}

TEST_CASE("sparse decoder rejects damaged payloads") {
  auto in = SparseGroup(20000, 0.05, 46);
  SparseEncoder enc;
  enc.Plan(in.data(), in.size(), Counts(in.data(), in.size()));
  Buffer payload;
  enc.Encode(payload);
  const size_t size = payload.size();
  std::vector<uint8_t> out(in.size());
  SparseDecoder dec;
  auto decode = [&](std::vector<uint8_t> p, size_t n, size_t out_n) {
    return dec.Decode(p.data(), n, out.data(), out_n);
  };
  auto good = Padded(payload.data(), size);
  REQUIRE(decode(good, size, in.size()).ok());

  CHECK(decode(Padded(payload.data(), 0), 0, in.size()).message() == "sparse payload shorter than its header");
  auto set32 = [&](size_t at, uint32_t v) {
    auto p = good;
    std::memcpy(p.data() + at, &v, 4);
    return p;
  };
  CHECK(decode(set32(0, 0), size, in.size()).message() == "sparse value count out of range");
  CHECK(decode(set32(0, 20001), size, in.size()).message() == "sparse value count out of range");
  CHECK(decode(set32(4, 0xffffffff), size, in.size()).message() == "sparse parts exceed the payload");
  CHECK(decode(set32(8, 0xffffffff), size, in.size()).message() == "sparse parts exceed the payload");
  // Fewer values than coded: the streams no longer end where they should.
  CHECK(!decode(set32(0, 900), size, in.size()).ok());
  // A group shorter than the runs reach.
  CHECK(!decode(good, size, in.size() - 100).ok());
  for (size_t cut : {size_t{12}, size_t{20}, size / 2, size - 1}) {
    CAPTURE(cut);
    CHECK(!decode(Padded(payload.data(), cut), cut, in.size()).ok());
  }
  size_t caught = 0, tried = 0;
  for (size_t pos = 12; pos < size; pos += 29, ++tried) {
    auto flipped = good;
    flipped[pos] ^= 0x10;
    Status s = decode(flipped, size, in.size());
    if (!s.ok() || std::vector<uint8_t>(out.begin(), out.end()) != in) ++caught;
  }
  CHECK(caught == tried);
}

}  // namespace
}  // namespace zipnn::codec
