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

// Versions of 64 bytes each; version i > 0 stored as a delta on i - 1.
inline std::vector<ContentId> StoreChain(const Store& repo, int deltas) {
  std::vector<ContentId> ids;
  std::vector<uint8_t> previous;
  for (int i = 0; i <= deltas; ++i) {
    std::vector<uint8_t> data(64, 0);
    for (int b = 0; b < 4; ++b) data[b] = static_cast<uint8_t>(i >> (8 * b));
    const ContentId id = HashBytes(data.data(), data.size());
    MemorySource input(data.data(), data.size(), "version");
    MemorySource base(previous.data(), previous.size(), "base");
    const container::DeltaBase delta{&base, ids.empty() ? ContentId{} : ids.back()};
    container::Layout layout = container::Layout::Single(codec::DType::kBytes, data.size());
    if (i > 0) layout.regions[0].delta = true;
    REQUIRE(repo.objects
                .Put(id,
                     [&](AtomicFile& out) -> Status {
                       auto r = container::EncodeObject(input, layout, i > 0 ? &delta : nullptr, {}, out);
                       return r.ok() ? OkStatus() : r.status();
                     })
                .ok());
    ids.push_back(id);
    previous = data;
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
