#include "lib/formats/tensor_file.h"

#include <fnmatch.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <set>

#include "lib/base/buffer.h"
#include "lib/base/closest.h"
#include "lib/base/endian.h"
#include "lib/base/progress.h"
#include "lib/base/strings.h"
#include "lib/codec/dtype.h"

namespace zipnn::formats {

std::string_view SafetensorsName(codec::DType t) {
  using codec::DType;
  switch (t) {
    case DType::kF64:
      return "F64";
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kF8E4M3:
      return "F8_E4M3";
    case DType::kF8E5M2:
      return "F8_E5M2";
    case DType::kI64:
      return "I64";
    case DType::kI32:
      return "I32";
    case DType::kI16:
      return "I16";
    case DType::kI8:
      return "I8";
    case DType::kU64:
      return "U64";
    case DType::kU32:
      return "U32";
    case DType::kU16:
      return "U16";
    case DType::kU8:
      return "U8";
    case DType::kBool:
      return "BOOL";
    case DType::kBytes:
      return "";
  }
  return "";
}

Result<std::string> SafetensorsHead(const std::vector<Tensor>& tensors) {
  // Ordered by offset as written, so that the file reads in the order the
  // caller writes it (JSON objects keep their insertion order here).
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::set<std::string> names;
  uint64_t at = 0;
  for (const Tensor& t : tensors) {
    const std::string_view dtype = SafetensorsName(t.dtype);
    if (dtype.empty()) return Unsupported("'" + t.name + "' is opaque bytes, which safetensors has no dtype for");
    if (!names.insert(t.name).second) return Unsupported("two tensors are named '" + t.name + "'");
    header[t.name] = {{"dtype", std::string(dtype)}, {"shape", t.shape}, {"data_offsets", {at, at + t.length}}};
    at += t.length;
  }
  // A name that is not UTF-8 (a pickle may hold any bytes) cannot be
  // JSON text: refused, not written with its bytes replaced.
  std::string json;
  try {
    json = header.dump();
  } catch (const nlohmann::json::type_error&) {
    return Unsupported("a tensor name is not UTF-8 text, which a safetensors header cannot hold; write it raw");
  }
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string head(8, '\0');
  StoreLE<uint64_t>(reinterpret_cast<uint8_t*>(head.data()), json.size());
  return head + json;
}

Result<std::string> NpyHead(const Tensor& tensor) {
  using codec::DType;
  std::string descr;
  switch (tensor.dtype) {
    case DType::kF64:
      descr = "<f8";
      break;
    case DType::kF32:
      descr = "<f4";
      break;
    case DType::kF16:
      descr = "<f2";
      break;
    case DType::kI64:
      descr = "<i8";
      break;
    case DType::kI32:
      descr = "<i4";
      break;
    case DType::kI16:
      descr = "<i2";
      break;
    case DType::kI8:
      descr = "|i1";
      break;
    case DType::kU64:
      descr = "<u8";
      break;
    case DType::kU32:
      descr = "<u4";
      break;
    case DType::kU16:
      descr = "<u2";
      break;
    case DType::kU8:
      descr = "|u1";
      break;
    case DType::kBool:
      descr = "|b1";
      break;
    default:
      return Unsupported("'" + tensor.name + "' is " + std::string(codec::DTypeName(tensor.dtype)) +
                         ", which numpy has no type for; write it as safetensors or raw instead");
  }
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape.size(); ++i) {
    shape += std::to_string(tensor.shape[i]) + (tensor.shape.size() == 1      ? ","
                                                : i + 1 < tensor.shape.size() ? ", "
                                                                              : "");
  }
  shape += ")";
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic (6), version (2), header length (2), then the dict, padded with
  // spaces and ended by a newline so that the data starts 64-byte aligned.
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string head = "\x93NUMPY";
  head += '\x01';
  head += '\x00';
  head += static_cast<char>(dict.size() & 0xff);
  head += static_cast<char>(dict.size() >> 8);
  return head + dict;
}

// The tensors of `all` that `patterns` name.
Result<std::vector<Tensor>> SelectTensors(const std::vector<Tensor>& all, const std::vector<std::string>& patterns,
                                          const std::string& what) {
  if (patterns.empty()) return all;
  std::vector<bool> chosen(all.size(), false);
  for (const std::string& pattern : patterns) {
    bool any = false;
    for (size_t i = 0; i < all.size(); ++i) {
      const std::string& name = all[i].name;
      if (name == pattern || ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0) chosen[i] = any = true;
    }
    if (any) continue;
    std::vector<std::string> names;
    for (const Tensor& t : all) names.push_back(t.name);
    const std::vector<std::string> close = ClosestWords(pattern, names);
    const std::string hint = close.empty() ? "" : " (did you mean " + Alternatives(close, "'") + "?)";
    return NotFound("no tensor '" + pattern + "' in " + what + hint);
  }
  std::vector<Tensor> picked;
  for (size_t i = 0; i < all.size(); ++i) {
    if (chosen[i]) picked.push_back(all[i]);
  }
  return picked;
}

namespace {

// A strided view's elements, gathered in C order: the storage bytes it
// spans are read, then each element copied in turn.
Status Gather(const ByteSource& from, const Tensor& t, ByteSink& out) {
  if (t.length > kMaxGatherBytes) {
    return Unsupported("'" + t.name + "' is a strided view spanning " + HumanBytes(t.length) +
                       " of its storage; cat gathers views of up to " + HumanBytes(kMaxGatherBytes));
  }
  Buffer span(static_cast<size_t>(t.length));
  ZIPNN_RETURN_IF_ERROR(from.ReadAt(t.offset, span.data(), span.size()));
  const size_t width = static_cast<size_t>(codec::DTypeWidth(t.dtype));
  const size_t dims = t.shape.size();
  std::vector<uint64_t> index(dims, 0);
  Buffer piece(1u << 20);
  size_t filled = 0;
  for (uint64_t n = DataBytes(t) / width; n > 0; --n) {
    uint64_t at = 0;
    for (size_t d = 0; d < dims; ++d) at += index[d] * t.strides[d];
    std::memcpy(piece.data() + filled, span.data() + at * width, width);
    filled += width;
    if (filled + width > piece.size()) {
      ZIPNN_RETURN_IF_ERROR(out.Append(piece.data(), filled));
      filled = 0;
    }
    for (size_t d = dims; d-- > 0;) {  // the next index in C order
      if (++index[d] < t.shape[d]) break;
      index[d] = 0;
    }
  }
  return out.Append(piece.data(), filled);
}

}  // namespace

Status WriteTensors(const ByteSource& from, const std::vector<Tensor>& tensors, TensorFile kind, ByteSink& out) {
  // As written: every tensor's elements back to back.
  std::vector<Tensor> written = tensors;
  for (Tensor& t : written) t.length = DataBytes(t);
  std::string head;
  if (kind == TensorFile::kNpy) {
    if (tensors.size() != 1) {
      return InvalidArgument("a .npy file holds one tensor, and " + std::to_string(tensors.size()) + " are given");
    }
    ZIPNN_ASSIGN_OR_RETURN(head, NpyHead(written[0]));
  } else if (kind == TensorFile::kSafetensors) {
    ZIPNN_ASSIGN_OR_RETURN(head, SafetensorsHead(written));
  }
  ZIPNN_RETURN_IF_ERROR(out.Append(head.data(), head.size()));
  for (const Tensor& t : tensors) {
    ZIPNN_RETURN_IF_ERROR(t.strided ? Gather(from, t, out) : CopyRange(from, t.offset, t.length, out));
  }
  return OkStatus();
}

}  // namespace zipnn::formats
