#include "lib/formats/detect.h"

#include <algorithm>

#include "lib/formats/guess.h"
#include "lib/formats/safetensors.h"

namespace zipnn::formats {

std::optional<FormatChoice> ParseFormatChoice(std::string_view name) {
  if (name == "auto") return FormatChoice::kAuto;
  if (name == "safetensors") return FormatChoice::kSafetensors;
  if (name == "raw") return FormatChoice::kRaw;
  return std::nullopt;
}

Result<FileLayout> ReadLayout(const ByteSource& file, FormatChoice choice) {
  FileLayout raw;
  raw.format = Format::kRaw;
  raw.size = file.size();
  if (choice == FormatChoice::kRaw) return raw;
  uint8_t prefix[16] = {0};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof prefix, file.size()));
  RETURN_IF_ERROR(file.ReadAt(0, prefix, n));
  if (choice == FormatChoice::kSafetensors || LooksLikeSafetensors(prefix, n)) {
    ASSIGN_OR_RETURN(FileLayout layout, ReadSafetensors(file));
    if (layout.format != Format::kRaw) return layout;
    raw.warnings = std::move(layout.warnings);  // a lying header: raw, as below
  }
  // No (valid) known format: one region, typed when a sample says a dtype
  // pays.
  ASSIGN_OR_RETURN(std::optional<codec::DType> guess, GuessDType(file));
  if (guess) raw.tensors.push_back(Tensor{"", *guess, {}, 0, file.size()});
  return raw;
}

}  // namespace zipnn::formats
