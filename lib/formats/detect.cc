#include "lib/formats/detect.h"

#include <algorithm>

#include "lib/formats/guess.h"

namespace zipnn::formats {

const char* FormatName(Format f) {
  const size_t i = static_cast<size_t>(f);
  return i < sizeof kFormats / sizeof kFormats[0] ? kFormats[i].name : "?";
}

std::string FormatNameList(const char* separator) {
  std::string list;
  for (const FormatInfo& f : kFormats) list += (list.empty() ? "" : separator) + std::string(f.name);
  return list;
}

Result<FormatChoice> ParseFormatChoice(std::string_view name) {
  if (name == "auto") return kAutoFormat;
  for (const FormatInfo& f : kFormats) {
    if (name == f.name) return FormatChoice(f.format);
  }
  return InvalidArgument("unknown format '" + std::string(name) + "' (one of: auto, " + FormatNameList(", ") + ")");
}

Result<FileLayout> ReadLayout(const ByteSource& file, FormatChoice choice) {
  FileLayout raw;
  raw.format = Format::kRaw;
  raw.size = file.size();
  if (choice == Format::kRaw) return raw;
  uint8_t prefix[16] = {0};
  const size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof prefix, file.size()));
  ZIPNN_RETURN_IF_ERROR(file.ReadAt(0, prefix, n));
  for (const FormatInfo& f : kFormats) {
    if (!f.read || (choice ? *choice != f.format : !f.sniff(prefix, n))) continue;
    ZIPNN_ASSIGN_OR_RETURN(FileLayout read, f.read(file));
    if (read.format != Format::kRaw) return read;
    raw.warnings = std::move(read.warnings);  // not readable as that format: raw, as below
    break;
  }
  // No (valid) known format: one region, typed when a sample says a dtype
  // pays.
  ZIPNN_ASSIGN_OR_RETURN(std::optional<codec::DType> guess, GuessDType(file));
  if (guess) {
    Tensor whole;
    whole.dtype = *guess;
    whole.length = file.size();
    raw.tensors.push_back(std::move(whole));
  }
  return raw;
}

}  // namespace zipnn::formats
