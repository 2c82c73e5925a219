#include "lib/analyze/sizes.h"

#include <optional>

#include "lib/base/buffer.h"
#include "lib/codec/grouping.h"
#include "lib/codec/huffman.h"
#include "lib/container/estimate.h"
#include "lib/container/object.h"

namespace zipnn::analyze {

namespace {

// The object's size with `coders`, its delta chunks taken as `transform`
// says (the policy's own when not given).
Result<uint64_t> CodedSize(const formats::CheckpointView& target, const container::Layout& layout,
                           const formats::CheckpointView* base, const config::Policy& policy, codec::CoderPolicy coders,
                           ContentId* id, std::optional<codec::TransformPolicy> transform = std::nullopt) {
  container::EncodeOptions options;
  options.chunk_size = policy.chunk_size;
  options.threads = policy.threads;
  options.zstd_level = policy.zstd_level;
  options.policy = coders;
  options.transform = transform.value_or(policy.delta_transform);
  container::DeltaBase delta{base != nullptr ? base->source : nullptr, base != nullptr ? base->id : ContentId{}};
  CountingSink sink;
  ZIPNN_ASSIGN_OR_RETURN(
      container::EncodeResult r,
      container::EncodeObject(*target.source, layout, base != nullptr ? &delta : nullptr, options, sink));
  if (id != nullptr) *id = r.content_id;
  return sink.bytes();
}

}  // namespace

Result<Sizes> MeasureSizes(const formats::CheckpointView& target, const formats::CheckpointView* base,
                           const config::Policy& policy, Coders coders, ThreadPool& pool, ContentId* id) {
  const container::Layout layout =
      base == nullptr ? formats::ToRegions(*target.layout) : formats::ToDeltaRegions(*target.layout, *base->layout);
  Sizes sizes;
  ZIPNN_ASSIGN_OR_RETURN(sizes.automatic, CodedSize(target, layout, base, policy, codec::CoderPolicy::kAuto, id));
  if (coders == Coders::kAll) {
    ZIPNN_ASSIGN_OR_RETURN(sizes.huffman,
                           CodedSize(target, layout, base, policy, codec::CoderPolicy::kHuffman, nullptr));
    ZIPNN_ASSIGN_OR_RETURN(sizes.zstd, CodedSize(target, layout, base, policy, codec::CoderPolicy::kZstd, nullptr));
    for (size_t t = 0; base != nullptr && t < codec::kTransformCount; ++t) {
      ZIPNN_ASSIGN_OR_RETURN(sizes.by_transform[t], CodedSize(target, layout, base, policy, codec::CoderPolicy::kAuto,
                                                              nullptr, codec::kTransforms[t].transform));
    }
    ZIPNN_ASSIGN_OR_RETURN(sizes.bound,
                           container::EntropyBound(*target.source, layout, base != nullptr ? base->source : nullptr,
                                                   policy.chunk_size, pool, policy.delta_transform));
  }
  sizes.measured = true;
  return sizes;
}

}  // namespace zipnn::analyze
