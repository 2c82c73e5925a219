#include "lib/codec/coders.h"

namespace zipnn::codec {

std::string_view CoderName(Coder c) {
  const auto v = static_cast<uint8_t>(c);
  return v <= kMaxCoderValue ? kCoders[v].name : "?";
}

std::optional<Coder> CoderFromByte(uint8_t v) {
  if (v > kMaxCoderValue) return std::nullopt;
  return kCoders[v].value;
}

std::optional<Coder> CoderFromName(std::string_view name) {
  for (const CoderInfo& c : kCoders) {
    if (c.encode != nullptr && c.name == name) return c.value;
  }
  return std::nullopt;
}

std::string CoderNameList(std::string_view separator) {
  std::string s;
  for (const CoderInfo& c : kCoders) {
    if (c.encode == nullptr) continue;
    if (!s.empty()) s += separator;
    s += c.name;
  }
  return s;
}

Coder NewestCoder(uint16_t version) {
  Coder newest = kCoders[0].value;
  for (const CoderInfo& c : kCoders) {
    if (c.first_format <= version) newest = c.value;
  }
  return newest;
}

}  // namespace zipnn::codec
