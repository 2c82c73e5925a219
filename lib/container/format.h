// The object container, format version 5: its constants and its
// fixed-size sections (header, region table, chunk index, trailer).
// docs/format.md is the specification; each constant quotes the section
// that defines it.
//
//   header (64) | region table (24 x R) | reference table (24 x K) | chunk records | chunk index (16 x C) |
//   trailer (40)
//
// Each fixed-size section has one Encode/Decode pair over a struct of its
// fields as stored, and these pairs are the only code that knows where a
// field sits. Decoding checks nothing, and encoding what was decoded gives
// back the same bytes, so tests and the fuzzer can change one field of any
// object, damaged or not; what a reader must refuse, ReadObjectInfo checks.
//
// Pure functions over bytes; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/buffer.h"
#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/codec/delta_transform.h"
#include "lib/codec/group_coder.h"
#include "lib/container/layout.h"

namespace zipnn::container {

// "Header"
inline constexpr std::array<uint8_t, 8> kObjectMagic = {'Z', 'I', 'P', 'N', 'N', 'O', 'B', 'J'};
// The newest version this code reads and writes (WriteVersion says which
// version an object is written in).
inline constexpr uint16_t kFormatVersion = 8;
inline constexpr size_t kHeaderBytes = 64;
// "Region table"
inline constexpr size_t kRegionEntryBytes = 24;
inline constexpr uint8_t kRegionFlagDelta = 1;
inline constexpr uint8_t kRegionFlagPrefix = 2;
// "Reference table" (format 8 on): at most this many entries.
inline constexpr size_t kReferenceEntryBytes = 24;
inline constexpr uint16_t kMaxReferences = 1024;
// "Chunk index"
inline constexpr size_t kIndexEntryBytes = 16;
// "Trailer"
inline constexpr std::array<uint8_t, 8> kTrailerMagic = {'Z', 'I', 'P', 'N', 'N', 'E', 'N', 'D'};
inline constexpr size_t kTrailerBytes = 40;
// "Chunk size"
inline constexpr uint32_t kMinChunkSize = 4096;
inline constexpr uint32_t kMaxChunkSize = 64u << 20;
inline constexpr uint32_t kDefaultChunkSize = 256u << 10;

// "Chunk record": the coders each format version may name (codec::kCoders).
using codec::NewestCoder;
// "Chunk index": the first version whose entries name a transform.
inline constexpr uint16_t kFirstTransformVersion = 3;
// The version from which a difference chunk's groups may be coded by
// class of element (rans-classed).
inline constexpr uint16_t kDifferenceVersion = 4;
// "Chunk record": from version 5 each record starts with the checksum of
// the raw bytes its chunk restores to, so that a part of a checkpoint can
// be checked without restoring the whole.
inline constexpr uint16_t kRawChecksumVersion = 5;
inline constexpr size_t kRawChecksumBytes = 8;

enum class ObjectKind : uint8_t { kBase = 0, kDelta = 1 };

// "Header": why a delta's base was taken (format 6 on; 0 before): by its
// series' placement, or as a parent in another series named by the user,
// found as a twin, found with the same tensors, or (format 7 on) found
// holding tensors of the same bytes under other names (lib/store/parents.h).
enum class BaseChoice : uint8_t { kSeries = 0, kNamed = 1, kTwin = 2, kSameTensors = 3, kShared = 4 };
inline constexpr uint8_t kMaxBaseChoice = 4;

// "Reference table": a version a delta's regions may be taken against
// besides its base.
struct Reference {
  ContentId id;
  uint64_t size = 0;
};

struct ObjectHeader {
  uint16_t version = kFormatVersion;
  ObjectKind kind = ObjectKind::kBase;
  BaseChoice choice = BaseChoice::kSeries;
  uint32_t chunk_size = kDefaultChunkSize;
  uint64_t raw_size = 0;
  ContentId base_id;       // zero for a base
  uint64_t base_size = 0;  // zero for a base
  Layout layout;
  std::vector<Reference> references;  // format 8 on; a delta region's source k is references[k - 1]
};
// The versions a decode of the object `header` describes reads: its base,
// then the versions it references (none for a base object).
std::vector<ContentId> NeedsOf(const ObjectHeader& header);

// Where one chunk's record sits in the object, and how a delta chunk
// was taken against its base.
struct ChunkRef {
  ChunkSpan span;
  uint64_t record_offset = 0;
  uint32_t record_size = 0;
  uint64_t checksum = 0;
  codec::Transform transform = codec::Transform::kXor;
};

struct ObjectInfo {
  ObjectHeader header;
  ContentId content_id;
  uint64_t object_size = 0;
  uint64_t records_offset = 0;  // first chunk record
  std::vector<ChunkRef> chunks;
};

// ---- The sections as stored ----
// Field offsets are for the few readers that need one field before the
// rest: a download checks the raw size early, and ReadObjectInfo calls a
// short file with a wrong magic foreign rather than truncated.

// "Header": the first kHeaderBytes bytes.
struct HeaderFields {
  std::array<uint8_t, 8> magic = kObjectMagic;
  uint16_t version = kFormatVersion;
  uint16_t flags = 0;  // reserved
  uint8_t kind = 0;    // an ObjectKind, if valid
  uint8_t choice = 0;  // a BaseChoice, if valid
  uint16_t reference_count = 0;  // format 8 on; reserved (0) before
  uint32_t chunk_size = kDefaultChunkSize;
  uint32_t region_count = 0;
  uint64_t raw_size = 0;
  ContentId base_id;
  uint64_t base_size = 0;
  uint64_t checksum = 0;  // HeaderChecksum
};
struct HeaderOffset {
  static constexpr size_t kMagic = 0;
  static constexpr size_t kVersion = 8;
  static constexpr size_t kFlags = 10;
  static constexpr size_t kKind = 12;
  static constexpr size_t kChoice = 13;
  static constexpr size_t kReferenceCount = 14;
  static constexpr size_t kChunkSize = 16;
  static constexpr size_t kRegionCount = 20;
  static constexpr size_t kRawSize = 24;
  static constexpr size_t kBaseId = 32;
  static constexpr size_t kBaseSize = 48;
  static constexpr size_t kChecksum = 56;  // covers the bytes before it, then the region table
};
void EncodeHeader(const HeaderFields& h, uint8_t* out);
HeaderFields DecodeHeader(const uint8_t* in);
// Whether `in` (at least the header's first 8 bytes) starts with kObjectMagic.
bool HasObjectMagic(const uint8_t* in);
// The header checksum of `header` (kHeaderBytes) and the `entries` table
// entries that follow it: the region table, then the reference table
// (TableEntries of the header).
uint64_t HeaderChecksum(const uint8_t* header, const uint8_t* table, uint64_t entries);
inline uint64_t TableEntries(const HeaderFields& h) { return uint64_t{h.region_count} + h.reference_count; }

// "Region table": one entry.
struct RegionEntry {
  uint8_t dtype = 0;           // a codec::DType, if valid
  uint8_t flags = 0;           // kRegionFlagDelta, kRegionFlagPrefix
  uint64_t prefix_length = 0;  // 48 bits; a delta region's source from format 8
  uint64_t length = 0;
  uint64_t base_offset = 0;
};
struct RegionEntryOffset {
  static constexpr size_t kDtype = 0;
  static constexpr size_t kFlags = 1;
  static constexpr size_t kPrefixLength = 2;
  static constexpr size_t kLength = 8;
  static constexpr size_t kBaseOffset = 16;
};
void EncodeRegionEntry(const RegionEntry& e, uint8_t* out);
RegionEntry DecodeRegionEntry(const uint8_t* in);

// "Reference table": one entry (content id, then size).
void EncodeReferenceEntry(const Reference& r, uint8_t* out);
Reference DecodeReferenceEntry(const uint8_t* in);

// "Chunk index": one entry.
struct IndexEntry {
  uint32_t record_size = 0;
  uint8_t transform = 0;  // a codec::Transform, if valid; version 3 on
  uint32_t reserved = 0;  // 24 bits
  uint64_t checksum = 0;  // of the record
};
struct IndexEntryOffset {
  static constexpr size_t kRecordSize = 0;
  static constexpr size_t kTransform = 4;
  static constexpr size_t kReserved = 5;
  static constexpr size_t kChecksum = 8;
};
void EncodeIndexEntry(const IndexEntry& e, uint8_t* out);
IndexEntry DecodeIndexEntry(const uint8_t* in);

// "Trailer": the last kTrailerBytes bytes.
struct TrailerFields {
  uint64_t chunk_count = 0;
  ContentId content_id;
  uint64_t checksum = 0;  // IndexChecksum
  std::array<uint8_t, 8> magic = kTrailerMagic;
};
struct TrailerOffset {
  static constexpr size_t kChunkCount = 0;
  static constexpr size_t kContentId = 8;
  static constexpr size_t kChecksum = 24;  // covers the chunk index, then the trailer bytes before it
  static constexpr size_t kMagic = 32;
};
void EncodeTrailer(const TrailerFields& t, uint8_t* out);
TrailerFields DecodeTrailer(const uint8_t* in);
// The index checksum of the chunk index of `chunk_count` entries at
// `index` and the trailer at `trailer` (not necessarily right after it).
uint64_t IndexChecksum(const uint8_t* index, uint64_t chunk_count, const uint8_t* trailer);

// ---- Whole objects ----

Status CheckChunkSize(uint32_t chunk_size);

// "Delta transforms": the first version whose delta chunks may be coded
// standalone.
inline constexpr uint16_t kStandaloneChunkVersion = 6;
// "Header": the first version whose byte 13 says why a delta's base was
// taken (BaseChoice).
inline constexpr uint16_t kBaseChoiceVersion = 6;
// "Header": the first version whose base choice may be kShared.
inline constexpr uint16_t kSharedChoiceVersion = 7;
// "Reference table": the first version with one (the header's reference
// count), whose delta regions may be taken against a reference.
inline constexpr uint16_t kReferenceVersion = 8;

// The version a writer gives an object (a delta with `delta`, its base
// taken as `choice`) whose delta chunks may be taken as `transform`
// allows: 6 for a delta that may hold standalone chunks (auto), 7 for one
// whose base was found by shared tensors, else 5 (raw checksums, and
// differences where a delta region allows them), except that `xor`, the
// setting for teams with readers older than 0.4, keeps to version 2.
// Below version 6 the choice is not written.
uint16_t WriteVersion(codec::TransformPolicy transform, bool delta, BaseChoice choice = BaseChoice::kSeries);

// Whether each chunk record of an object of this header carries the
// checksum of its raw bytes, so that a part of it can be read checked.
inline bool HasRawChecksums(const ObjectHeader& h) { return h.version >= kRawChecksumVersion; }

// Header, region table and reference table, with the header checksum
// filled in.
void AppendHeader(const ObjectHeader& h, Buffer& out);
// Chunk index and trailer.
void AppendIndexAndTrailer(const std::vector<ChunkRef>& chunks, const ContentId& content_id, Buffer& out);

// Reads and checks everything but the chunk records themselves: magic,
// version, header checksum, layout, trailer, index checksum, and that the
// index exactly fills the space between header and trailer, in that order
// (docs/format.md, "What a decoder must reject"). Errors name
// `object.name()`.
Result<ObjectInfo> ReadObjectInfo(const ByteSource& object);

// Whether chunk `k` of the object `info` describes (from ReadObjectInfo)
// is a delta chunk whose every group is coded zero, so that its record
// holds no payload: its bytes are the same as its source's (the base's,
// or a reference's) where its region takes them. Read from the chunk
// index alone; an object whose encoder coded an all-zero group otherwise
// only gives false.
bool ChunkUnchanged(const ObjectInfo& info, size_t k);

}  // namespace zipnn::container
