#include "lib/base/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <random>

#include "lib/base/fs_ops.h"

namespace zipnn {

namespace {
// The paths a signal's handler removes (RemoveScratchOnSignals), below.
int HoldScratchPath(const std::string& path);
void ReleaseScratchPath(int slot);
}  // namespace

namespace {
std::string Errno() { return std::strerror(errno); }
// The folder `path` is in ("." for a bare name).
std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}
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

Result<ReadFile> ReadFile::OpenRegular(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + Errno());
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || ::fcntl(fd, F_SETFL, 0) != 0) {
    ::close(fd);
    return InvalidArgument(path + ": is not a regular file");
  }
  return ReadFile(fd, static_cast<uint64_t>(st.st_size), path);
}

std::string ReadFile::Identity() const {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return "";
  char word[64];
  std::snprintf(word, sizeof word, "%llx-%llx", static_cast<unsigned long long>(st.st_ino),
                static_cast<unsigned long long>(st.st_size));
  return word;
}

std::optional<ReadFile> ReadFile::OpenHolding(const std::string& path, const ContentId& id) {
  auto file = Open(path);
  if (!file.ok()) return std::nullopt;
  // One pass: the content id of the whole, and a checksum of each block.
  constexpr size_t kRead = 16 * kPinBlock;
  static_assert(kRead % kPinBlock == 0, "reads cover whole blocks");
  Buffer buffer(kRead);
  Hasher hasher;
  std::vector<uint64_t> pins;
  pins.reserve(static_cast<size_t>((file->size() + kPinBlock - 1) / kPinBlock));
  for (uint64_t at = 0; at < file->size(); at += kRead) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kRead, file->size() - at));
    if (!file->ReadRaw(at, buffer.data(), n).ok()) return std::nullopt;
    hasher.Update(buffer.data(), n);
    for (size_t b = 0; b < n; b += kPinBlock) pins.push_back(Checksum64(buffer.data() + b, std::min(kPinBlock, n - b)));
  }
  if (hasher.Finish() != id) return std::nullopt;
  file->pins_ = std::make_shared<const std::vector<uint64_t>>(std::move(pins));
  return std::move(*file);
}

Status ReadFile::Pin(std::vector<uint64_t> pins) {
  if (pins.size() != (size_ + kPinBlock - 1) / kPinBlock) {
    return InvalidArgument(path_ + ": " + std::to_string(pins.size()) + " pins for " + std::to_string(size_) +
                           " bytes");
  }
  pins_ = std::make_shared<const std::vector<uint64_t>>(std::move(pins));
  return OkStatus();
}

Result<ReadFile> ReadFile::Dup() const {
  const int fd = ::fcntl(fd_, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return IoError(path_ + ": cannot open again: " + Errno());
  ReadFile copy(fd, size_, path_);
  copy.pins_ = pins_;
  return copy;
}

ReadFile::ReadFile(ReadFile&& o) noexcept
    : fd_(o.fd_), size_(o.size_), path_(std::move(o.path_)), pins_(std::move(o.pins_)) {
  o.fd_ = -1;
}

ReadFile& ReadFile::operator=(ReadFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    size_ = o.size_;
    path_ = std::move(o.path_);
    pins_ = std::move(o.pins_);
    o.fd_ = -1;
  }
  return *this;
}

ReadFile::~ReadFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status ReadFile::ReadAt(uint64_t offset, void* out, size_t n) const {
  return pins_ == nullptr ? ReadRaw(offset, out, n) : ReadPinned(offset, out, n);
}

// Reads the whole blocks the range covers, checks each against its
// checksum, and copies out the part asked for: whole blocks straight into
// `out`, the partial first and last through a block of scratch.
Status ReadFile::ReadPinned(uint64_t offset, void* out, size_t n) const {
  if (n == 0) return OkStatus();
  if (offset > size_ || n > size_ - offset) return IoError(path_ + ": read past the end");
  auto* p = static_cast<uint8_t*>(out);
  const uint64_t end = offset + n;
  std::vector<uint8_t> scratch;
  auto check = [&](uint64_t block, const uint8_t* bytes, size_t len) -> Status {
    if (Checksum64(bytes, len) == (*pins_)[static_cast<size_t>(block)]) return OkStatus();
    return Corruption(path_ + ": changed while it was read (bytes " + std::to_string(block * kPinBlock) + " to " +
                      std::to_string(block * kPinBlock + len) + " are not those that hashed to its content id)");
  };
  for (uint64_t block = offset / kPinBlock; block * kPinBlock < end;) {
    const uint64_t start = block * kPinBlock;
    const size_t len = static_cast<size_t>(std::min<uint64_t>(kPinBlock, size_ - start));
    if (start >= offset && start + len <= end) {
      // A run of whole blocks, read at once.
      uint64_t run_end = start + len;
      while (run_end < end && run_end + std::min<uint64_t>(kPinBlock, size_ - run_end) <= end) {
        run_end += std::min<uint64_t>(kPinBlock, size_ - run_end);
      }
      uint8_t* into = p + (start - offset);
      ZIPNN_RETURN_IF_ERROR(ReadRaw(start, into, static_cast<size_t>(run_end - start)));
      for (uint64_t at = start; at < run_end; at += kPinBlock, ++block) {
        ZIPNN_RETURN_IF_ERROR(
            check(block, into + (at - start), static_cast<size_t>(std::min<uint64_t>(kPinBlock, run_end - at))));
      }
      continue;
    }
    scratch.resize(len);
    ZIPNN_RETURN_IF_ERROR(ReadRaw(start, scratch.data(), len));
    ZIPNN_RETURN_IF_ERROR(check(block, scratch.data(), len));
    const uint64_t from = std::max(start, offset), to = std::min<uint64_t>(start + len, end);
    std::memcpy(p + (from - offset), scratch.data() + (from - start), static_cast<size_t>(to - from));
    ++block;
  }
  return OkStatus();
}

Status ReadFile::ReadRaw(uint64_t offset, void* out, size_t n) const {
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
    if (fd >= 0) {
      (void)FsLock(fd, LOCK_SH);  // in use while written (InUse)
      AtomicFile file(fd, path, tmp, overwrite, /*stream=*/false);
      file.HoldTemp();
      return file;
    }
    if (errno != EEXIST) return IoError(path + ": cannot create: " + Errno());
  }
  return IoError(path + ": cannot create a temporary file beside it");
}

Result<AtomicFile> AtomicFile::InTemp(const TempFile& file) {
  // Not O_TRUNC: ext4 takes a truncation to nothing for a file about to be
  // replaced and writes it out at close, as after a rename over it.
  const int fd = ::open(file.path().c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return IoError(file.path() + ": cannot open for writing: " + Errno());
  AtomicFile out(fd, file.path(), "", /*overwrite=*/true, /*stream=*/false, Temp::kInPlace);
  struct stat st;
  if (::fstat(fd, &st) != 0) return IoError(file.path() + ": cannot stat: " + Errno());
  if (st.st_size != 0) return InvalidArgument(file.path() + ": a scratch file is written once");
  return out;
}

namespace {

// The prefix of the temporary files CreateInWorkTree keeps in a scratch
// folder, which RemoveAbandonedTemps looks for.
constexpr const char kWorkTreeTempPrefix[] = "checkout-";

// The suffix of the name a work-tree temporary has for the moment between
// its creation and its lock (see CreateInWorkTree).
constexpr const char kUnlockedSuffix[] = ".new";

// Whether `name` is `<kWorkTreeTempPrefix>...<".tmp-" and 8 hex digits>`,
// with or without kUnlockedSuffix.
bool IsWorkTreeTemp(std::string name) {
  constexpr size_t kPrefix = sizeof kWorkTreeTempPrefix - 1, kSuffix = 13;  // ".tmp-" + 8 hex
  constexpr size_t kUnlocked = sizeof kUnlockedSuffix - 1;
  if (name.size() > kUnlocked && name.compare(name.size() - kUnlocked, kUnlocked, kUnlockedSuffix) == 0) {
    name.resize(name.size() - kUnlocked);
  }
  if (name.size() < kPrefix + kSuffix || name.compare(0, kPrefix, kWorkTreeTempPrefix) != 0) return false;
  const size_t at = name.size() - kSuffix;
  if (name.compare(at, 5, ".tmp-") != 0) return false;
  return std::all_of(name.begin() + at + 5, name.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

Result<AtomicFile> AtomicFile::CreateInWorkTree(const std::string& path, const std::string& scratch_dir) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return Create(path, /*overwrite=*/true);
  const std::string folder = FolderOf(path);
  struct stat target, scratch;
  if (::stat(folder.c_str(), &target) == 0 && MakeDirectories(scratch_dir).ok() &&
      ::stat(scratch_dir.c_str(), &scratch) == 0 && scratch.st_dev == target.st_dev) {
    // The name keeps a little of the file's own (a bounded part: the
    // whole may already be as long as a name can be).
    const std::string name = path.substr(path.rfind('/') + 1).substr(0, 64);
    std::random_device rd;
    for (int attempt = 0; attempt < 16; ++attempt) {
      std::string tmp = TemporaryName(scratch_dir + "/" + kWorkTreeTempPrefix + name, rd);
      // Made under another name and locked before it takes its own, so
      // that no file under that name is ever unlocked while its writer
      // lives. The lock is held until the file is renamed into place or
      // dropped. RemoveAbandonedTemps also takes an unlocked file under
      // the first name, which a writer killed before its lock leaves:
      // should it take a live writer's in that moment, the lock or the
      // link below fails and the writer tries another name.
      const std::string fresh = tmp + kUnlockedSuffix;
      const int fd = ::open(fresh.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd < 0) {
        if (errno == EEXIST) continue;
        break;
      }
      const bool named = FsLock(fd, LOCK_EX | LOCK_NB) == 0 && FsLink(fresh.c_str(), tmp.c_str()) == 0;
      const int why = errno;
      ::unlink(fresh.c_str());
      if (named) {
        AtomicFile file(fd, path, std::move(tmp), /*overwrite=*/true, /*stream=*/false, Temp::kScratch);
        file.HoldTemp();
        return file;
      }
      ::close(fd);
      // Taken meanwhile, or a name in use: another name. No locks or no
      // links on this file system: another way.
      if (why != EEXIST && why != EWOULDBLOCK && why != ENOENT) break;
    }
  }
  // Another file system than the scratch folder's (a linked worktree on
  // another disk): a file with no name, in the target's own folder.
  const int fd = ::open(folder.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (fd >= 0) return AtomicFile(fd, path, "", /*overwrite=*/true, /*stream=*/false, Temp::kUnnamed);
  return Create(path, /*overwrite=*/true);
}

size_t RemoveAbandonedTemps(const std::string& scratch_dir) {
  if (!FileExists(scratch_dir) || !LocksWork(scratch_dir)) return 0;
  DIR* dir = ::opendir(scratch_dir.c_str());
  if (dir == nullptr) return 0;
  size_t removed = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (!IsWorkTreeTemp(e->d_name)) continue;
    const std::string path = scratch_dir + "/" + e->d_name;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat held, named;
    // Unlocked, its writer is gone (a file takes this name only once
    // locked). The name must still be the file locked: a writer may have
    // renamed it away meanwhile.
    if (FsLock(fd, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
        named.st_ino == held.st_ino && named.st_dev == held.st_dev && ::unlink(path.c_str()) == 0) {
      ++removed;
    }
    ::close(fd);
  }
  ::closedir(dir);
  return removed;
}

Result<std::optional<TempLink>> TempLink::Create(const std::string& file, const std::string& path) {
  std::random_device rd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string tmp = TemporaryName(path, rd);
    if (FsLink(file.c_str(), tmp.c_str()) == 0) return std::optional<TempLink>(TempLink(path, std::move(tmp)));
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
  if (FsRename(tmp_.c_str(), path_.c_str()) != 0) return IoError(path_ + ": cannot rename into place: " + Errno());
  tmp_.clear();
  // The name, like the bytes, must survive a power loss.
  return SyncFolder(FolderOf(path_));
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept
    : fd_(o.fd_),
      path_(std::move(o.path_)),
      tmp_(std::move(o.tmp_)),
      overwrite_(o.overwrite_),
      stream_(o.stream_),
      temp_(o.temp_),
      size_(o.size_),
      slot_(o.slot_) {
  o.fd_ = -1;
  o.tmp_.clear();
  o.slot_ = -1;
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  // A name renamed into place already is not there to remove: the slot
  // may hold it until now.
  ReleaseScratchPath(slot_);
}

void AtomicFile::HoldTemp() {
  ReleaseScratchPath(slot_);
  slot_ = tmp_.empty() ? -1 : HoldScratchPath(tmp_);
}

Status AtomicFile::WriteAt(uint64_t offset, const void* data, size_t n) {
  return WriteAllAt(fd_, data, n, offset, path_);
}

Status WriteAllAt(int fd, const void* data, size_t n, uint64_t offset, const std::string& name) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t put = FsPwrite(fd, p, n, static_cast<off_t>(offset));
    if (put < 0) {
      if (errno == EINTR) continue;
      return IoError(name + ": write failed: " + Errno());
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
  if (sync && !stream_ && FsSync(fd_) != 0) return IoError(path_ + ": fsync failed: " + Errno());
  if (temp_ == Temp::kInPlace) {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0 ? OkStatus() : IoError(path_ + ": close failed: " + Errno());
  }
  if (temp_ == Temp::kUnnamed) {
    // A name beside the file, for the rename: through /proc (any user),
    // else by the descriptor itself (which needs a privilege).
    std::random_device rd;
    const std::string fd_path = "/proc/self/fd/" + std::to_string(fd_);
    for (int attempt = 0; attempt < 16 && tmp_.empty(); ++attempt) {
      std::string tmp = TemporaryName(path_, rd);
      if (FsLinkAt(AT_FDCWD, fd_path.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) == 0 ||
          (errno != EEXIST && FsLinkAt(fd_, "", AT_FDCWD, tmp.c_str(), AT_EMPTY_PATH) == 0)) {
        tmp_ = std::move(tmp);
        HoldTemp();
      } else if (errno != EEXIST) {
        return IoError(path_ + ": cannot name its temporary file beside it: " + Errno());
      }
    }
    if (tmp_.empty()) return IoError(path_ + ": cannot create a temporary file beside it");
  }
  if (temp_ == Temp::kScratch) {
    // Renamed while still open, so still locked (see
    // RemoveAbandonedTemps).
    if (FsRename(tmp_.c_str(), path_.c_str()) != 0) {
      if (errno == EXDEV) return MoveAcross();  // one file system, mounted twice
      return IoError(path_ + ": cannot rename into place: " + Errno());
    }
    tmp_.clear();
  }
  if (::close(fd_) != 0) {
    fd_ = -1;
    return IoError(path_ + ": close failed: " + Errno());
  }
  fd_ = -1;
  if (stream_) return OkStatus();
  if (temp_ == Temp::kScratch) return sync ? SyncFolder(FolderOf(path_)) : OkStatus();
  if (!overwrite_) {
    // link() fails if the name exists, closing the race with another writer.
    if (FsLink(tmp_.c_str(), path_.c_str()) != 0) {
      return IoError(path_ + ": cannot create: " + Errno());
    }
    ::unlink(tmp_.c_str());
  } else if (FsRename(tmp_.c_str(), path_.c_str()) != 0) {
    return IoError(path_ + ": cannot rename into place: " + Errno());
  }
  tmp_.clear();
  return sync ? SyncFolder(FolderOf(path_)) : OkStatus();
}

Status AtomicFile::MoveAcross() {
  // The scratch file cannot be renamed to path: copied beside path, then
  // renamed there.
  ZIPNN_ASSIGN_OR_RETURN(ReadFile from, ReadFile::Open(tmp_));
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile to, Create(path_, /*overwrite=*/true));
  std::vector<char> buf(size_t{1} << 20);
  for (uint64_t at = 0; at < from.size(); at += buf.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), from.size() - at));
    ZIPNN_RETURN_IF_ERROR(from.ReadAt(at, buf.data(), n));
    ZIPNN_RETURN_IF_ERROR(to.Append(buf.data(), n));
  }
  ZIPNN_RETURN_IF_ERROR(to.Commit());
  ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
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

Status MakeDirectories(const std::string& path, bool durable) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/') continue;
    const std::string prefix = path.substr(0, at);
    if (::mkdir(prefix.c_str(), 0755) == 0) {
      if (durable) ZIPNN_RETURN_IF_ERROR(SyncFolder(FolderOf(prefix)));
    } else if (errno != EEXIST) {
      return IoError(prefix + ": cannot create folder: " + std::strerror(errno));
    }
  }
  return OkStatus();
}

Status SyncFolder(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError(dir + ": cannot open the folder to sync it: " + Errno());
  const int synced = FsSyncFolder(fd, dir);
  const std::string err = synced != 0 ? Errno() : "";
  ::close(fd);
  // Some file systems cannot sync a folder (EINVAL): nothing more to do there.
  if (synced != 0 && err != std::strerror(EINVAL)) return IoError(dir + ": fsync of the folder failed: " + err);
  return OkStatus();
}

namespace {

// The paths of the live TempFiles, where a signal handler can read them:
// fixed slots (no allocation), each free, being filled, or holding a
// path; a file with no free slot (more than kSlots at once, or a longer
// path) is only removed as before, by its owner or a later add or gc.
constexpr int kSlots = 64;
struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 being filled or emptied, 2 holds `path`
  char path[PATH_MAX];
};
Slot scratch_slots[kSlots];
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler reads the slots");

int HoldScratchPath(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int free = 0;
    if (!scratch_slots[i].state.compare_exchange_strong(free, 1)) continue;
    std::memcpy(scratch_slots[i].path, path.c_str(), path.size() + 1);
    scratch_slots[i].state.store(2);
    return i;
  }
  return -1;
}

void ReleaseScratchPath(int slot) {
  if (slot >= 0) scratch_slots[slot].state.store(0);
}

// SetSignalNote's line: its length is 0 while it is written, so a signal
// then says nothing rather than half of it.
char signal_note[1024];
std::atomic<size_t> signal_note_size{0};

extern "C" void RemoveScratchAndDie(int signal) {
  const int saved = errno;
  for (Slot& slot : scratch_slots) {
    int held = 2;
    if (slot.state.compare_exchange_strong(held, 1)) ::unlink(slot.path);
  }
  if (const size_t n = signal_note_size.load(); n > 0) (void)!::write(STDERR_FILENO, signal_note, n);
  errno = saved;
  // SA_RESETHAND put the default action back; the signal, blocked while
  // this runs, is taken again when it returns.
  ::raise(signal);
}

}  // namespace

void RemoveScratchOnSignals() {
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction was;
    if (::sigaction(signal, nullptr, &was) != 0 || was.sa_handler == SIG_IGN) continue;
    struct sigaction now = {};
    now.sa_handler = RemoveScratchAndDie;
    sigemptyset(&now.sa_mask);
    now.sa_flags = SA_RESETHAND;
    (void)::sigaction(signal, &now, nullptr);
  }
}

void SetSignalNote(const std::string& note) {
  signal_note_size.store(0);
  const size_t n = std::min(note.size(), sizeof signal_note);
  std::memcpy(signal_note, note.data(), n);
  signal_note_size.store(n);
}

Result<TempFile> TempFile::Create(const std::string& dir, const std::string& prefix) {
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(dir));
  std::random_device rd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    char name[16];
    std::snprintf(name, sizeof name, "-%08x", static_cast<unsigned>(rd()));
    std::string path = dir + "/" + prefix + name;
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      (void)FsLock(fd, LOCK_SH);  // a file system without locks leaves it to gc's age rule
      const int slot = HoldScratchPath(path);
      return TempFile(std::move(path), fd, slot);
    }
    if (errno != EEXIST) return IoError(dir + ": cannot create a temporary file: " + Errno());
  }
  return IoError(dir + ": cannot create a temporary file");
}

void TempFile::Remove() {
  if (!path_.empty()) ::unlink(path_.c_str());
  ReleaseScratchPath(slot_);
  if (fd_ >= 0) ::close(fd_);
}

TempFile::~TempFile() { Remove(); }

TempFile& TempFile::operator=(TempFile&& o) noexcept {
  if (this != &o) {
    Remove();
    path_ = std::move(o.path_);
    fd_ = o.fd_;
    slot_ = o.slot_;
    o.path_.clear();
    o.fd_ = -1;
    o.slot_ = -1;
  }
  return *this;
}

bool InUse(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = FsLock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return held;
}

bool LocksWork(const std::string& dir) {
  auto probe = TempFile::Create(dir, "lock-probe");  // holds its file locked
  return probe.ok() && InUse(probe->path());
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Result<std::vector<uint8_t>> ReadWholeFile(const std::string& path) {
  ZIPNN_ASSIGN_OR_RETURN(ReadFile f, ReadFile::Open(path));
  std::vector<uint8_t> data(f.size());
  ZIPNN_RETURN_IF_ERROR(f.ReadAt(0, data.data(), data.size()));
  return data;
}

std::optional<std::string> ReadSmallFile(const std::string& path, size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> text;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) <= limit) {
    std::string bytes(static_cast<size_t>(st.st_size), '\0');
    const ssize_t n = ::pread(fd, bytes.data(), bytes.size(), 0);
    if (n == static_cast<ssize_t>(bytes.size())) text = std::move(bytes);
  }
  ::close(fd);
  return text;
}

}  // namespace zipnn
