#include "lib/formats/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "lib/base/buffer.h"
#include "lib/base/endian.h"

namespace zipnn::formats {

namespace {

using Json = nlohmann::json;

FileLayout Raw(const ByteSource& file, const std::string& problem) {
  return RawLayout(file.size(), file.name() + ": safetensors header " + problem + "; stored as raw bytes");
}

// a * b, or nullopt on overflow.
std::optional<uint64_t> Multiply(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace

std::optional<codec::DType> SafetensorsDType(std::string_view name) {
  using codec::DType;
  static const std::pair<std::string_view, DType> kTypes[] = {
      {"F64", DType::kF64},        {"F32", DType::kF32},        {"F16", DType::kF16},   {"BF16", DType::kBF16},
      {"F8_E4M3", DType::kF8E4M3}, {"F8_E5M2", DType::kF8E5M2}, {"I64", DType::kI64},   {"I32", DType::kI32},
      {"I16", DType::kI16},        {"I8", DType::kI8},          {"U64", DType::kU64},   {"U32", DType::kU32},
      {"U16", DType::kU16},        {"U8", DType::kU8},          {"BOOL", DType::kBool},
  };
  for (const auto& [n, t] : kTypes) {
    if (n == name) return t;
  }
  return std::nullopt;
}

// A first pass over a header that builds nothing: the parsed tree of a
// hostile header can take 40 times its text (100 MiB of "[{},{},...]"
// took over 4 GB), so headers with more values or deeper nesting than any
// checkpoint's are refused before it is built. A real header has about
// three values per tensor, nested four deep.
constexpr size_t kMaxHeaderValues = 1u << 20;
constexpr size_t kMaxHeaderDepth = 64;

class HeaderBounds : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool string(string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool key(string_t&) override { return true; }
  bool start_object(std::size_t) override { return Open(); }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    problem = "is not valid JSON";
    return false;
  }
  std::string problem;  // empty when within bounds and well formed

 private:
  bool Value() {
    if (++values_ <= kMaxHeaderValues) return true;
    problem = "has more than " + std::to_string(kMaxHeaderValues) + " JSON values";
    return false;
  }
  bool Open() {
    if (++depth_ > kMaxHeaderDepth) {
      problem = "nests deeper than " + std::to_string(kMaxHeaderDepth);
      return false;
    }
    return Value();
  }
  bool Close() {
    --depth_;
    return true;
  }
  size_t values_ = 0, depth_ = 0;
};

bool LooksLikeSafetensors(const uint8_t* prefix, size_t n) {
  if (n < 9) return false;
  const uint64_t header = LoadLE<uint64_t>(prefix);
  return header >= 2 && prefix[8] == '{';
}

Result<FileLayout> ReadSafetensors(const ByteSource& file) {
  const uint64_t size = file.size();
  uint8_t head[8];
  if (size < 10) return Raw(file, "is truncated");
  ZIPNN_RETURN_IF_ERROR(file.ReadAt(0, head, 8));
  const uint64_t n = LoadLE<uint64_t>(head);
  if (n > size - 8) return Raw(file, "length " + std::to_string(n) + " runs past the end of the file");
  if (n > kMaxSafetensorsHeader) return Raw(file, "length " + std::to_string(n) + " is over the 100 MiB limit");
  Buffer text(n);
  ZIPNN_RETURN_IF_ERROR(file.ReadAt(8, text.data(), n));
  HeaderBounds bounds;
  if (!Json::sax_parse(text.data(), text.data() + n, &bounds) && !bounds.problem.empty()) {
    return Raw(file, bounds.problem);
  }
  const Json header = Json::parse(text.data(), text.data() + n, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) return Raw(file, "is not valid JSON");
  if (!header.is_object()) return Raw(file, "is not a JSON object");

  const uint64_t data_start = 8 + n;
  const uint64_t data_size = size - data_start;
  FileLayout layout;
  layout.format = Format::kSafetensors;
  layout.size = size;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string where = "entry '" + name + "'";
    if (!entry.is_object()) return Raw(file, where + " is not an object");
    const auto dtype = entry.find("dtype");
    const auto shape = entry.find("shape");
    const auto offsets = entry.find("data_offsets");
    if (dtype == entry.end() || !dtype->is_string()) return Raw(file, where + " has no dtype");
    if (shape == entry.end() || !shape->is_array()) return Raw(file, where + " has no shape");
    if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned()) {
      return Raw(file, where + " has no valid data_offsets");
    }
    const uint64_t begin = (*offsets)[0].get<uint64_t>();
    const uint64_t end = (*offsets)[1].get<uint64_t>();
    if (begin > end || end > data_size) return Raw(file, where + " has offsets outside the data");
    std::optional<uint64_t> numel = 1;
    std::vector<uint64_t> dims;
    for (const Json& d : *shape) {
      if (!d.is_number_unsigned()) return Raw(file, where + " has a shape that is not a list of sizes");
      dims.push_back(d.get<uint64_t>());
      if (numel) numel = Multiply(*numel, dims.back());
    }
    std::optional<codec::DType> type = SafetensorsDType(dtype->get<std::string>());
    Tensor t;
    t.name = name;
    t.shape = std::move(dims);
    t.offset = data_start + begin;
    t.length = end - begin;
    // A dtype this build does not know is kept as opaque bytes, still
    // checked for overlaps.
    t.dtype = type ? *type : codec::DType::kBytes;
    if (type) {
      std::optional<uint64_t> bytes =
          numel ? Multiply(*numel, static_cast<uint64_t>(codec::DTypeWidth(*type))) : std::nullopt;
      if (!bytes || *bytes != t.length) {
        return Raw(file, where + " holds " + std::to_string(t.length) + " bytes, not dtype x shape");
      }
    }
    layout.tensors.push_back(std::move(t));
  }
  if (auto overlap = SortTensors(layout.tensors)) {
    return Raw(file, "has overlapping tensors '" + overlap->first + "' and '" + overlap->second + "'");
  }
  return layout;
}

}  // namespace zipnn::formats
