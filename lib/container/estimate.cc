#include "lib/container/estimate.h"

#include <algorithm>

#include "lib/base/buffer.h"
#include "lib/codec/entropy.h"
#include "lib/codec/grouping.h"

namespace zipnn::container {

namespace {

// The order-0 information of n bytes of `dtype`, grouped, in bytes.
double GroupedBound(codec::DType dtype, const uint8_t* raw, size_t n, Buffer& grouped) {
  grouped.Resize(n);
  codec::SplitGroups(dtype, raw, n, grouped.data());
  double bytes = 0;
  for (int g = 0; g < codec::GroupCount(dtype, n); ++g) {
    const uint8_t* p = grouped.data() + codec::GroupOffset(dtype, n, g);
    bytes += codec::EntropyBits(codec::CountBytes(p, codec::GroupSize(dtype, n, g))) / 8;
  }
  return bytes;
}

}  // namespace

Result<double> EntropyBound(const ByteSource& input, const Layout& layout, const ByteSource* base, uint32_t chunk_size,
                            ThreadPool& pool, codec::TransformPolicy transform) {
  const std::vector<ChunkSpan> chunks = PlanChunks(layout, chunk_size);
  auto produce = [&](size_t i) -> Result<double> {
    const ChunkSpan& c = chunks[i];
    const Region& region = layout.regions[c.region];
    thread_local Buffer raw, other, delta, grouped;
    raw.Resize(c.length);
    ZIPNN_RETURN_IF_ERROR(input.ReadAt(c.offset, raw.data(), c.length));
    if (!region.delta) return GroupedBound(region.dtype, raw.data(), c.length, grouped);
    if (base == nullptr) return InvalidArgument("a delta layout needs a base");
    other.Resize(c.length);
    ZIPNN_RETURN_IF_ERROR(base->ReadAt(region.base_offset + (c.offset - region.offset), other.data(), c.length));
    delta.Resize(c.length);
    double bound = 1e300;
    for (const codec::TransformInfo& t : codec::kTransforms) {
      if (!codec::Tries(transform, t.transform, region.dtype)) continue;
      t.take(region.dtype, delta.data(), raw.data(), other.data(), c.length);
      bound = std::min(bound, GroupedBound(t.grouping(region.dtype), delta.data(), c.length, grouped));
    }
    return bound;
  };
  double total = 0;
  ZIPNN_RETURN_IF_ERROR(RunOrdered<double>(pool, chunks.size(), produce, [&](size_t, double b) {
    total += b;
    return OkStatus();
  }));
  return total;
}

}  // namespace zipnn::container
