// Reading the directory of a zip archive (zip64 included) to find where
// each member's bytes lie. Only what a torch.save file needs: member
// names, their compression method, and the byte range of their data in the
// file. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/io.h"
#include "lib/base/status.h"

namespace zipnn::formats {

struct ZipMember {
  std::string name;
  uint16_t method = 0;       // 0: stored
  uint64_t data_offset = 0;  // first byte of the member's data in the file
  uint64_t size = 0;         // bytes of data as stored
};

// Whether the file starts with a zip local file header.
bool LooksLikeZip(const uint8_t* prefix, size_t n);

// The members in directory order. A malformed or truncated archive is a
// Corruption error naming what is wrong.
Result<std::vector<ZipMember>> ReadZipDirectory(const ByteSource& file);

}  // namespace zipnn::formats
