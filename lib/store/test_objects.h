// Helpers for the store's tests: a scratch folder, counting files, and a
// chain of small stored versions.
#pragma once

#include <dirent.h>
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/base/buffer.h"
#include "lib/container/format.h"
#include "lib/container/object.h"
#include "lib/store/store.h"

namespace zipnn::store::testing {

inline std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(t != nullptr ? t : "/tmp") + "/store-XXXXXX";
  REQUIRE(mkdtemp(dir.data()) != nullptr);
  return dir;
}

// The content id of a file's bytes.
inline ContentId IdOfFile(const std::string& file) {
  auto f = ReadFile::Open(file);
  REQUIRE(f.ok());
  auto id = HashSource(*f);
  REQUIRE(id.ok());
  return *id;
}

inline size_t FilesIn(const std::string& dir) {
  size_t n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// Version i of the chains below: 64 bytes, i in the first four.
inline std::vector<uint8_t> ChainVersion(int i) {
  std::vector<uint8_t> data(64, 0);
  for (int b = 0; b < 4; ++b) data[b] = static_cast<uint8_t>(i >> (8 * b));
  return data;
}

// Stores `data` in `store`, as a delta of `base` (the bytes of the version
// of id `base_id`) when one is given, else whole; its id.
inline ContentId StoreData(const Store& store, const std::vector<uint8_t>& data,
                           const std::vector<uint8_t>* base = nullptr, const ContentId& base_id = {}) {
  const ContentId id = HashBytes(data.data(), data.size());
  MemorySource input(data.data(), data.size(), "version");
  MemorySource base_bytes(base != nullptr ? base->data() : nullptr, base != nullptr ? base->size() : 0, "base");
  const container::DeltaBase delta{&base_bytes, base_id};
  container::Layout layout = container::Layout::Single(codec::DType::kBytes, data.size());
  if (base != nullptr) layout.regions[0].delta = true;
  REQUIRE(store.objects
              .Put(id,
                   [&](AtomicFile& out) -> Status {
                     auto r = container::EncodeObject(input, layout, base != nullptr ? &delta : nullptr, {}, out);
                     return r.ok() ? OkStatus() : r.status();
                   })
              .ok());
  return id;
}

// Stores 64 bytes `data` as a delta of `base` (the version `base_id`)
// that takes its second half from the same half of `reference` (the
// version `reference_id`, object format 8); its id.
inline ContentId StoreReferencing(const Store& store, const std::vector<uint8_t>& data,
                                  const std::vector<uint8_t>& base, const ContentId& base_id,
                                  const std::vector<uint8_t>& reference, const ContentId& reference_id) {
  REQUIRE(data.size() == 64);
  const ContentId id = HashBytes(data.data(), data.size());
  MemorySource input(data.data(), data.size(), "version"), base_bytes(base.data(), base.size(), "base"),
      reference_bytes(reference.data(), reference.size(), "reference");
  const container::DeltaBase delta{
      &base_bytes, base_id, container::BaseChoice::kShared, {{&reference_bytes, reference_id}}};
  container::Layout layout;
  layout.regions = {container::Region{codec::DType::kBytes, 0, 32, true, 0},
                    container::Region{codec::DType::kBytes, 32, 32, true, 32, 0, /*source=*/1}};
  REQUIRE(store.objects
              .Put(id,
                   [&](AtomicFile& out) -> Status {
                     auto r = container::EncodeObject(input, layout, &delta, {}, out);
                     return r.ok() ? OkStatus() : r.status();
                   })
              .ok());
  return id;
}

// Stores version i (of ChainVersion) as StoreData does.
inline ContentId StoreVersion(const Store& store, int i, const std::vector<uint8_t>* base = nullptr,
                              const ContentId& base_id = {}) {
  return StoreData(store, ChainVersion(i), base, base_id);
}

// Versions 0..deltas; version i > 0 stored as a delta on i - 1.
inline std::vector<ContentId> StoreChain(const Store& store, int deltas) {
  std::vector<ContentId> ids;
  for (int i = 0; i <= deltas; ++i) {
    const std::vector<uint8_t> previous = i > 0 ? ChainVersion(i - 1) : std::vector<uint8_t>();
    ids.push_back(StoreVersion(store, i, i > 0 ? &previous : nullptr, i > 0 ? ids.back() : ContentId{}));
  }
  return ids;
}

// The bytes of `object` with the content id in its trailer rewritten to
// `id` and the index checksum recomputed: a forgery that passes every
// structural check (CheckObject) and fails only a decode.
// (No doctest here: tests/forge_object runs it outside a test.)
inline Result<std::string> ForgeObject(const std::string& object, const ContentId& id) {
  MemorySource source(reinterpret_cast<const uint8_t*>(object.data()), object.size(), "object");
  ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(source));
  const size_t index = object.size() - container::kTrailerBytes - container::kIndexEntryBytes * info.chunks.size();
  Buffer tail;
  container::AppendIndexAndTrailer(info.chunks, id, tail);
  return object.substr(0, index) + std::string(reinterpret_cast<const char*>(tail.data()), tail.size());
}

}  // namespace zipnn::store::testing
