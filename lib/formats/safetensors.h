// safetensors: an 8-byte little-endian header length N, N bytes of JSON
// mapping tensor names to {dtype, shape, data_offsets}, then the tensor
// data. The JSON is parsed with nlohmann::json (no exceptions).
//
// A file whose header lies (a length past the end of the file, offsets out
// of range, overlapping tensors, sizes that disagree with dtype x shape,
// JSON that is not a valid header) is not an error: the layout comes back
// as raw bytes with a warning that names the problem, so the file is still
// stored losslessly. Thread-safe (no shared state).
#pragma once

#include <optional>

#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/formats/file_layout.h"

namespace zipnn::formats {

// Headers longer than this are refused (read into memory to parse).
inline constexpr uint64_t kMaxSafetensorsHeader = 100u << 20;

// Whether the first bytes look like safetensors: a header length, then '{'.
bool LooksLikeSafetensors(const uint8_t* prefix, size_t n);

// Reads the layout; only I/O failures are errors.
Result<FileLayout> ReadSafetensors(const ByteSource& file);

// The dtype a safetensors dtype string names, if git-zipnn knows it.
std::optional<codec::DType> SafetensorsDType(std::string_view name);

}  // namespace zipnn::formats
