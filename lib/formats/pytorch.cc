#include "lib/formats/pytorch.h"

#include <algorithm>
#include <map>
#include <optional>

#include "lib/base/buffer.h"
#include "lib/base/strings.h"
#include "lib/formats/torch_pickle.h"
#include "lib/formats/zip.h"

namespace zipnn::formats {

namespace {

FileLayout Raw(const ByteSource& file, const std::string& problem) {
  return RawLayout(file.size(), file.name() + ": torch zip " + problem + "; stored as raw bytes");
}

// The elements of `shape`, or nullopt on overflow.
std::optional<uint64_t> Elements(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

// Whether a view's elements lie back to back in C order: each stride is
// the product of the sizes after it (a dimension of size 1 may have any).
bool Contiguous(const TorchView& v) {
  uint64_t expected = 1;
  for (size_t i = v.shape.size(); i-- > 0;) {
    if (v.shape[i] != 1 && v.stride[i] != expected) return false;
    if (__builtin_mul_overflow(expected, v.shape[i], &expected)) return false;
  }
  return true;
}

// The tensors built on `storage`, whose bytes `member` holds (`elements`
// elements), as views of those bytes. A view reaching past the storage is
// left out, and so is one whose elements would take more than
// kMaxViewBytes and more than its storage (a stride of 0 repeats an
// element: a pickle of a few bytes may claim terabytes), with a warning.
void AddViews(const TorchStorage& storage, const Tensor& member, uint64_t elements,
              std::vector<std::pair<size_t, Tensor>>& views, std::vector<std::string>& warnings) {
  const uint64_t width = static_cast<uint64_t>(codec::DTypeWidth(member.dtype));
  for (const TorchView& v : storage.views) {
    const std::optional<uint64_t> numel = Elements(v.shape);
    uint64_t bytes = 0;
    if (numel && (__builtin_mul_overflow(*numel, width, &bytes) || bytes > std::max(kMaxViewBytes, elements * width))) {
      warnings.push_back("tensor '" + v.name + "' is a view that repeats its storage's " +
                         std::to_string(elements * width) + " bytes into more than " +
                         std::to_string(kMaxViewBytes >> 20) + " MiB; it is left out of the tensors listed");
      continue;
    }
    if (!numel || v.offset > elements) continue;
    Tensor t;
    t.name = v.name;
    t.dtype = member.dtype;
    t.shape = v.shape;
    t.offset = member.offset + v.offset * width;
    if (Contiguous(v)) {
      if (*numel > elements - v.offset) continue;
      t.length = *numel * width;
    } else {
      // The last element lies at the sum of (size - 1) x stride.
      uint64_t last = 0;
      bool fits = *numel > 0;
      for (size_t i = 0; fits && i < v.shape.size(); ++i) {
        uint64_t step = 0;
        fits =
            !__builtin_mul_overflow(v.shape[i] - 1, v.stride[i], &step) && !__builtin_add_overflow(last, step, &last);
      }
      if (!fits || last >= elements - v.offset) continue;
      t.strided = true;
      t.strides = v.stride;
      t.length = (last + 1) * width;
    }
    views.emplace_back(v.order, std::move(t));
  }
}

}  // namespace

Result<FileLayout> ReadPytorch(const ByteSource& file) {
  auto members = ReadZipDirectory(file);
  if (!members.ok()) {
    if (members.status().code() == StatusCode::kIoError) return members.status();
    return Raw(file, "is unreadable (" + members.status().message() + ")");
  }
  const ZipMember* pickle = nullptr;
  for (const ZipMember& m : *members) {
    if (EndsWith(m.name, "/data.pkl") || m.name == "data.pkl") {
      pickle = &m;
      break;
    }
  }
  if (pickle == nullptr) {  // a zip, but not torch's: no warning, just raw
    FileLayout raw;
    raw.size = file.size();
    return raw;
  }
  const std::string prefix = pickle->name.substr(0, pickle->name.size() - std::string("data.pkl").size());
  if (pickle->method != 0) return Raw(file, "has a compressed data.pkl");
  if (pickle->size > kMaxTorchPickle) return Raw(file, "has a data.pkl over 256 MiB");
  Buffer pkl(pickle->size);
  ZIPNN_RETURN_IF_ERROR(file.ReadAt(pickle->data_offset, pkl.data(), pickle->size));
  auto storages = ReadTorchPickle(pkl.data(), pkl.size());
  if (!storages.ok()) return Raw(file, "data.pkl is unreadable (" + storages.status().message() + ")");
  std::map<std::string, const TorchStorage*> by_key;
  for (const TorchStorage& s : *storages) by_key[s.key] = &s;

  FileLayout layout;
  layout.format = Format::kPytorch;
  layout.size = file.size();
  const std::string data_prefix = prefix + "data/";
  std::vector<std::pair<size_t, Tensor>> views;  // by the order the pickle builds them
  for (const ZipMember& m : *members) {
    if (m.name.compare(0, data_prefix.size(), data_prefix) != 0) continue;
    if (m.method != 0) return Raw(file, "member '" + m.name + "' is compressed");
    const std::string key = m.name.substr(data_prefix.size());
    Tensor t;
    t.offset = m.data_offset;
    t.length = m.size;
    auto it = by_key.find(key);
    if (it != by_key.end()) {
      t.name = it->second->name;
      if (it->second->dtype) t.dtype = *it->second->dtype;
    }
    if (t.name.empty()) t.name = "storage " + key;
    // A storage whose size is no whole number of its elements stays opaque.
    if (t.length % static_cast<uint64_t>(codec::DTypeWidth(t.dtype)) != 0) t.dtype = codec::DType::kBytes;
    const uint64_t elements = t.length / static_cast<uint64_t>(codec::DTypeWidth(t.dtype));
    t.shape = {elements};
    if (it != by_key.end() && t.dtype != codec::DType::kBytes) {
      const size_t first = views.size();
      AddViews(*it->second, t, elements, views, layout.warnings);
      // A storage that is exactly one tensor takes its shape.
      const Tensor* only = views.size() == first + 1 ? &views[first].second : nullptr;
      if (only != nullptr && !only->strided && only->offset == t.offset && only->length == t.length)
        t.shape = only->shape;
    }
    layout.tensors.push_back(std::move(t));
  }
  std::sort(views.begin(), views.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& v : views) layout.views.push_back(std::move(v.second));
  if (auto overlap = SortTensors(layout.tensors)) {
    return Raw(file, "has overlapping members '" + overlap->first + "' and '" + overlap->second + "'");
  }
  return layout;
}

}  // namespace zipnn::formats
