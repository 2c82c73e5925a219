// The formats git-zipnn reads, one row each in kFormats, and the entry
// point that reads a file's layout: detection is by content (a file's
// first bytes), never by its name.
//
// Adding a format is one row here, its enumerator in file_layout.h, and
// its reader (docs/architecture.md, "Adding a format").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/formats/file_layout.h"
#include "lib/formats/pytorch.h"
#include "lib/formats/safetensors.h"
#include "lib/formats/zip.h"

namespace zipnn::formats {

struct FormatInfo {
  Format format;
  const char* name;  // in pointers, `--format`, listings and messages
  // Whether a file starting with `prefix` (its first n <= 16 bytes) looks
  // like this format; null for raw, which every other one falls back to.
  bool (*sniff)(const uint8_t* prefix, size_t n);
  // The layout; a file that turns out not to be this format comes back
  // raw with a warning, and only I/O failures are errors. Null for raw.
  Result<FileLayout> (*read)(const ByteSource& file);
};

// In Format's order, values from 0 without gaps; detection tries them in
// this order.
inline constexpr FormatInfo kFormats[] = {
    {Format::kRaw, "raw", nullptr, nullptr},
    {Format::kSafetensors, "safetensors", &LooksLikeSafetensors, &ReadSafetensors},
    {Format::kPytorch, "pytorch", &LooksLikeZip, &ReadPytorch},
};

constexpr bool FormatTableIsOrdered() {
  for (size_t i = 0; i < sizeof kFormats / sizeof kFormats[0]; ++i) {
    if (static_cast<size_t>(kFormats[i].format) != i) return false;
    if ((kFormats[i].sniff == nullptr) != (kFormats[i].read == nullptr)) return false;
  }
  return true;
}
static_assert(FormatTableIsOrdered(), "kFormats must list every Format in value order, each with sniff and read");

const char* FormatName(Format f);

// What `--format` accepts: a format of kFormats, or nothing for auto (by
// content).
using FormatChoice = std::optional<Format>;
inline constexpr FormatChoice kAutoFormat = std::nullopt;
// "auto" or a name of kFormats; InvalidArgument names the choices.
Result<FormatChoice> ParseFormatChoice(std::string_view name);
// The names of kFormats in order, joined by `separator`.
std::string FormatNameList(const char* separator);

// The file's layout: with kAutoFormat the format its first bytes show. A
// file that is not (or not validly) the chosen format comes back as raw,
// with a warning when it looked like one. A raw file read with
// kAutoFormat holds one unnamed tensor over the whole file when a dtype
// guess pays (guess.h).
Result<FileLayout> ReadLayout(const ByteSource& file, FormatChoice choice);

}  // namespace zipnn::formats
