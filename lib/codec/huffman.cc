#include "lib/codec/huffman.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "lib/base/endian.h"

namespace zipnn::codec {

namespace {

constexpr uint32_t kTableSize = 1u << kHuffmanMaxBits;
constexpr uint64_t kTableMask = kTableSize - 1;
// After a refill at least 56 bits are buffered; that covers this many
// symbols of the longest code.
constexpr int kSymbolsPerRefill = 56 / kHuffmanMaxBits;
// Payload header before the nibble table: first and last symbol.
constexpr size_t kRangeBytes = 2;
constexpr size_t kStreamSizeBytes = 4 * (kHuffmanStreams - 1);

size_t SegmentLength(size_t n) { return (n + kHuffmanStreams - 1) / kHuffmanStreams; }

size_t SegmentStart(size_t n, int j) {
  return std::min(n, static_cast<size_t>(j) * SegmentLength(n));
}

// Optimal code lengths by the two-queue method, then limited to
// kHuffmanMaxBits by lengthening the rarest codes and spending any Kraft
// slack on the most frequent ones.
void BuildLengths(const Histogram& h, std::array<uint8_t, 256>& length) {
  length.fill(0);
  std::array<int, 256> sym;
  int k = 0;
  for (int s = 0; s < 256; ++s) {
    if (h[s] != 0) sym[k++] = s;
  }
  if (k == 0) return;
  if (k == 1) {
    length[sym[0]] = 1;
    return;
  }
  std::sort(sym.begin(), sym.begin() + k, [&h](int a, int b) {
    return h[a] != h[b] ? h[a] < h[b] : a < b;
  });
  std::array<uint64_t, 512> weight;
  std::array<int, 512> parent;
  std::array<int, 512> depth;
  for (int i = 0; i < k; ++i) weight[i] = h[sym[i]];
  int leaf = 0, inner = k;
  auto take = [&](int next) {
    if (leaf < k && (inner >= next || weight[leaf] <= weight[inner])) return leaf++;
    return inner++;
  };
  for (int next = k; next < 2 * k - 1; ++next) {
    int a = take(next);
    int b = take(next);
    weight[next] = weight[a] + weight[b];
    parent[a] = parent[b] = next;
  }
  depth[2 * k - 2] = 0;
  for (int i = 2 * k - 3; i >= 0; --i) depth[i] = depth[parent[i]] + 1;

  const int limit = kHuffmanMaxBits;
  int64_t kraft = 0;  // in units of 2^-limit
  const int64_t cap = int64_t{1} << limit;
  std::array<int, 256> len;
  for (int i = 0; i < k; ++i) {
    len[i] = std::min(depth[i], limit);
    kraft += int64_t{1} << (limit - len[i]);
  }
  // Rarest first (sym is sorted by ascending count).
  for (int i = 0; i < k && kraft > cap; ++i) {
    while (len[i] < limit && kraft > cap) {
      kraft -= int64_t{1} << (limit - len[i] - 1);
      ++len[i];
    }
  }
  // Most frequent first: shorten while the code stays a prefix code.
  for (int i = k - 1; i >= 0; --i) {
    while (len[i] > 1 && kraft + (int64_t{1} << (limit - len[i])) <= cap) {
      kraft += int64_t{1} << (limit - len[i]);
      --len[i];
    }
  }
  for (int i = 0; i < k; ++i) length[sym[i]] = static_cast<uint8_t>(len[i]);
}

uint16_t ReverseBits(uint32_t code, int len) {
  uint32_t r = 0;
  for (int i = 0; i < len; ++i) r |= ((code >> i) & 1u) << (len - 1 - i);
  return static_cast<uint16_t>(r);
}

// Canonical codes from lengths: shorter codes first, ties by symbol value.
void AssignCodes(const std::array<uint8_t, 256>& length, std::array<uint16_t, 256>& code) {
  code.fill(0);
  uint32_t next = 0;
  for (int len = 1; len <= kHuffmanMaxBits; ++len) {
    for (int s = 0; s < 256; ++s) {
      if (length[s] == len) code[s] = ReverseBits(next++, len);
    }
    next <<= 1;
  }
}

// Bits are appended at the top of `bits`; whole bytes are stored eight at a
// time, so the output needs 8 bytes of slack past the stream.
size_t EncodeStream(const uint8_t* in, size_t m, const std::array<uint8_t, 256>& length,
                    const std::array<uint16_t, 256>& code, uint8_t* out) {
  uint8_t* p = out;
  uint64_t bits = 0;
  unsigned nbits = 0;
  size_t i = 0;
  // Four codes of at most 11 bits fit beside the up-to-7 bits left over.
  for (; i + 4 <= m; i += 4) {
    for (int u = 0; u < 4; ++u) {
      const uint8_t s = in[i + u];
      bits |= static_cast<uint64_t>(code[s]) << nbits;
      nbits += length[s];
    }
    StoreLE<uint64_t>(p, bits);
    p += nbits >> 3;
    bits >>= nbits & ~7u;
    nbits &= 7;
  }
  for (; i < m; ++i) {
    const uint8_t s = in[i];
    bits |= static_cast<uint64_t>(code[s]) << nbits;
    nbits += length[s];
  }
  StoreLE<uint64_t>(p, bits);  // at most 7 + 3*11 bits remain: one word
  p += (nbits + 7) >> 3;
  return static_cast<size_t>(p - out);
}

struct BitReader {
  const uint8_t* p;
  uint64_t bits;
  unsigned nbits;

  void Refill() {
    bits |= LoadLE<uint64_t>(p) << nbits;
    p += (63 - nbits) >> 3;
    nbits |= 56;
  }
  uint8_t Decode(const uint16_t* table) {
    const uint16_t e = table[bits & kTableMask];
    const unsigned len = e >> 8;
    bits >>= len;
    nbits -= len;
    return static_cast<uint8_t>(e);
  }
};

}  // namespace

Histogram CountBytes(const uint8_t* in, size_t n) {
  // Four tables so that runs of one value do not serialise on one counter.
  std::array<std::array<uint32_t, 256>, 4> c{};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t v = LoadLE<uint64_t>(in + i);
    ++c[0][v & 0xff];
    ++c[1][(v >> 8) & 0xff];
    ++c[2][(v >> 16) & 0xff];
    ++c[3][(v >> 24) & 0xff];
    ++c[0][(v >> 32) & 0xff];
    ++c[1][(v >> 40) & 0xff];
    ++c[2][(v >> 48) & 0xff];
    ++c[3][v >> 56];
  }
  for (; i < n; ++i) ++c[0][in[i]];
  Histogram h;
  for (int s = 0; s < 256; ++s) {
    h[s] = uint64_t{c[0][s]} + c[1][s] + c[2][s] + c[3][s];
  }
  return h;
}

double EntropyBits(const Histogram& h) {
  const uint64_t n = std::accumulate(h.begin(), h.end(), uint64_t{0});
  double bits = 0;
  for (uint64_t c : h) {
    if (c != 0) bits += static_cast<double>(c) * std::log2(static_cast<double>(n) / static_cast<double>(c));
  }
  return bits;
}

void HuffmanEncoder::Plan(const uint8_t* in, size_t n) {
  in_ = in;
  n_ = n;
  total_.fill(0);
  for (int j = 0; j < kHuffmanStreams; ++j) {
    const size_t a = SegmentStart(n, j), b = SegmentStart(n, j + 1);
    segment_[j] = CountBytes(in + a, b - a);
    for (int s = 0; s < 256; ++s) total_[s] += segment_[j][s];
  }
  BuildLengths(total_, length_);
  AssignCodes(length_, code_);
  first_symbol_ = 0;
  while (first_symbol_ < 255 && length_[first_symbol_] == 0) ++first_symbol_;
  last_symbol_ = 255;
  while (last_symbol_ > first_symbol_ && length_[last_symbol_] == 0) --last_symbol_;
  encoded_size_ = kRangeBytes + (last_symbol_ - first_symbol_ + 2) / 2 + kStreamSizeBytes;
  for (int j = 0; j < kHuffmanStreams; ++j) {
    uint64_t bits = 0;
    for (int s = first_symbol_; s <= last_symbol_; ++s) bits += segment_[j][s] * length_[s];
    stream_bytes_[j] = static_cast<size_t>((bits + 7) / 8);
    encoded_size_ += stream_bytes_[j];
  }
}

void HuffmanEncoder::Encode(uint8_t* out) const {
  uint8_t* p = out;
  *p++ = static_cast<uint8_t>(first_symbol_);
  *p++ = static_cast<uint8_t>(last_symbol_);
  for (int s = first_symbol_; s <= last_symbol_; s += 2) {
    const int hi = s + 1 <= last_symbol_ ? length_[s + 1] : 0;
    *p++ = static_cast<uint8_t>(length_[s] | hi << 4);
  }
  for (int j = 0; j + 1 < kHuffmanStreams; ++j) {
    StoreLE<uint32_t>(p, static_cast<uint32_t>(stream_bytes_[j]));
    p += 4;
  }
  // Streams in order: each one's trailing word store lands in the next
  // stream's space before that stream is written.
  for (int j = 0; j < kHuffmanStreams; ++j) {
    const size_t a = SegmentStart(n_, j), b = SegmentStart(n_, j + 1);
    p += EncodeStream(in_ + a, b - a, length_, code_, p);
  }
}

Status HuffmanDecode(const uint8_t* in, size_t size, uint8_t* out, size_t n) {
  if (size < kRangeBytes) return Corruption("huffman payload shorter than its header");
  const int first = in[0], last = in[1];
  if (last < first) return Corruption("huffman symbol range is empty");
  const size_t table_bytes = static_cast<size_t>(last - first + 2) / 2;
  size_t pos = kRangeBytes + table_bytes + kStreamSizeBytes;
  if (size < pos) return Corruption("huffman payload shorter than its code table");

  std::array<uint8_t, 256> length{};
  uint64_t kraft = 0;
  for (int s = first; s <= last; ++s) {
    const uint8_t byte = in[kRangeBytes + (s - first) / 2];
    const int len = (s - first) % 2 == 0 ? (byte & 15) : (byte >> 4);
    if (len > kHuffmanMaxBits) return Corruption("huffman code longer than 11 bits");
    length[s] = static_cast<uint8_t>(len);
    if (len != 0) kraft += uint64_t{1} << (kHuffmanMaxBits - len);
  }
  if (kraft == 0) return Corruption("huffman code table has no symbols");
  if (kraft > kTableSize) return Corruption("huffman code table is not a prefix code");

  std::array<uint16_t, 256> code;
  AssignCodes(length, code);
  // Unused slots of an incomplete code decode as the longest length, so a
  // damaged stream runs out of bits and is caught by the length check.
  uint16_t table[kTableSize];
  std::fill(table, table + kTableSize, static_cast<uint16_t>(kHuffmanMaxBits << 8));
  for (int s = first; s <= last; ++s) {
    const int len = length[s];
    if (len == 0) continue;
    for (uint32_t fill = code[s]; fill < kTableSize; fill += 1u << len) {
      table[fill] = static_cast<uint16_t>(s | len << 8);
    }
  }

  std::array<size_t, kHuffmanStreams> stream_size;
  size_t total = 0;
  for (int j = 0; j + 1 < kHuffmanStreams; ++j) {
    stream_size[j] = LoadLE<uint32_t>(in + kRangeBytes + table_bytes + 4 * j);
    total += stream_size[j];
  }
  if (total > size - pos) return Corruption("huffman stream sizes exceed the payload");
  stream_size[kHuffmanStreams - 1] = size - pos - total;

  const uint8_t* const end = in + size;  // reads stay below end + padding
  BitReader r[kHuffmanStreams];
  const uint8_t* start[kHuffmanStreams];
  uint8_t* o[kHuffmanStreams];
  uint8_t* o_end[kHuffmanStreams];
  for (int j = 0; j < kHuffmanStreams; ++j) {
    start[j] = in + pos;
    r[j] = BitReader{in + pos, 0, 0};
    pos += stream_size[j];
    o[j] = out + SegmentStart(n, j);
    o_end[j] = out + SegmentStart(n, j + 1);
  }

  // Fast path: all four streams in lockstep; the last segment is the
  // shortest, so it bounds the number of rounds.
  const size_t rounds = static_cast<size_t>(o_end[3] - o[3]) / kSymbolsPerRefill;
  for (size_t round = 0; round < rounds; ++round) {
    if (r[0].p > end || r[1].p > end || r[2].p > end || r[3].p > end) break;
    for (int j = 0; j < kHuffmanStreams; ++j) r[j].Refill();
    for (int u = 0; u < kSymbolsPerRefill; ++u) {
      for (int j = 0; j < kHuffmanStreams; ++j) *o[j]++ = r[j].Decode(table);
    }
  }
  for (int j = 0; j < kHuffmanStreams; ++j) {
    while (o[j] < o_end[j]) {
      // Past the end the buffer already holds every remaining bit of a
      // valid stream; the consumed-bits check below catches the rest.
      if (r[j].p <= end) r[j].Refill();
      if ((table[r[j].bits & kTableMask] >> 8) > r[j].nbits) {
        return Corruption("huffman stream " + std::to_string(j) + " is truncated");
      }
      *o[j]++ = r[j].Decode(table);
    }
    const uint64_t consumed = static_cast<uint64_t>(r[j].p - start[j]) * 8 - r[j].nbits;
    if (consumed > 8 * static_cast<uint64_t>(stream_size[j])) {
      return Corruption("huffman stream " + std::to_string(j) + " is truncated");
    }
  }
  return OkStatus();
}

}  // namespace zipnn::codec
