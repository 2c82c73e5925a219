#include "lib/store/object_store.h"

#include <errno.h>
#include <sys/stat.h>

#include <cstring>

namespace zipnn::store {

Status MakeDirectories(const std::string& path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/') continue;
    const std::string prefix = path.substr(0, at);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return IoError(prefix + ": cannot create folder: " + std::strerror(errno));
    }
  }
  return OkStatus();
}

std::string ObjectStore::PathOf(const ContentId& id) const {
  const std::string hex = id.Hex();
  return root_ + "/" + hex.substr(0, 2) + "/" + hex.substr(2, 2) + "/" + hex;
}

bool ObjectStore::Has(const ContentId& id) const { return FileExists(PathOf(id)); }

Result<ReadFile> ObjectStore::Open(const ContentId& id) const {
  auto file = ReadFile::Open(PathOf(id));
  if (!file.ok() && file.status().code() == StatusCode::kNotFound) {
    return NotFound("object " + id.Hex() + " is not in the store " + root_);
  }
  return file;
}

Status ObjectStore::Put(const ContentId& id, const std::function<Status(AtomicFile&)>& write) const {
  const std::string path = PathOf(id);
  if (FileExists(path)) return OkStatus();
  RETURN_IF_ERROR(MakeDirectories(path.substr(0, path.rfind('/'))));
  // Another writer of the same content may get there first, before we
  // start or before we commit: theirs is whole, and ours is not needed.
  auto out = AtomicFile::Create(path, /*overwrite=*/false);
  if (!out.ok()) return FileExists(path) ? OkStatus() : out.status();
  RETURN_IF_ERROR(write(*out));
  Status committed = out->Commit();
  if (!committed.ok() && FileExists(path)) return OkStatus();
  return committed;
}

}  // namespace zipnn::store
