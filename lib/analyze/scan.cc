#include "lib/analyze/scan.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <type_traits>

#include "lib/base/buffer.h"
#include "lib/base/strings.h"
#include "lib/codec/dtype.h"
#include "lib/formats/detect.h"

namespace zipnn::analyze {

namespace {

using codec::DType;

// Blocks of this many bytes (a whole number of elements of every width)
// are the unit of parallel work.
constexpr uint64_t kBlockBytes = 1u << 20;

// Value of an 8-bit float of `exp_bits` exponent bits; `e4m3` has no
// infinities and one NaN pattern per sign (OCP FP8).
double Fp8Value(uint8_t v, int exp_bits, bool e4m3) {
  const int man_bits = 7 - exp_bits;
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int e = (v >> man_bits) & ((1 << exp_bits) - 1);
  const int m = v & ((1 << man_bits) - 1);
  const double sign = (v & 0x80) ? -1.0 : 1.0;
  const int top = (1 << exp_bits) - 1;
  if (e4m3 ? (e == top && m == (1 << man_bits) - 1) : e == top) {
    return m != 0 || e4m3 ? std::nan("") : sign * HUGE_VAL;
  }
  if (e == 0) return sign * std::ldexp(m, 1 - bias - man_bits);
  return sign * std::ldexp((1 << man_bits) + m, e - bias - man_bits);
}

const std::array<double, 256>& Fp8Table(DType t) {
  static const auto make = [](int exp_bits, bool e4m3) {
    std::array<double, 256> table{};
    for (int v = 0; v < 256; ++v) table[v] = Fp8Value(static_cast<uint8_t>(v), exp_bits, e4m3);
    return table;
  };
  static const std::array<double, 256> kE4M3 = make(4, true), kE5M2 = make(5, false);
  return t == DType::kF8E4M3 ? kE4M3 : kE5M2;
}

double HalfValue(uint16_t v) {
  const int e = (v >> 10) & 0x1f;
  const int m = v & 0x3ff;
  const double sign = (v & 0x8000) ? -1.0 : 1.0;
  if (e == 31) return m != 0 ? std::nan("") : sign * HUGE_VAL;
  if (e == 0) return sign * std::ldexp(m, -24);
  return sign * std::ldexp(1024 + m, e - 25);
}

template <typename U>
U Load(const uint8_t* p) {
  U v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The element as a double, for the update norms.
template <typename U>
double Value(DType t, U bits) {
  switch (t) {
    case DType::kF32: {
      float f;
      const uint32_t b = static_cast<uint32_t>(bits);
      std::memcpy(&f, &b, 4);
      return f;
    }
    case DType::kBF16: {
      float f;
      const uint32_t b = static_cast<uint32_t>(bits) << 16;
      std::memcpy(&f, &b, 4);
      return f;
    }
    case DType::kF16:
      return HalfValue(static_cast<uint16_t>(bits));
    case DType::kF64: {
      double d;
      const uint64_t b = static_cast<uint64_t>(bits);
      std::memcpy(&d, &b, 8);
      return d;
    }
    case DType::kF8E4M3:
    case DType::kF8E5M2:
      return Fp8Table(t)[static_cast<uint8_t>(bits)];
    default:
      return 0;
  }
}

bool IsFloat(DType t) { return ExponentField(t).has_value(); }

// Statistics of one block: the part of ChangeStats indexed by the dtype's
// group, mapped to slots by the caller.
struct BlockStats {
  ChangeStats stats;
  std::vector<uint64_t> histogram;  // biased exponents of the target
};

template <typename U>
void CompareElements(DType t, const uint8_t* target, const uint8_t* reference, size_t count, bool histogram,
                     BlockStats& out) {
  constexpr int kBits = 8 * sizeof(U);
  const bool rotates = codec::DTypeRotatesSign(t);
  const bool is_float = IsFloat(t);
  std::array<uint64_t, 8> changed_bytes{};
  uint64_t changed = 0, non_finite = 0;
  double diff_sq = 0, ref_sq = 0;
  int exp_shift = 0;
  uint64_t exp_mask = 0;
  if (histogram && is_float) {
    const auto field = *ExponentField(t);
    exp_shift = kBits - 1 - field.first;
    exp_mask = (uint64_t{1} << field.first) - 1;
  }
  for (size_t i = 0; i < count; ++i) {
    const U a = Load<U>(target + i * sizeof(U));
    if (histogram && is_float) ++out.histogram[(static_cast<uint64_t>(a) >> exp_shift) & exp_mask];
    if (reference == nullptr) continue;
    const U b = Load<U>(reference + i * sizeof(U));
    U x = static_cast<U>(a ^ b);
    if (x != 0) {
      ++changed;
      // The byte groups hold the rotated element (the sign moved to bit
      // 0); rotation commutes with XOR.
      if (rotates) x = static_cast<U>(static_cast<U>(x << 1) | static_cast<U>(x >> (kBits - 1)));
      for (size_t k = 0; k < sizeof(U); ++k) changed_bytes[k] += ((x >> (8 * k)) & 0xff) != 0;
    }
    if (is_float) {
      const double va = Value<U>(t, a), vb = Value<U>(t, b);
      if (!std::isfinite(va) || !std::isfinite(vb)) {
        ++non_finite;
      } else {
        diff_sq += (va - vb) * (va - vb);
        ref_sq += vb * vb;
      }
    }
  }
  ChangeStats& s = out.stats;
  s.elements = count;
  if (is_float) s.float_elements = count;
  if (reference == nullptr) return;
  s.changed = changed;
  s.diff_sq = diff_sq;
  s.ref_sq = ref_sq;
  s.non_finite = non_finite;
  for (size_t k = 0; k < sizeof(U); ++k) {
    const int slot = GroupSlot(t, static_cast<int>(k));
    s.group_bytes[slot] += count;
    s.group_changed[slot] += changed_bytes[k];
  }
}

void CompareBlock(DType t, const uint8_t* target, const uint8_t* reference, size_t bytes, bool histogram,
                  BlockStats& out) {
  const size_t width = static_cast<size_t>(codec::DTypeWidth(t));
  const size_t count = bytes / width;
  switch (width) {
    case 1:
      return CompareElements<uint8_t>(t, target, reference, count, histogram, out);
    case 2:
      return CompareElements<uint16_t>(t, target, reference, count, histogram, out);
    case 4:
      return CompareElements<uint32_t>(t, target, reference, count, histogram, out);
    default:
      return CompareElements<uint64_t>(t, target, reference, count, histogram, out);
  }
}

// Every element of a tensor with no comparable reference counts as changed.
ChangeStats AllChanged(const formats::Tensor& t) {
  ChangeStats s;
  const int width = codec::DTypeWidth(t.dtype);
  s.elements = t.length / static_cast<uint64_t>(width);
  s.changed = s.elements;
  for (int g = 0; g < width; ++g) {
    const int slot = GroupSlot(t.dtype, g);
    s.group_bytes[slot] += s.elements;
    s.group_changed[slot] += s.elements;
  }
  return s;
}

TensorInfo InfoOf(const formats::Tensor& t) { return TensorInfo{t.name, t.dtype, t.shape}; }

// One block of work: a range of a target tensor and, if compared, the same
// range of its twin in the reference.
struct Block {
  size_t entry;  // index into ScanResult::tensors
  DType dtype;
  uint64_t offset, length;
  const formats::Tensor* twin;
  uint64_t twin_offset;
};

// Sums the squares of the finite values of n bytes of elements of type
// kType. Eight sums are kept, element i going to sum i mod 8, and added
// up in a fixed order at the end: each addition then waits only for the
// one eight elements before it, and the result is the same on every run.
// `lanes` and `bad` carry the sums and the count of non-finite values
// from elements [0, from), which another loop summed.
template <typename U, DType kType>
void SumSquaresOf(const uint8_t* p, size_t n, double& sum, uint64_t& finite, uint64_t& non_finite, size_t from = 0,
                  double* carried = nullptr, uint64_t carried_bad = 0) {
  constexpr size_t kLanes = 8;
  double lanes[kLanes] = {};
  if (carried != nullptr) std::memcpy(lanes, carried, sizeof lanes);
  uint64_t bad = carried_bad;
  const size_t count = n / sizeof(U);
  for (size_t i = from; i < count; ++i) {
    const double v = Value<U>(kType, Load<U>(p + i * sizeof(U)));
    const bool ok = std::isfinite(v);
    lanes[i % kLanes] += ok ? v * v : 0.0;
    bad += ok ? 0 : 1;
  }
  sum += ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  finite += count - bad;
  non_finite += bad;
}

// The same sums, eight elements at a time with AVX2: lanes 0-3 and 4-7 are
// two vectors of doubles, each element widened exactly, squared and added
// as the loop above does (a multiply, then an add: no fused multiply-add),
// so the sums are bit-identical to it. bf16 and fp32 only.
template <DType kType>
__attribute__((target("avx2"))) void SumSquaresAvx2(const uint8_t* p, size_t n, double& sum, uint64_t& finite,
                                                    uint64_t& non_finite) {
  using U = std::conditional_t<kType == DType::kBF16, uint16_t, uint32_t>;
  const size_t count = n / sizeof(U);
  const size_t whole = count - count % 8;
  __m256d low = _mm256_setzero_pd(), high = _mm256_setzero_pd();
  const __m256d magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffff));
  const __m256d infinity = _mm256_set1_pd(HUGE_VAL);
  uint64_t bad = 0;
  for (size_t i = 0; i < whole; i += 8) {
    __m256 f;
    if constexpr (kType == DType::kBF16) {
      const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i * 2));
      f = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
    } else {
      f = _mm256_loadu_ps(reinterpret_cast<const float*>(p + i * 4));
    }
    const __m256d halves[2] = {_mm256_cvtps_pd(_mm256_castps256_ps128(f)),
                               _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1))};
    __m256d* sums[2] = {&low, &high};
    for (int h = 0; h < 2; ++h) {
      const __m256d ok = _mm256_cmp_pd(_mm256_and_pd(halves[h], magnitude), infinity, _CMP_LT_OQ);
      *sums[h] = _mm256_add_pd(*sums[h], _mm256_and_pd(_mm256_mul_pd(halves[h], halves[h]), ok));
      bad += 4 - static_cast<uint64_t>(__builtin_popcount(static_cast<unsigned>(_mm256_movemask_pd(ok))));
    }
  }
  double lanes[8];
  _mm256_storeu_pd(lanes, low);
  _mm256_storeu_pd(lanes + 4, high);
  SumSquaresOf<U, kType>(p, n, sum, finite, non_finite, whole, lanes, bad);
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

void SumSquares(DType t, const uint8_t* p, size_t n, double& sum, uint64_t& finite, uint64_t& non_finite) {
  switch (t) {
    case DType::kF32:
      if (HasAvx2()) return SumSquaresAvx2<DType::kF32>(p, n, sum, finite, non_finite);
      return SumSquaresOf<uint32_t, DType::kF32>(p, n, sum, finite, non_finite);
    case DType::kBF16:
      if (HasAvx2()) return SumSquaresAvx2<DType::kBF16>(p, n, sum, finite, non_finite);
      return SumSquaresOf<uint16_t, DType::kBF16>(p, n, sum, finite, non_finite);
    case DType::kF16:
      return SumSquaresOf<uint16_t, DType::kF16>(p, n, sum, finite, non_finite);
    case DType::kF64:
      return SumSquaresOf<uint64_t, DType::kF64>(p, n, sum, finite, non_finite);
    case DType::kF8E4M3:
      return SumSquaresOf<uint8_t, DType::kF8E4M3>(p, n, sum, finite, non_finite);
    case DType::kF8E5M2:
      return SumSquaresOf<uint8_t, DType::kF8E5M2>(p, n, sum, finite, non_finite);
    default:
      return;  // not a float: no norm
  }
}

}  // namespace

Result<std::vector<TensorSummary>> SummarizeTensors(const ByteSource& file, const formats::FileLayout& layout,
                                                    ThreadPool& pool) {
  std::vector<TensorSummary> summaries(layout.tensors.size());
  const std::vector<size_t> order = formats::ReadingOrder(layout);
  auto produce = [&](size_t i) -> Result<bool> {
    const formats::Tensor& t = layout.tensors[order[i]];
    TensorSummary& s = summaries[i];
    s.tensor = InfoOf(t);
    Hasher hasher;
    thread_local Buffer block;
    double sum = 0;
    uint64_t finite = 0;
    for (uint64_t at = 0; at < t.length; at += kBlockBytes) {
      const size_t n = static_cast<size_t>(std::min(kBlockBytes, t.length - at));
      block.Resize(n);
      ZIPNN_RETURN_IF_ERROR(file.ReadAt(t.offset + at, block.data(), n));
      hasher.Update(block.data(), n);
      if (IsFloat(t.dtype)) SumSquares(t.dtype, block.data(), n, sum, finite, s.non_finite);
    }
    s.hash = hasher.Finish();
    s.rms = !IsFloat(t.dtype) ? std::nan("") : finite == 0 ? 0 : std::sqrt(sum / static_cast<double>(finite));
    return true;
  };
  ZIPNN_RETURN_IF_ERROR(RunOrdered<bool>(pool, summaries.size(), produce, [](size_t, bool) { return OkStatus(); }));
  return summaries;
}

Result<std::string> TextconvListing(const ContentId& id, const ByteSource& file, const formats::FileLayout& layout,
                                    ThreadPool& pool) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<TensorSummary> tensors, SummarizeTensors(file, layout, pool));
  std::string text = "checkpoint " + id.Hex() + ": " + std::to_string(file.size()) + " bytes, " +
                     formats::FormatName(layout.format) + ", " + Counted(layout.tensors.size(), "tensor") + "\n";
  char number[64];
  for (const TensorSummary& t : tensors) {
    text += t.tensor.name + " " + std::string(codec::DTypeName(t.tensor.dtype)) + " [" + JoinDims(t.tensor.shape, ",") +
            "] hash " + t.hash.Hex().substr(0, 16);
    if (!std::isnan(t.rms)) {
      std::snprintf(number, sizeof number, " rms %.6e", t.rms);
      text += number;
    }
    if (t.non_finite > 0) text += " non-finite " + std::to_string(t.non_finite);
    text += "\n";
  }
  return text;
}

std::optional<ContentId> TwinKey(std::string_view listing) {
  std::vector<std::string_view> lines;
  size_t at = listing.find('\n');
  while (at != std::string_view::npos && at + 1 < listing.size()) {
    const size_t end = listing.find('\n', at + 1);
    const std::string_view line = listing.substr(at + 1, end - at - 1);  // to the end when no '\n' follows
    if (!line.empty()) lines.push_back(line);
    at = end;
  }
  if (lines.empty()) return std::nullopt;
  std::sort(lines.begin(), lines.end());
  Hasher hasher;
  for (const std::string_view line : lines) {
    hasher.Update(line.data(), line.size());
    hasher.Update("\n", 1);
  }
  return hasher.Finish();
}

std::optional<ContentId> ListedCheckpoint(std::string_view listing) {
  constexpr std::string_view kStart = "checkpoint ";
  if (listing.substr(0, kStart.size()) != kStart || listing.size() < kStart.size() + 33 ||
      listing[kStart.size() + 32] != ':') {
    return std::nullopt;
  }
  return ContentId::FromHex(listing.substr(kStart.size(), 32));
}

std::vector<store::KeyedTensor> ListedTensors(std::string_view listing) {
  std::vector<store::KeyedTensor> tensors;
  size_t at = listing.find('\n');
  while (at != std::string_view::npos && at + 1 < listing.size()) {
    const size_t end = listing.find('\n', at + 1);
    const std::string_view line = listing.substr(at + 1, end == std::string_view::npos ? end : end - at - 1);
    at = end;
    // "<name> <dtype> [<dims>] hash <16 hex>[ rms ...]": read from the
    // hash back, as a name may hold anything.
    constexpr std::string_view kHash = "] hash ";
    const size_t hash = line.rfind(kHash);
    const size_t open = hash == std::string_view::npos ? hash : line.rfind(" [", hash);
    if (open == std::string_view::npos || hash + kHash.size() + 16 > line.size()) continue;
    const std::string_view hex = line.substr(hash + kHash.size(), 16);
    if (hex.find_first_not_of("0123456789abcdef") != std::string_view::npos) continue;
    const size_t space = line.rfind(' ', open - 1);
    if (space == std::string_view::npos || space == 0) continue;
    const std::optional<codec::DType> dtype = codec::ParseDType(line.substr(space + 1, open - space - 1));
    if (!dtype) continue;
    uint64_t bytes = static_cast<uint64_t>(codec::DTypeWidth(*dtype));
    bool fits = true;
    const std::string_view dims = line.substr(open + 2, hash - open - 2);
    for (size_t from = 0; fits && !dims.empty() && from <= dims.size();) {
      const size_t comma = std::min(dims.find(',', from), dims.size());
      const std::string_view d = dims.substr(from, comma - from);
      uint64_t n = 0;
      fits = !d.empty() && d.size() <= 19 && d.find_first_not_of("0123456789") == std::string_view::npos;
      for (const char c : d) n = n * 10 + static_cast<uint64_t>(c - '0');
      fits = fits && (n == 0 || bytes <= UINT64_MAX / n);
      bytes = fits ? bytes * n : 0;
      from = comma + 1;
    }
    if (!fits) continue;
    tensors.push_back(store::KeyedTensor{std::strtoull(std::string(hex).c_str(), nullptr, 16), bytes});
  }
  return tensors;
}

Result<ScanResult> ScanTensors(const ByteSource& target, const formats::FileLayout& target_layout,
                               const ByteSource* reference, const formats::FileLayout* reference_layout,
                               const std::function<bool(const std::string&)>& select, bool histograms,
                               ThreadPool& pool) {
  auto selected = [&](const std::string& name) { return !select || select(name); };
  std::map<std::string, const formats::Tensor*> twins;
  if (reference_layout != nullptr) {
    for (const formats::Tensor& t : reference_layout->tensors) twins[t.name] = &t;
  }
  ScanResult result;
  std::vector<Block> blocks;
  std::map<std::string, bool> seen;
  for (const size_t index : formats::ReadingOrder(target_layout)) {
    const formats::Tensor& t = target_layout.tensors[index];
    if (!selected(t.name)) continue;
    seen[t.name] = true;
    TensorChange change;
    change.tensor = InfoOf(t);
    const formats::Tensor* twin = nullptr;
    if (reference != nullptr) {
      auto it = twins.find(t.name);
      if (it == twins.end()) {
        change.status = TensorStatus::kAdded;
      } else if (it->second->dtype != t.dtype || it->second->shape != t.shape || it->second->length != t.length) {
        change.status = TensorStatus::kReshaped;
        change.before = InfoOf(*it->second);
      } else {
        twin = it->second;
      }
      if (twin == nullptr) change.stats = AllChanged(t);
    } else {
      change.stats.elements = t.length / static_cast<uint64_t>(codec::DTypeWidth(t.dtype));
      if (IsFloat(t.dtype)) change.stats.float_elements = change.stats.elements;
    }
    // Blocks read the target for the comparison or the histogram.
    if (twin != nullptr || (histograms && IsFloat(t.dtype))) {
      for (uint64_t at = 0; at < t.length; at += kBlockBytes) {
        blocks.push_back(Block{result.tensors.size(), t.dtype, t.offset + at, std::min(kBlockBytes, t.length - at),
                               twin, twin != nullptr ? twin->offset + at : 0});
      }
    }
    result.tensors.push_back(std::move(change));
  }

  std::map<DType, ExponentHistogram> by_dtype;
  auto produce = [&](size_t i) -> Result<BlockStats> {
    const Block& b = blocks[i];
    thread_local Buffer target_bytes, reference_bytes;
    target_bytes.Resize(b.length);
    ZIPNN_RETURN_IF_ERROR(target.ReadAt(b.offset, target_bytes.data(), b.length));
    if (b.twin != nullptr) {
      reference_bytes.Resize(b.length);
      ZIPNN_RETURN_IF_ERROR(reference->ReadAt(b.twin_offset, reference_bytes.data(), b.length));
    }
    BlockStats out;
    const bool histogram = histograms && IsFloat(b.dtype);
    if (histogram) out.histogram.assign(size_t{1} << ExponentField(b.dtype)->first, 0);
    CompareBlock(b.dtype, target_bytes.data(), b.twin != nullptr ? reference_bytes.data() : nullptr, b.length,
                 histogram, out);
    return out;
  };
  auto consume = [&](size_t i, BlockStats& out) -> Status {
    const Block& b = blocks[i];
    TensorChange& change = result.tensors[b.entry];
    if (b.twin != nullptr) change.stats.Add(out.stats);
    if (!out.histogram.empty()) {
      ExponentHistogram& h = by_dtype[b.dtype];
      if (h.counts.empty()) {
        h.dtype = b.dtype;
        h.bias = ExponentField(b.dtype)->second;
        h.counts.assign(out.histogram.size(), 0);
      }
      for (size_t e = 0; e < out.histogram.size(); ++e) h.counts[e] += out.histogram[e];
      h.total += out.stats.elements;
    }
    return OkStatus();
  };
  ZIPNN_RETURN_IF_ERROR(RunOrdered<BlockStats>(pool, blocks.size(), produce, consume));

  for (TensorChange& change : result.tensors) {
    if (reference != nullptr && change.status == TensorStatus::kChanged && change.stats.changed == 0) {
      change.status = TensorStatus::kFrozen;
    }
  }
  if (reference_layout != nullptr) {
    for (const formats::Tensor& t : reference_layout->tensors) {
      if (!selected(t.name) || seen.count(t.name) != 0) continue;
      TensorChange removed;
      removed.tensor = InfoOf(t);
      removed.status = TensorStatus::kRemoved;
      result.tensors.push_back(std::move(removed));
    }
  }
  for (auto& [dtype, h] : by_dtype) result.histograms.push_back(std::move(h));
  return result;
}

}  // namespace zipnn::analyze
