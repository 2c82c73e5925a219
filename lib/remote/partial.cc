#include "lib/remote/partial.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/base/file.h"
#include "lib/base/fs_ops.h"

namespace zipnn::remote {

Partial::Partial(const std::string& dir, const std::string& name, uint64_t size, bool any_size) {
  if (dir.empty() || (size < kResumableBytes && !any_size) || !MakeDirectories(dir).ok()) return;
  path_ = dir + "/" + name;
  struct stat st;
  // Only a plain file of one link, so that nothing is written into a file
  // elsewhere through a link planted here. Anything else at the name (a
  // link, a folder, a pipe) is no download: its name is removed (never
  // what it points to) and a file made in its place, once.
  for (int attempt = 0; attempt < 2; ++attempt) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (fd_ < 0) {
      if (errno != ELOOP && errno != EISDIR) return;
    } else if (::flock(fd_, LOCK_EX | LOCK_NB) != 0 || ::fstat(fd_, &st) != 0) {
      Close();  // another process downloads into it
      return;
    } else if (S_ISREG(st.st_mode) && st.st_nlink == 1) {
      break;
    }
    Close();
    if (::unlink(path_.c_str()) != 0 && ::rmdir(path_.c_str()) != 0) return;
  }
  if (fd_ < 0) return;
  have_ = static_cast<uint64_t>(st.st_size);
  if (have_ > size) (void)Restart();
}

Partial::~Partial() { Close(); }

Status Partial::CopyTo(ByteSink& out) const {
  if (have_ == 0) return OkStatus();
  ZIPNN_ASSIGN_OR_RETURN(ReadFile kept, ReadFile::Open(path_));
  return CopyRange(kept, 0, have_, out);
}

Status Partial::Restart() {
  if (::ftruncate(fd_, 0) != 0) return IoError(path_ + ": cannot empty it: " + std::strerror(errno));
  have_ = kept_ = 0;
  return OkStatus();
}

Status Partial::Keep(const void* data, size_t n) {
  ZIPNN_RETURN_IF_ERROR(WriteAll(fd_, data, n, path_));
  kept_ += n;
  return OkStatus();
}

Status Partial::Sync() {
  if (FsSync(fd_) != 0) return IoError(path_ + ": fsync failed: " + std::strerror(errno));
  return OkStatus();
}

Status Partial::CopyAllTo(ByteSink& out) {
  have_ += kept_;
  kept_ = 0;
  return CopyTo(out);
}

void Partial::Done(const Status& st) {
  if (fd_ >= 0 && (st.ok() || st.code() != StatusCode::kIoError)) ::unlink(path_.c_str());
  Close();
}

std::optional<std::string> FindKept(const std::string& dir, const ContentId& id,
                                    const std::function<bool(const std::string&)>& valid) {
  const std::string prefix = id.Hex() + "-";
  std::optional<std::string> found;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (!found && name.compare(0, prefix.size(), prefix) == 0 && valid(name.substr(prefix.size()))) found = name;
    }
    ::closedir(d);
  }
  return found;
}

void Partial::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace zipnn::remote
