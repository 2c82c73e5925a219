#include "lib/container/format.h"

#include <cstring>

#include "lib/base/endian.h"

namespace zipnn::container {

namespace {

bool AllZero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

// Errors about an object start with its name.
Status Bad(const ByteSource& object, const std::string& what) {
  return Corruption(object.name() + ": " + what);
}

}  // namespace

Status CheckChunkSize(uint32_t chunk_size) {
  if (chunk_size < kMinChunkSize || chunk_size > kMaxChunkSize || chunk_size % 8 != 0) {
    return InvalidArgument("chunk size " + std::to_string(chunk_size) +
                           " must be a multiple of 8 from 4 KiB to 64 MiB");
  }
  return OkStatus();
}

void AppendHeader(const ObjectHeader& h, Buffer& out) {
  const size_t start = out.size();
  const size_t n = kHeaderBytes + kRegionEntryBytes * h.layout.regions.size();
  uint8_t* p = out.Extend(n);
  std::memset(p, 0, n);
  std::memcpy(p, kObjectMagic, 8);
  StoreLE<uint16_t>(p + 8, h.version);
  p[12] = static_cast<uint8_t>(h.kind);
  StoreLE<uint32_t>(p + 16, h.chunk_size);
  StoreLE<uint32_t>(p + 20, static_cast<uint32_t>(h.layout.regions.size()));
  StoreLE<uint64_t>(p + 24, h.raw_size);
  std::memcpy(p + 32, h.base_id.bytes.data(), 16);
  StoreLE<uint64_t>(p + 48, h.base_size);
  uint8_t* e = p + kHeaderBytes;
  for (const Region& r : h.layout.regions) {
    e[0] = static_cast<uint8_t>(r.dtype);
    e[1] = static_cast<uint8_t>((r.delta ? kRegionFlagDelta : 0) | (r.prefix_length > 0 ? kRegionFlagPrefix : 0));
    for (int k = 0; k < 6; ++k) e[2 + k] = static_cast<uint8_t>(r.prefix_length >> (8 * k));  // 48 bits
    StoreLE<uint64_t>(e + 8, r.length);
    StoreLE<uint64_t>(e + 16, r.delta || r.prefix_length > 0 ? r.base_offset : 0);
    e += kRegionEntryBytes;
  }
  // The checksum covers bytes 0..55 and the region table.
  Buffer covered;
  covered.Append(p, 56);
  covered.Append(p + kHeaderBytes, n - kHeaderBytes);
  StoreLE<uint64_t>(out.data() + start + 56, Checksum64(covered.data(), covered.size()));
}

void AppendIndexAndTrailer(const std::vector<ChunkRef>& chunks, const ContentId& content_id,
                           Buffer& out) {
  const size_t start = out.size();
  const size_t n = kIndexEntryBytes * chunks.size() + kTrailerBytes;
  uint8_t* p = out.Extend(n);
  std::memset(p, 0, n);
  for (const ChunkRef& c : chunks) {
    StoreLE<uint32_t>(p, c.record_size);
    StoreLE<uint64_t>(p + 8, c.checksum);
    p += kIndexEntryBytes;
  }
  StoreLE<uint64_t>(p, chunks.size());
  std::memcpy(p + 8, content_id.bytes.data(), 16);
  // The checksum covers the index and the trailer's first 24 bytes.
  const uint8_t* covered = out.data() + start;
  StoreLE<uint64_t>(p + 24, Checksum64(covered, static_cast<size_t>(p + 24 - covered)));
  std::memcpy(p + 32, kTrailerMagic, 8);
}

Result<ObjectInfo> ReadObjectInfo(const ByteSource& object) {
  ObjectInfo info;
  const uint64_t size = object.size();
  info.object_size = size;
  uint8_t h[kHeaderBytes];
  if (size >= 8) {
    RETURN_IF_ERROR(object.ReadAt(0, h, 8));
    if (std::memcmp(h, kObjectMagic, 8) != 0) return Bad(object, "not a git-zipnn object (bad magic)");
  }
  if (size < kHeaderBytes + kTrailerBytes) return Bad(object, "truncated object (shorter than header and trailer)");
  RETURN_IF_ERROR(object.ReadAt(0, h, kHeaderBytes));

  ObjectHeader& hd = info.header;
  hd.version = LoadLE<uint16_t>(h + 8);
  if (hd.version == 0) return Bad(object, "object format version 0 is not valid");
  if (hd.version > kFormatVersion) {
    return Unsupported(object.name() + ": object format version " + std::to_string(hd.version) +
                       " is newer than this git-zipnn reads (" + std::to_string(kFormatVersion) +
                       "); upgrade git-zipnn");
  }
  const uint32_t region_count = LoadLE<uint32_t>(h + 20);
  const uint64_t room = size - kHeaderBytes - kTrailerBytes;
  if (region_count > room / kRegionEntryBytes) return Bad(object, "region table runs past the end (truncated?)");
  Buffer covered;
  covered.Append(h, 56);
  uint8_t* table = covered.Extend(kRegionEntryBytes * region_count);
  RETURN_IF_ERROR(object.ReadAt(kHeaderBytes, table, kRegionEntryBytes * region_count));
  if (Checksum64(covered.data(), covered.size()) != LoadLE<uint64_t>(h + 56)) {
    return Bad(object, "header checksum mismatch");
  }

  if (LoadLE<uint16_t>(h + 10) != 0 || !AllZero(h + 13, 3)) return Bad(object, "reserved header bits are set");
  if (h[12] > static_cast<uint8_t>(ObjectKind::kDelta)) return Bad(object, "unknown object kind " + std::to_string(h[12]));
  hd.kind = static_cast<ObjectKind>(h[12]);
  hd.chunk_size = LoadLE<uint32_t>(h + 16);
  if (!CheckChunkSize(hd.chunk_size).ok()) return Bad(object, "invalid chunk size " + std::to_string(hd.chunk_size));
  hd.raw_size = LoadLE<uint64_t>(h + 24);
  std::memcpy(hd.base_id.bytes.data(), h + 32, 16);
  hd.base_size = LoadLE<uint64_t>(h + 48);
  if (hd.kind == ObjectKind::kBase && (!hd.base_id.IsZero() || hd.base_size != 0)) {
    return Bad(object, "a base object names a base");
  }

  uint64_t offset = 0;
  for (uint32_t i = 0; i < region_count; ++i) {
    const uint8_t* e = table + kRegionEntryBytes * i;
    std::optional<codec::DType> dtype = codec::DTypeFromByte(e[0]);
    if (!dtype) return Bad(object, "region " + std::to_string(i) + " has unknown dtype " + std::to_string(e[0]));
    const bool prefixed = (e[1] & kRegionFlagPrefix) != 0;
    if ((e[1] & ~(kRegionFlagDelta | kRegionFlagPrefix)) != 0 || (!prefixed && !AllZero(e + 2, 6))) {
      return Bad(object, "region " + std::to_string(i) + " has reserved bits set");
    }
    Region r;
    r.dtype = *dtype;
    r.delta = (e[1] & kRegionFlagDelta) != 0;
    r.offset = offset;
    r.length = LoadLE<uint64_t>(e + 8);
    r.base_offset = LoadLE<uint64_t>(e + 16);
    if (prefixed) {
      for (int k = 0; k < 6; ++k) r.prefix_length |= static_cast<uint64_t>(e[2 + k]) << (8 * k);
      if (r.prefix_length == 0) return Bad(object, "region " + std::to_string(i) + " has an empty prefix");
    }
    if ((r.delta || prefixed) && hd.kind != ObjectKind::kDelta) return Bad(object, "delta region in a base object");
    if (!r.delta && !prefixed && r.base_offset != 0) {
      return Bad(object, "region " + std::to_string(i) + " has a base offset but is not a delta");
    }
    if (r.length > UINT64_MAX - offset) return Bad(object, "region lengths overflow");
    offset += r.length;
    hd.layout.regions.push_back(r);
  }
  Status layout_ok = hd.layout.Validate(hd.raw_size, hd.base_size);
  if (!layout_ok.ok()) return Bad(object, layout_ok.message());

  uint8_t t[kTrailerBytes];
  RETURN_IF_ERROR(object.ReadAt(size - kTrailerBytes, t, kTrailerBytes));
  if (std::memcmp(t + 32, kTrailerMagic, 8) != 0) return Bad(object, "trailer magic missing (truncated object?)");
  const uint64_t chunk_count = LoadLE<uint64_t>(t);
  info.records_offset = kHeaderBytes + kRegionEntryBytes * uint64_t{region_count};
  const uint64_t index_room = size - kTrailerBytes - info.records_offset;
  // Checked before anything is sized by the claimed counts.
  if (chunk_count != CountChunks(hd.layout, hd.chunk_size)) {
    return Bad(object, "trailer counts " + std::to_string(chunk_count) + " chunks, the layout needs " +
                           std::to_string(CountChunks(hd.layout, hd.chunk_size)));
  }
  if (chunk_count > index_room / kIndexEntryBytes) return Bad(object, "chunk index runs past the start of the object (truncated?)");
  std::memcpy(info.content_id.bytes.data(), t + 8, 16);

  const uint64_t index_offset = size - kTrailerBytes - kIndexEntryBytes * chunk_count;
  Buffer index;
  index.Resize(kIndexEntryBytes * chunk_count + 24);
  RETURN_IF_ERROR(object.ReadAt(index_offset, index.data(), kIndexEntryBytes * chunk_count));
  std::memcpy(index.data() + kIndexEntryBytes * chunk_count, t, 24);
  if (Checksum64(index.data(), index.size()) != LoadLE<uint64_t>(t + 24)) {
    return Bad(object, "chunk index checksum mismatch");
  }

  std::vector<ChunkSpan> spans = PlanChunks(hd.layout, hd.chunk_size);
  info.chunks.resize(spans.size());
  uint64_t at = info.records_offset;
  for (size_t i = 0; i < spans.size(); ++i) {
    const uint8_t* e = index.data() + kIndexEntryBytes * i;
    ChunkRef& c = info.chunks[i];
    c.span = spans[i];
    c.record_offset = at;
    c.record_size = LoadLE<uint32_t>(e);
    c.checksum = LoadLE<uint64_t>(e + 8);
    if (LoadLE<uint32_t>(e + 4) != 0) return Bad(object, "chunk index entry " + std::to_string(i) + " has reserved bits set");
    if (c.record_size == 0 || c.record_size > index_offset - at) {
      return Bad(object, "chunk " + std::to_string(i) + " record runs past the chunk index");
    }
    at += c.record_size;
  }
  if (at != index_offset) return Bad(object, "chunk records do not fill the space before the chunk index");
  return info;
}

}  // namespace zipnn::container
