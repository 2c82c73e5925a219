#include "lib/codec/dtype.h"

#include <array>

namespace zipnn::codec {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  int width;
  bool rotates_sign;
  int exponent_group;
};

constexpr std::array<DTypeInfo, kMaxDTypeValue + 1> kInfo = {{
    {DType::kBytes, "bytes", 1, false, -1},
    {DType::kF32, "fp32", 4, true, 3},
    {DType::kBF16, "bf16", 2, true, 1},
    {DType::kF16, "fp16", 2, true, 1},
    {DType::kF64, "fp64", 8, true, 7},
    {DType::kF8E4M3, "f8_e4m3", 1, false, -1},
    {DType::kF8E5M2, "f8_e5m2", 1, false, -1},
    {DType::kI8, "i8", 1, false, -1},
    {DType::kU8, "u8", 1, false, -1},
    {DType::kI16, "i16", 2, false, -1},
    {DType::kU16, "u16", 2, false, -1},
    {DType::kI32, "i32", 4, false, -1},
    {DType::kU32, "u32", 4, false, -1},
    {DType::kI64, "i64", 8, false, -1},
    {DType::kU64, "u64", 8, false, -1},
    {DType::kBool, "bool", 1, false, -1},
}};

const DTypeInfo& Info(DType t) { return kInfo[static_cast<size_t>(t)]; }
}  // namespace

int DTypeWidth(DType t) { return Info(t).width; }
bool DTypeRotatesSign(DType t) { return Info(t).rotates_sign; }
int ExponentGroup(DType t) { return Info(t).exponent_group; }
std::string_view DTypeName(DType t) { return Info(t).name; }

std::optional<DType> ParseDType(std::string_view name) {
  for (const DTypeInfo& i : kInfo) {
    if (i.name == name) return i.type;
  }
  // Common spellings from PyTorch and safetensors.
  if (name == "float32" || name == "f32") return DType::kF32;
  if (name == "bfloat16") return DType::kBF16;
  if (name == "float16" || name == "f16" || name == "half") return DType::kF16;
  if (name == "float64" || name == "f64") return DType::kF64;
  return std::nullopt;
}

std::optional<DType> DTypeFromByte(uint8_t v) {
  if (v > kMaxDTypeValue) return std::nullopt;
  return static_cast<DType>(v);
}

std::string DTypeNameList() {
  std::string s;
  for (const DTypeInfo& i : kInfo) {
    if (!s.empty()) s += ", ";
    s += i.name;
  }
  return s;
}

std::string GroupLabel(DType t, int g) {
  int width = DTypeWidth(t);
  if (g >= width) return "tail";
  if (width == 1) return "b0";
  if (g == ExponentGroup(t)) return "exp";
  if (DTypeRotatesSign(t)) return "man" + std::to_string(g);
  return "b" + std::to_string(g);
}

}  // namespace zipnn::codec
