// Little-endian loads and stores of fixed-width integers at any alignment.
// Every on-disk integer in git-zipnn is little-endian (docs/format.md).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <cstring>

namespace zipnn {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "git-zipnn assumes a little-endian host");

template <typename T>
inline T LoadLE(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
inline void StoreLE(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

}  // namespace zipnn
