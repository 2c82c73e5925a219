#include "lib/codec/chunk_codec.h"

#include <algorithm>
#include <cstring>

#include "lib/base/endian.h"
#include "lib/codec/entropy.h"
#include "lib/codec/grouping.h"

namespace zipnn::codec {

Result<ChunkGroups> ParseChunkRecord(DType dtype, const uint8_t* record, size_t size, size_t chunk_len, Coder newest) {
  ChunkGroups g;
  if (size < 1) return Corruption("empty chunk record");
  g.count = record[0];
  const int expected = GroupCount(dtype, chunk_len);
  if (g.count != expected) {
    return Corruption("chunk record has " + std::to_string(g.count) + " groups, expected " + std::to_string(expected));
  }
  g.payload_start = 1 + kGroupEntryBytes * static_cast<size_t>(g.count);
  if (size < g.payload_start) return Corruption("chunk record shorter than its group table");
  uint64_t payload = 0;
  for (int i = 0; i < g.count; ++i) {
    const uint8_t* e = record + 1 + kGroupEntryBytes * static_cast<size_t>(i);
    std::optional<Coder> coder = CoderFromByte(e[0]);
    if (!coder || *coder > newest) return Corruption("chunk record names unknown coder " + std::to_string(e[0]));
    g.group[i] = GroupEntry{*coder, LoadLE<uint32_t>(e + 1), static_cast<uint32_t>(GroupSize(dtype, chunk_len, i))};
    payload += g.group[i].stored;
  }
  if (payload != size - g.payload_start) {
    return Corruption("chunk record group sizes do not add up to the record size");
  }
  return g;
}

ClassKeys KeysOf(DType dtype, Transform transform, const uint8_t* base, size_t n) {
  if (!InfoOf(transform).classed || base == nullptr || !DTypeRotatesSign(dtype)) return ClassKeys{};
  const size_t width = static_cast<size_t>(DTypeWidth(dtype));
  return ClassKeys{base + width - 1, width, n / width};
}

ChunkEncoder::ChunkEncoder(CoderPolicy policy, int zstd_level, TransformPolicy transform)
    : groups_(policy, zstd_level, /*prefer_lz=*/false), zstd_level_(zstd_level), transform_(transform) {}

double ChunkEncoder::EstimatedBytes(DType grouping, const uint8_t* grouped, size_t n) {
  double bytes = 0;
  for (int g = 0; g < GroupCount(grouping, n); ++g) {
    const size_t len = GroupSize(grouping, n, g);
    const uint8_t* in = grouped + GroupOffset(grouping, n, g);
    if (len < kChooserSampleBytes) {
      bytes += std::min<double>(static_cast<double>(len), EntropyBits(CountBytes(in, len)) / 8);
      continue;
    }
    const Histogram sample = CountSample(in, len, kChooserSampleBlock);
    const double sampled = static_cast<double>(len / kChooserSampleBlock * 8);
    bytes += std::min<double>(1.0, EntropyBits(sample) / 8 / sampled) * static_cast<double>(len);
  }
  return bytes;
}

Transform ChunkEncoder::ChooseTransform(DType dtype, const uint8_t* raw, size_t n, const uint8_t* base) {
  // A sample of the chunk: the first kChooserWindow bytes of every
  // kChooserStride (whole elements: the window is a multiple of every
  // width), or all of a small chunk. Every candidate is taken and grouped
  // on the sample only; the chosen one is then taken in full.
  const size_t width = static_cast<size_t>(DTypeWidth(dtype));
  const size_t whole = n / width * width;
  const uint8_t* target = raw;
  const uint8_t* against = base;
  size_t m = whole;
  if (whole >= kChooserSampleBytes) {
    sample_.Resize(2 * (whole / kChooserStride + 1) * kChooserWindow);
    uint8_t* t = sample_.data();
    uint8_t* b = t + sample_.size() / 2;
    m = 0;
    for (size_t at = 0; at + kChooserWindow <= whole; at += kChooserStride, m += kChooserWindow) {
      std::memcpy(t + m, raw + at, kChooserWindow);
      std::memcpy(b + m, base + at, kChooserWindow);
    }
    target = t;
    against = b;
  }
  delta_.Resize(m);
  other_.Resize(m);
  std::optional<Transform> best;
  double best_bytes = 0;
  for (const TransformInfo& t : kTransforms) {
    if (!Tries(transform_, t.transform, dtype)) continue;
    if (m == 0) return t.transform;
    t.take(dtype, delta_.data(), target, against, m);
    const DType grouping = t.grouping(dtype);
    SplitGroups(grouping, delta_.data(), m, other_.data());
    const double bytes = EstimatedBytes(grouping, other_.data(), m);
    // Ties keep the earlier (the XOR).
    if (!best || bytes < best_bytes) {
      best = t.transform;
      best_bytes = bytes;
    }
  }
  return best.value_or(Transform::kXor);
}

Transform ChunkEncoder::TakeDelta(DType dtype, const uint8_t* raw, size_t n, const uint8_t* base) {
  // The one transform the policy tries here, or the cheapest of several.
  size_t tried = 0;
  Transform transform = Transform::kXor;
  for (const TransformInfo& t : kTransforms) {
    if (Tries(transform_, t.transform, dtype) && tried++ == 0) transform = t.transform;
  }
  if (tried > 1) transform = ChooseTransform(dtype, raw, n, base);
  const TransformInfo& info = InfoOf(transform);
  delta_.Resize(n);
  grouped_.Resize(n);
  info.take(dtype, delta_.data(), raw, base, n);
  SplitGroups(info.grouping(dtype), delta_.data(), n, grouped_.data());
  return transform;
}

Transform ChunkEncoder::Encode(const ChunkInput& chunk, Buffer& out) {
  const DType dtype = chunk.dtype;
  const uint8_t* raw = chunk.raw;
  const uint8_t* base = chunk.base;
  const size_t n = chunk.n;
  Transform transform = Transform::kXor;
  if (base != nullptr) {
    transform = TakeDelta(dtype, raw, n, base);
  } else {
    grouped_.Resize(n);
    SplitGroups(dtype, raw, n, grouped_.data());
  }
  // What the raw-skip memory learnt holds for the groups of one transform.
  if (transform != last_) skip_.fill(0);
  last_ = transform;
  // Unknown bytes (headers, pickles) have no byte-position structure; an
  // LZ coder finds their repeats.
  groups_.set_prefer_lz(dtype == DType::kBytes);
  groups_.set_zstd_level(dtype == DType::kBytes && n <= kSmallOpaqueBytes ? std::max(zstd_level_, kSmallOpaqueLevel)
                                                                          : zstd_level_);
  groups_.set_delta(base != nullptr);
  groups_.set_zstd_prefix(chunk.prefix, chunk.prefix_size);
  groups_.set_class_keys(KeysOf(dtype, transform, base, n));
  groups_.set_lanes(InfoOf(transform).classed);

  const int count = GroupCount(dtype, n);
  const size_t table = out.size() + 1;
  out.Extend(1)[0] = static_cast<uint8_t>(count);
  out.Extend(kGroupEntryBytes * static_cast<size_t>(count));
  for (int g = 0; g < count; ++g) {
    const uint8_t* in = grouped_.data() + GroupOffset(dtype, n, g);
    const size_t len = GroupSize(dtype, n, g);
    const size_t before = out.size();
    Coder coder;
    if (len == 0) {
      coder = Coder::kZero;
    } else if (skip_[g] > 0 && !IsAllZero(in, len)) {
      --skip_[g];
      coder = GroupEncoder::EncodeRaw(in, len, out);
    } else {
      coder = groups_.Encode(in, len, n, out);
      if (coder == Coder::kRaw) skip_[g] = AutoRule::kRawSkipChunks;
    }
    uint8_t* entry = out.data() + table + kGroupEntryBytes * static_cast<size_t>(g);
    entry[0] = static_cast<uint8_t>(coder);
    StoreLE<uint32_t>(entry + 1, static_cast<uint32_t>(out.size() - before));
  }
  return transform;
}

namespace {
bool AllZero(const ChunkGroups& g) {
  return std::all_of(g.group.begin(), g.group.begin() + g.count,
                     [](const GroupEntry& e) { return e.coder == Coder::kZero; });
}
}  // namespace

bool IsUnchangedDelta(DType dtype, const uint8_t* record, size_t size, size_t chunk_len) {
  auto g = ParseChunkRecord(dtype, record, size, chunk_len);
  return g.ok() && AllZero(*g);
}

Status ChunkDecoder::Decode(const ChunkRecord& chunk, uint8_t* out) {
  const DType dtype = chunk.dtype;
  const Transform transform = chunk.transform;
  const uint8_t* base = chunk.base;
  const size_t n = chunk.n;
  if (static_cast<size_t>(transform) >= kTransformCount) return Corruption("an unknown delta transform");
  const TransformInfo& info = InfoOf(transform);
  // Without a base a chunk is stored as it is, which the first transform
  // (XOR) stands for.
  if (base == nullptr ? transform != kTransforms[0].transform : !info.applies(dtype)) {
    return Corruption(base == nullptr
                          ? "a " + std::string(info.name) + " delta in a region without a base"
                          : "a " + std::string(info.name) + " delta in a " + std::string(DTypeName(dtype)) + " region");
  }
  ZIPNN_ASSIGN_OR_RETURN(ChunkGroups g, ParseChunkRecord(dtype, chunk.record, chunk.size, n, newest_));
  // A delta that changes nothing (a frozen tensor, a layer a fine-tune
  // left alone) is its base's bytes: no group is decoded, merged or
  // transformed.
  if (base != nullptr && info.from_base && AllZero(g)) {
    if (out != base) std::memmove(out, base, n);
    return OkStatus();
  }
  if (base != nullptr && info.from_base && Patchable(chunk, g)) return Patch(chunk, g, out);
  groups_.set_zstd_prefix(chunk.prefix, chunk.prefix_size);
  groups_.set_class_keys(KeysOf(dtype, transform, base, n));
  grouped_.Resize(n);
  const uint8_t* payload = chunk.record + g.payload_start;
  for (int i = 0; i < g.count; ++i) {
    const GroupEntry& e = g.group[i];
    // The lanes coder is written only for the groups of a classed
    // transform's delta (the difference).
    if (e.coder == Coder::kClassedRans && !info.classed) {
      return Corruption("group " + std::to_string(i) + " is rans-classed in a chunk that is not a difference");
    }
    Status s = groups_.Decode(e.coder, payload, e.stored, grouped_.data() + GroupOffset(dtype, n, i), e.raw);
    if (!s.ok()) {
      return Annotate(s, "group " + std::to_string(i) + " (" + std::string(CoderName(e.coder)) + ")");
    }
    payload += e.stored;
  }
  // In place on the base (out == base), the merged delta needs a buffer
  // of its own.
  uint8_t* merged = out;
  if (out == base) {
    merged_.Resize(n);
    merged = merged_.data();
  }
  MergeGroups(info.grouping(dtype), grouped_.data(), n, merged);
  if (base != nullptr) info.undo(dtype, out, merged, base, n);
  return OkStatus();
}

bool ChunkDecoder::Patchable(const ChunkRecord& chunk, const ChunkGroups& g) {
  // The tail group (at most 7 bytes, after the element groups) may be
  // stored raw.
  const int tail = DTypeWidth(InfoOf(chunk.transform).grouping(chunk.dtype));
  size_t nonzero = 0;
  const uint8_t* payload = chunk.record + g.payload_start;
  for (int i = 0; i < g.count; ++i) {
    const GroupEntry& e = g.group[i];
    if (e.coder == Coder::kSparse) {
      nonzero += SparseDecoder::DeclaredCount(payload, e.stored);
    } else if (e.coder != Coder::kZero && !(i == tail && e.coder == Coder::kRaw)) {
      return false;
    }
    payload += e.stored;
  }
  return nonzero <= chunk.n / kPatchShare;
}

Status ChunkDecoder::Patch(const ChunkRecord& chunk, const ChunkGroups& g, uint8_t* out) {
  const TransformInfo& info = InfoOf(chunk.transform);
  const DType grouping = info.grouping(chunk.dtype);
  const size_t n = chunk.n;
  const size_t width = static_cast<size_t>(DTypeWidth(grouping));
  const size_t whole = n / width * width;
  if (out != chunk.base) std::memmove(out, chunk.base, n);
  if (delta_.size() < whole) {
    const size_t had = delta_.size();
    delta_.Resize(whole);
    std::memset(delta_.data() + had, 0, whole - had);
  }
  uint8_t* delta = delta_.data();
  touched_.clear();
  // Clears what was written to the delta, so that it is all zero again.
  auto clear = [&] {
    for (const uint32_t e : touched_) std::memset(delta + size_t{e} * width, 0, width);
    touched_.clear();
  };
  const uint8_t* payload = chunk.record + g.payload_start;
  for (int i = 0; i < g.count; ++i) {
    const GroupEntry& e = g.group[i];
    // The tail's bytes are XORed as they are, whatever the transform.
    if (e.coder == Coder::kRaw) {  // the tail (Patchable)
      for (size_t j = 0; j < e.raw; ++j) out[whole + j] ^= payload[j];
    } else if (e.coder == Coder::kSparse) {
      Status s = sparse_.DecodeNonZero(payload, e.stored, e.raw);
      if (!s.ok()) {
        clear();
        return Annotate(s, "group " + std::to_string(i) + " (sparse)");
      }
      const uint32_t* at = sparse_.positions();
      const uint8_t* value = sparse_.values();
      if (static_cast<size_t>(i) < width) {
        // Byte i of element at[j], in grouped order.
        for (size_t j = 0; j < sparse_.count(); ++j) {
          uint8_t* element = delta + size_t{at[j]} * width;
          uint64_t before = 0;
          std::memcpy(&before, element, width);
          if (before == 0) touched_.push_back(at[j]);
          element[i] = value[j];
        }
      } else {
        for (size_t j = 0; j < sparse_.count(); ++j) out[whole + at[j]] ^= value[j];
      }
    }
    payload += e.stored;
  }
  for (const uint32_t e : touched_) {
    uint8_t* target = out + size_t{e} * width;
    uint8_t merged[8];
    uint8_t base[8];
    MergeGroups(grouping, delta + size_t{e} * width, width, merged);
    std::memcpy(base, target, width);
    info.undo(chunk.dtype, target, merged, base, width);
  }
  clear();
  return OkStatus();
}

}  // namespace zipnn::codec
