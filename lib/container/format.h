// The object container, version 1: constants and the fixed-size parts
// (header, region table, chunk index, trailer). docs/format.md is the
// specification; section names are quoted beside each constant.
//
//   header (64) | region table (24 x R) | chunk records | chunk index (16 x C) | trailer (40)
//
// Pure functions over bytes; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/buffer.h"
#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/codec/group_coder.h"
#include "lib/container/layout.h"

namespace zipnn::container {

// "Header"
inline constexpr char kObjectMagic[8] = {'Z', 'I', 'P', 'N', 'N', 'O', 'B', 'J'};
inline constexpr uint16_t kFormatVersion = 2;
inline constexpr size_t kHeaderBytes = 64;
// "Region table"
inline constexpr size_t kRegionEntryBytes = 24;
inline constexpr uint8_t kRegionFlagDelta = 1;
inline constexpr uint8_t kRegionFlagPrefix = 2;
// "Chunk index"
inline constexpr size_t kIndexEntryBytes = 16;
// "Trailer"
inline constexpr char kTrailerMagic[8] = {'Z', 'I', 'P', 'N', 'N', 'E', 'N', 'D'};
inline constexpr size_t kTrailerBytes = 40;
// "Chunk size"
inline constexpr uint32_t kMinChunkSize = 4096;
inline constexpr uint32_t kMaxChunkSize = 64u << 20;
inline constexpr uint32_t kDefaultChunkSize = 256u << 10;

// "Chunk record": the coders each format version may name.
inline codec::Coder NewestCoder(uint16_t version) {
  return version < 2 ? codec::Coder::kRans : codec::Coder::kSparse;
}

enum class ObjectKind : uint8_t { kBase = 0, kDelta = 1 };

struct ObjectHeader {
  uint16_t version = kFormatVersion;
  ObjectKind kind = ObjectKind::kBase;
  uint32_t chunk_size = kDefaultChunkSize;
  uint64_t raw_size = 0;
  ContentId base_id;       // zero for a base
  uint64_t base_size = 0;  // zero for a base
  Layout layout;
};

// Where one chunk's record sits in the object.
struct ChunkRef {
  ChunkSpan span;
  uint64_t record_offset = 0;
  uint32_t record_size = 0;
  uint64_t checksum = 0;
};

struct ObjectInfo {
  ObjectHeader header;
  ContentId content_id;
  uint64_t object_size = 0;
  uint64_t records_offset = 0;  // first chunk record
  std::vector<ChunkRef> chunks;
};

Status CheckChunkSize(uint32_t chunk_size);

// Header and region table, with the header checksum filled in.
void AppendHeader(const ObjectHeader& h, Buffer& out);
// Chunk index and trailer.
void AppendIndexAndTrailer(const std::vector<ChunkRef>& chunks, const ContentId& content_id,
                           Buffer& out);

// Reads and checks everything but the chunk records themselves: magic,
// version, header checksum, layout, trailer, index checksum, and that the
// index exactly fills the space between header and trailer. Errors name
// `object.name()`.
Result<ObjectInfo> ReadObjectInfo(const ByteSource& object);

}  // namespace zipnn::container
