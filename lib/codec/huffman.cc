#include "lib/codec/huffman.h"

#include <algorithm>
#include <cstdint>

#include "lib/base/cpu.h"
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
// Groups with at most this many distinct bytes encode two symbols per
// table lookup (the pair entries written grow with its square).
constexpr int kPairTableMaxSymbols = 64;

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
  std::sort(sym.begin(), sym.begin() + k, [&h](int a, int b) { return h[a] != h[b] ? h[a] < h[b] : a < b; });
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

// Fills a 64-bit container from the top: each code enters at the high
// end and older bits move down, so the oldest valid bit sits at 64 - nbits
// and a flush stores `bits >> (64 - nbits)`, oldest bit first (the stream
// is least-significant bit first). A table entry is the bit-reversed code
// in its top `length` bits with the length in its low byte; OR-ing the
// whole entry leaves that length byte below the valid bits, where later
// shifts discard it. Whole bytes go out eight at a time while the stream
// has room for a full word before `limit`, one at a time near its end.
struct BitWriter {
  uint8_t* p;
  uint8_t* limit;
  uint64_t bits;
  unsigned nbits;

  static uint64_t Entry(uint16_t code, uint8_t len) {
    return len == 0 ? 0 : (static_cast<uint64_t>(code) << (64 - len)) | len;
  }
  // Adds one code; the caller adds its length to nbits (see Put4).
  static uint64_t Push(uint64_t bits, uint64_t entry) { return (bits >> (entry & 63)) | entry; }
  void Put(uint64_t entry) {
    bits = Push(bits, entry);
    nbits += static_cast<unsigned>(entry & 63);
  }
  // Four codes; their lengths add up in the low byte of the entries' sum.
  void Put4(uint64_t e0, uint64_t e1, uint64_t e2, uint64_t e3) {
    bits = Push(Push(Push(Push(bits, e0), e1), e2), e3);
    nbits += static_cast<unsigned>((e0 + e1 + e2 + e3) & 0xff);
  }
  // bits >> (64 - nbits) without the undefined shift by 64 when nbits is 0.
  // Two pair entries (four codes); a pair entry holds both codes already
  // in stream order and their summed length in its low byte.
  void Put2(uint64_t p0, uint64_t p1) {
    bits = Push(Push(bits, p0), p1);
    nbits += static_cast<unsigned>((p0 + p1) & 0xff);
  }
  uint64_t Valid() const { return (bits >> 1) >> (63 - nbits); }
  bool HasWordRoom() const { return p + 8 <= limit; }
  void FlushWord() {
    StoreLE<uint64_t>(p, Valid());
    p += nbits >> 3;
    nbits &= 7;
  }
  void FlushBytes() {
    uint64_t v = Valid();
    for (; nbits >= 8; nbits -= 8, v >>= 8) *p++ = static_cast<uint8_t>(v);
  }
  void Finish() {
    FlushBytes();
    if (nbits != 0) *p++ = static_cast<uint8_t>(Valid());
    nbits = 0;
  }
};

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

// One lookup in the multi-symbol table: stores four bytes, keeps as many
// as the entry decoded.
inline void DecodeMulti(BitReader& r, uint8_t*& out, const uint64_t* multi) {
  const uint64_t e = multi[r.bits & kTableMask];
  StoreLE<uint32_t>(out, static_cast<uint32_t>(e));
  out += e >> 40;
  const unsigned len = static_cast<unsigned>(e >> 32) & 0xff;
  r.bits >>= len;
  r.nbits -= len;
}

// The four bit streams, written in lockstep into their exact places.
// Rounds of four symbols per stream, all four streams at once. A round
// adds at most 44 bits to the up-to-7 left over, so it stores at most 6
// whole bytes: the rounds that fit before every limit are counted up
// front instead of checked one by one. Locals, not array elements, keep
// the four writers in registers.
template <bool kPairs>
__attribute__((always_inline)) inline void EncodeLockstep(const uint64_t* entry, const uint64_t* pair, BitWriter* w,
                                                          const uint8_t** in, size_t* left) {
  constexpr size_t kMaxBytesPerRound = 6;
  BitWriter w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
  const uint8_t *i0 = in[0], *i1 = in[1], *i2 = in[2], *i3 = in[3];
  size_t rounds_left = left[3] / 4;
  const size_t total = rounds_left;
  for (;;) {
    size_t rounds = rounds_left;
    for (const BitWriter* x : {&w0, &w1, &w2, &w3}) {
      const size_t room = static_cast<size_t>(x->limit - x->p);
      rounds = std::min(rounds, room < 8 ? 0 : (room - 8) / kMaxBytesPerRound);
    }
    if (rounds == 0) break;
    rounds_left -= rounds;
    for (; rounds > 0; --rounds) {
      if (kPairs) {
        const uint32_t v0 = LoadLE<uint32_t>(i0), v1 = LoadLE<uint32_t>(i1);
        const uint32_t v2 = LoadLE<uint32_t>(i2), v3 = LoadLE<uint32_t>(i3);
        w0.Put2(pair[v0 & 0xffff], pair[v0 >> 16]);
        w1.Put2(pair[v1 & 0xffff], pair[v1 >> 16]);
        w2.Put2(pair[v2 & 0xffff], pair[v2 >> 16]);
        w3.Put2(pair[v3 & 0xffff], pair[v3 >> 16]);
      } else {
        w0.Put4(entry[i0[0]], entry[i0[1]], entry[i0[2]], entry[i0[3]]);
        w1.Put4(entry[i1[0]], entry[i1[1]], entry[i1[2]], entry[i1[3]]);
        w2.Put4(entry[i2[0]], entry[i2[1]], entry[i2[2]], entry[i2[3]]);
        w3.Put4(entry[i3[0]], entry[i3[1]], entry[i3[2]], entry[i3[3]]);
      }
      w0.FlushWord();
      w1.FlushWord();
      w2.FlushWord();
      w3.FlushWord();
      i0 += 4;
      i1 += 4;
      i2 += 4;
      i3 += 4;
    }
  }
  w[0] = w0, w[1] = w1, w[2] = w2, w[3] = w3;
  in[0] = i0, in[1] = i1, in[2] = i2, in[3] = i3;
  const size_t done = 4 * (total - rounds_left);
  for (int j = 0; j < kHuffmanStreams; ++j) left[j] -= done;
}

// With `pair` (indexed by two input bytes, first in the low byte), each
// lookup yields two codes: half the loads and shifts of `entry` alone.
ZIPNN_HOT void EncodeStreams(const uint64_t* entry, const uint64_t* pair, const uint8_t* in_all, size_t n,
                             const size_t* stream_bytes, uint8_t* p) {
  // Stream sizes are exact, so each writer knows where the next begins.
  BitWriter w[kHuffmanStreams];
  const uint8_t* in[kHuffmanStreams];
  size_t left[kHuffmanStreams];
  for (int j = 0; j < kHuffmanStreams; ++j) {
    const size_t a = SegmentStart(n, j), b = SegmentStart(n, j + 1);
    in[j] = in_all + a;
    left[j] = b - a;
    w[j] = BitWriter{p, p + stream_bytes[j], 0, 0};
    p += stream_bytes[j];
  }
  w[kHuffmanStreams - 1].limit += 8;  // the caller's slack past the payload
  // Four independent dependency chains; four codes of at most 11 bits fit
  // beside the up-to-7 bits left after a flush.
  if (pair != nullptr) {
    EncodeLockstep<true>(entry, pair, w, in, left);
  } else {
    EncodeLockstep<false>(entry, pair, w, in, left);
  }
  for (int j = 0; j < kHuffmanStreams; ++j) {
    for (; left[j] >= 4 && w[j].HasWordRoom(); left[j] -= 4, in[j] += 4) {
      w[j].Put4(entry[in[j][0]], entry[in[j][1]], entry[in[j][2]], entry[in[j][3]]);
      w[j].FlushWord();
    }
    for (; left[j] > 0; --left[j]) {
      w[j].Put(entry[*in[j]++]);
      w[j].FlushBytes();
    }
    w[j].Finish();
  }
}

}  // namespace

void HuffmanEncoder::Plan(const uint8_t* in, size_t n, const GroupCounts& counts) {
  in_ = in;
  n_ = n;
  BuildLengths(counts.total, length_);
  AssignCodes(length_, code_);
  first_symbol_ = 0;
  while (first_symbol_ < 255 && length_[first_symbol_] == 0) ++first_symbol_;
  last_symbol_ = 255;
  while (last_symbol_ > first_symbol_ && length_[last_symbol_] == 0) --last_symbol_;
  encoded_size_ = kRangeBytes + (last_symbol_ - first_symbol_ + 2) / 2 + kStreamSizeBytes;
  for (int j = 0; j < kHuffmanStreams; ++j) {
    uint64_t bits = 0;
    for (int s = first_symbol_; s <= last_symbol_; ++s) bits += counts.segment[j][s] * length_[s];
    stream_bytes_[j] = static_cast<size_t>((bits + 7) / 8);
    encoded_size_ += stream_bytes_[j];
  }
}

void HuffmanEncoder::Encode(Buffer& out) {
  out.Reserve(out.size() + encoded_size_ + 8);  // the bit writer stores whole words
  uint8_t* p = out.Extend(encoded_size_);
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
  std::array<uint64_t, 256> entry;
  for (int c = 0; c < 256; ++c) entry[c] = BitWriter::Entry(code_[c], length_[c]);
  // Pairs of present symbols only: inputs never hold any other pair, and
  // for a few dozen exponent values the entries written stay in L1.
  int present[256];
  int k = 0;
  for (int c = first_symbol_; c <= last_symbol_; ++c) {
    if (length_[c] != 0) present[k++] = c;
  }
  const uint64_t* pair = nullptr;
  if (k <= kPairTableMaxSymbols) {
    if (pair_ == nullptr) pair_ = std::make_unique<uint64_t[]>(1 << 16);
    for (int a = 0; a < k; ++a) {
      const int first = present[a];
      for (int b = 0; b < k; ++b) {
        const int second = present[b];
        const unsigned len = length_[first] + length_[second];
        // Both codes in stream order: the first one's bits come first,
        // lowest in the stream, so they sit below the second's at the top.
        const uint64_t codes = static_cast<uint64_t>(code_[first]) << (64 - len) | static_cast<uint64_t>(code_[second])
                                                                                       << (64 - length_[second]);
        pair_[second << 8 | first] = codes | len;
      }
    }
    pair = pair_.get();
  }
  EncodeStreams(entry.data(), pair, in_, n_, stream_bytes_.data(), p);
}

ZIPNN_HOT Status HuffmanDecoder::Decode(const uint8_t* in, size_t size, uint8_t* out, size_t n) const {
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

  // Fast path: a second table decodes up to four symbols per lookup, as
  // many whole codes as fit in kHuffmanMaxBits (exponent codes average
  // under 3 bits, so most lookups yield three or four).
  // Entry: symbols in bytes 0..3, bits used in byte 4, symbol count in byte 5.
  uint64_t multi[kTableSize];
  for (uint32_t i = 0; i < kTableSize; ++i) {
    uint64_t symbols = 0;
    uint32_t used = 0, count = 0;
    while (count < 4) {
      // Only the low kHuffmanMaxBits - used bits of the rest are known.
      const uint16_t e = table[i >> used];
      const uint32_t len = e >> 8;
      if (used + len > kHuffmanMaxBits) break;
      symbols |= static_cast<uint64_t>(e & 0xff) << (8 * count);
      used += len;
      ++count;
    }
    multi[i] = symbols | uint64_t{used} << 32 | uint64_t{count} << 40;
  }
  constexpr size_t kMaxPerRefill = 4 * kSymbolsPerRefill;
  for (;;) {
    // Rounds that cannot overrun any segment, even at two symbols a lookup.
    size_t rounds = SIZE_MAX;
    for (int j = 0; j < kHuffmanStreams; ++j) {
      rounds = std::min(rounds, static_cast<size_t>(o_end[j] - o[j]) / kMaxPerRefill);
    }
    if (rounds == 0) break;
    bool in_bounds = true;
    BitReader r0 = r[0], r1 = r[1], r2 = r[2], r3 = r[3];
    uint8_t *o0 = o[0], *o1 = o[1], *o2 = o[2], *o3 = o[3];
    for (size_t round = 0; round < rounds; ++round) {
      if (r0.p > end || r1.p > end || r2.p > end || r3.p > end) {
        in_bounds = false;
        break;
      }
      r0.Refill();
      r1.Refill();
      r2.Refill();
      r3.Refill();
      for (int u = 0; u < kSymbolsPerRefill; ++u) {
        DecodeMulti(r0, o0, multi);
        DecodeMulti(r1, o1, multi);
        DecodeMulti(r2, o2, multi);
        DecodeMulti(r3, o3, multi);
      }
    }
    r[0] = r0, r[1] = r1, r[2] = r2, r[3] = r3;
    o[0] = o0, o[1] = o1, o[2] = o2, o[3] = o3;
    if (!in_bounds) break;
  }
  for (int j = 0; j < kHuffmanStreams; ++j) {
    // Streams advance at different rates (one to four symbols a lookup),
    // so the lockstep loop stops when the fastest nears its end; the
    // others carry on alone, still four symbols a lookup where they can.
    while (static_cast<size_t>(o_end[j] - o[j]) >= kMaxPerRefill && r[j].p <= end) {
      r[j].Refill();
      for (int u = 0; u < kSymbolsPerRefill; ++u) DecodeMulti(r[j], o[j], multi);
    }
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
