// Unit tests of the codec: grouping per dtype, the Huffman coder, the group
// coders with the auto rule, and chunk records.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "lib/codec/chunk_codec.h"
#include "lib/codec/grouping.h"
#include "lib/codec/huffman.h"
#include "lib/codec/rans.h"
#include "lib/codec/sparse.h"

namespace zipnn::codec {
namespace {

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Float32 weights drawn like a trained layer's: normal, small spread.
std::vector<uint8_t> NormalFloats(size_t count, uint32_t seed, float sigma = 0.02f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, sigma);
  std::vector<uint8_t> v(count * 4);
  for (size_t i = 0; i < count; ++i) {
    float f = dist(rng);
    std::memcpy(&v[i * 4], &f, 4);
  }
  return v;
}

std::vector<uint8_t> ToBF16(const std::vector<uint8_t>& f32) {
  std::vector<uint8_t> v(f32.size() / 2);
  for (size_t i = 0; i < f32.size() / 4; ++i) {
    v[2 * i] = f32[4 * i + 2];
    v[2 * i + 1] = f32[4 * i + 3];
  }
  return v;
}

// Pads a payload so a decoder may read past its end.
std::vector<uint8_t> Padded(const uint8_t* p, size_t n) {
  std::vector<uint8_t> v(p, p + n);
  v.resize(n + kDecoderReadPadding, 0xEE);
  return v;
}

GroupCounts Counts(const uint8_t* p, size_t n) {
  GroupCounts c;
  CountGroup(p, n, c);
  return c;
}

constexpr DType kAllTypes[] = {
    DType::kBytes, DType::kF32,  DType::kBF16, DType::kF16, DType::kF64, DType::kF8E4M3,
    DType::kF8E5M2, DType::kI8,  DType::kU8,   DType::kI16, DType::kU16, DType::kI32,
    DType::kU32,   DType::kI64,  DType::kU64,  DType::kBool};

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
    CHECK(HuffmanDecode(p.data(), size, out.data(), out.size()).message() ==
          "huffman stream sizes exceed the payload");
  }
  SUBCASE("oversubscribed code table") {
    auto p = Padded(payload.data(), size);
    const size_t nibbles = 2 + (p[1] - p[0] + 2) / 2;
    for (size_t i = 2; i < nibbles; ++i) p[i] = 0x11;  // every symbol 1 bit
    CHECK(HuffmanDecode(p.data(), size, out.data(), out.size()).message() ==
          "huffman code table is not a prefix code");
  }
  SUBCASE("inverted symbol range") {
    auto p = Padded(payload.data(), size);
    p[0] = 200;
    p[1] = 100;
    CHECK(!HuffmanDecode(p.data(), size, out.data(), out.size()).ok());
  }
}

TEST_CASE("auto rule: zero, sparse for mostly-zero groups, zstd where a run beats it, huffman, raw") {
  GroupEncoder enc(CoderPolicy::kAuto, 3, false);
  const size_t n = 65536;
  Buffer out;

  std::vector<uint8_t> zeros(n, 0);
  CHECK(enc.Encode(zeros.data(), n, n, out) == Coder::kZero);
  CHECK(out.size() == 0);

  // 95% zeros scattered: the sparse coder codes the non-zero bytes and
  // the runs between them.
  std::vector<uint8_t> sparse = RandomBytes(n, 4);
  for (size_t i = 0; i < n; ++i) if (i % 20 != 0) sparse[i] = 0;
  CHECK(enc.Encode(sparse.data(), n, n, out) == Coder::kSparse);
  CHECK(out.size() < n / 8);

  // Half zeros, but as one long run (a frozen stretch in a delta): zstd's
  // match covers the run, smaller than any order-0 coder.
  std::vector<uint8_t> run = RandomBytes(n, 5);
  std::fill(run.begin(), run.begin() + n / 2, 0);
  out.Clear();
  CHECK(enc.Encode(run.data(), n, n, out) == Coder::kZstd);

  auto f32 = NormalFloats(n / 4, 6);
  std::vector<uint8_t> grouped(n);
  SplitGroups(DType::kF32, f32.data(), n, grouped.data());
  out.Clear();
  CHECK(enc.Encode(grouped.data() + 3 * n / 4, n / 4, n, out) == Coder::kHuffman);

  auto noise = RandomBytes(n, 7);
  out.Clear();
  CHECK(enc.Encode(noise.data(), n, n, out) == Coder::kRaw);
  CHECK(out.size() == n);
}

TEST_CASE("each coder round-trips through GroupDecoder") {
  GroupDecoder dec;
  auto skewed = ToBF16(NormalFloats(30000, 10));
  for (CoderPolicy policy :
       {CoderPolicy::kHuffman, CoderPolicy::kZstd, CoderPolicy::kRaw, CoderPolicy::kRans, CoderPolicy::kSparse, CoderPolicy::kAuto}) {
    GroupEncoder enc(policy, 3, false);
    Buffer out;
    Coder c = enc.Encode(skewed.data(), skewed.size(), skewed.size(), out);
    auto p = Padded(out.data(), out.size());
    std::vector<uint8_t> back(skewed.size());
    REQUIRE(dec.Decode(c, p.data(), out.size(), back.data(), back.size()).ok());
    CHECK(back == skewed);
  }
}

TEST_CASE("group decoder rejects payload sizes that do not match the group") {
  GroupDecoder dec;
  std::vector<uint8_t> payload(64 + kDecoderReadPadding, 1), out(64);
  CHECK(!dec.Decode(Coder::kRaw, payload.data(), 63, out.data(), 64).ok());
  CHECK(!dec.Decode(Coder::kZero, payload.data(), 1, out.data(), 64).ok());
  CHECK(!dec.Decode(Coder::kZstd, payload.data(), 64, out.data(), 64).ok());
}

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

namespace zipnn::codec {
namespace {

size_t SlowLongestZeroRun(const std::vector<uint8_t>& v) {
  size_t best = 0, run = 0;
  for (uint8_t b : v) {
    run = b == 0 ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}

TEST_CASE("zero-run detection matches a byte-by-byte count") {
  std::mt19937 rng(21);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<uint8_t> v(rng() % 200);
    for (auto& b : v) b = (rng() % 3 == 0) ? static_cast<uint8_t>(rng()) : 0;
    // Sprinkle long runs at random places.
    if (!v.empty() && trial % 2 == 0) {
      size_t a = rng() % v.size(), len = rng() % (v.size() - a + 1);
      std::fill(v.begin() + a, v.begin() + a + len, 0);
    }
    const size_t longest = SlowLongestZeroRun(v);
    CAPTURE(trial);
    for (size_t length : {size_t{0}, size_t{3}, size_t{7}, size_t{8}, size_t{9}, size_t{15}, size_t{16},
                          longest - (longest > 0 ? 1 : 0), longest, longest + 1, size_t{100}}) {
      CAPTURE(length);
      CHECK(HasZeroRunLongerThan(v.data(), v.size(), length) == (longest > length));
    }
  }
}

}  // namespace
}  // namespace zipnn::codec

namespace zipnn::codec {
namespace {

std::vector<uint8_t> RansRoundTrip(const std::vector<uint8_t>& in, size_t* size = nullptr) {
  RansEncoder enc;
  enc.Plan(in.data(), in.size(), Counts(in.data(), in.size()));
  Buffer payload;
  enc.Encode(payload);
  if (size != nullptr) *size = payload.size();
  auto padded = Padded(payload.data(), payload.size());
  std::vector<uint8_t> out(in.size());
  RansDecoder dec;
  Status s = dec.Decode(padded.data(), payload.size(), out.data(), out.size());
  REQUIRE(s.ok());
  return out;
}

// Bytes where `zero_share` of them are 0 and the rest follow the exponent
// spread of Gaussian weights: the exponent group of an XOR delta.
std::vector<uint8_t> DeltaExponents(size_t n, double zero_share, uint32_t seed) {
  auto f32 = NormalFloats(n, seed);
  std::vector<uint8_t> grouped(f32.size());
  SplitGroups(DType::kF32, f32.data(), f32.size(), grouped.data());
  std::vector<uint8_t> v(grouped.begin() + 3 * n, grouped.end());
  std::mt19937 rng(seed);
  for (auto& b : v) {
    if (std::uniform_real_distribution<double>(0, 1)(rng) < zero_share) b = 0;
    else b ^= 120;  // a changed exponent: small XOR values dominate
  }
  return v;
}

TEST_CASE("rans round-trips skewed, uniform, single-symbol and tiny inputs") {
  std::vector<std::vector<uint8_t>> inputs = {
      ToBF16(NormalFloats(100000, 31)), RandomBytes(65536, 32), std::vector<uint8_t>(5000, 9),
      {7}, {1, 2}, {1, 2, 3}, RandomBytes(17, 33), DeltaExponents(70001, 0.77, 34)};
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

TEST_CASE("auto picks rans or sparse for skewed delta exponent groups and huffman for plain exponents") {
  GroupEncoder enc(CoderPolicy::kAuto, 3, false);
  auto delta = DeltaExponents(65536, 0.6, 36);
  Buffer out;
  CHECK(enc.Encode(delta.data(), delta.size(), 4 * delta.size(), out) == Coder::kRans);
  // Past kSparseMinZeros zeros, sparse is as small and works only on the
  // non-zero bytes.
  for (double zeros : {0.77, 0.98}) {
    CAPTURE(zeros);
    auto later = DeltaExponents(65536, zeros, 36);
    out.Clear();
    CHECK(enc.Encode(later.data(), later.size(), 4 * later.size(), out) == Coder::kSparse);
    RansEncoder rans;
    rans.Plan(later.data(), later.size(), Counts(later.data(), later.size()));
    CHECK(static_cast<double>(out.size()) <= static_cast<double>(rans.EstimatedSize()) * 1.01 + 32);
  }
  auto exps = DeltaExponents(65536, 0.0, 37);
  out.Clear();
  CHECK(enc.Encode(exps.data(), exps.size(), 4 * exps.size(), out) == Coder::kHuffman);
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

TEST_CASE("sparse round-trips groups from one non-zero byte to mostly non-zero") {
  std::vector<std::vector<uint8_t>> inputs = {
      SparseGroup(131072, 0.0005, 40), SparseGroup(131072, 0.034, 41), SparseGroup(131072, 0.3, 42),
      SparseGroup(4096, 0.9, 43), SparseGroup(17, 0.5, 44), {0, 0, 7}, {7}, {9, 0, 0, 0}};
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

namespace zipnn::codec {
namespace {

// Random, truncated and bit-flipped payloads into the entropy decoders:
// each is rejected or decodes to some bytes, never reads or writes out of
// bounds (CI also runs this under AddressSanitizer and UBSan).
TEST_CASE("entropy decoders survive random and mutated payloads") {
  std::mt19937 rng(77);
  std::vector<uint8_t> in(5000);
  for (auto& b : in) b = (rng() % 4 == 0) ? static_cast<uint8_t>(rng()) : 0;
  RansEncoder re;
  const GroupCounts counts = Counts(in.data(), in.size());
  re.Plan(in.data(), in.size(), counts);
  Buffer rp;
  re.Encode(rp);
  const std::vector<uint8_t> rans(rp.data(), rp.data() + rp.size());
  HuffmanEncoder he;
  he.Plan(in.data(), in.size(), counts);
  Buffer hp;
  he.Encode(hp);
  const std::vector<uint8_t> huff(hp.data(), hp.data() + hp.size());
  SparseEncoder se;
  se.Plan(in.data(), in.size(), counts);
  Buffer sp;
  se.Encode(sp);
  const std::vector<uint8_t> sparse(sp.data(), sp.data() + sp.size());

  RansDecoder rd;
  HuffmanDecoder hd;
  SparseDecoder sd;
  size_t rejected = 0;
  const int kTrials = 30000;
  for (int t = 0; t < kTrials; ++t) {
    std::vector<uint8_t> p = t % 3 == 0 ? rans : t % 3 == 1 ? huff : sparse;
    switch (rng() % 4) {
      case 0: p.resize(rng() % (p.size() + 1)); break;
      case 1:
        for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) p[rng() % p.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 2:
        p.resize(rng() % 64);
        for (auto& b : p) b = static_cast<uint8_t>(rng());
        break;
      default: p[rng() % std::min<size_t>(p.size(), 40)] = static_cast<uint8_t>(rng()); break;
    }
    const size_t n = (rng() % 3 == 0) ? rng() % 10000 : in.size();
    std::vector<uint8_t> padded = Padded(p.data(), p.size());
    std::vector<uint8_t> out(n);
    Status s = t % 3 == 0   ? rd.Decode(padded.data(), p.size(), out.data(), n)
               : t % 3 == 1 ? hd.Decode(padded.data(), p.size(), out.data(), n)
                            : sd.Decode(padded.data(), p.size(), out.data(), n);
    if (!s.ok()) ++rejected;
  }
  // Most damage is caught by the coders themselves; the rest by checksums.
  CHECK(rejected > kTrials * 8 / 10);
}

}  // namespace
}  // namespace zipnn::codec
