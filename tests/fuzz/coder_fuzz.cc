// libFuzzer target: every group coder of lib/codec/coders.h, one table
// entry per input, so a coder added to kCoders is fuzzed without a new
// target. The input is
//
//   u8 coder   kCoders[coder % (count + 1)]; the value past the last
//              entry is the auto rule, which may pick any coder
//   u8 mode    bits 0-1: 0 or 3 round trip, 1 decode garbage, 2 decode
//              a damaged payload; bits 2-4: (k) keep the low k + 1 bits
//              of each byte, so that skewed groups reach the entropy
//              coders instead of their raw fallback; bit 5: a delta
//              group (the auto rule's delta thresholds); bit 6: a group
//              of a difference of floats, whose elements' keys are the
//              input bytes before masking (the lanes coder and its
//              classes; always so for rans-classed, which only such
//              groups may take)
//   u16 LE     for garbage and damage: the group size to decode into
//              (garbage) or the offset to damage (damage)
//   ...        the group bytes, or the payload for garbage
//
// Round trip: the group encoded with that coder alone (or the auto rule)
// must decode to itself, and the coder used must be the one asked for,
// zero for a group of zeros, or raw when coding does not pay. Garbage and
// damage may fail to decode, but never read or write out of bounds
// (AddressSanitizer watches the exact-size output buffer).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <vector>

#include "lib/base/buffer.h"
#include "lib/codec/coders.h"
#include "lib/codec/group_coder.h"

namespace {

using zipnn::Buffer;
using zipnn::codec::Coder;
using zipnn::codec::CoderPolicy;
using zipnn::codec::kCoders;

constexpr size_t kCoderCount = std::size(kCoders);

[[noreturn]] void Fail(const char* what, size_t coder) {
  std::fprintf(stderr, "coder_fuzz: %s (coder %zu of kCoders, %zu is the auto rule)\n", what, coder, kCoderCount);
  std::abort();
}

// A payload copy the decoder may read kDecoderReadPadding bytes past.
std::vector<uint8_t> Padded(const uint8_t* p, size_t n) {
  std::vector<uint8_t> v(p, p + n);
  v.resize(n + zipnn::codec::kDecoderReadPadding, 0xEE);
  return v;
}

// Whatever it decodes to: only memory errors count. The output is
// allocated with new[], which gives a valid pointer for n = 0 as a
// decoder's caller does (an empty vector's data() is null).
void DecodeAnyway(Coder coder, const std::vector<uint8_t>& payload, size_t size, size_t n,
                  const zipnn::codec::ClassKeys& keys) {
  zipnn::codec::GroupDecoder decoder;
  decoder.set_class_keys(keys);
  const std::unique_ptr<uint8_t[]> out(new uint8_t[n]);
  (void)decoder.Decode(coder, payload.data(), size, out.get(), n);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const size_t which = data[0] % (kCoderCount + 1);
  const bool automatic = which == kCoderCount;
  const int mode = data[1] & 3;
  const uint8_t mask = static_cast<uint8_t>((1u << (((data[1] >> 2) & 7) + 1)) - 1);
  const bool delta = (data[1] & 0x20) != 0;
  const size_t param = data[2] | size_t{data[3]} << 8;
  const Coder asked = kCoders[which % kCoderCount].value;
  const bool difference = (data[1] & 0x40) != 0 || asked == Coder::kClassedRans;
  data += 4;
  size -= 4;
  // The keys of a difference's elements: one byte each, the input as given.
  const std::vector<uint8_t> keys(data, data + size);
  const auto keys_for = [&](size_t n) {
    return difference && n == keys.size() ? zipnn::codec::ClassKeys{keys.data(), 1, n} : zipnn::codec::ClassKeys{};
  };

  if (mode == 1) {
    DecodeAnyway(asked, Padded(data, size), size, param, keys_for(param));
    return 0;
  }
  if (size == 0) return 0;
  std::vector<uint8_t> group(data, data + size);
  for (uint8_t& b : group) b &= mask;

  const bool forcible = kCoders[which % kCoderCount].encode != nullptr;
  // A coder no one may ask for (zero) is reached through the auto rule.
  const CoderPolicy policy = automatic || !forcible ? CoderPolicy::kAuto : CoderPolicy::Only(asked);
  zipnn::codec::GroupEncoder encoder(policy, 1, /*prefer_lz=*/false);
  encoder.set_delta(delta);
  encoder.set_lanes(difference);
  encoder.set_class_keys(keys_for(size));
  Buffer payload;
  const Coder used = encoder.Encode(group.data(), group.size(), group.size(), payload);
  const bool all_zero = zipnn::codec::IsAllZero(group.data(), group.size());
  if (!policy.is_auto() && used != asked && used != Coder::kRaw && !(used == Coder::kZero && all_zero)) {
    Fail("the encoder used a coder it was not asked for", which);
  }
  if (used == Coder::kRaw ? payload.size() != size : payload.size() >= size) {
    Fail("a payload is larger than its group, or raw is not the group", which);
  }

  std::vector<uint8_t> padded = Padded(payload.data(), payload.size());
  if (mode == 2) {
    if (payload.size() == 0) return 0;
    // One byte damaged; then, apart, the payload cut short there.
    const size_t at = param % payload.size();
    const uint8_t flip = static_cast<uint8_t>(param >> 8 | 1);
    padded[at] ^= flip;
    DecodeAnyway(used, padded, payload.size(), size, keys_for(size));
    DecodeAnyway(used, Padded(payload.data(), at), at, size, keys_for(size));
    return 0;
  }
  zipnn::codec::GroupDecoder decoder;
  decoder.set_class_keys(keys_for(size));
  std::vector<uint8_t> back(size);
  if (!decoder.Decode(used, padded.data(), payload.size(), back.data(), size).ok()) {
    Fail("a group does not decode", which);
  }
  if (std::memcmp(back.data(), group.data(), size) != 0) Fail("a group decodes to other bytes", which);
  return 0;
}
