// The entropy coders' decoders (huffman.h, rans.h, sparse.h) against
// damaged input.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "lib/codec/codec_test_util.h"
#include "lib/codec/huffman.h"
#include "lib/codec/rans.h"
#include "lib/codec/sparse.h"

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
      case 0:
        p.resize(rng() % (p.size() + 1));
        break;
      case 1:
        for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k)
          p[rng() % p.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 2:
        p.resize(rng() % 64);
        for (auto& b : p) b = static_cast<uint8_t>(rng());
        break;
      default:
        p[rng() % std::min<size_t>(p.size(), 40)] = static_cast<uint8_t>(rng());
        break;
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
