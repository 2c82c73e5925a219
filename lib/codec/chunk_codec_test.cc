// Unit tests of chunk records (chunk_codec.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "lib/codec/codec_test_util.h"
#include "lib/codec/chunk_codec.h"

namespace zipnn::codec {
namespace {

TEST_CASE("chunk records round-trip standalone and as XOR deltas, for every dtype") {
  auto base = NormalFloats(20000, 11);
  auto target = base;
  // A training step: small changes to a tenth of the weights.
  std::mt19937 rng(12);
  for (size_t i = 0; i < target.size(); i += 40) target[i] ^= static_cast<uint8_t>(rng() & 0x0f);
  for (DType t : kAllTypes) {
    for (size_t n : {target.size(), target.size() - 3, size_t{5}}) {
      CAPTURE(DTypeName(t));
      CAPTURE(n);
      ChunkEncoder enc(CoderPolicy::kAuto, 3);
      ChunkDecoder dec;
      for (const uint8_t* b : {static_cast<const uint8_t*>(nullptr), static_cast<const uint8_t*>(base.data())}) {
        Buffer rec;
        enc.Encode(t, target.data(), n, b, rec);
        auto p = Padded(rec.data(), rec.size());
        std::vector<uint8_t> out(n);
        REQUIRE(dec.Decode(t, p.data(), rec.size(), n, b, out.data()).ok());
        CHECK(std::memcmp(out.data(), target.data(), n) == 0);
      }
    }
  }
}

TEST_CASE("a delta of a small update is far smaller than the standalone chunk") {
  auto base = NormalFloats(65536, 13);
  auto target = base;
  for (size_t i = 0; i < target.size(); i += 4 * 50) target[i] ^= 1;  // 2% of weights, lowest bit
  ChunkEncoder enc(CoderPolicy::kAuto, 3);
  Buffer alone, delta;
  enc.Encode(DType::kF32, target.data(), target.size(), nullptr, alone);
  enc.Reset();
  enc.Encode(DType::kF32, target.data(), target.size(), base.data(), delta);
  CHECK(delta.size() * 20 < alone.size());
}

TEST_CASE("chunk record parser rejects bad group tables") {
  std::vector<uint8_t> rec = {2, 0, 4, 0, 0, 0, 1, 0, 0, 0, 0, 9, 9, 9, 9};
  CHECK(ParseChunkRecord(DType::kBF16, rec.data(), rec.size(), 8).ok());
  CHECK(ParseChunkRecord(DType::kF32, rec.data(), rec.size(), 8).status().message() ==
        "chunk record has 2 groups, expected 4");
  auto bad = rec;
  bad[1] = 9;
  CHECK(ParseChunkRecord(DType::kBF16, bad.data(), bad.size(), 8).status().message() ==
        "chunk record names unknown coder 9");
  CHECK(!ParseChunkRecord(DType::kBF16, rec.data(), rec.size() - 1, 8).ok());
  CHECK(!ParseChunkRecord(DType::kBF16, rec.data(), 3, 8).ok());
  CHECK(!ParseChunkRecord(DType::kBF16, rec.data(), 0, 8).ok());
  // The sparse coder (5) exists from object format 2 on: a record of an
  // older object that names it is damaged.
  auto sparse = rec;
  sparse[1] = 5;
  CHECK(ParseChunkRecord(DType::kBF16, sparse.data(), sparse.size(), 8).ok());
  CHECK(ParseChunkRecord(DType::kBF16, sparse.data(), sparse.size(), 8, Coder::kRans).status().message() ==
        "chunk record names unknown coder 5");
}

}  // namespace
}  // namespace zipnn::codec
