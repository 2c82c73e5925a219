#include "lib/base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace zipnn {

namespace {
std::string Errno() { return std::strerror(errno); }
}  // namespace

Result<ReadFile> ReadFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + Errno());
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    std::string err = Errno();
    ::close(fd);
    return IoError(path + ": cannot stat: " + err);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + ": is a directory");
  }
  return ReadFile(fd, static_cast<uint64_t>(st.st_size), path);
}

ReadFile::ReadFile(ReadFile&& o) noexcept
    : fd_(o.fd_), size_(o.size_), path_(std::move(o.path_)) {
  o.fd_ = -1;
}

ReadFile& ReadFile::operator=(ReadFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    size_ = o.size_;
    path_ = std::move(o.path_);
    o.fd_ = -1;
  }
  return *this;
}

ReadFile::~ReadFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status ReadFile::ReadAt(uint64_t offset, void* out, size_t n) const {
  auto* p = static_cast<uint8_t*>(out);
  while (n > 0) {
    ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      return IoError(path_ + ": read failed: " + Errno());
    }
    if (got == 0) return IoError(path_ + ": file ended early (was it changed while being read?)");
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return OkStatus();
}

namespace {

constexpr char kTemporaryMark[] = ".tmp-";
constexpr size_t kTemporaryDigits = 8;

// A fresh temporary name beside `path`, in the form that gc and the
// remotes recognise (TemporaryTarget: ".tmp-" and 8 hex digits).
std::string TemporaryName(const std::string& path, std::random_device& rd) {
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "%s%08x", kTemporaryMark, static_cast<unsigned>(rd()));
  return path + suffix;
}

}  // namespace

std::optional<std::string> TemporaryTarget(const std::string& file_name) {
  const size_t suffix = sizeof kTemporaryMark - 1 + kTemporaryDigits;
  if (file_name.size() <= suffix || file_name.find('/') != std::string::npos) return std::nullopt;
  const size_t mark = file_name.size() - suffix;
  if (file_name.compare(mark, sizeof kTemporaryMark - 1, kTemporaryMark) != 0) return std::nullopt;
  for (size_t i = mark + sizeof kTemporaryMark - 1; i < file_name.size(); ++i) {
    const char c = file_name[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  }
  return file_name.substr(0, mark);
}

Result<AtomicFile> AtomicFile::Create(const std::string& path, bool overwrite) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
      int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) return IoError(path + ": cannot open for writing: " + Errno());
      return AtomicFile(fd, path, "", overwrite, /*stream=*/true);
    }
    if (S_ISDIR(st.st_mode)) return InvalidArgument(path + ": is a directory");
    if (!overwrite) return InvalidArgument(path + ": already exists (use --force to overwrite)");
  }
  std::random_device rd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string tmp = TemporaryName(path, rd);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) return AtomicFile(fd, path, tmp, overwrite, /*stream=*/false);
    if (errno != EEXIST) return IoError(path + ": cannot create: " + Errno());
  }
  return IoError(path + ": cannot create a temporary file beside it");
}

Result<std::optional<TempLink>> TempLink::Create(const std::string& file, const std::string& path) {
  std::random_device rd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string tmp = TemporaryName(path, rd);
    if (::link(file.c_str(), tmp.c_str()) == 0) return std::optional<TempLink>(TempLink(path, std::move(tmp)));
    switch (errno) {
      case EEXIST:
        continue;
      case EXDEV:   // another file system
      case EPERM:   // one without hard links, or protected_hardlinks
      case EMLINK:  // the file has all the links it may
      case ENOTSUP:
        return std::optional<TempLink>();
      default:
        return IoError(path + ": cannot link " + file + " beside it: " + Errno());
    }
  }
  return IoError(path + ": cannot create a temporary link beside it");
}

TempLink::~TempLink() {
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

Status TempLink::Commit() {
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) return IoError(path_ + ": cannot rename into place: " + Errno());
  tmp_.clear();
  return OkStatus();
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept
    : fd_(o.fd_), path_(std::move(o.path_)), tmp_(std::move(o.tmp_)),
      overwrite_(o.overwrite_), stream_(o.stream_), size_(o.size_) {
  o.fd_ = -1;
  o.tmp_.clear();
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

Status AtomicFile::WriteAt(uint64_t offset, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t put = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
    if (put < 0) {
      if (errno == EINTR) continue;
      return IoError(path_ + ": write failed: " + Errno());
    }
    p += put;
    n -= static_cast<size_t>(put);
    offset += static_cast<uint64_t>(put);
  }
  return OkStatus();
}

Status AtomicFile::Presize(uint64_t total) {
  if (::ftruncate(fd_, static_cast<off_t>(total)) != 0) {
    return IoError(path_ + ": cannot size to " + std::to_string(total) + " bytes: " + Errno());
  }
  size_ = total;
  return OkStatus();
}

Status AtomicFile::Append(const void* data, size_t n) {
  const uint64_t at = size_;
  size_ += n;
  return stream_ ? WriteAll(fd_, data, n, path_) : WriteAt(at, data, n);
}

namespace {

// Waits until `fd` is ready for `events`, at most `timeout_ms` (0: no
// wait at all is needed, the call blocks as it would anyway; -1: for
// ever). With a `meter`, the wait is cut into windows of its length, and
// each window that passes without `fd` becoming ready is checked as one
// in which nothing moved: a peer that takes our bytes so slowly that the
// socket never has room again (a Unix socket wakes a writer only once
// three quarters of its buffer drained) is still held to the rate.
Status AwaitReady(int fd, short events, int timeout_ms, const std::string& name, RateMeter* meter = nullptr) {
  if (timeout_ms == 0 && meter == nullptr) return OkStatus();
  pollfd p{fd, events, 0};
  const int window_ms = meter != nullptr ? std::max(1, static_cast<int>(meter->window_seconds() * 1000)) : -1;
  int waited_ms = 0;
  for (;;) {
    int slice = timeout_ms > 0 ? timeout_ms - waited_ms : -1;
    if (window_ms > 0 && (slice < 0 || window_ms < slice)) slice = window_ms;
    const int r = ::poll(&p, 1, slice);
    if (r > 0) return OkStatus();
    if (r < 0) {
      if (errno != EINTR) return IoError(name + ": poll failed: " + Errno());
      continue;
    }
    waited_ms += slice;
    if (meter != nullptr) ZIPNN_RETURN_IF_ERROR(meter->Moved(0));
    if (timeout_ms > 0 && waited_ms >= timeout_ms) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", timeout_ms / 1000.0);
      return IoError(name + ": timed out: nothing " + (events == POLLIN ? "came" : "went") + " for " + seconds + " s");
    }
  }
}

// Writes all `n` bytes, with send() on a socket (no SIGPIPE) when `socket`,
// and with write() from the first ENOTSOCK on. With a timeout or a
// `meter`, each part waits for room at most that long (or for ever) and
// is sent without blocking (a pipe takes at most PIPE_BUF at once then),
// so that a peer that takes our bytes slowly is measured as it takes
// them, not only once it took them all.
Status WriteFully(int fd, const void* data, size_t n, const std::string& name, bool socket, int timeout_ms = 0,
                  RateMeter* meter = nullptr) {
  const auto* p = static_cast<const uint8_t*>(data);
  const bool paced = timeout_ms > 0 || meter != nullptr;
  while (n > 0) {
    ZIPNN_RETURN_IF_ERROR(AwaitReady(fd, POLLOUT, paced && timeout_ms == 0 ? -1 : timeout_ms, name, meter));
    const int flags = MSG_NOSIGNAL | (paced ? MSG_DONTWAIT : 0);
    ssize_t put = socket ? ::send(fd, p, n, flags) : ::write(fd, p, paced ? std::min<size_t>(n, PIPE_BUF) : n);
    if (put < 0 && socket && errno == ENOTSOCK) {
      socket = false;
      continue;
    }
    if (put < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return IoError(name + ": write failed: " + Errno());
    }
    p += put;
    n -= static_cast<size_t>(put);
    if (meter != nullptr) ZIPNN_RETURN_IF_ERROR(meter->Moved(static_cast<uint64_t>(put)));
  }
  return OkStatus();
}

}  // namespace

Status WriteAll(int fd, const void* data, size_t n, const std::string& name) {
  return WriteFully(fd, data, n, name, /*socket=*/false);
}

void FdChannel::SetLowSpeed(const LowSpeed& limit) {
  meter_ = RateMeter(limit);
  metered_ = limit.on();
}

void FdChannel::Turn(Direction now) {
  // A read after writes waits for the other side's answer, and a write
  // after reads starts a new request: neither counts the time between.
  if (direction_ != now) meter_.Pause();
  direction_ = now;
}

Status FdChannel::Write(const void* data, size_t n) {
  Turn(Direction::kWrite);
  // A pipe or file falls back to write().
  return WriteFully(write_fd_, data, n, name_, /*socket=*/true, timeout_ms_, metered_ ? &meter_ : nullptr);
}

Result<size_t> FdChannel::Read(void* out, size_t n) {
  Turn(Direction::kRead);
  ZIPNN_RETURN_IF_ERROR(AwaitReady(read_fd_, POLLIN, timeout_ms_, name_, metered_ ? &meter_ : nullptr));
  ZIPNN_ASSIGN_OR_RETURN(size_t got, reader_.Read(out, n));
  if (metered_) ZIPNN_RETURN_IF_ERROR(meter_.Moved(got));
  return got;
}

Status AtomicFile::Commit() { return Finish(/*sync=*/true); }
Status AtomicFile::CommitUnsynced() { return Finish(/*sync=*/false); }

Status AtomicFile::Finish(bool sync) {
  if (fd_ < 0) return InvalidArgument(path_ + ": already committed");
  if (sync && !stream_ && ::fsync(fd_) != 0) return IoError(path_ + ": fsync failed: " + Errno());
  if (::close(fd_) != 0) {
    fd_ = -1;
    return IoError(path_ + ": close failed: " + Errno());
  }
  fd_ = -1;
  if (stream_) return OkStatus();
  if (!overwrite_) {
    // link() fails if the name exists, closing the race with another writer.
    if (::link(tmp_.c_str(), path_.c_str()) != 0) {
      return IoError(path_ + ": cannot create: " + Errno());
    }
    ::unlink(tmp_.c_str());
  } else if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    return IoError(path_ + ": cannot rename into place: " + Errno());
  }
  tmp_.clear();
  return OkStatus();
}

Result<size_t> FdReader::Read(void* out, size_t n) {
  for (;;) {
    const ssize_t got = ::read(fd_, out, n);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno != EINTR) return IoError(std::string("read failed: ") + Errno());
  }
}

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

Result<TempFile> TempFile::Create(const std::string& dir, const std::string& prefix) {
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(dir));
  std::string path = dir + "/" + prefix + "-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return IoError(dir + ": cannot create a temporary file: " + Errno());
  ::close(fd);
  return TempFile(path);
}

TempFile::~TempFile() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

TempFile& TempFile::operator=(TempFile&& o) noexcept {
  if (this != &o) {
    if (!path_.empty()) ::unlink(path_.c_str());
    path_ = std::move(o.path_);
    o.path_.clear();
  }
  return *this;
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Result<std::vector<uint8_t>> ReadWholeFile(const std::string& path) {
  ZIPNN_ASSIGN_OR_RETURN(ReadFile f, ReadFile::Open(path));
  std::vector<uint8_t> data(f.size());
  ZIPNN_RETURN_IF_ERROR(f.ReadAt(0, data.data(), data.size()));
  return data;
}

}  // namespace zipnn
