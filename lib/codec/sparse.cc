#include "lib/codec/sparse.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "lib/base/cpu.h"
#include "lib/base/endian.h"

namespace zipnn::codec {

namespace {

constexpr size_t kHeaderBytes = 12;  // value count, sizes of the code and value parts
constexpr int kDirectCodes = 16;     // codes below this are the run length itself
// Code 12 + k covers run lengths [2^k, 2^(k+1)); runs are shorter than a
// group, and groups are at most 2^26 bytes.
constexpr int kCodeOffset = 12;
constexpr int kMaxExtraBits = 25;
constexpr int kCodeCount = kCodeOffset + kMaxExtraBits + 1;
// Length codes have a smooth spread over at most kCodeCount values; 11
// bits model them closely.
constexpr int kCodeBits = 11;

// Precision of a part's model: enough to tell apart probabilities near
// 1/n, at most `most`. Decoding a part fills 2^bits table slots, which for
// short parts costs more time than the symbols.
int Precision(size_t n, int most) {
  const int width = 64 - __builtin_clzll(n);
  return std::max(kRansMinProbabilityBits + 1, std::min(width, most));
}

// Extra bits, least-significant first, in a little-endian bit stream.
class BitWriter {
 public:
  explicit BitWriter(Buffer& out) : out_(out) {}
  void Put(uint64_t v, int bits) {
    acc_ |= v << used_;
    used_ += bits;
    while (used_ >= 8) {
      out_.Extend(1)[0] = static_cast<uint8_t>(acc_);
      acc_ >>= 8;
      used_ -= 8;
    }
  }
  void Flush() {
    if (used_ > 0) out_.Extend(1)[0] = static_cast<uint8_t>(acc_);
    acc_ = 0;
    used_ = 0;
  }

 private:
  Buffer& out_;
  uint64_t acc_ = 0;
  int used_ = 0;
};

struct CodeTable {
  std::array<uint32_t, kCodeCount> base{};
  std::array<uint8_t, kCodeCount> extra{};
  constexpr CodeTable() {
    for (int c = 0; c < kCodeCount; ++c) {
      const bool direct = c < kDirectCodes;
      extra[c] = static_cast<uint8_t>(direct ? 0 : c - kCodeOffset);
      base[c] = direct ? static_cast<uint32_t>(c) : uint32_t{1} << (c - kCodeOffset);
    }
  }
};
constexpr CodeTable kCodes;

}  // namespace

ZIPNN_HOT void SparseEncoder::Plan(const uint8_t* in, size_t n, const GroupCounts& counts) {
  const Histogram& group = counts.total;
  const size_t values = n - group[0];
  codes_.Resize(values);
  values_.Resize(values);
  extra_.Clear();
  BitWriter extra(extra_);
  uint8_t* code = codes_.data();
  uint8_t* value = values_.data();
  size_t last = 0;  // one past the previous value
  auto put = [&](size_t at) {
    const size_t run = at - last;
    if (run < kDirectCodes) {
      *code++ = static_cast<uint8_t>(run);
    } else {
      const int k = 63 - __builtin_clzll(run);
      *code++ = static_cast<uint8_t>(kCodeOffset + k);
      extra.Put(run - (size_t{1} << k), k);
    }
    *value++ = in[at];
    last = at + 1;
  };
  size_t i = 0;
  // Zero words are skipped whole; a non-zero word is taken byte by byte.
  for (; i + 8 <= n; i += 8) {
    uint64_t w = LoadLE<uint64_t>(in + i);
    while (w != 0) {
      const int byte = __builtin_ctzll(w) / 8;
      put(i + static_cast<size_t>(byte));
      w &= ~(uint64_t{0xff} << (8 * byte));
    }
  }
  for (; i < n; ++i) {
    if (in[i] != 0) put(i);
  }
  extra.Flush();

  Histogram value_counts = group;
  value_counts[0] = 0;
  code_coder_.PlanModel(CountBytes(codes_.data(), values), values, Precision(values, kCodeBits));
  value_coder_.PlanModel(value_counts, values, Precision(values, kRansProbabilityBits));
  estimated_size_ =
      kHeaderBytes + code_coder_.EstimatedSingleSize() + value_coder_.EstimatedSingleSize() + extra_.size();
}

void SparseEncoder::Encode(Buffer& out) {
  const size_t head = out.size();
  out.Extend(kHeaderBytes);
  const size_t codes_at = out.size();
  // A code and a value per non-zero byte: two chains at once.
  const size_t values_at =
      codes_at + code_coder_.EncodeSinglePair(codes_.data(), value_coder_, values_.data(), values_.size(), out);
  StoreLE<uint32_t>(out.data() + head, static_cast<uint32_t>(values_.size()));
  StoreLE<uint32_t>(out.data() + head + 4, static_cast<uint32_t>(values_at - codes_at));
  StoreLE<uint32_t>(out.data() + head + 8, static_cast<uint32_t>(out.size() - values_at));
  out.Append(extra_.data(), extra_.size());
}

size_t SparseDecoder::DeclaredCount(const uint8_t* in, size_t size) {
  return size < kHeaderBytes ? 0 : LoadLE<uint32_t>(in);
}

template <typename Put>
ZIPNN_HOT Status SparseDecoder::Walk(const uint8_t* in, size_t size, size_t n, Put&& put) {
  if (size < kHeaderBytes) return Corruption("sparse payload shorter than its header");
  const size_t values = LoadLE<uint32_t>(in);
  const size_t codes_size = LoadLE<uint32_t>(in + 4);
  const size_t values_size = LoadLE<uint32_t>(in + 8);
  // Checked before anything is allocated by the count.
  if (values == 0 || values > n) return Corruption("sparse value count out of range");
  if (codes_size > size - kHeaderBytes || values_size > size - kHeaderBytes - codes_size) {
    return Corruption("sparse parts exceed the payload");
  }
  const uint8_t* codes_in = in + kHeaderBytes;
  const uint8_t* values_in = codes_in + codes_size;
  const uint8_t* extra = values_in + values_size;
  const size_t extra_size = size - kHeaderBytes - codes_size - values_size;
  codes_.Resize(values);
  values_.Resize(values);
  Status st = code_decoder_.DecodeSinglePair(codes_in, codes_size, codes_.data(), value_decoder_, values_in,
                                             values_size, values_.data(), values);
  if (!st.ok()) return Annotate(st, "sparse codes and values");

  const uint64_t extra_bits = 8 * static_cast<uint64_t>(extra_size);
  uint64_t bit = 0;  // read position in the extra bits
  size_t at = 0;
  for (size_t i = 0; i < values; ++i) {
    const uint8_t c = codes_.data()[i];
    // One test for every way a damaged payload could reach out of bounds:
    // an unknown code, extra bits past their part, a run past the group.
    if (__builtin_expect((c >= kCodeCount) | (bit > extra_bits), 0)) {
      return Corruption("sparse length code " + std::to_string(c) + " is invalid or its bits are missing");
    }
    // Reads 8 bytes at most 8 past the extra bits' end: the input padding.
    const uint64_t word = LoadLE<uint64_t>(extra + bit / 8) >> (bit % 8);
    const int k = kCodes.extra[c];
    at += kCodes.base[c] + (word & ((uint64_t{1} << k) - 1));
    bit += k;
    if (__builtin_expect(at >= n, 0)) return Corruption("sparse runs reach past the group");
    put(i, at++);
  }
  if (bit > extra_bits || (bit + 7) / 8 != extra_size) {
    return Corruption("sparse extra bits do not fill their part");
  }
  return OkStatus();
}

Status SparseDecoder::Decode(const uint8_t* in, size_t size, uint8_t* out, size_t n) {
  std::memset(out, 0, n);
  return Walk(in, size, n, [&](size_t i, size_t at) { out[at] = values_.data()[i]; });
}

Status SparseDecoder::DecodeNonZero(const uint8_t* in, size_t size, size_t n) {
  count_ = 0;
  // Positions fit 32 bits: groups are at most 2^26 bytes. A count out of
  // range is Walk's to refuse, before anything is written.
  const size_t declared = DeclaredCount(in, size);
  if (declared <= n) positions_.Resize(declared * sizeof(uint32_t));
  uint32_t* positions = reinterpret_cast<uint32_t*>(positions_.data());
  ZIPNN_RETURN_IF_ERROR(Walk(in, size, n, [&](size_t i, size_t at) { positions[i] = static_cast<uint32_t>(at); }));
  count_ = declared;
  return OkStatus();
}

}  // namespace zipnn::codec
