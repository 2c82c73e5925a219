// Writing tensors out as files of their own (raw bytes, a safetensors
// file, a numpy .npy file), and choosing them by name or glob. Used by
// `git zipnn cat`. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "lib/base/io.h"
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

// The tensors of `all` that `patterns` name (each a name or a glob), in
// file order; all of them when there are none. A pattern that names
// nothing is NotFound, "no tensor '<pattern>' in <what>", with the
// closest names.
Result<std::vector<Tensor>> SelectTensors(const std::vector<Tensor>& all, const std::vector<std::string>& patterns,
                                          const std::string& what);

enum class TensorFile { kRaw, kNpy, kSafetensors };

// The largest span of its storage a strided view may cover to be written:
// the span is read whole, then each element copied in C order.
inline constexpr uint64_t kMaxGatherBytes = 256u << 20;

// Writes `tensors` (read from `from`) as a file of `kind`: its head (none
// for raw), then each tensor's elements in order, a strided view gathered
// in C order, memory bounded whatever the tensor's size. A .npy file
// holds exactly one tensor.
Status WriteTensors(const ByteSource& from, const std::vector<Tensor>& tensors, TensorFile kind, ByteSink& out);

}  // namespace zipnn::formats
