// Detection of a checkpoint's format by its content (never its name), and
// the entry point that reads a file's layout.
#pragma once

#include <optional>
#include <string_view>

#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/formats/file_layout.h"

namespace zipnn::formats {

enum class FormatChoice { kAuto, kSafetensors, kPytorch, kRaw };
std::optional<FormatChoice> ParseFormatChoice(std::string_view name);

// The file's layout: with kAuto the format its first bytes show. A file
// that is not (or not validly) the chosen format comes back as raw, with a
// warning when it looked like one. A raw file read with kAuto holds one
// unnamed tensor over the whole file when a dtype guess pays (guess.h).
Result<FileLayout> ReadLayout(const ByteSource& file, FormatChoice choice);

}  // namespace zipnn::formats
