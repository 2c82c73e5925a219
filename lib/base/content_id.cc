#include "lib/base/content_id.h"

#include <algorithm>
#include <cstring>

#include "lib/base/buffer.h"

namespace zipnn {

namespace {
ContentId FromHash(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  ContentId id;
  std::memcpy(id.bytes.data(), c.digest, 16);
  return id;
}
}  // namespace

std::string ContentId::Hex() const {
  static const char kDigits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (size_t i = 0; i < 16; ++i) {
    s[2 * i] = kDigits[bytes[i] >> 4];
    s[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return s;
}

std::optional<ContentId> ContentId::FromHex(std::string_view hex) {
  if (hex.size() != 32) return std::nullopt;
  ContentId id;
  for (size_t i = 0; i < 32; ++i) {
    char c = hex[i];
    int v;
    if (c >= '0' && c <= '9')
      v = c - '0';
    else if (c >= 'a' && c <= 'f')
      v = c - 'a' + 10;
    else
      return std::nullopt;  // only the canonical lowercase form is valid
    id.bytes[i / 2] = static_cast<uint8_t>(id.bytes[i / 2] << 4 | v);
  }
  return id;
}

bool ContentId::IsZero() const {
  for (uint8_t b : bytes) {
    if (b != 0) return false;
  }
  return true;
}

Hasher::Hasher() : state_(XXH3_createState()) { XXH3_128bits_reset(state_); }
Hasher::~Hasher() { XXH3_freeState(state_); }

void Hasher::Update(const void* data, size_t size) {
#if defined(__x86_64__)
  XXH3_128bits_update_dispatch(state_, data, size);
#else
  XXH3_128bits_update(state_, data, size);
#endif
}

ContentId Hasher::Finish() const { return FromHash(XXH3_128bits_digest(state_)); }

ContentId HashBytes(const void* data, size_t size) {
#if defined(__x86_64__)
  return FromHash(XXH3_128bits_dispatch(data, size));
#else
  return FromHash(XXH3_128bits(data, size));
#endif
}

Result<ContentId> HashSource(const ByteSource& source) {
  constexpr size_t kBlock = 1 << 20;
  Buffer block(kBlock);
  Hasher hasher;
  for (uint64_t at = 0; at < source.size(); at += kBlock) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kBlock, source.size() - at));
    ZIPNN_RETURN_IF_ERROR(source.ReadAt(at, block.data(), n));
    hasher.Update(block.data(), n);
  }
  return hasher.Finish();
}

}  // namespace zipnn
