#include "lib/formats/zip.h"

#include <algorithm>

#include "lib/base/buffer.h"
#include "lib/base/endian.h"

namespace zipnn::formats {

namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64EndOfDirectory = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr size_t kEndOfDirectoryBytes = 22;
constexpr size_t kMaxComment = 65535;
// Directories larger than this are refused (read into memory).
constexpr uint64_t kMaxDirectory = 256u << 20;

Status Bad(const std::string& what) { return Corruption("zip archive: " + what); }

}  // namespace

bool LooksLikeZip(const uint8_t* prefix, size_t n) { return n >= 4 && LoadLE<uint32_t>(prefix) == kLocalHeader; }

Result<std::vector<ZipMember>> ReadZipDirectory(const ByteSource& file) {
  const uint64_t size = file.size();
  if (size < kEndOfDirectoryBytes) return Bad("too short for an end-of-directory record");
  // The end-of-directory record sits in the last 22 + 65535 bytes.
  const uint64_t tail_size = std::min<uint64_t>(size, kEndOfDirectoryBytes + kMaxComment);
  Buffer tail(tail_size);
  ZIPNN_RETURN_IF_ERROR(file.ReadAt(size - tail_size, tail.data(), tail_size));
  int64_t eocd = -1;
  for (int64_t i = static_cast<int64_t>(tail_size - kEndOfDirectoryBytes); i >= 0; --i) {
    if (LoadLE<uint32_t>(tail.data() + i) == kEndOfDirectory) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) return Bad("no end-of-directory record");
  const uint8_t* e = tail.data() + eocd;
  uint64_t entries = LoadLE<uint16_t>(e + 10);
  uint64_t dir_size = LoadLE<uint32_t>(e + 12);
  uint64_t dir_offset = LoadLE<uint32_t>(e + 16);
  const uint64_t eocd_at = size - tail_size + static_cast<uint64_t>(eocd);
  if (entries == 0xffff || dir_size == 0xffffffff || dir_offset == 0xffffffff) {
    // zip64: a locator just before the record points at the zip64 record.
    if (eocd_at < 20) return Bad("zip64 locator missing");
    uint8_t loc[20];
    ZIPNN_RETURN_IF_ERROR(file.ReadAt(eocd_at - 20, loc, 20));
    if (LoadLE<uint32_t>(loc) != kZip64Locator) return Bad("zip64 locator missing");
    const uint64_t at = LoadLE<uint64_t>(loc + 8);
    if (at > size || size - at < 56) return Bad("zip64 end-of-directory record out of range");
    uint8_t z[56];
    ZIPNN_RETURN_IF_ERROR(file.ReadAt(at, z, 56));
    if (LoadLE<uint32_t>(z) != kZip64EndOfDirectory) return Bad("zip64 end-of-directory record missing");
    entries = LoadLE<uint64_t>(z + 32);
    dir_size = LoadLE<uint64_t>(z + 40);
    dir_offset = LoadLE<uint64_t>(z + 48);
  }
  if (dir_offset > size || dir_size > size - dir_offset) return Bad("directory out of range");
  if (dir_size > kMaxDirectory) return Bad("directory larger than 256 MiB");
  if (entries > dir_size / 46) return Bad("more entries than the directory can hold");
  Buffer dir(dir_size);
  ZIPNN_RETURN_IF_ERROR(file.ReadAt(dir_offset, dir.data(), dir_size));

  std::vector<ZipMember> members;
  members.reserve(entries);
  uint64_t pos = 0;
  for (uint64_t i = 0; i < entries; ++i) {
    if (dir_size - pos < 46 || LoadLE<uint32_t>(dir.data() + pos) != kCentralHeader) {
      return Bad("directory entry " + std::to_string(i) + " is malformed");
    }
    const uint8_t* c = dir.data() + pos;
    ZipMember m;
    m.method = LoadLE<uint16_t>(c + 10);
    uint64_t stored = LoadLE<uint32_t>(c + 20);
    uint64_t plain = LoadLE<uint32_t>(c + 24);
    const uint16_t name_len = LoadLE<uint16_t>(c + 28);
    const uint16_t extra_len = LoadLE<uint16_t>(c + 30);
    const uint16_t comment_len = LoadLE<uint16_t>(c + 32);
    uint64_t local = LoadLE<uint32_t>(c + 42);
    const uint64_t entry_size = 46ull + name_len + extra_len + comment_len;
    if (dir_size - pos < entry_size) return Bad("directory entry " + std::to_string(i) + " runs past the directory");
    m.name.assign(reinterpret_cast<const char*>(c + 46), name_len);
    // Sizes and offsets that do not fit 32 bits come from the zip64 extra
    // field, in this order, for those set to 0xffffffff.
    const uint8_t* x = c + 46 + name_len;
    for (uint64_t k = 0; k + 4 <= extra_len;) {
      const uint16_t id = LoadLE<uint16_t>(x + k);
      const uint16_t len = LoadLE<uint16_t>(x + k + 2);
      if (k + 4 + len > extra_len) break;
      if (id == 0x0001) {
        uint64_t f = k + 4;
        auto take = [&](uint64_t& v) {
          if (v != 0xffffffff) return true;
          if (f + 8 > k + 4 + len) return false;
          v = LoadLE<uint64_t>(x + f);
          f += 8;
          return true;
        };
        if (!take(plain) || !take(stored) || !take(local)) return Bad("zip64 field of '" + m.name + "' is short");
      }
      k += 4ull + len;
    }
    if (local > size || size - local < 30) return Bad("local header of '" + m.name + "' out of range");
    uint8_t h[30];
    ZIPNN_RETURN_IF_ERROR(file.ReadAt(local, h, 30));
    if (LoadLE<uint32_t>(h) != kLocalHeader) return Bad("local header of '" + m.name + "' missing");
    const uint64_t data = local + 30 + LoadLE<uint16_t>(h + 26) + LoadLE<uint16_t>(h + 28);
    if (data > size || stored > size - data) return Bad("data of '" + m.name + "' runs past the end of the file");
    m.data_offset = data;
    m.size = stored;
    members.push_back(std::move(m));
    pos += entry_size;
  }
  return members;
}

}  // namespace zipnn::formats
