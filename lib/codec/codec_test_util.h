// Helpers shared by the codec's unit tests (testonly): test data shaped
// like checkpoint bytes, padded payloads and the coders' round trips.
// Plain functions; each test owns what they return.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "lib/base/buffer.h"
#include "lib/base/status.h"
#include "lib/codec/dtype.h"
#include "lib/codec/entropy.h"
#include "lib/codec/grouping.h"
#include "lib/codec/rans.h"

namespace zipnn::codec {

inline std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Float32 weights drawn like a trained layer's: normal, small spread.
inline std::vector<uint8_t> NormalFloats(size_t count, uint32_t seed, float sigma = 0.02f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, sigma);
  std::vector<uint8_t> v(count * 4);
  for (size_t i = 0; i < count; ++i) {
    float f = dist(rng);
    std::memcpy(&v[i * 4], &f, 4);
  }
  return v;
}

inline std::vector<uint8_t> ToBF16(const std::vector<uint8_t>& f32) {
  std::vector<uint8_t> v(f32.size() / 2);
  for (size_t i = 0; i < f32.size() / 4; ++i) {
    v[2 * i] = f32[4 * i + 2];
    v[2 * i + 1] = f32[4 * i + 3];
  }
  return v;
}

// Pads a payload so a decoder may read past its end.
inline std::vector<uint8_t> Padded(const uint8_t* p, size_t n) {
  std::vector<uint8_t> v(p, p + n);
  v.resize(n + kDecoderReadPadding, 0xEE);
  return v;
}

// The counts every entropy coder plans from.
inline GroupCounts Counts(const uint8_t* p, size_t n) {
  GroupCounts c;
  CountGroup(p, n, c);
  return c;
}

inline constexpr DType kAllTypes[] = {
    DType::kBytes, DType::kF32, DType::kBF16, DType::kF16, DType::kF64, DType::kF8E4M3, DType::kF8E5M2, DType::kI8,
    DType::kU8,    DType::kI16, DType::kU16,  DType::kI32, DType::kU32, DType::kI64,    DType::kU64,    DType::kBool};

// Bytes where `zero_share` of them are 0 and the rest follow the exponent
// spread of Gaussian weights: the exponent group of an XOR delta.
inline std::vector<uint8_t> DeltaExponents(size_t n, double zero_share, uint32_t seed) {
  auto f32 = NormalFloats(n, seed);
  std::vector<uint8_t> grouped(f32.size());
  SplitGroups(DType::kF32, f32.data(), f32.size(), grouped.data());
  std::vector<uint8_t> v(grouped.begin() + 3 * n, grouped.end());
  std::mt19937 rng(seed);
  for (auto& b : v) {
    if (std::uniform_real_distribution<double>(0, 1)(rng) < zero_share)
      b = 0;
    else
      b ^= 120;  // a changed exponent: small XOR values dominate
  }
  return v;
}

// Encodes and decodes `in` with rANS; *size is the payload size.
inline std::vector<uint8_t> RansRoundTrip(const std::vector<uint8_t>& in, size_t* size = nullptr) {
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

}  // namespace zipnn::codec
