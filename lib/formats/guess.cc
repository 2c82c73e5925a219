#include "lib/formats/guess.h"

#include <zstd.h>

#include <algorithm>
#include <vector>

#include "lib/codec/grouping.h"
#include "lib/codec/huffman.h"

namespace zipnn::formats {

namespace {

// Order-0 bytes of `data` grouped as `dtype`.
double GroupedEstimate(codec::DType dtype, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> grouped(data.size());
  codec::SplitGroups(dtype, data.data(), data.size(), grouped.data());
  double bytes = 0;
  for (int g = 0; g < codec::GroupCount(dtype, data.size()); ++g) {
    const size_t n = codec::GroupSize(dtype, data.size(), g);
    bytes += codec::EntropyBits(codec::CountBytes(grouped.data() + codec::GroupOffset(dtype, data.size(), g), n)) / 8;
  }
  return bytes;
}

}  // namespace

Result<std::optional<codec::DType>> GuessDType(const ByteSource& file) {
  const uint64_t size = file.size();
  if (size < kGuessBlockBytes) return std::optional<codec::DType>();
  // Blocks start on multiples of 8, so every candidate sees whole elements.
  std::vector<uint8_t> sample;
  const uint64_t blocks = std::min<uint64_t>(kGuessBlocks, size / kGuessBlockBytes);
  const uint64_t stride = (size - kGuessBlockBytes) / std::max<uint64_t>(1, blocks - 1);
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t at = std::min<uint64_t>((b * stride) & ~uint64_t{7}, size - kGuessBlockBytes) & ~uint64_t{7};
    const size_t old = sample.size();
    sample.resize(old + kGuessBlockBytes);
    ZIPNN_RETURN_IF_ERROR(file.ReadAt(at, sample.data() + old, kGuessBlockBytes));
  }
  // The bar to beat: plain bytes, and zstd, which goes below order-0 on
  // text and repeated structure.
  std::vector<uint8_t> z(ZSTD_compressBound(sample.size()));
  const size_t zstd_bytes = ZSTD_compress(z.data(), z.size(), sample.data(), sample.size(), 1);
  double bar = GroupedEstimate(codec::DType::kBytes, sample);
  if (!ZSTD_isError(zstd_bytes)) bar = std::min(bar, static_cast<double>(zstd_bytes));

  // Wider groupings also separate the bytes of narrower elements (fp64
  // groups of bf16 data still split exponents from mantissas), and more,
  // smaller groups make a sample's entropy look lower. So the narrowest
  // width within kGuessWidthSlack of the best estimate is the guess.
  const codec::DType candidates[] = {codec::DType::kBF16, codec::DType::kF32, codec::DType::kF64};
  double estimate[3];
  double best = bar * (1 - kGuessMinGain);
  for (int i = 0; i < 3; ++i) {
    estimate[i] = GroupedEstimate(candidates[i], sample);
    best = std::min(best, estimate[i]);
  }
  if (best >= bar * (1 - kGuessMinGain)) return std::optional<codec::DType>();
  for (int i = 0; i < 3; ++i) {
    if (estimate[i] <= best * (1 + kGuessWidthSlack)) return std::optional<codec::DType>(candidates[i]);
  }
  return std::optional<codec::DType>();
}

}  // namespace zipnn::formats
