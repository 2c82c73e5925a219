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
#include "lib/base/thread_pool.h"

namespace zipnn::remote {

namespace {

// Opens the kept file at `path` (made when missing) with `flags` beside
// O_RDWR | O_CREAT, locked (flock) for this process, as a plain file of one
// link, so that nothing is written into a file elsewhere through a link
// planted here: anything else at the name (a link, a folder, a pipe) is
// no download, and its name is removed (never what it points to) and a
// file made in its place, once. -1 when another process holds it or it
// cannot be made; `st` describes it.
int OpenKept(const std::string& path, int flags, struct stat& st) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | flags, 0644);
    if (fd < 0) {
      if (errno != ELOOP && errno != EISDIR) return -1;
    } else if (::flock(fd, LOCK_EX | LOCK_NB) != 0 || ::fstat(fd, &st) != 0) {
      ::close(fd);  // another process downloads into it
      return -1;
    } else if (S_ISREG(st.st_mode) && st.st_nlink == 1) {
      return fd;
    } else {
      ::close(fd);
    }
    if (::unlink(path.c_str()) != 0 && ::rmdir(path.c_str()) != 0) return -1;
  }
  return -1;
}

}  // namespace

Partial::Partial(const std::string& dir, const std::string& name, uint64_t size, bool any_size) {
  if (dir.empty() || (size < kResumableBytes && !any_size) || !MakeDirectories(dir).ok()) return;
  path_ = dir + "/" + name;
  struct stat st;
  fd_ = OpenKept(path_, O_APPEND, st);
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

SpreadPartial::SpreadPartial(const std::string& dir, const std::string& name, uint64_t size)
    : dir_(dir), name_(name), path_(dir + "/" + name + ".spread"), record_(path_ + "-done") {
  if (dir.empty() || !MakeDirectories(dir).ok()) return;
  struct stat st, rst;
  fd_ = OpenKept(path_, 0, st);
  if (fd_ < 0) return;
  record_fd_ = OpenKept(record_, O_APPEND, rst);
  const uint64_t had = static_cast<uint64_t>(st.st_size);
  size_ = size == 0 ? had : size;
  if (record_fd_ < 0 || size_ == 0) {
    if (record_fd_ >= 0) {  // an empty file found (or one just made): holds nothing, and goes
      ::unlink(path_.c_str());
      ::unlink(record_.c_str());
    }
    Close();
    return;
  }
  if (had == size_ && rst.st_size > 0) {  // what the earlier try noted
    done_ = ReadNotedRanges(record_, size_);
    earlier_ = CoveredBytes(done_, size_);
    return;
  }
  // Of another size, or nothing noted: nothing kept is of use.
  if (::ftruncate(record_fd_, 0) != 0 || ::ftruncate(fd_, 0) != 0 || ::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
    Close();
  }
}

SpreadPartial::~SpreadPartial() { Close(); }

std::vector<Range> SpreadPartial::Missing() {
  std::lock_guard<std::mutex> lock(mu_);
  return Uncovered(done_, size_);
}

Status SpreadPartial::WriteAt(uint64_t at, const void* data, size_t n) {
  if (at > size_ || n > size_ - at) return Corruption(path_ + ": bytes past the object's end");
  return WriteAllAt(fd_, data, n, at, path_);
}

Status SpreadPartial::Noted(uint64_t from, uint64_t to) {
  std::lock_guard<std::mutex> lock(mu_);
  ZIPNN_RETURN_IF_ERROR(NoteRange(record_fd_, from, to, record_));
  done_.emplace_back(from, to);
  return OkStatus();
}

Status SpreadPartial::Take(uint64_t from, const std::function<Status(ByteSink& into)>& read) {
  uint64_t unnoted = from;  // what came before it is noted
  PlacedSink into(
      [&](uint64_t at, const void* data, size_t n) -> Status {
        ZIPNN_RETURN_IF_ERROR(WriteAt(at, data, n));
        // Noted as it comes, every kNoteEvery bytes: a kill, which notes
        // nothing more, costs at most that much of each range in flight.
        if (at + n - unnoted >= kNoteEvery) {
          ZIPNN_RETURN_IF_ERROR(Noted(unnoted, at + n));
          unnoted = at + n;
        }
        return OkStatus();
      },
      from);
  const Status in = read(into);
  const Status noted = into.at() > unnoted ? Noted(unnoted, into.at()) : OkStatus();
  return in.ok() ? noted : in;
}

Result<std::unique_ptr<Partial>> FetchSpread(SpreadPartial& spread, const std::string& dir, const std::string& name,
                                             const ContentId& id, int connections, uint64_t step, bool resumable,
                                             const RangeFetch& fetch, ByteSink& check) {
  const std::vector<Range> ranges = CutRanges(spread.Missing(), step);
  std::atomic<bool> changed{false};
  const Status got = RunAll(connections, ranges.size(), [&](size_t k) -> Status {
    const uint64_t from = ranges[k].first, to = ranges[k].second;
    return spread.Take(from, [&](ByteSink& into) { return fetch(from, to, into, changed); });
  });
  // Kept for the next try only when the network cut it short.
  if (!got.ok()) {
    if (changed || got.code() != StatusCode::kIoError || !resumable) spread.Drop();
    return got;
  }
  ZIPNN_RETURN_IF_ERROR(spread.Finish());
  auto whole = std::make_unique<Partial>(dir, name, spread.size(), /*any_size=*/true);
  if (!whole->ok() || whole->have() != spread.size()) {
    return IoError("the download of object " + id.Hex() + " in ranges was taken by another process");
  }
  const Status checked = whole->CopyTo(check);
  if (!checked.ok()) {
    whole->Done(checked);
    return checked;
  }
  return whole;
}

Status SpreadPartial::Finish() {
  if (!Missing().empty()) return Corruption(path_ + ": not every range of the object is in");
  const std::string whole = dir_ + "/" + name_;
  if (::rename(path_.c_str(), whole.c_str()) != 0) {
    return IoError(path_ + ": cannot name it " + whole + ": " + std::strerror(errno));
  }
  ::unlink(record_.c_str());
  Close();
  return OkStatus();
}

void SpreadPartial::Drop() {
  if (fd_ >= 0) {
    ::unlink(path_.c_str());
    ::unlink(record_.c_str());
  }
  Close();
}

void SpreadPartial::Close() {
  if (fd_ >= 0) ::close(fd_);
  if (record_fd_ >= 0) ::close(record_fd_);
  fd_ = record_fd_ = -1;
}

std::optional<std::string> FindSpread(const std::string& dir, const ContentId& id,
                                      const std::function<bool(const std::string&)>& valid) {
  const std::string prefix = id.Hex() + "-", suffix = ".spread";
  std::optional<std::string> found;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (found || name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
        continue;
      }
      const std::string stem = name.substr(0, name.size() - suffix.size());
      if (valid(stem.substr(prefix.size()))) found = stem;
    }
    ::closedir(d);
  }
  return found;
}

}  // namespace zipnn::remote
