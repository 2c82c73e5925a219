// ContentId: the XXH3-128 hash of a checkpoint's raw bytes, its identity in
// the object store and in pointers. Hex form is 32 lowercase digits, high
// 64 bits first (the order XXH3's canonical form uses).
//
// Hasher is a streaming XXH3-128 state; one Hasher per thread.
#pragma once

#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>  // Debian exports these: AVX2/AVX-512 chosen at run time
#endif

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/io.h"
#include "lib/base/status.h"

namespace zipnn {

struct ContentId {
  std::array<uint8_t, 16> bytes{};  // XXH3 canonical (big-endian) order

  std::string Hex() const;
  static std::optional<ContentId> FromHex(std::string_view hex);
  bool IsZero() const;
  bool operator==(const ContentId& o) const { return bytes == o.bytes; }
  bool operator!=(const ContentId& o) const { return bytes != o.bytes; }
  bool operator<(const ContentId& o) const { return bytes < o.bytes; }  // for ordered containers
};

class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void Update(const void* data, size_t size);
  ContentId Finish() const;

 private:
  XXH3_state_t* state_;
};

ContentId HashBytes(const void* data, size_t size);
// Reads the whole source once.
Result<ContentId> HashSource(const ByteSource& source);

// 64-bit XXH3 of a byte range: the checksum used inside objects.
inline uint64_t Checksum64(const void* data, size_t size) {
#if defined(__x86_64__)
  return XXH3_64bits_dispatch(data, size);
#else
  return XXH3_64bits(data, size);
#endif
}

}  // namespace zipnn
