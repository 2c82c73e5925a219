#include "lib/store/object_store.h"

#include <errno.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <filesystem>

#include <cstring>

#include "lib/base/buffer.h"
#include "lib/base/fs_ops.h"
#include "lib/base/strings.h"

namespace zipnn::store {

namespace {
// Under the root: who uses the store (RegisterUser).
constexpr char kUsersFolder[] = "repositories";
}  // namespace

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

Status ObjectStore::Put(const ContentId& id, const std::function<Status(AtomicFile&)>& write,
                        const std::function<Status(const std::string& temp)>& check) const {
  const std::string path = PathOf(id);
  if (FileExists(path)) return OkStatus();
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(path.substr(0, path.rfind('/')), /*durable=*/true));
  // Another writer of the same content may get there first, before we
  // start or before we commit: theirs is whole, and ours is not needed.
  auto out = AtomicFile::Create(path, /*overwrite=*/false);
  if (!out.ok()) return FileExists(path) ? OkStatus() : out.status();
  ZIPNN_RETURN_IF_ERROR(write(*out));
  if (check) ZIPNN_RETURN_IF_ERROR(check(out->temp_path()));
  Status committed = out->Commit();
  if (!committed.ok() && FileExists(path)) return OkStatus();
  return committed;
}

StoreLock& StoreLock::operator=(StoreLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

StoreLock::~StoreLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

Result<StoreLock> ObjectStore::Lock(StoreLock::Mode mode, const std::function<void()>& waiting) const {
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(root_));
  const int fd = ::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError(root_ + ": cannot open the store to lock it: " + std::strerror(errno));
  StoreLock lock(fd);
  const int how = mode == StoreLock::Mode::kShared ? LOCK_SH : LOCK_EX;
  if (FsLock(fd, how | LOCK_NB) == 0) return lock;
  if (errno == EWOULDBLOCK) {
    waiting();
    int r;
    while ((r = FsLock(fd, how)) != 0 && errno == EINTR) {
    }
    if (r == 0) return lock;
  }
  return IoError(root_ + ": cannot lock the store: " + std::strerror(errno));
}

Status ObjectStore::Touch(const ContentId& id) const {
  const std::string path = PathOf(id);
  if (::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) == 0) return OkStatus();
  if (errno == ENOENT) return NotFound("object " + id.Hex() + " is not in the store " + root_);
  return IoError(path + ": cannot touch: " + std::strerror(errno));
}

std::string ObjectStore::UserFile(const std::string& git_dir) const {
  return root_ + "/" + kUsersFolder + "/" + HashBytes(git_dir.data(), git_dir.size()).Hex();
}

Status ObjectStore::RegisterUser(const std::string& given) const {
  // A gc in another repository reads the entry from its own folder: only
  // an absolute path names this repository there.
  std::error_code ec;
  const std::string git_dir = std::filesystem::absolute(given, ec).lexically_normal().string();
  if (ec) return IoError(given + ": cannot make the path absolute: " + ec.message());
  const std::string file = UserFile(git_dir);
  struct stat st;
  if (::stat(file.c_str(), &st) == 0) return OkStatus();
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(root_ + "/" + kUsersFolder));
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(file, /*overwrite=*/true));
  const std::string line = git_dir + "\n";
  ZIPNN_RETURN_IF_ERROR(out.Append(line.data(), line.size()));
  return out.Commit();
}

Result<std::vector<std::string>> ObjectStore::Users() const {
  std::vector<std::string> users;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(root_ + "/" + kUsersFolder, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!ContentId::FromHex(it->path().filename().string())) continue;  // a temporary
    ZIPNN_ASSIGN_OR_RETURN(std::vector<uint8_t> text, ReadWholeFile(it->path().string()));
    std::string dir(text.begin(), text.end());
    if (!dir.empty() && dir.back() == '\n') dir.pop_back();
    if (!dir.empty()) users.push_back(std::move(dir));
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return IoError(root_ + "/" + kUsersFolder + ": cannot list the store's repositories: " + ec.message());
  }
  std::sort(users.begin(), users.end());
  return users;
}

Status ObjectStore::ForgetUser(const std::string& git_dir) const {
  const std::string file = UserFile(git_dir);
  if (::unlink(file.c_str()) == 0 || errno == ENOENT) return OkStatus();
  return IoError(file + ": cannot remove: " + std::strerror(errno));
}

namespace {

constexpr char kSetAsideSuffix[] = ".gc";

bool IsHexPair(const std::string& name) {
  return name.size() == 2 &&
         std::all_of(name.begin(), name.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

bool ObjectStore::IsTemporaryName(const std::string& file_name) {
  const std::optional<std::string> target = TemporaryTarget(file_name);
  return target && ContentId::FromHex(*target).has_value();
}

Result<std::vector<ObjectStore::Entry>> ObjectStore::List() const {
  std::vector<Entry> entries;
  std::error_code ec;
  std::filesystem::recursive_directory_iterator it(root_, ec), end;
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return entries;
    return IoError(root_ + ": cannot list the store: " + ec.message());
  }
  for (; it != end; it.increment(ec)) {
    if (ec) return IoError(root_ + ": cannot list the store: " + ec.message());
    const std::string path = it->path().string();
    const std::string name = it->path().filename().string();
    const int depth = it.depth();
    // A symbolic link is nobody's object: listed, never followed.
    const std::filesystem::file_status st = it->symlink_status(ec);
    if (ec) continue;  // removed meanwhile
    const bool folder = std::filesystem::is_directory(st);
    if (depth == 0 && folder && name == kUsersFolder) {
      it.disable_recursion_pending();
      continue;
    }
    if (folder && depth < 2 && IsHexPair(name)) continue;  // <2 hex>/<2 hex>/: entered
    struct stat info;
    if (::lstat(path.c_str(), &info) != 0) continue;  // removed meanwhile
    Entry e{path, Kind::kForeign, std::nullopt, static_cast<uint64_t>(info.st_size),
            static_cast<int64_t>(info.st_mtime)};
    if (folder) {
      it.disable_recursion_pending();
      e.path += "/";
      e.size = 0;
    } else if (depth == 2 && std::filesystem::is_regular_file(st)) {
      // Named for an object whose place is this folder: its object, or a
      // writer's temporary of it, or a gc's set-aside copy.
      const std::string folder_path = path.substr(0, path.size() - name.size());
      auto placed = [&](const std::string& id_name) -> std::optional<ContentId> {
        std::optional<ContentId> id = ContentId::FromHex(id_name);
        if (id && PathOf(*id) == folder_path + id_name) return id;
        return std::nullopt;
      };
      // `file` is `suffix` after the name of an object placed here.
      auto beside = [&](const std::string& file, const std::string& suffix) {
        return file.size() > suffix.size() && EndsWith(file, suffix) &&
               placed(file.substr(0, file.size() - suffix.size())).has_value();
      };
      const std::optional<std::string> target = TemporaryTarget(name);
      if (std::optional<ContentId> id = placed(name)) {
        e.kind = Kind::kObject;
        e.id = id;
      } else if (target && (placed(*target) || beside(*target, ".retained") || beside(*target, ".base"))) {
        e.kind = Kind::kTemporary;  // of an object, a record or a note
      } else if (beside(name, kSetAsideSuffix)) {
        e.kind = Kind::kSetAside;
      } else if (beside(name, ".retained")) {
        e.kind = Kind::kRecord;
      } else if (beside(name, ".base")) {
        e.kind = Kind::kNote;
      }
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

namespace {

Status CopyInto(const std::string& file, AtomicFile& out) {
  ZIPNN_ASSIGN_OR_RETURN(ReadFile from, ReadFile::Open(file));
  return CopyRange(from, 0, from.size(), out);
}

}  // namespace

Status ObjectStore::Adopt(const ContentId& id, const std::string& file) const {
  const std::string path = PathOf(id);
  const std::string folder = path.substr(0, path.rfind('/'));
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(folder, /*durable=*/true));
  if (FsLink(file.c_str(), path.c_str()) == 0) return SyncFolder(folder);
  if (errno == EEXIST) return OkStatus();
  if (errno != EXDEV) return IoError(path + ": cannot link " + file + ": " + std::strerror(errno));
  return Put(id, [&](AtomicFile& out) { return CopyInto(file, out); });  // another file system
}

Status ObjectStore::Replace(const ContentId& id, const std::string& file) const {
  const std::string path = PathOf(id);
  const std::string folder = path.substr(0, path.rfind('/'));
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(folder, /*durable=*/true));
  if (FsRename(file.c_str(), path.c_str()) == 0) return SyncFolder(folder);
  if (errno != EXDEV) return IoError(path + ": cannot replace it with " + file + ": " + std::strerror(errno));
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(path, /*overwrite=*/true));  // another file system
  ZIPNN_RETURN_IF_ERROR(CopyInto(file, out));
  return out.Commit();
}

}  // namespace zipnn::store
