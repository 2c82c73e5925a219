// Writing tensors out as files of their own: the heads of a safetensors
// file and of a numpy .npy file, for tensors whose bytes the caller writes
// after the head, in the order given. Used by `git zipnn cat`. Pure
// functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/formats/file_layout.h"

namespace zipnn::formats {

// The safetensors name of a dtype ("BF16"); empty for bytes, which
// safetensors cannot name.
std::string_view SafetensorsName(codec::DType t);

// The head of a safetensors file holding `tensors` back to back in this
// order: the 8-byte length, then the JSON header padded with spaces to a
// multiple of 8 bytes. Unsupported for a tensor of bytes (an opaque range
// has no safetensors dtype) or a name used twice.
Result<std::string> SafetensorsHead(const std::vector<Tensor>& tensors);

// The head of a .npy file (format 1.0, little-endian, C order) holding
// `tensor`. Unsupported for dtypes numpy has no type for (bf16, the 8-bit
// floats, bytes), naming the way out.
Result<std::string> NpyHead(const Tensor& tensor);

}  // namespace zipnn::formats
