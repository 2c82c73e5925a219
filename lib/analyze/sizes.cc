#include "lib/analyze/sizes.h"

#include "lib/base/buffer.h"
#include "lib/codec/grouping.h"
#include "lib/codec/huffman.h"
#include "lib/container/object.h"

namespace zipnn::analyze {

namespace {

Result<uint64_t> CodedSize(const Coded& target, const container::Layout& layout, const Coded* base,
                           const config::Policy& policy, codec::CoderPolicy coders, ContentId* id) {
  container::EncodeOptions options;
  options.chunk_size = policy.chunk_size;
  options.threads = policy.threads;
  options.zstd_level = policy.zstd_level;
  options.policy = coders;
  container::DeltaBase delta{base != nullptr ? base->source : nullptr, base != nullptr ? base->id : ContentId{}};
  CountingSink sink;
  ASSIGN_OR_RETURN(container::EncodeResult r,
                   container::EncodeObject(*target.source, layout, base != nullptr ? &delta : nullptr, options, sink));
  if (id != nullptr) *id = r.content_id;
  return sink.bytes();
}

}  // namespace

Result<Sizes> MeasureSizes(const Coded& target, const Coded* base, const config::Policy& policy, Coders coders,
                           ThreadPool& pool, ContentId* id) {
  const container::Layout layout = base == nullptr ? formats::ToRegions(*target.layout)
                                                   : formats::ToDeltaRegions(*target.layout, *base->layout);
  Sizes sizes;
  ASSIGN_OR_RETURN(sizes.automatic, CodedSize(target, layout, base, policy, codec::CoderPolicy::kAuto, id));
  if (coders == Coders::kAll) {
    ASSIGN_OR_RETURN(sizes.huffman, CodedSize(target, layout, base, policy, codec::CoderPolicy::kHuffman, nullptr));
    ASSIGN_OR_RETURN(sizes.zstd, CodedSize(target, layout, base, policy, codec::CoderPolicy::kZstd, nullptr));
    ASSIGN_OR_RETURN(sizes.bound,
                     EntropyBound(*target.source, layout, base != nullptr ? base->source : nullptr, policy.chunk_size,
                                  pool));
  }
  sizes.measured = true;
  return sizes;
}

Result<double> EntropyBound(const ByteSource& input, const container::Layout& layout, const ByteSource* base,
                            uint32_t chunk_size, ThreadPool& pool) {
  const std::vector<container::ChunkSpan> chunks = container::PlanChunks(layout, chunk_size);
  auto produce = [&](size_t i) -> Result<double> {
    const container::ChunkSpan& c = chunks[i];
    const container::Region& region = layout.regions[c.region];
    thread_local Buffer raw, other, grouped;
    raw.Resize(c.length);
    RETURN_IF_ERROR(input.ReadAt(c.offset, raw.data(), c.length));
    if (region.delta) {
      if (base == nullptr) return InvalidArgument("a delta layout needs a base");
      other.Resize(c.length);
      RETURN_IF_ERROR(base->ReadAt(region.base_offset + (c.offset - region.offset), other.data(), c.length));
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
  RETURN_IF_ERROR(RunOrdered<double>(pool, chunks.size(), produce, [&](size_t, double b) {
    total += b;
    return OkStatus();
  }));
  return total;
}

}  // namespace zipnn::analyze
