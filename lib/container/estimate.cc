#include "lib/container/estimate.h"

#include "lib/base/buffer.h"
#include "lib/codec/grouping.h"
#include "lib/codec/huffman.h"

namespace zipnn::container {

Result<double> EntropyBound(const ByteSource& input, const Layout& layout, const ByteSource* base,
                            uint32_t chunk_size, ThreadPool& pool) {
  const std::vector<ChunkSpan> chunks = PlanChunks(layout, chunk_size);
  auto produce = [&](size_t i) -> Result<double> {
    const ChunkSpan& c = chunks[i];
    const Region& region = layout.regions[c.region];
    thread_local Buffer raw, other, grouped;
    raw.Resize(c.length);
    ZIPNN_RETURN_IF_ERROR(input.ReadAt(c.offset, raw.data(), c.length));
    if (region.delta) {
      if (base == nullptr) return InvalidArgument("a delta layout needs a base");
      other.Resize(c.length);
      ZIPNN_RETURN_IF_ERROR(base->ReadAt(region.base_offset + (c.offset - region.offset), other.data(), c.length));
      codec::XorInto(raw.data(), other.data(), c.length);
    }
    grouped.Resize(c.length);
    codec::SplitGroups(region.dtype, raw.data(), c.length, grouped.data());
    double bytes = 0;
    for (int g = 0; g < codec::GroupCount(region.dtype, c.length); ++g) {
      const size_t n = codec::GroupSize(region.dtype, c.length, g);
      const uint8_t* p = grouped.data() + codec::GroupOffset(region.dtype, c.length, g);
      bytes += codec::EntropyBits(codec::CountBytes(p, n)) / 8;
    }
    return bytes;
  };
  double total = 0;
  ZIPNN_RETURN_IF_ERROR(RunOrdered<double>(pool, chunks.size(), produce, [&](size_t, double b) {
    total += b;
    return OkStatus();
  }));
  return total;
}

}  // namespace zipnn::container
