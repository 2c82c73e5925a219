#include "lib/formats/file_layout.h"

#include <map>

namespace zipnn::formats {

namespace {

using container::Layout;
using container::Region;

// Appends `r`, merging it into the previous region when both can share
// chunks: same dtype, same kind (standalone, or delta reading the base on
// from where the previous one stopped), and the previous one ends on an
// element boundary so grouping stays aligned.
void Push(Layout& layout, const Region& r) {
  if (r.length == 0) return;
  if (!layout.regions.empty()) {
    Region& last = layout.regions.back();
    const uint64_t width = static_cast<uint64_t>(codec::DTypeWidth(last.dtype));
    const bool same_kind = last.delta == r.delta && (!r.delta || last.base_offset + last.length == r.base_offset);
    if (last.dtype == r.dtype && same_kind && last.length % width == 0) {
      last.length += r.length;
      return;
    }
  }
  layout.regions.push_back(r);
}

// Walks the tensors in offset order, filling the gaps with opaque bytes.
template <typename TensorRegion, typename GapRegion>
Layout Build(const FileLayout& file, TensorRegion tensor_region, GapRegion gap_region) {
  Layout layout;
  uint64_t at = 0;
  for (const Tensor& t : file.tensors) {
    if (t.offset > at) Push(layout, gap_region(at, t.offset - at));
    Push(layout, tensor_region(t));
    at = t.offset + t.length;
  }
  if (file.size > at) Push(layout, gap_region(at, file.size - at));
  return layout;
}

}  // namespace

const char* FormatName(Format f) {
  switch (f) {
    case Format::kRaw: return "raw";
    case Format::kSafetensors: return "safetensors";
  }
  return "?";
}

Layout ToRegions(const FileLayout& file) {
  return Build(
      file, [](const Tensor& t) { return Region{t.dtype, t.offset, t.length, false, 0}; },
      [](uint64_t at, uint64_t n) { return Region{codec::DType::kBytes, at, n, false, 0}; });
}

Layout ToDeltaRegions(const FileLayout& target, const FileLayout& base) {
  std::map<std::string, const Tensor*> twins;
  for (const Tensor& t : base.tensors) twins[t.name] = &t;
  // The opaque prefix (a safetensors header) of each file.
  const uint64_t target_head = target.tensors.empty() ? 0 : target.tensors.front().offset;
  const uint64_t base_head = base.tensors.empty() ? 0 : base.tensors.front().offset;
  return Build(
      target,
      [&](const Tensor& t) {
        auto it = twins.find(t.name);
        if (it != twins.end() && it->second->dtype == t.dtype && it->second->shape == t.shape &&
            it->second->length == t.length) {
          return Region{t.dtype, t.offset, t.length, true, it->second->offset};
        }
        return Region{t.dtype, t.offset, t.length, false, 0};
      },
      [&](uint64_t at, uint64_t n) {
        if (at == 0 && n == target_head && target_head == base_head && target_head > 0) {
          return Region{codec::DType::kBytes, 0, n, true, 0};
        }
        return Region{codec::DType::kBytes, at, n, false, 0};
      });
}

}  // namespace zipnn::formats
