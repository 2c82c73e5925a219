#include "lib/formats/file_layout.h"

#include <map>

namespace zipnn::formats {

namespace {

using container::Layout;
using container::Region;

// Builds regions in file order, merging neighbours that can share chunks.
// Every region costs chunk records and coder tables of its own, so:
// - neighbours of the same dtype and kind (standalone, or delta reading
//   the base on from where the previous one stopped) merge when the first
//   ends on an element boundary, keeping the grouping aligned;
// - a tiny tensor (kAbsorbBytes or less, such as a batch-norm step
//   counter between two weight runs) merges into a neighbour of another
//   dtype when its length is a whole number of that neighbour's elements:
//   coding 8 bytes of I64 as four bf16 elements costs nothing, splitting
//   the run around it costs two regions' overheads. Opaque bytes (headers)
//   are never absorbed: they code best as text.
class RegionBuilder {
 public:
  static constexpr uint64_t kAbsorbBytes = 1024;

  void Push(const Region& r, bool tensor) {
    if (r.length == 0) return;
    const bool tiny = tensor && r.length <= kAbsorbBytes;
    if (!layout_.regions.empty()) {
      Region& last = layout_.regions.back();
      const uint64_t last_width = static_cast<uint64_t>(codec::DTypeWidth(last.dtype));
      const uint64_t width = static_cast<uint64_t>(codec::DTypeWidth(r.dtype));
      const bool same_kind = last.delta == r.delta && (!r.delta || last.base_offset + last.length == r.base_offset);
      if (same_kind && last.length % last_width == 0) {
        if (last.dtype == r.dtype || (tiny && !last_opaque_ && r.length % last_width == 0)) {
          last.length += r.length;
          last_tiny_ = last_tiny_ && tiny;
          last_opaque_ = last_opaque_ && !tensor;
          return;
        }
        if (last_tiny_ && tensor && last.length % width == 0) {  // the tiny one takes the newcomer's dtype
          last.dtype = r.dtype;
          last.length += r.length;
          last_tiny_ = tiny;
          return;
        }
      }
    }
    layout_.regions.push_back(r);
    last_tiny_ = tiny;
    last_opaque_ = !tensor;
  }

  Layout Take() { return std::move(layout_); }

 private:
  Layout layout_;
  bool last_tiny_ = false;    // the last region holds only tiny tensors
  bool last_opaque_ = false;  // the last region holds only opaque bytes
};

// Walks the tensors in offset order, filling the gaps with opaque bytes.
template <typename TensorRegion, typename GapRegion>
Layout Build(const FileLayout& file, TensorRegion tensor_region, GapRegion gap_region) {
  RegionBuilder builder;
  uint64_t at = 0;
  for (const Tensor& t : file.tensors) {
    if (t.offset > at) builder.Push(gap_region(at, t.offset - at), false);
    builder.Push(tensor_region(t), true);
    at = t.offset + t.length;
  }
  if (file.size > at) builder.Push(gap_region(at, file.size - at), false);
  return builder.Take();
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
