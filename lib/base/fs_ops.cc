#include "lib/base/fs_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace zipnn {

namespace {

constexpr const char* kNames[kFsOpCount] = {"write", "fsync", "dirsync", "rename", "link", "flock"};
// What each operation fails with when a fault is injected: a full disk
// for writes, an I/O error for the rest; a lock "fails" by succeeding
// without locking (see FsLock).
constexpr int kErrors[kFsOpCount] = {ENOSPC, EIO, EIO, EIO, EIO, 0};

// The fault asked for in the environment, and the count of each operation
// so far in this process.
class FaultPlan {
 public:
  FaultPlan() {
    if (const char* log = std::getenv("GIT_ZIPNN_TEST_FAULT_LOG"); log != nullptr && *log != '\0') {
      log_fd_ = ::open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
    const char* spec = std::getenv("GIT_ZIPNN_TEST_FAULT");
    if (spec == nullptr) return;
    const std::string text = spec;
    const size_t colon = text.find(':');
    if (colon == std::string::npos) return;
    const auto op = FsOpNamed(text.substr(0, colon));
    std::string index = text.substr(colon + 1);
    if (!op || index.empty()) return;
    if (index.back() == '+') {
      onwards_ = true;
      index.pop_back();
    }
    char* end = nullptr;
    const unsigned long long n = std::strtoull(index.c_str(), &end, 10);
    if (end == index.c_str() || *end != '\0' || n == 0) return;
    op_ = static_cast<int>(*op);
    at_ = n;
  }

  // Whether a fault is due for this operation. `path`: the name the
  // operation makes or syncs, for the log; or else `fd`, the file it
  // writes or syncs, whose name the log then reads from /proc.
  bool Next(FsOp op, const char* path, int fd = -1) {
    const int i = static_cast<int>(op);
    const unsigned long long n = counts_[i].fetch_add(1, std::memory_order_relaxed) + 1;
    const bool fails = i == op_ && (n == at_ || (n > at_ && onwards_));
    if (log_fd_ >= 0) {
      const std::string name = path != nullptr ? path : fd >= 0 ? NameOf(fd) : "-";
      const std::string line = std::to_string(::getpid()) + " " + kNames[i] + " " + std::to_string(n) + " " + name +
                               (fails ? " failed" : "") + "\n";
      (void)!::write(log_fd_, line.data(), line.size());
    }
    return fails;
  }

 private:
  // The name of the file open as `fd` (a name with no spaces for the log).
  static std::string NameOf(int fd) {
    char name[4096];
    const ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), name, sizeof name - 1);
    if (n <= 0) return "fd:" + std::to_string(fd);
    std::string text(name, static_cast<size_t>(n));
    for (char& c : text) {
      if (c == ' ' || c == '\n') c = '_';
    }
    return text;
  }

  std::atomic<unsigned long long> counts_[kFsOpCount] = {};
  int op_ = -1;  // none
  unsigned long long at_ = 0;
  bool onwards_ = false;
  int log_fd_ = -1;
};

FaultPlan& Plan() {
  static FaultPlan plan;
  return plan;
}

// Runs the system call `call`, unless a fault is due: then fails as it
// would, with -1 and errno.
template <typename Call>
auto Guarded(FsOp op, const char* path, Call call, int fd = -1) -> decltype(call()) {
  if (Plan().Next(op, path, fd)) {
    errno = kErrors[static_cast<int>(op)];
    return -1;
  }
  return call();
}

}  // namespace

const char* FsOpName(FsOp op) { return kNames[static_cast<int>(op)]; }

std::optional<FsOp> FsOpNamed(const std::string& name) {
  for (int i = 0; i < kFsOpCount; ++i) {
    if (name == kNames[i]) return static_cast<FsOp>(i);
  }
  return std::nullopt;
}

ssize_t FsWrite(int fd, const void* data, size_t n) {
  return Guarded(FsOp::kWrite, nullptr, [&] { return ::write(fd, data, n); }, fd);
}

ssize_t FsPwrite(int fd, const void* data, size_t n, off_t offset) {
  return Guarded(FsOp::kWrite, nullptr, [&] { return ::pwrite(fd, data, n, offset); }, fd);
}

int FsSync(int fd) {
  return Guarded(FsOp::kSync, nullptr, [&] { return ::fsync(fd); }, fd);
}

int FsSyncFolder(int fd, const std::string& folder) {
  return Guarded(FsOp::kSyncFolder, folder.c_str(), [&] { return ::fsync(fd); });
}

int FsRename(const char* from, const char* to) {
  return Guarded(FsOp::kRename, to, [&] { return ::rename(from, to); });
}

int FsLink(const char* from, const char* to) {
  return Guarded(FsOp::kLink, to, [&] { return ::link(from, to); });
}

int FsLinkAt(int from_dir, const char* from, int to_dir, const char* to, int flags) {
  return Guarded(FsOp::kLink, to, [&] { return ::linkat(from_dir, from, to_dir, to, flags); });
}

int FsLock(int fd, int how) {
  if (Plan().Next(FsOp::kLock, nullptr)) return 0;  // holds nothing
  return ::flock(fd, how);
}

}  // namespace zipnn
