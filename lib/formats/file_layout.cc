#include "lib/formats/file_layout.h"

#include <algorithm>
#include <map>

#include "lib/base/endian.h"

namespace zipnn::formats {

namespace {

using container::Layout;
using container::Region;

// What a range of the file is, for merging.
enum class Kind {
  kTensor,    // a tensor
  kSmallGap,  // opaque bytes between two tensors, at most kAbsorbBytes (zip headers)
  kOpaque,    // any other opaque bytes (a safetensors header, a pickle)
};

// Builds regions in file order. Chunks never cross regions, and each
// chunk codes each byte group with tables of its own, so a tensor large
// enough to fill chunks gets a region of its own: merging tensors mixes
// statistics in a chunk (weights, Adam's exp_avg and exp_avg_sq have very
// different exponents), which on real checkpoints cost more than the
// region overheads saved (a GPT torch.save: 76.5% of raw per tensor, 84.0%
// merged; its safetensors: 65.07% against 65.58%). What is small merges:
// - a tiny tensor (kAbsorbBytes or less, such as a bias or a batch-norm
//   step counter) joins the typed region before it when its length is a
//   whole number of that region's elements: coding 8 bytes of I64 as four
//   bf16 elements costs nothing, a region of its own costs a chunk
//   record, an index entry and coder tables;
// - a run of tiny tensors at the start of a region takes the dtype of the
//   larger tensor after it, on the same condition;
// - a small gap between two tensors (a zip local header) joins the typed
//   region before it, on the same condition;
// - other opaque bytes (headers, pickles) stay apart: they code best as
//   text, with zstd.
// Merging also needs the same kind: standalone, or delta reading the base
// on from where the previous region stopped.
class RegionBuilder {
 public:
  static constexpr uint64_t kAbsorbBytes = 1024;

  void Push(const Region& r, Kind kind) {
    if (r.length == 0) return;
    const bool tensor = kind == Kind::kTensor;
    const bool tiny = kind != Kind::kOpaque && r.length <= kAbsorbBytes;
    if (!layout_.regions.empty()) {
      Region& last = layout_.regions.back();
      const uint64_t last_width = static_cast<uint64_t>(codec::DTypeWidth(last.dtype));
      const uint64_t width = static_cast<uint64_t>(codec::DTypeWidth(r.dtype));
      const bool same_kind = last.delta == r.delta && last.source == r.source &&
                             (!r.delta || last.base_offset + last.length == r.base_offset) && last.prefix_length == 0 &&
                             r.prefix_length == 0;
      if (same_kind && last.length % last_width == 0) {
        if ((kind == Kind::kOpaque && last_opaque_) || (tiny && !last_opaque_ && r.length % last_width == 0)) {
          last.length += r.length;
          last_tiny_ = last_tiny_ && tiny;
          last_opaque_ = last_opaque_ && kind == Kind::kOpaque;
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
    last_tiny_ = tensor && tiny;
    last_opaque_ = !tensor;
  }

  Layout Take() { return std::move(layout_); }

 private:
  Layout layout_;
  bool last_tiny_ = false;    // the last region holds only tiny tensors
  bool last_opaque_ = false;  // the last region holds only opaque bytes
};

// Walks the tensors in offset order, filling the gaps with opaque bytes.
// gap_region(at, n, before, after) gets the tensors around the gap (null
// at either end of the file).
template <typename TensorRegion, typename GapRegion>
Layout Build(const FileLayout& file, TensorRegion tensor_region, GapRegion gap_region) {
  RegionBuilder builder;
  uint64_t at = 0;
  const Tensor* before = nullptr;
  for (const Tensor& t : file.tensors) {
    if (t.offset > at) {
      const uint64_t n = t.offset - at;
      const Kind kind = before != nullptr && n <= RegionBuilder::kAbsorbBytes ? Kind::kSmallGap : Kind::kOpaque;
      builder.Push(gap_region(at, n, before, &t), kind);
    }
    builder.Push(tensor_region(t), Kind::kTensor);
    at = t.offset + t.length;
    before = &t;
  }
  if (file.size > at) builder.Push(gap_region(at, file.size - at, before, nullptr), Kind::kOpaque);
  return builder.Take();
}

}  // namespace

FileLayout RawLayout(uint64_t size, std::string warning) {
  FileLayout raw;
  raw.format = Format::kRaw;
  raw.size = size;
  raw.warnings.push_back(std::move(warning));
  return raw;
}

uint64_t DataBytes(const Tensor& t) {
  if (!t.strided) return t.length;
  uint64_t n = static_cast<uint64_t>(codec::DTypeWidth(t.dtype));
  for (uint64_t d : t.shape) n *= d;  // a strided view was checked to fit its storage
  return n;
}

std::vector<size_t> ReadingOrder(const FileLayout& file) {
  std::vector<size_t> order(file.tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (file.views.empty()) return order;
  // A storage is named after the first tensor built on it.
  std::map<std::string, size_t> first;
  for (size_t i = 0; i < file.views.size(); ++i) first.emplace(file.views[i].name, i);
  auto rank = [&](size_t t) {
    const auto it = first.find(file.tensors[t].name);
    return it == first.end() ? file.views.size() : it->second;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rank(a) < rank(b); });
  return order;
}

std::optional<std::pair<std::string, std::string>> SortTensors(std::vector<Tensor>& tensors) {
  std::sort(tensors.begin(), tensors.end(), [](const Tensor& a, const Tensor& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < tensors.size(); ++i) {
    if (tensors[i - 1].offset + tensors[i - 1].length > tensors[i].offset) {
      return std::make_pair(tensors[i - 1].name, tensors[i].name);
    }
  }
  return std::nullopt;
}

Layout ToRegions(const FileLayout& file) {
  return Build(
      file,
      [](const Tensor& t) {
        return Region{t.dtype, t.offset, t.length, false, 0};
      },
      [](uint64_t at, uint64_t n, const Tensor*, const Tensor*) {
        return Region{codec::DType::kBytes, at, n, false, 0};
      });
}

namespace {

// Which base tensor each tensor of `target` is taken against (ToDeltaRegions).
class TensorMatch {
 public:
  // A tensor's match: a tensor of the base (source 0) or of reference k
  // (source k).
  struct Match {
    const Tensor* tensor = nullptr;
    uint32_t source = 0;
  };
  TensorMatch(const FileLayout& target, const FileLayout& base, const std::vector<const FileLayout*>& references,
              bool equal_only = false) {
    std::map<std::string, const Tensor*> by_name;
    for (const Tensor& t : base.tensors) by_name[t.name] = &t;
    // The base's tensors first: of equal contents, the base's is taken.
    std::map<std::pair<uint64_t, codec::DType>, Match> by_content;
    for (uint32_t source = 0; source <= references.size(); ++source) {
      for (const Tensor& t : source == 0 ? base.tensors : references[source - 1]->tensors) {
        if (t.content && !t.strided) by_content.emplace(std::make_pair(*t.content, t.dtype), Match{&t, source});
      }
    }
    for (const Tensor& t : target.tensors) {
      Match twin;
      if (auto it = by_name.find(t.name); it != by_name.end()) {
        const Tensor* b = it->second;
        if (b->dtype == t.dtype && b->shape == t.shape && b->length == t.length) twin.tensor = b;
      }
      const bool twin_same = twin.tensor != nullptr && t.content && twin.tensor->content == t.content;
      if (equal_only && !twin_same) twin = Match{};
      if (!twin_same && t.content && !t.strided) {
        auto it = by_content.find(std::make_pair(*t.content, t.dtype));
        if (it != by_content.end() && it->second.tensor->length == t.length) {
          twin = it->second;
          Shared& counted = twin.source == 0 ? shared_ : referenced_;
          ++counted.tensors;
          counted.bytes += t.length;
        }
      }
      if (twin.tensor != nullptr) of_[&t] = twin;
    }
  }
  Match Of(const Tensor* t) const {
    if (t == nullptr) return Match{};
    auto it = of_.find(t);
    return it == of_.end() ? Match{} : it->second;
  }
  // The base's tensor `t` is taken against, if any.
  const Tensor* InBase(const Tensor* t) const {
    const Match m = Of(t);
    return m.source == 0 ? m.tensor : nullptr;
  }
  // Tensors taken against a base tensor of the same content, not their
  // name twin; and those taken against a reference's.
  const Shared& shared() const { return shared_; }
  const Shared& referenced() const { return referenced_; }

 private:
  std::map<const Tensor*, Match> of_;
  Shared shared_;
  Shared referenced_;
};

}  // namespace

std::vector<std::pair<size_t, size_t>> TensorsTakenUnderOtherNames(const FileLayout& target,
                                                                   const container::Layout& regions,
                                                                   const FileLayout& base) {
  return TensorsTakenFrom(target, regions, base, 0, /*any_name=*/false);
}

std::vector<std::pair<size_t, size_t>> TensorsTakenFrom(const FileLayout& target, const container::Layout& regions,
                                                        const FileLayout& source_layout, uint32_t source,
                                                        bool any_name) {
  const FileLayout& base = source_layout;
  std::map<uint64_t, size_t> at;  // base tensors by offset
  for (size_t i = 0; i < base.tensors.size(); ++i) at.emplace(base.tensors[i].offset, i);
  std::vector<std::pair<size_t, size_t>> taken;
  size_t r = 0;
  for (size_t i = 0; i < target.tensors.size(); ++i) {
    const Tensor& t = target.tensors[i];
    while (r < regions.regions.size() && regions.regions[r].offset + regions.regions[r].length <= t.offset) ++r;
    if (r == regions.regions.size()) break;
    const Region& region = regions.regions[r];
    if (!region.delta || region.source != source || t.offset < region.offset ||
        t.offset + t.length > region.offset + region.length) {
      continue;
    }
    const auto b = at.find(region.base_offset + (t.offset - region.offset));
    if (b == at.end()) continue;
    const Tensor& from = base.tensors[b->second];
    if (from.length == t.length && from.dtype == t.dtype &&
        (any_name || from.name != t.name || from.shape != t.shape)) {
      taken.emplace_back(i, b->second);
    }
  }
  return taken;
}

Shared SharedByContent(const FileLayout& target, const FileLayout& base) {
  return TensorMatch(target, base, {}).shared();
}

Shared TakenFromReferences(const FileLayout& target, const FileLayout& base,
                           const std::vector<const FileLayout*>& references) {
  return TensorMatch(target, base, references).referenced();
}

Layout ToDeltaRegions(const FileLayout& target, const FileLayout& base,
                      const std::vector<const FileLayout*>& references, bool equal_only) {
  const TensorMatch match(target, base, references, equal_only);
  auto twin_of = [&](const Tensor* t) { return match.InBase(t); };
  // The opaque prefix (a safetensors header, a zip's first local header) of each file.
  const uint64_t target_head = target.tensors.empty() ? 0 : target.tensors.front().offset;
  const uint64_t base_head = base.tensors.empty() ? 0 : base.tensors.front().offset;
  return Build(
      target,
      [&](const Tensor& t) {
        if (const TensorMatch::Match twin = match.Of(&t); twin.tensor != nullptr) {
          return Region{t.dtype, t.offset, t.length, true, twin.tensor->offset, 0, twin.source};
        }
        return Region{t.dtype, t.offset, t.length, false, 0};
      },
      [&](uint64_t at, uint64_t n, const Tensor* before, const Tensor* after) {
        if (at == 0 && n == target_head && target_head == base_head && target_head > 0) {
          return Region{codec::DType::kBytes, 0, n, true, 0};
        }
        // Between two tensors whose twins lie the same distance apart in
        // the base, the gap is XORed with the base's gap.
        const Tensor* b = twin_of(before);
        const Tensor* a = twin_of(after);
        if (b != nullptr && a != nullptr && a->offset >= b->offset + b->length &&
            a->offset - (b->offset + b->length) == n) {
          return Region{codec::DType::kBytes, at, n, true, b->offset + b->length};
        }
        // Otherwise the base's corresponding opaque range, if it has one,
        // is zstd history: its header before the first tensor, its tail
        // after the last, its gap between the twins. Small gaps (zip local
        // headers) are not worth it: they join the typed run before them.
        uint64_t from = 0, to = 0;
        if (before == nullptr) {
          to = base_head;
        } else if (after == nullptr) {
          from = base.tensors.empty() ? 0 : base.tensors.back().offset + base.tensors.back().length;
          to = base.size;
        } else if (n > RegionBuilder::kAbsorbBytes && b != nullptr && a != nullptr &&
                   a->offset > b->offset + b->length) {
          from = b->offset + b->length;
          to = a->offset;
        }
        if (to > from && to - from <= container::kMaxPrefixBytes) {
          return Region{codec::DType::kBytes, at, n, false, from, to - from};
        }
        return Region{codec::DType::kBytes, at, n, false, 0};
      });
}

}  // namespace zipnn::formats

namespace zipnn::formats {

uint64_t ContentKey(const ContentId& id) {
  uint64_t key = 0;
  for (size_t i = 0; i < 8; ++i) key = key << 8 | id.bytes[i];
  return key;
}

std::optional<ContentId> TensorFingerprint(const FileLayout& file) {
  if (file.tensors.empty()) return std::nullopt;
  std::vector<const Tensor*> sorted;
  for (const Tensor& t : file.tensors) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](const Tensor* a, const Tensor* b) { return a->name < b->name; });
  // Each field is length- or count-prefixed, so no two tensor lists hash
  // the same bytes.
  Hasher hasher;
  auto number = [&](uint64_t n) {
    uint8_t le[8];
    StoreLE<uint64_t>(le, n);
    hasher.Update(le, sizeof le);
  };
  for (const Tensor* t : sorted) {
    number(t->name.size());
    hasher.Update(t->name.data(), t->name.size());
    number(static_cast<uint64_t>(t->dtype));
    number(t->shape.size());
    for (const uint64_t d : t->shape) number(d);
    number(DataBytes(*t));
  }
  return hasher.Finish();
}

}  // namespace zipnn::formats
