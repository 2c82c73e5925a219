// The coders a chunk record may name (docs/format.md, "Chunk record"),
// declared once: kCoders below is the only list of them. Their values,
// names, the object format that introduced each, what --coder accepts,
// the error text that lists them and the encode and decode dispatch are
// all read from it.
//
// One shape for every coder: an encoder and a decoder class. The entropy
// coders (HuffmanEncoder, RansEncoder, SparseEncoder) have
//   void Plan(const uint8_t* in, size_t n, const GroupCounts& counts);
//   size_t EstimatedSize() const;  // of the payload, before coding it
//   void Encode(Buffer& out);      // appends the payload
// and every decoder has
//   Status Decode(const uint8_t* payload, size_t size, uint8_t* out, size_t n);
// An entry of kCoders names two functions of one signature for all
// coders, which call them (group_coder.cc); they run once per group,
// never per byte.
//
// Adding a coder: its next value in `Coder`, one entry at the end of
// kCoders, and its code: the encoder and decoder classes, a member of
// each in EncoderSet and DecoderSet, and the two functions its entry
// names. If the auto rule is to choose it, that rule changes too
// (GroupEncoder::Encode, docs/codec.md).
//
// Constants and reentrant functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/buffer.h"
#include "lib/base/status.h"

namespace zipnn::codec {

// Stored in chunk records; values are fixed forever.
enum class Coder : uint8_t {
  kRaw = 0,          // the group's bytes as they are
  kZero = 1,         // every byte is zero; no payload
  kHuffman = 2,      // HuffmanEncoder payload
  kZstd = 3,         // one zstd frame
  kRans = 4,         // RansEncoder payload
  kSparse = 5,       // SparseEncoder payload
  kClassedRans = 6,  // ClassedRansEncoder payload: a difference's group, one model per class of element
};

// Every coder's encoder or decoder for one thread (group_coder.h).
struct EncoderSet;
struct DecoderSet;

// Codes in[0..n) (n >= 1) with one coder and appends the payload to
// `out`. Returns the coder used (the asked one, or zero for a group of
// zeros that the coder cannot model), or nothing, with nothing appended,
// when the payload would not save AutoRule::kMinSaving: the caller then
// stores the group raw.
using EncodeGroupFn = std::optional<Coder> (*)(EncoderSet& coders, const uint8_t* in, size_t n, Buffer& out);
// Decodes a payload of `size` bytes, readable kDecoderReadPadding bytes
// past its end, into exactly n bytes.
using DecodeGroupFn = Status (*)(DecoderSet& coders, const uint8_t* payload, size_t size, uint8_t* out, size_t n);

struct CoderInfo {
  Coder value;
  std::string_view name;  // for --coder, inspect and messages
  uint16_t first_format;  // the object format version records may name it from
  EncodeGroupFn encode;   // null: no one may ask for it (zero is chosen only for zeros)
  DecodeGroupFn decode;
};

std::optional<Coder> EncodeRawGroup(EncoderSet&, const uint8_t* in, size_t n, Buffer& out);
std::optional<Coder> EncodeHuffmanGroup(EncoderSet&, const uint8_t* in, size_t n, Buffer& out);
std::optional<Coder> EncodeZstdGroup(EncoderSet&, const uint8_t* in, size_t n, Buffer& out);
std::optional<Coder> EncodeRansGroup(EncoderSet&, const uint8_t* in, size_t n, Buffer& out);
std::optional<Coder> EncodeSparseGroup(EncoderSet&, const uint8_t* in, size_t n, Buffer& out);
std::optional<Coder> EncodeClassedRansGroup(EncoderSet&, const uint8_t* in, size_t n, Buffer& out);
Status DecodeRawGroup(DecoderSet&, const uint8_t* payload, size_t size, uint8_t* out, size_t n);
Status DecodeZeroGroup(DecoderSet&, const uint8_t* payload, size_t size, uint8_t* out, size_t n);
Status DecodeHuffmanGroup(DecoderSet&, const uint8_t* payload, size_t size, uint8_t* out, size_t n);
Status DecodeZstdGroup(DecoderSet&, const uint8_t* payload, size_t size, uint8_t* out, size_t n);
Status DecodeRansGroup(DecoderSet&, const uint8_t* payload, size_t size, uint8_t* out, size_t n);
Status DecodeSparseGroup(DecoderSet&, const uint8_t* payload, size_t size, uint8_t* out, size_t n);
Status DecodeClassedRansGroup(DecoderSet&, const uint8_t* payload, size_t size, uint8_t* out, size_t n);

// In value order, values from 0 without gaps; a coder's first format is
// never older than an earlier entry's, so every object format knows the
// coders up to some value (NewestCoder).
inline constexpr CoderInfo kCoders[] = {
    {Coder::kRaw, "raw", 1, &EncodeRawGroup, &DecodeRawGroup},
    {Coder::kZero, "zero", 1, nullptr, &DecodeZeroGroup},
    {Coder::kHuffman, "huffman", 1, &EncodeHuffmanGroup, &DecodeHuffmanGroup},
    {Coder::kZstd, "zstd", 1, &EncodeZstdGroup, &DecodeZstdGroup},
    {Coder::kRans, "rans", 1, &EncodeRansGroup, &DecodeRansGroup},
    {Coder::kSparse, "sparse", 2, &EncodeSparseGroup, &DecodeSparseGroup},
    {Coder::kClassedRans, "rans-classed", 4, &EncodeClassedRansGroup, &DecodeClassedRansGroup},
};

constexpr bool CoderTableIsOrdered() {
  for (size_t i = 0; i < std::size(kCoders); ++i) {
    // (That every entry decodes is a test's to check: comparing a function
    // pointer with null is no constant expression under the sanitizers.)
    if (static_cast<size_t>(kCoders[i].value) != i) return false;
    if (i > 0 && kCoders[i].first_format < kCoders[i - 1].first_format) return false;
  }
  return true;
}
static_assert(CoderTableIsOrdered(), "kCoders: values 0, 1, 2, ... in order, formats never older");

inline constexpr uint8_t kMaxCoderValue = static_cast<uint8_t>(std::size(kCoders) - 1);
inline constexpr Coder kNewestCoder = kCoders[kMaxCoderValue].value;

std::string_view CoderName(Coder c);
std::optional<Coder> CoderFromByte(uint8_t v);
// The coder named `name` that one may ask for (CoderInfo::encode).
std::optional<Coder> CoderFromName(std::string_view name);
// Those names, in value order, separated by `separator`.
std::string CoderNameList(std::string_view separator);
// The newest coder that objects of format `version` may name.
Coder NewestCoder(uint16_t version);

}  // namespace zipnn::codec
