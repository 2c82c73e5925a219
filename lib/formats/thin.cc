#include "lib/formats/thin.h"

#include <algorithm>
#include <cstring>

namespace zipnn::formats {

namespace {

constexpr size_t kBlock = 4u << 20;

// Whether thinning rounds tensor t, the bytes before `at` taken already
// (a tensor that overlaps one before it, a view, is left). A tensor of
// one element stays exact: an optimizer's step count or a scale, which
// costs nothing to keep and would be wrong rounded (step 190 read as 192).
bool Rounds(const Tensor& t, uint64_t at) {
  if (!codec::Thinnable(t.dtype) || t.strided || t.offset < at) return false;
  return t.length >= 2 * static_cast<uint64_t>(codec::DTypeWidth(t.dtype));
}

}  // namespace

Result<std::vector<TensorError>> Thin(const CheckpointView& in, const codec::Precision& precision, ByteSink& out) {
  const FileLayout& layout = *in.layout;
  std::vector<TensorError> errors;
  std::vector<uint8_t> block;
  uint64_t at = 0;
  // Copies [at, end) as it is.
  auto copy = [&](uint64_t end) { return CopyRange(*in.source, at, end - at, out); };
  for (const Tensor& t : layout.tensors) {
    if (!Rounds(t, at)) continue;
    ZIPNN_RETURN_IF_ERROR(copy(t.offset));
    const size_t width = static_cast<size_t>(codec::DTypeWidth(t.dtype));
    const size_t step = kBlock / width * width;
    codec::ThinError err;
    for (uint64_t done = 0; done < t.length;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(step, t.length - done));
      block.resize(n);
      ZIPNN_RETURN_IF_ERROR(in.source->ReadAt(t.offset + done, block.data(), n));
      if (auto e = codec::ThinValues(t.dtype, precision, block.data(), n)) err.Merge(*e);
      ZIPNN_RETURN_IF_ERROR(out.Append(block.data(), n));
      done += n;
    }
    at = t.offset + t.length;
    errors.push_back(TensorError{t.name, err.max_abs, err.max_rel, err.changed, err.values, err.zeroed});
  }
  ZIPNN_RETURN_IF_ERROR(copy(layout.size));
  return errors;
}

ThinnedSource::ThinnedSource(const CheckpointView& in, const codec::Precision& precision)
    : in_(in), precision_(precision) {
  uint64_t at = 0;
  // The tensors Thin rounds, in the same order and with the same skips.
  for (const Tensor& t : in.layout->tensors) {
    if (!Rounds(t, at)) continue;
    const uint64_t width = static_cast<uint64_t>(codec::DTypeWidth(t.dtype));
    spans_.push_back(Span{t.offset, t.length / width * width, t.dtype});
    at = t.offset + t.length;
  }
}

Status ThinnedSource::ReadAt(uint64_t offset, void* out, size_t n) const {
  ZIPNN_RETURN_IF_ERROR(in_.source->ReadAt(offset, out, n));
  const uint64_t end = offset + n;
  auto first = std::upper_bound(spans_.begin(), spans_.end(), offset,
                                [](uint64_t at, const Span& s) { return at < s.offset + s.length; });
  uint8_t* const bytes = static_cast<uint8_t*>(out);
  for (auto s = first; s != spans_.end() && s->offset < end; ++s) {
    const uint64_t width = static_cast<uint64_t>(codec::DTypeWidth(s->dtype));
    const uint64_t from = std::max(offset, s->offset), to = std::min(end, s->offset + s->length);
    auto down = [&](uint64_t at) { return s->offset + (at - s->offset) / width * width; };
    // Elements wholly read are rounded where they are.
    const uint64_t inner_from = down(from + width - 1), inner_to = down(to);
    if (inner_to > inner_from) {
      codec::ThinValues(s->dtype, precision_, bytes + (inner_from - offset), static_cast<size_t>(inner_to - inner_from));
    }
    // An element the read's start or end cuts is read whole, rounded, and
    // its part copied.
    const uint64_t head = down(from), tail = down(to - 1);
    for (uint64_t element : {head, tail}) {
      const bool cut = element < from || element + width > to;
      if (!cut) continue;
      uint8_t value[8];
      ZIPNN_RETURN_IF_ERROR(in_.source->ReadAt(element, value, static_cast<size_t>(width)));
      codec::ThinValues(s->dtype, precision_, value, static_cast<size_t>(width));
      const uint64_t lo = std::max(element, from), hi = std::min(element + width, to);
      std::memcpy(bytes + (lo - offset), value + (lo - element), static_cast<size_t>(hi - lo));
      if (head == tail) break;
    }
  }
  return OkStatus();
}

}  // namespace zipnn::formats
