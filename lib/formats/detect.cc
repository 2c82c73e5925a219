#include "lib/formats/detect.h"

#include <algorithm>

#include "lib/formats/guess.h"
#include "lib/formats/pytorch.h"
#include "lib/formats/zip.h"
#include "lib/formats/safetensors.h"

namespace zipnn::formats {

std::optional<FormatChoice> ParseFormatChoice(std::string_view name) {
  if (name == "auto") return FormatChoice::kAuto;
  if (name == "safetensors") return FormatChoice::kSafetensors;
  if (name == "pytorch") return FormatChoice::kPytorch;
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
  ZIPNN_RETURN_IF_ERROR(file.ReadAt(0, prefix, n));
  std::optional<Result<FileLayout>> read;
  if (choice == FormatChoice::kSafetensors || (choice == FormatChoice::kAuto && LooksLikeSafetensors(prefix, n))) {
    read = ReadSafetensors(file);
  } else if (choice == FormatChoice::kPytorch || (choice == FormatChoice::kAuto && LooksLikeZip(prefix, n))) {
    read = ReadPytorch(file);
  }
  if (read) {
    if (!read->ok()) return read->status();
    if ((*read)->format != Format::kRaw) return std::move(**read);
    raw.warnings = std::move((*read)->warnings);  // not readable as that format: raw, as below
  }
  // No (valid) known format: one region, typed when a sample says a dtype
  // pays.
  ZIPNN_ASSIGN_OR_RETURN(std::optional<codec::DType> guess, GuessDType(file));
  if (guess) raw.tensors.push_back(Tensor{"", *guess, {}, 0, file.size()});
  return raw;
}

}  // namespace zipnn::formats
