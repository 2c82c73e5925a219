#include "lib/formats/pytorch.h"

#include <algorithm>
#include <map>

#include "lib/base/buffer.h"
#include "lib/base/strings.h"
#include "lib/formats/torch_pickle.h"
#include "lib/formats/zip.h"

namespace zipnn::formats {

namespace {

FileLayout Raw(const ByteSource& file, const std::string& problem) {
  return RawLayout(file.size(), file.name() + ": torch zip " + problem + "; stored as raw bytes");
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
    t.shape = {t.length / static_cast<uint64_t>(codec::DTypeWidth(t.dtype))};
    layout.tensors.push_back(std::move(t));
  }
  if (auto overlap = SortTensors(layout.tensors)) {
    return Raw(file, "has overlapping members '" + overlap->first + "' and '" + overlap->second + "'");
  }
  return layout;
}

}  // namespace zipnn::formats
