// Layout: how a checkpoint's bytes divide into regions of one dtype each.
// Regions are contiguous and cover every byte exactly once, in order. A
// delta region is taken against the bytes at base_offset of its source:
// the base checkpoint, or (format 8 on) one of the versions the object
// references (a tensor whose bytes another stored version holds).
// A prefixed region (opaque bytes only) is coded with zstd against the
// base's bytes [base_offset, base_offset + prefix_length) as history.
// Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "lib/base/status.h"
#include "lib/codec/dtype.h"

namespace zipnn::container {

struct Region {
  codec::DType dtype = codec::DType::kBytes;
  uint64_t offset = 0;
  uint64_t length = 0;
  bool delta = false;
  uint64_t base_offset = 0;    // meaningful when delta or prefixed
  uint64_t prefix_length = 0;  // > 0: prefixed (not with delta)
  // A delta region's source: 0 the base, k the object's k-th reference.
  uint32_t source = 0;
};

// Prefixes are headers, pickles, directories: at most this long.
inline constexpr uint64_t kMaxPrefixBytes = 1u << 20;

struct Layout {
  std::vector<Region> regions;

  uint64_t size() const { return regions.empty() ? 0 : regions.back().offset + regions.back().length; }

  // One region of one dtype over `size` bytes (a raw file).
  static Layout Single(codec::DType dtype, uint64_t size);
  // The same regions, each XORed with the base at the same offset.
  Layout AsDeltaOfSameLayout() const;
  // Renumbers the delta regions' sources so that only the references some
  // region is taken against remain, in their order (a format 8 object
  // names no other); returns which of the `references` (0-based) remain.
  std::vector<size_t> KeepUsedReferences(size_t references);
  // Contiguous, starting at 0, no overflow, delta ranges inside their
  // source: `source_sizes` holds the base's size, then each reference's.
  Status Validate(uint64_t expected_size, const std::vector<uint64_t>& source_sizes) const;
  Status Validate(uint64_t expected_size, uint64_t base_size) const {
    return Validate(expected_size, std::vector<uint64_t>{base_size});
  }
};

// One chunk of the raw bytes: never crosses a region boundary.
struct ChunkSpan {
  uint32_t region = 0;
  uint64_t offset = 0;  // in the raw checkpoint
  uint32_t length = 0;
};

// Chunks of `layout` in order: each region cut into chunk_size pieces, the
// last one shorter. Both encoder and decoder derive the chunk list this way.
std::vector<ChunkSpan> PlanChunks(const Layout& layout, uint32_t chunk_size);
// Number of chunks PlanChunks would return, without building the list.
uint64_t CountChunks(const Layout& layout, uint32_t chunk_size);

}  // namespace zipnn::container
