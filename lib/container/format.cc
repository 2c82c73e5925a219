#include "lib/container/format.h"

#include <cstring>
#include <optional>
#include <set>

// For XXH3_state_t's size: the checksums over two ranges keep their state
// on the stack.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "lib/base/endian.h"
#include "lib/codec/chunk_codec.h"
#include "lib/codec/grouping.h"

namespace zipnn::container {

namespace {

bool AllZero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

// Errors about an object start with its name.
Status Bad(const ByteSource& object, const std::string& what) { return Corruption(object.name() + ": " + what); }

}  // namespace

Status CheckChunkSize(uint32_t chunk_size) {
  if (chunk_size < kMinChunkSize || chunk_size > kMaxChunkSize || chunk_size % 8 != 0) {
    return InvalidArgument("chunk size " + std::to_string(chunk_size) +
                           " must be a multiple of 8 from 4 KiB to 64 MiB");
  }
  return OkStatus();
}

std::vector<ContentId> NeedsOf(const ObjectHeader& header) {
  std::vector<ContentId> needs;
  if (header.kind != ObjectKind::kDelta) return needs;
  needs.push_back(header.base_id);
  for (const Reference& r : header.references) needs.push_back(r.id);
  return needs;
}

bool ChunkUnchanged(const ObjectInfo& info, size_t k) {
  if (k >= info.chunks.size()) return false;
  const ChunkSpan& span = info.chunks[k].span;
  if (span.region >= info.header.layout.regions.size()) return false;
  const Region& region = info.header.layout.regions[span.region];
  if (!region.delta) return false;
  const uint64_t groups = static_cast<uint64_t>(codec::GroupCount(region.dtype, span.length));
  const uint64_t empty = (HasRawChecksums(info.header) ? kRawChecksumBytes : 0) + 1 + codec::kGroupEntryBytes * groups;
  return info.chunks[k].record_size == empty;
}

uint16_t WriteVersion(codec::TransformPolicy transform, bool delta, BaseChoice choice) {
  if (transform == codec::Transform::kXor) return 2;
  if (!delta || transform != codec::kAutoTransform) return kRawChecksumVersion;
  return choice == BaseChoice::kShared ? kSharedChoiceVersion : kStandaloneChunkVersion;
}

// ---- The sections as stored ----

void EncodeHeader(const HeaderFields& h, uint8_t* out) {
  using O = HeaderOffset;
  std::memcpy(out + O::kMagic, h.magic.data(), h.magic.size());
  StoreLE<uint16_t>(out + O::kVersion, h.version);
  StoreLE<uint16_t>(out + O::kFlags, h.flags);
  out[O::kKind] = h.kind;
  out[O::kChoice] = h.choice;
  StoreLE<uint16_t>(out + O::kReferenceCount, h.reference_count);
  StoreLE<uint32_t>(out + O::kChunkSize, h.chunk_size);
  StoreLE<uint32_t>(out + O::kRegionCount, h.region_count);
  StoreLE<uint64_t>(out + O::kRawSize, h.raw_size);
  std::memcpy(out + O::kBaseId, h.base_id.bytes.data(), h.base_id.bytes.size());
  StoreLE<uint64_t>(out + O::kBaseSize, h.base_size);
  StoreLE<uint64_t>(out + O::kChecksum, h.checksum);
}

HeaderFields DecodeHeader(const uint8_t* in) {
  using O = HeaderOffset;
  HeaderFields h;
  std::memcpy(h.magic.data(), in + O::kMagic, h.magic.size());
  h.version = LoadLE<uint16_t>(in + O::kVersion);
  h.flags = LoadLE<uint16_t>(in + O::kFlags);
  h.kind = in[O::kKind];
  h.choice = in[O::kChoice];
  h.reference_count = LoadLE<uint16_t>(in + O::kReferenceCount);
  h.chunk_size = LoadLE<uint32_t>(in + O::kChunkSize);
  h.region_count = LoadLE<uint32_t>(in + O::kRegionCount);
  h.raw_size = LoadLE<uint64_t>(in + O::kRawSize);
  std::memcpy(h.base_id.bytes.data(), in + O::kBaseId, h.base_id.bytes.size());
  h.base_size = LoadLE<uint64_t>(in + O::kBaseSize);
  h.checksum = LoadLE<uint64_t>(in + O::kChecksum);
  return h;
}

bool HasObjectMagic(const uint8_t* in) {
  return std::memcmp(in + HeaderOffset::kMagic, kObjectMagic.data(), kObjectMagic.size()) == 0;
}

// Two ranges hashed as one, without copying them together: a state on the
// stack allocates nothing, and ReadObjectInfo runs on every object open.
uint64_t HeaderChecksum(const uint8_t* header, const uint8_t* table, uint64_t entries) {
  static_assert(kReferenceEntryBytes == kRegionEntryBytes, "the checksum covers both tables as entries");
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, header, HeaderOffset::kChecksum);
  XXH3_64bits_update(&state, table, kRegionEntryBytes * static_cast<size_t>(entries));
  return XXH3_64bits_digest(&state);
}

void EncodeRegionEntry(const RegionEntry& e, uint8_t* out) {
  using O = RegionEntryOffset;
  out[O::kDtype] = e.dtype;
  out[O::kFlags] = e.flags;
  for (int k = 0; k < 6; ++k) out[O::kPrefixLength + k] = static_cast<uint8_t>(e.prefix_length >> (8 * k));
  StoreLE<uint64_t>(out + O::kLength, e.length);
  StoreLE<uint64_t>(out + O::kBaseOffset, e.base_offset);
}

RegionEntry DecodeRegionEntry(const uint8_t* in) {
  using O = RegionEntryOffset;
  RegionEntry e;
  e.dtype = in[O::kDtype];
  e.flags = in[O::kFlags];
  for (int k = 0; k < 6; ++k) e.prefix_length |= static_cast<uint64_t>(in[O::kPrefixLength + k]) << (8 * k);
  e.length = LoadLE<uint64_t>(in + O::kLength);
  e.base_offset = LoadLE<uint64_t>(in + O::kBaseOffset);
  return e;
}

void EncodeReferenceEntry(const Reference& r, uint8_t* out) {
  std::memcpy(out, r.id.bytes.data(), r.id.bytes.size());
  StoreLE<uint64_t>(out + r.id.bytes.size(), r.size);
}

Reference DecodeReferenceEntry(const uint8_t* in) {
  Reference r;
  std::memcpy(r.id.bytes.data(), in, r.id.bytes.size());
  r.size = LoadLE<uint64_t>(in + r.id.bytes.size());
  return r;
}

void EncodeIndexEntry(const IndexEntry& e, uint8_t* out) {
  using O = IndexEntryOffset;
  StoreLE<uint32_t>(out + O::kRecordSize, e.record_size);
  out[O::kTransform] = e.transform;
  for (int k = 0; k < 3; ++k) out[O::kReserved + k] = static_cast<uint8_t>(e.reserved >> (8 * k));
  StoreLE<uint64_t>(out + O::kChecksum, e.checksum);
}

IndexEntry DecodeIndexEntry(const uint8_t* in) {
  using O = IndexEntryOffset;
  IndexEntry e;
  e.record_size = LoadLE<uint32_t>(in + O::kRecordSize);
  e.transform = in[O::kTransform];
  for (int k = 0; k < 3; ++k) e.reserved |= static_cast<uint32_t>(in[O::kReserved + k]) << (8 * k);
  e.checksum = LoadLE<uint64_t>(in + O::kChecksum);
  return e;
}

void EncodeTrailer(const TrailerFields& t, uint8_t* out) {
  using O = TrailerOffset;
  StoreLE<uint64_t>(out + O::kChunkCount, t.chunk_count);
  std::memcpy(out + O::kContentId, t.content_id.bytes.data(), t.content_id.bytes.size());
  StoreLE<uint64_t>(out + O::kChecksum, t.checksum);
  std::memcpy(out + O::kMagic, t.magic.data(), t.magic.size());
}

TrailerFields DecodeTrailer(const uint8_t* in) {
  using O = TrailerOffset;
  TrailerFields t;
  t.chunk_count = LoadLE<uint64_t>(in + O::kChunkCount);
  std::memcpy(t.content_id.bytes.data(), in + O::kContentId, t.content_id.bytes.size());
  t.checksum = LoadLE<uint64_t>(in + O::kChecksum);
  std::memcpy(t.magic.data(), in + O::kMagic, t.magic.size());
  return t;
}

uint64_t IndexChecksum(const uint8_t* index, uint64_t chunk_count, const uint8_t* trailer) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, index, static_cast<size_t>(kIndexEntryBytes * chunk_count));
  XXH3_64bits_update(&state, trailer, TrailerOffset::kChecksum);
  return XXH3_64bits_digest(&state);
}

// ---- Whole objects ----

void AppendHeader(const ObjectHeader& h, Buffer& out) {
  HeaderFields fields;
  fields.version = h.version;
  fields.kind = static_cast<uint8_t>(h.kind);
  // Older formats have no room for it: the choice is only a record.
  if (h.version >= kBaseChoiceVersion) fields.choice = static_cast<uint8_t>(h.choice);
  fields.chunk_size = h.chunk_size;
  fields.region_count = static_cast<uint32_t>(h.layout.regions.size());
  fields.raw_size = h.raw_size;
  fields.base_id = h.base_id;
  fields.base_size = h.base_size;
  fields.reference_count = static_cast<uint16_t>(h.references.size());
  const size_t start = out.size();
  out.Extend(kHeaderBytes + kRegionEntryBytes * h.layout.regions.size() + kReferenceEntryBytes * h.references.size());
  uint8_t* table = out.data() + start + kHeaderBytes;
  for (const Region& r : h.layout.regions) {
    RegionEntry e;
    e.dtype = static_cast<uint8_t>(r.dtype);
    e.flags = static_cast<uint8_t>((r.delta ? kRegionFlagDelta : 0) | (r.prefix_length > 0 ? kRegionFlagPrefix : 0));
    e.prefix_length = r.delta ? r.source : r.prefix_length;
    e.length = r.length;
    e.base_offset = r.delta || r.prefix_length > 0 ? r.base_offset : 0;
    EncodeRegionEntry(e, table);
    table += kRegionEntryBytes;
  }
  for (const Reference& r : h.references) {
    EncodeReferenceEntry(r, table);
    table += kReferenceEntryBytes;
  }
  uint8_t* header = out.data() + start;
  EncodeHeader(fields, header);
  fields.checksum = HeaderChecksum(header, header + kHeaderBytes, TableEntries(fields));
  EncodeHeader(fields, header);
}

void AppendIndexAndTrailer(const std::vector<ChunkRef>& chunks, const ContentId& content_id, Buffer& out) {
  const size_t start = out.size();
  out.Extend(kIndexEntryBytes * chunks.size() + kTrailerBytes);
  uint8_t* index = out.data() + start;
  uint8_t* p = index;
  for (const ChunkRef& c : chunks) {
    IndexEntry e;
    e.record_size = c.record_size;
    e.transform = static_cast<uint8_t>(c.transform);
    e.checksum = c.checksum;
    EncodeIndexEntry(e, p);
    p += kIndexEntryBytes;
  }
  TrailerFields t;
  t.chunk_count = chunks.size();
  t.content_id = content_id;
  EncodeTrailer(t, p);
  t.checksum = IndexChecksum(index, chunks.size(), p);
  EncodeTrailer(t, p);
}

namespace {

// ReadObjectInfo, one function a section, in the order of docs/format.md's
// "What a decoder must reject" (which error a damaged object gets depends
// on this order; tests check the messages).

// The header and the region table after it, which its checksum covers:
// the magic, the size, the version and the checksum, all a reader must
// trust before it looks at any other field.
Result<HeaderFields> ReadHeaderAndTable(const ByteSource& object, Buffer& table) {
  const uint64_t size = object.size();
  uint8_t h[kHeaderBytes];
  // A foreign file is called one even when it is too short to be an object.
  if (size >= kObjectMagic.size()) {
    ZIPNN_RETURN_IF_ERROR(object.ReadAt(0, h, kObjectMagic.size()));
    if (!HasObjectMagic(h)) return Bad(object, "not a git-zipnn object (bad magic)");
  }
  if (size < kHeaderBytes + kTrailerBytes) return Bad(object, "truncated object (shorter than header and trailer)");
  ZIPNN_RETURN_IF_ERROR(object.ReadAt(0, h, kHeaderBytes));
  const HeaderFields fields = DecodeHeader(h);
  if (fields.version == 0) return Bad(object, "object format version 0 is not valid");
  const uint64_t room = size - kHeaderBytes - kTrailerBytes;
  if (fields.version > kFormatVersion) {
    // A newer format, or a damaged version field: a header whose checksum
    // holds as this format reckons it is no damage (one bit cannot keep
    // it), so only then is the answer an upgrade for sure.
    bool holds = false;
    if (TableEntries(fields) <= room / kRegionEntryBytes) {
      table.Resize(kRegionEntryBytes * TableEntries(fields));
      holds = (table.empty() || object.ReadAt(kHeaderBytes, table.data(), table.size()).ok()) &&
              HeaderChecksum(h, table.data(), TableEntries(fields)) == fields.checksum;
    }
    return Unsupported(object.name() + ": object format version " + std::to_string(fields.version) +
                       " is newer than this git-zipnn reads (" + std::to_string(kFormatVersion) +
                       "); upgrade git-zipnn" +
                       (holds ? ""
                              : ", or, if no newer git-zipnn wrote it, the object is damaged (its header checksum "
                                "does not hold)"));
  }
  if (TableEntries(fields) > room / kRegionEntryBytes) {
    return Bad(object, fields.reference_count == 0 ? "region table runs past the end (truncated?)"
                                                   : "region and reference tables run past the end (truncated?)");
  }
  table.Resize(kRegionEntryBytes * TableEntries(fields));
  if (!table.empty()) ZIPNN_RETURN_IF_ERROR(object.ReadAt(kHeaderBytes, table.data(), table.size()));
  if (HeaderChecksum(h, table.data(), TableEntries(fields)) != fields.checksum) {
    return Bad(object, "header checksum mismatch");
  }
  return fields;
}

// The header's own fields, once its checksum holds.
Result<ObjectHeader> CheckHeader(const ByteSource& object, const HeaderFields& fields) {
  if (fields.flags != 0 || (fields.reference_count != 0 && fields.version < kReferenceVersion)) {
    return Bad(object, "reserved header bits are set");
  }
  if (fields.kind > static_cast<uint8_t>(ObjectKind::kDelta)) {
    return Bad(object, "unknown object kind " + std::to_string(fields.kind));
  }
  if (fields.reference_count > kMaxReferences) {
    return Bad(object, "the object references " + std::to_string(fields.reference_count) + " versions, over " +
                           std::to_string(kMaxReferences));
  }
  if (fields.reference_count != 0 && fields.kind != static_cast<uint8_t>(ObjectKind::kDelta)) {
    return Bad(object, "a base object references versions");
  }
  if (fields.choice != 0 && (fields.version < kBaseChoiceVersion || fields.kind != 1)) {
    return Bad(object, fields.version < kBaseChoiceVersion ? "reserved header bits are set"
                                                           : "a base object says why its base was taken");
  }
  if (fields.choice > kMaxBaseChoice) {
    return Bad(object, "unknown base choice " + std::to_string(fields.choice));
  }
  if (fields.choice == static_cast<uint8_t>(BaseChoice::kShared) && fields.version < kSharedChoiceVersion) {
    return Bad(object, "base choice 4 in an object of format " + std::to_string(fields.version) + " (it is 7's)");
  }
  ObjectHeader hd;
  hd.version = fields.version;
  hd.kind = static_cast<ObjectKind>(fields.kind);
  hd.choice = static_cast<BaseChoice>(fields.choice);
  hd.chunk_size = fields.chunk_size;
  if (!CheckChunkSize(hd.chunk_size).ok()) return Bad(object, "invalid chunk size " + std::to_string(hd.chunk_size));
  hd.raw_size = fields.raw_size;
  hd.base_id = fields.base_id;
  hd.base_size = fields.base_size;
  if (hd.kind == ObjectKind::kBase && (!hd.base_id.IsZero() || hd.base_size != 0)) {
    return Bad(object, "a base object names a base");
  }
  return hd;
}

// Region `i` of the table, which starts at raw offset `offset`.
Result<Region> CheckRegion(const ByteSource& object, const ObjectHeader& hd, uint32_t i, const RegionEntry& e,
                           uint64_t offset) {
  std::optional<codec::DType> dtype = codec::DTypeFromByte(e.dtype);
  if (!dtype) return Bad(object, "region " + std::to_string(i) + " has unknown dtype " + std::to_string(e.dtype));
  const bool prefixed = (e.flags & kRegionFlagPrefix) != 0;
  const bool delta = (e.flags & kRegionFlagDelta) != 0;
  // From format 8 a delta region's prefix length field is its source.
  const bool source = delta && !prefixed && hd.version >= kReferenceVersion;
  if ((e.flags & ~(kRegionFlagDelta | kRegionFlagPrefix)) != 0 || (!prefixed && !source && e.prefix_length != 0)) {
    return Bad(object, "region " + std::to_string(i) + " has reserved bits set");
  }
  Region r;
  r.dtype = *dtype;
  r.delta = delta;
  if (source) {
    if (e.prefix_length > hd.references.size()) {
      return Bad(object, "region " + std::to_string(i) + " is taken against reference " +
                             std::to_string(e.prefix_length) + " of " + std::to_string(hd.references.size()));
    }
    r.source = static_cast<uint32_t>(e.prefix_length);
  }
  r.offset = offset;
  r.length = e.length;
  r.base_offset = e.base_offset;
  if (prefixed) {
    r.prefix_length = e.prefix_length;
    if (r.prefix_length == 0) return Bad(object, "region " + std::to_string(i) + " has an empty prefix");
  }
  if ((r.delta || prefixed) && hd.kind != ObjectKind::kDelta) return Bad(object, "delta region in a base object");
  if (!r.delta && !prefixed && r.base_offset != 0) {
    return Bad(object, "region " + std::to_string(i) + " has a base offset but is not a delta");
  }
  if (r.length > UINT64_MAX - offset) return Bad(object, "region lengths overflow");
  return r;
}

// The reference table, into hd.references: each a version other than
// the base, named once.
Status ReadReferences(const ByteSource& object, const Buffer& table, const HeaderFields& fields, ObjectHeader& hd) {
  const uint8_t* at = table.data() + kRegionEntryBytes * uint64_t{fields.region_count};
  std::set<ContentId> seen;
  for (uint16_t k = 1; k <= fields.reference_count; ++k, at += kReferenceEntryBytes) {
    const Reference r = DecodeReferenceEntry(at);
    if (r.id == hd.base_id || !seen.insert(r.id).second) {
      return Bad(object, "reference " + std::to_string(k) + " names " +
                             (r.id == hd.base_id ? std::string("the base") : "a version named before it"));
    }
    hd.references.push_back(r);
  }
  return OkStatus();
}

// The region table, into hd.layout, checked against the header: every
// reference is the source of some region.
Status ReadRegions(const ByteSource& object, const Buffer& table, uint32_t region_count, ObjectHeader& hd) {
  uint64_t offset = 0;
  std::vector<bool> used(hd.references.size() + 1);
  for (uint32_t i = 0; i < region_count; ++i) {
    const RegionEntry e = DecodeRegionEntry(table.data() + kRegionEntryBytes * i);
    ZIPNN_ASSIGN_OR_RETURN(Region r, CheckRegion(object, hd, i, e, offset));
    offset += r.length;
    used[r.source] = true;
    hd.layout.regions.push_back(r);
  }
  for (size_t k = 1; k < used.size(); ++k) {
    if (!used[k]) return Bad(object, "reference " + std::to_string(k) + " is the source of no region");
  }
  std::vector<uint64_t> sizes = {hd.base_size};
  for (const Reference& r : hd.references) sizes.push_back(r.size);
  Status layout_ok = hd.layout.Validate(hd.raw_size, sizes);
  if (!layout_ok.ok()) return Bad(object, layout_ok.message());
  return OkStatus();
}

// The trailer, into `t` (its bytes, which the index checksum covers), and
// its chunk count against the layout's.
Result<TrailerFields> ReadTrailer(const ByteSource& object, const ObjectHeader& hd, uint8_t (&t)[kTrailerBytes]) {
  ZIPNN_RETURN_IF_ERROR(object.ReadAt(object.size() - kTrailerBytes, t, kTrailerBytes));
  const TrailerFields trailer = DecodeTrailer(t);
  if (trailer.magic != kTrailerMagic) return Bad(object, "trailer magic missing (truncated object?)");
  // Checked before anything is sized by the claimed count.
  const uint64_t needed = CountChunks(hd.layout, hd.chunk_size);
  if (trailer.chunk_count != needed) {
    return Bad(object, "trailer counts " + std::to_string(trailer.chunk_count) + " chunks, the layout needs " +
                           std::to_string(needed));
  }
  return trailer;
}

// The chunk index, into info.chunks: it must fit between the region table
// and the trailer, and its records must exactly fill the space before it.
Status ReadIndex(const ByteSource& object, const TrailerFields& trailer, const uint8_t* trailer_bytes,
                 ObjectInfo& info) {
  const uint64_t chunk_count = trailer.chunk_count;
  const uint64_t index_room = info.object_size - kTrailerBytes - info.records_offset;
  if (chunk_count > index_room / kIndexEntryBytes)
    return Bad(object, "chunk index runs past the start of the object (truncated?)");
  const uint64_t index_offset = info.object_size - kTrailerBytes - kIndexEntryBytes * chunk_count;
  Buffer index;
  index.Resize(kIndexEntryBytes * chunk_count);
  if (!index.empty()) ZIPNN_RETURN_IF_ERROR(object.ReadAt(index_offset, index.data(), index.size()));
  if (IndexChecksum(index.data(), chunk_count, trailer_bytes) != trailer.checksum) {
    return Bad(object, "chunk index checksum mismatch");
  }

  const ObjectHeader& hd = info.header;
  std::vector<ChunkSpan> spans = PlanChunks(hd.layout, hd.chunk_size);
  info.chunks.resize(spans.size());
  uint64_t at = info.records_offset;
  for (size_t i = 0; i < spans.size(); ++i) {
    const IndexEntry e = DecodeIndexEntry(index.data() + kIndexEntryBytes * i);
    ChunkRef& c = info.chunks[i];
    c.span = spans[i];
    c.record_offset = at;
    c.record_size = e.record_size;
    c.checksum = e.checksum;
    if (e.reserved != 0 || (hd.version < kFirstTransformVersion && e.transform != 0)) {
      return Bad(object, "chunk index entry " + std::to_string(i) + " has reserved bits set");
    }
    if (e.transform > codec::kMaxTransformValue) {
      return Bad(object,
                 "chunk " + std::to_string(i) + " names unknown delta transform " + std::to_string(e.transform));
    }
    c.transform = static_cast<codec::Transform>(e.transform);
    const codec::TransformInfo& transform = codec::InfoOf(c.transform);
    if (hd.version < transform.first_format) {
      return Bad(object, "chunk " + std::to_string(i) + " is a " + transform.name + ", which object format " +
                             std::to_string(hd.version) + " cannot hold");
    }
    const Region& region = hd.layout.regions[c.span.region];
    // A chunk of a region that is not a delta is stored as it is, which
    // the first transform (XOR) stands for.
    if (c.transform != codec::kTransforms[0].transform && (!region.delta || !transform.applies(region.dtype))) {
      return Bad(object, "chunk " + std::to_string(i) + " is a " + transform.name + " in a region that " +
                             (region.delta ? "cannot be one (" + std::string(codec::DTypeName(region.dtype)) + ")"
                                           : std::string("is not a delta")));
    }
    if (c.record_size == 0 || c.record_size > index_offset - at) {
      return Bad(object, "chunk " + std::to_string(i) + " record runs past the chunk index");
    }
    at += c.record_size;
  }
  if (at != index_offset) return Bad(object, "chunk records do not fill the space before the chunk index");
  return OkStatus();
}

}  // namespace

Result<ObjectInfo> ReadObjectInfo(const ByteSource& object) {
  ObjectInfo info;
  info.object_size = object.size();
  Buffer table;
  ZIPNN_ASSIGN_OR_RETURN(const HeaderFields fields, ReadHeaderAndTable(object, table));
  ZIPNN_ASSIGN_OR_RETURN(info.header, CheckHeader(object, fields));
  ZIPNN_RETURN_IF_ERROR(ReadReferences(object, table, fields, info.header));
  ZIPNN_RETURN_IF_ERROR(ReadRegions(object, table, fields.region_count, info.header));
  uint8_t trailer_bytes[kTrailerBytes];
  ZIPNN_ASSIGN_OR_RETURN(const TrailerFields trailer, ReadTrailer(object, info.header, trailer_bytes));
  info.content_id = trailer.content_id;
  for (size_t k = 0; k < info.header.references.size(); ++k) {
    if (info.header.references[k].id == info.content_id) {
      return Bad(object, "reference " + std::to_string(k + 1) + " names the object itself");
    }
  }
  info.records_offset = kHeaderBytes + kRegionEntryBytes * TableEntries(fields);
  ZIPNN_RETURN_IF_ERROR(ReadIndex(object, trailer, trailer_bytes, info));
  return info;
}

}  // namespace zipnn::container
