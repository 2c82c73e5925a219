#include "lib/container/layout.h"

#include <string>

namespace zipnn::container {

Layout Layout::Single(codec::DType dtype, uint64_t size) {
  Layout l;
  if (size > 0) l.regions.push_back(Region{dtype, 0, size, false, 0, 0, 0});
  return l;
}

Layout Layout::AsDeltaOfSameLayout() const {
  Layout l = *this;
  for (Region& r : l.regions) {
    r.delta = true;
    r.base_offset = r.offset;
  }
  return l;
}

std::vector<size_t> Layout::KeepUsedReferences(size_t references) {
  std::vector<bool> used(references + 1);
  for (const Region& r : regions) {
    if (r.delta && r.source <= references) used[r.source] = true;
  }
  std::vector<uint32_t> renumbered(references + 1);
  std::vector<size_t> kept;
  for (size_t k = 1; k <= references; ++k) {
    if (!used[k]) continue;
    kept.push_back(k - 1);
    renumbered[k] = static_cast<uint32_t>(kept.size());
  }
  for (Region& r : regions) {
    if (r.delta && r.source <= references) r.source = renumbered[r.source];
  }
  return kept;
}

Status Layout::Validate(uint64_t expected_size, const std::vector<uint64_t>& source_sizes) const {
  const uint64_t base_size = source_sizes.empty() ? 0 : source_sizes[0];
  uint64_t next = 0;
  for (size_t i = 0; i < regions.size(); ++i) {
    const Region& r = regions[i];
    const std::string where = "region " + std::to_string(i);
    if (r.offset != next) return Corruption(where + " does not start where the previous one ends");
    if (r.length > UINT64_MAX - r.offset) return Corruption(where + " length overflows");
    next = r.offset + r.length;
    if (r.delta && r.prefix_length > 0) return Corruption(where + " is both XORed and prefixed");
    if (r.source != 0 && (!r.delta || r.source >= source_sizes.size())) {
      return Corruption(where + (r.delta ? " takes its bytes from a reference the object does not have"
                                         : " names a source but is not a delta"));
    }
    const uint64_t source_size = r.delta ? source_sizes[r.source] : base_size;
    if (r.delta && (r.base_offset > source_size || r.length > source_size - r.base_offset)) {
      return Corruption(where + (r.source == 0 ? " reads past the end of its base"
                                               : " reads past the end of reference " + std::to_string(r.source)));
    }
    if (r.prefix_length > 0) {
      if (r.dtype != codec::DType::kBytes) return Corruption(where + " is prefixed but not opaque bytes");
      if (r.prefix_length > kMaxPrefixBytes) return Corruption(where + " has a prefix over 1 MiB");
      if (r.base_offset > base_size || r.prefix_length > base_size - r.base_offset) {
        return Corruption(where + " takes a prefix past the end of its base");
      }
    }
  }
  if (next != expected_size) {
    return Corruption("regions cover " + std::to_string(next) + " bytes, expected " + std::to_string(expected_size));
  }
  return OkStatus();
}

uint64_t CountChunks(const Layout& layout, uint32_t chunk_size) {
  uint64_t n = 0;
  // Not (length + chunk_size - 1) / chunk_size: a hostile length near 2^64
  // would wrap to a count of almost nothing and pass the trailer check.
  for (const Region& r : layout.regions) n += r.length / chunk_size + (r.length % chunk_size != 0 ? 1 : 0);
  return n;
}

std::vector<ChunkSpan> PlanChunks(const Layout& layout, uint32_t chunk_size) {
  std::vector<ChunkSpan> chunks;
  chunks.reserve(CountChunks(layout, chunk_size));
  for (size_t i = 0; i < layout.regions.size(); ++i) {
    const Region& r = layout.regions[i];
    for (uint64_t at = 0; at < r.length;) {
      const uint64_t len = r.length - at < chunk_size ? r.length - at : chunk_size;
      chunks.push_back(ChunkSpan{static_cast<uint32_t>(i), r.offset + at, static_cast<uint32_t>(len)});
      at += len;  // never past r.length, so never wraps
    }
  }
  return chunks;
}

}  // namespace zipnn::container
