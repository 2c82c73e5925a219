// Element types of checkpoint regions and how each is split into byte
// groups. The numeric values are stored in objects (docs/format.md,
// "Region table") and never change; new types get new numbers.
// Pure data and functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zipnn::codec {

enum class DType : uint8_t {
  kBytes = 0,  // unknown content: one byte group
  kF32 = 1,
  kBF16 = 2,
  kF16 = 3,
  kF64 = 4,
  kF8E4M3 = 5,
  kF8E5M2 = 6,
  kI8 = 7,
  kU8 = 8,
  kI16 = 9,
  kU16 = 10,
  kI32 = 11,
  kU32 = 12,
  kI64 = 13,
  kU64 = 14,
  kBool = 15,
};
inline constexpr uint8_t kMaxDTypeValue = 15;

// Bytes per element; also the number of byte groups of whole elements.
int DTypeWidth(DType t);
// Floating-point types whose sign bit is rotated out of the exponent byte
// before grouping (docs/codec.md).
bool DTypeRotatesSign(DType t);
// Index of the group that holds the (top of the) exponent, or -1.
int ExponentGroup(DType t);

// Lowercase name used on the command line and in output ("bf16", "f8_e4m3").
std::string_view DTypeName(DType t);
std::optional<DType> ParseDType(std::string_view name);
std::optional<DType> DTypeFromByte(uint8_t v);
// Names accepted by ParseDType, comma-separated, for --help and errors.
std::string DTypeNameList();

// Short label of byte group `g` of a region of type `t`: "exp", "man0",
// "b2", or "tail" for the bytes after the last whole element.
std::string GroupLabel(DType t, int g);

}  // namespace zipnn::codec
