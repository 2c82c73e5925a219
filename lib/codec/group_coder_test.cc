// Unit tests of the group coders: the auto rule, GroupDecoder and zero
// runs (group_coder.h).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "lib/codec/codec_test_util.h"
#include "lib/codec/group_coder.h"

namespace zipnn::codec {
namespace {

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
  for (size_t i = 0; i < n; ++i)
    if (i % 20 != 0) sparse[i] = 0;
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
  for (CoderPolicy policy : {CoderPolicy::kHuffman, CoderPolicy::kZstd, CoderPolicy::kRaw, CoderPolicy::kRans,
                             CoderPolicy::kSparse, CoderPolicy::kAuto}) {
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

TEST_CASE("every coder of the table decodes, and all but zero can be asked for") {
  for (const CoderInfo& c : kCoders) {
    CAPTURE(c.name);
    const bool decodes = c.decode != nullptr, encodes = c.encode != nullptr;
    CHECK(decodes);
    CHECK(encodes == (c.value != Coder::kZero));
  }
}

}  // namespace
}  // namespace zipnn::codec
