// Unit tests of chunk records (chunk_codec.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lib/codec/codec_test_util.h"
#include "lib/codec/chunk_codec.h"
#include "lib/codec/entropy.h"
#include "lib/codec/grouping.h"

namespace zipnn::codec {
namespace {

TEST_CASE("chunk records round-trip standalone and as deltas by every transform, for every dtype") {
  auto base = NormalFloats(20000, 11);
  auto target = base;
  // A training step: small changes to a tenth of the weights.
  std::mt19937 rng(12);
  for (size_t i = 0; i < target.size(); i += 40) target[i] ^= static_cast<uint8_t>(rng() & 0x0f);
  for (DType t : kAllTypes) {
    for (size_t n : {target.size(), target.size() - 3, size_t{5}}) {
      CAPTURE(DTypeName(t));
      CAPTURE(n);
      for (TransformPolicy policy :
           std::initializer_list<TransformPolicy>{kAutoTransform, Transform::kXor, Transform::kDifference}) {
        CAPTURE(TransformPolicyName(policy));
        ChunkEncoder enc(CoderPolicy::kAuto, 3, policy);
        ChunkDecoder dec;
        for (const uint8_t* b : {static_cast<const uint8_t*>(nullptr), static_cast<const uint8_t*>(base.data())}) {
          Buffer rec;
          const Transform used = enc.Encode({t, target.data(), n, b}, rec);
          if (b == nullptr || !DifferenceApplies(t) || policy == Transform::kXor) {
            CHECK(used == Transform::kXor);
          } else if (policy == Transform::kDifference) {
            CHECK(used == Transform::kDifference);
          }
          auto p = Padded(rec.data(), rec.size());
          std::vector<uint8_t> out(n);
          REQUIRE(dec.Decode({t, p.data(), rec.size(), n, used, b}, out.data()).ok());
          CHECK(std::memcmp(out.data(), target.data(), n) == 0);
          if (b != nullptr) {
            // In place: the base's own bytes become the target's.
            std::vector<uint8_t> in_place(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(n));
            REQUIRE(dec.Decode({t, p.data(), rec.size(), n, used, in_place.data()}, in_place.data()).ok());
            CHECK(std::memcmp(in_place.data(), target.data(), n) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("a delta of a chunk equal to its base is all zero groups and decodes to the base, by every transform") {
  const auto base = NormalFloats(20000, 21);
  for (DType t : kAllTypes) {
    for (TransformPolicy policy : {TransformPolicy(Transform::kXor), TransformPolicy(Transform::kDifference)}) {
      CAPTURE(DTypeName(t));
      CAPTURE(TransformPolicyName(policy));
      ChunkEncoder enc(CoderPolicy::kAuto, 3, policy);
      Buffer rec;
      const Transform used = enc.Encode({t, base.data(), base.size(), base.data()}, rec);
      auto groups = ParseChunkRecord(t, rec.data(), rec.size(), base.size());
      REQUIRE(groups.ok());
      for (int i = 0; i < groups->count; ++i) CHECK(groups->group[i].coder == Coder::kZero);
      auto p = Padded(rec.data(), rec.size());
      std::vector<uint8_t> out(base.size(), 0xAB);
      ChunkDecoder dec;
      REQUIRE(dec.Decode({t, p.data(), rec.size(), base.size(), used, base.data()}, out.data()).ok());
      CHECK(out == base);
    }
  }
}

// Whether Decode takes the patch path for a record: every group zero or
// sparse, with few enough non-zero bytes.
bool TakesPatchPath(DType t, const Buffer& rec, size_t n) {
  auto g = ParseChunkRecord(t, rec.data(), rec.size(), n);
  REQUIRE(g.ok());
  size_t nonzero = 0, sparse = 0;
  const uint8_t* payload = rec.data() + g->payload_start;
  for (int i = 0; i < g->count; ++i) {
    const GroupEntry& e = g->group[i];
    if (e.coder == Coder::kSparse) {
      nonzero += SparseDecoder::DeclaredCount(payload, e.stored);
      ++sparse;
    } else if (e.coder != Coder::kZero && !(i == DTypeWidth(t) && e.coder == Coder::kRaw)) {
      return false;
    }
    payload += e.stored;
  }
  return sparse > 0 && nonzero <= n / ChunkDecoder::kPatchShare;
}

TEST_CASE("a delta that changes a few scattered elements is applied as a patch, exactly, by every transform") {
  const auto base = NormalFloats(40000, 31);
  for (DType t : kAllTypes) {
    for (TransformPolicy policy : {TransformPolicy(Transform::kXor), TransformPolicy(Transform::kDifference)}) {
      // Whole elements, and a chunk with a tail the last change falls in.
      for (size_t n : {base.size(), base.size() - 3}) {
        const std::string type(DTypeName(t)), transform(TransformPolicyName(policy));
        CAPTURE(type);
        CAPTURE(transform);
        CAPTURE(n);
        auto target = base;
        // One byte in 997 moved: low bytes by one (a carry for the
        // difference), some high bytes (exponent, sign), and the last byte.
        for (size_t i = 0; i < n; i += 997) target[i] = static_cast<uint8_t>(target[i] + 1);
        for (size_t i = 501; i < n; i += 4999) target[i] ^= 0x80;
        target[n - 1] ^= 0x5A;
        ChunkEncoder enc(CoderPolicy::kAuto, 3, policy);
        Buffer rec;
        const Transform used = enc.Encode({t, target.data(), n, base.data()}, rec);
        // Opaque bytes are zstd's (an LZ coder finds their repeats).
        if (t != DType::kBytes) CHECK(TakesPatchPath(t, rec, n));
        auto p = Padded(rec.data(), rec.size());
        ChunkDecoder dec;
        std::vector<uint8_t> out(n, 0xAB);
        REQUIRE(dec.Decode({t, p.data(), rec.size(), n, used, base.data()}, out.data()).ok());
        CHECK(std::memcmp(out.data(), target.data(), n) == 0);
        // In place on (a copy of) the base.
        std::vector<uint8_t> in_place(base.begin(), base.begin() + static_cast<std::ptrdiff_t>(n));
        REQUIRE(dec.Decode({t, p.data(), rec.size(), n, used, in_place.data()}, in_place.data()).ok());
        CHECK(std::memcmp(in_place.data(), target.data(), n) == 0);
        // Again with the same decoder: what the first patch wrote is gone.
        std::fill(out.begin(), out.end(), 0xCD);
        REQUIRE(dec.Decode({t, p.data(), rec.size(), n, used, base.data()}, out.data()).ok());
        CHECK(std::memcmp(out.data(), target.data(), n) == 0);
      }
    }
  }
}

TEST_CASE("a patch whose second sparse group is damaged fails, and leaves the decoder as it was") {
  const DType t = DType::kF32;
  const auto base = NormalFloats(40000, 41);
  auto target = base;
  // Two groups changed in the same elements: bytes 0 and 2 of each.
  for (size_t e = 0; e < base.size() / 4; e += 300) {
    target[4 * e] ^= 0x11;
    target[4 * e + 2] ^= 0x01;
  }
  ChunkEncoder enc(CoderPolicy::kAuto, 3, Transform::kXor);
  Buffer rec;
  const Transform used = enc.Encode({t, target.data(), target.size(), base.data()}, rec);
  REQUIRE(TakesPatchPath(t, rec, target.size()));
  auto g = ParseChunkRecord(t, rec.data(), rec.size(), target.size());
  REQUIRE(g.ok());
  // The payload of the second sparse group, its "values size" field made
  // larger than the payload.
  size_t at = g->payload_start;
  int seen = 0;
  size_t second = 0;
  for (int i = 0; i < g->count; ++i) {
    if (g->group[i].coder == Coder::kSparse && ++seen == 2) second = at;
    at += g->group[i].stored;
  }
  REQUIRE(second != 0);
  auto damaged = Padded(rec.data(), rec.size());
  damaged[second + 8] = 0xFF;
  damaged[second + 9] = 0xFF;
  ChunkDecoder dec;
  std::vector<uint8_t> out(target.size());
  Status s = dec.Decode({t, damaged.data(), rec.size(), target.size(), used, base.data()}, out.data());
  REQUIRE(!s.ok());
  CHECK(s.message().find("(sparse): sparse parts exceed the payload") != std::string::npos);
  // The first group had written its bytes before the second failed; a
  // decoder that kept them would skip those elements now.
  auto good = Padded(rec.data(), rec.size());
  REQUIRE(dec.Decode({t, good.data(), rec.size(), target.size(), used, base.data()}, out.data()).ok());
  CHECK(out == target);
}

TEST_CASE("a delta of a small update is far smaller than the standalone chunk") {
  auto base = NormalFloats(65536, 13);
  auto target = base;
  for (size_t i = 0; i < target.size(); i += 4 * 50) target[i] ^= 1;  // 2% of weights, lowest bit
  ChunkEncoder enc(CoderPolicy::kAuto, 3);
  Buffer alone, delta;
  enc.Encode({DType::kF32, target.data(), target.size()}, alone);
  enc.Reset();
  enc.Encode({DType::kF32, target.data(), target.size(), base.data()}, delta);
  CHECK(delta.size() * 20 < alone.size());
}

TEST_CASE("a difference is refused where it cannot have been written") {
  auto base = NormalFloats(1000, 14);
  ChunkEncoder enc(CoderPolicy::kAuto, 3, Transform::kDifference);
  Buffer rec;
  REQUIRE(enc.Encode({DType::kF32, base.data(), base.size(), base.data()}, rec) == Transform::kDifference);
  auto p = Padded(rec.data(), rec.size());
  std::vector<uint8_t> out(base.size());
  ChunkDecoder dec;
  CHECK(dec.Decode({DType::kF32, p.data(), rec.size(), base.size(), Transform::kDifference}, out.data()).message() ==
        "a difference delta in a region without a base");
  Buffer bytes;
  REQUIRE(enc.Encode({DType::kBytes, base.data(), base.size(), base.data()}, bytes) == Transform::kXor);
  auto q = Padded(bytes.data(), bytes.size());
  CHECK(
      dec.Decode({DType::kBytes, q.data(), bytes.size(), base.size(), Transform::kDifference, base.data()}, out.data())
          .message() == "a difference delta in a bytes region");
}

// A training step on weights of many sizes: each weight moves by about
// the same amount (as under Adam), so how many units in the last place it
// moves, and how far its bits move, depends on its exponent.
std::vector<uint8_t> StepOf(const std::vector<uint8_t>& base, uint32_t seed) {
  std::vector<uint8_t> target(base.size());
  std::mt19937 rng(seed);
  std::normal_distribution<float> step(0, 2e-6f);
  for (size_t i = 0; i + 4 <= base.size(); i += 4) {
    float w;
    std::memcpy(&w, base.data() + i, 4);
    w += step(rng);
    std::memcpy(target.data() + i, &w, 4);
  }
  return target;
}

TEST_CASE("a difference's rANS groups take the lanes coder, and no other chunk's do") {
  std::vector<uint8_t> base = NormalFloats(1 << 16, 17);
  for (size_t i = 0; i + 4 <= base.size(); i += 4) {
    float w;
    std::memcpy(&w, base.data() + i, 4);
    w *= static_cast<float>(1 << (i / 4 % 8));  // exponents spread over eight octaves
    std::memcpy(base.data() + i, &w, 4);
  }
  const std::vector<uint8_t> target = StepOf(base, 18);
  for (TransformPolicy policy : std::initializer_list<TransformPolicy>{Transform::kDifference, Transform::kXor}) {
    CAPTURE(TransformPolicyName(policy));
    ChunkEncoder enc(CoderPolicy::kAuto, 3, policy);
    Buffer rec;
    const Transform used = enc.Encode({DType::kF32, target.data(), target.size(), base.data()}, rec);
    auto groups = ParseChunkRecord(DType::kF32, rec.data(), rec.size(), target.size());
    REQUIRE(groups.ok());
    int lanes = 0;
    for (int g = 0; g < groups->count; ++g) lanes += groups->group[g].coder == Coder::kClassedRans;
    CHECK((lanes > 0) == (used == Transform::kDifference));
    auto p = Padded(rec.data(), rec.size());
    std::vector<uint8_t> out(target.size());
    ChunkDecoder dec;
    REQUIRE(dec.Decode({DType::kF32, p.data(), rec.size(), target.size(), used, base.data()}, out.data()).ok());
    CHECK(out == target);
    if (used == Transform::kDifference) {
      // Read as an XOR chunk, the record names a coder only a difference
      // may hold.
      const Status s =
          dec.Decode({DType::kF32, p.data(), rec.size(), target.size(), Transform::kXor, base.data()}, out.data());
      CHECK(s.message().find("is rans-classed in a chunk that is not a difference") != std::string::npos);
    }
  }
}

TEST_CASE("the chooser's sampled estimate lands near the full count") {
  // A delta's mantissa byte: most values rare. One group of 64 KiB, so
  // the estimate is sampled; against the full order-0 count it is close.
  auto base = NormalFloats(65536, 15);
  auto target = base;
  std::mt19937 rng(16);
  for (size_t i = 0; i < target.size(); i += 4) target[i] = static_cast<uint8_t>(target[i] + rng() % 9);
  std::vector<uint8_t> delta(target.size()), grouped(target.size());
  XorTo(delta.data(), target.data(), base.data(), delta.size());
  SplitGroups(DType::kF32, delta.data(), delta.size(), grouped.data());
  double full = 0;
  for (int g = 0; g < 4; ++g) {
    const size_t len = GroupSize(DType::kF32, delta.size(), g);
    full +=
        std::min<double>(static_cast<double>(len),
                         EntropyBits(CountBytes(grouped.data() + GroupOffset(DType::kF32, delta.size(), g), len)) / 8);
  }
  const double estimate = ChunkEncoder::EstimatedBytes(DType::kF32, grouped.data(), grouped.size());
  CHECK(full > 1000);
  CHECK(estimate == doctest::Approx(full).epsilon(0.02));
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
