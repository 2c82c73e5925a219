// Files: positional reads from an open file, and output files that appear
// atomically (temporary file in the same folder, fsync, rename) so that a
// crash or an error never leaves a half-written result under the final name;
// for a work-tree file, a temporary file out of git's sight.
// An output path that is a character device or a pipe (/dev/null, a FIFO) is
// written straight through instead: renaming over it would replace it.
//
// A ReadFile may be shared by threads: ReadAt uses pread and keeps no cursor.
// An AtomicFile is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/base/status.h"

namespace zipnn {

class ReadFile : public ByteSource {
 public:
  static Result<ReadFile> Open(const std::string& path);
  // The regular file at `path`; anything else (a FIFO, a device, a
  // folder) is refused without waiting: opening a FIFO would block until
  // a writer came.
  static Result<ReadFile> OpenRegular(const std::string& path);
  // The file at `path` when its bytes hash to `id` now, read through once
  // to see it; nullopt when they do not, or it cannot be read. A file
  // someone else may rewrite in place (a work-tree file, a kept copy) can
  // change after that check: every later ReadAt is therefore checked
  // against a checksum of each kPinBlock of the bytes that hashed to
  // `id`, and bytes that differ are a Corruption, never returned. What it
  // reads is thus the content `id` names, or an error.
  static std::optional<ReadFile> OpenHolding(const std::string& path, const ContentId& id);
  static constexpr size_t kPinBlock = 64 << 10;
  // Holds this file, as OpenHolding does, to bytes its caller has seen
  // another way (the stream git sent for it): `pins` are the Checksum64 of
  // each kPinBlock of them, the last block maybe shorter, covering size().
  Status Pin(std::vector<uint64_t> pins);
  // Another handle to the same open file (the same bytes, even once the
  // path names another file), held to the same pins (shared, not copied).
  Result<ReadFile> Dup() const;
  ReadFile(ReadFile&& o) noexcept;
  ReadFile& operator=(ReadFile&& o) noexcept;
  ~ReadFile() override;

  uint64_t size() const override { return size_; }
  const std::string& name() const override { return path_; }
  // Reads exactly `n` bytes at `offset`; a short file is an I/O error.
  Status ReadAt(uint64_t offset, void* out, size_t n) const override;
  // Which file this is, as a short word of hex digits and '-' (its inode
  // and size): another file gives another word (an object file is never
  // rewritten in place, only replaced; its times change whenever the
  // store uses it, so they are not part of it). Empty when it cannot be
  // told. For a transfer that resumes: bytes kept of it are of the same
  // file, which whoever takes them still proves.
  std::string Identity() const;

 private:
  ReadFile(int fd, uint64_t size, std::string path) : fd_(fd), size_(size), path_(std::move(path)) {}
  Status ReadRaw(uint64_t offset, void* out, size_t n) const;
  Status ReadPinned(uint64_t offset, void* out, size_t n) const;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_;
  // With OpenHolding or Pin: the checksum of each kPinBlock of the bytes
  // it holds to (the last block may be shorter), shared with its Dups:
  // 1/8192 of the file's size. Null: not held.
  std::shared_ptr<const std::vector<uint64_t>> pins_;
};

class TempFile;

class AtomicFile : public ByteSink {
 public:
  // Creates a temporary file beside `path`; nothing appears at `path` until
  // Commit. Without `overwrite`, an existing `path` is an error, unless it
  // is a device or pipe, which is opened for writing as it is.
  static Result<AtomicFile> Create(const std::string& path, bool overwrite);
  // For a file in a work tree (overwriting it): while it is written its
  // temporary file is nowhere git or a user's `git add -A` could pick it
  // up, so a process killed on the way leaves no stray copy there. The
  // temporary is `<scratch_dir>/checkout-<name>.tmp-XXXXXXXX` when
  // scratch_dir is on path's file system (locked while written, see
  // RemoveAbandonedTemps); otherwise a file with no name in path's folder
  // (O_TMPFILE), named beside path only for the rename at Commit; where
  // the file system allows neither, beside path as Create does.
  static Result<AtomicFile> CreateInWorkTree(const std::string& path, const std::string& scratch_dir);
  // Writes a TempFile where it is, with no temporary of its own: a scratch
  // file is its maker's alone until the maker is done with it. Renaming a
  // new file over it would make ext4 write the bytes out at once
  // (auto_da_alloc), which a scratch file read back in a moment and
  // removed soon after never needs. Commit only fsyncs; a failed write
  // leaves `file` to be removed with it.
  static Result<AtomicFile> InTemp(const TempFile& file);
  AtomicFile(AtomicFile&& o) noexcept;
  AtomicFile& operator=(AtomicFile&&) = delete;
  ~AtomicFile() override;  // removes the temporary file unless committed

  Status Append(const void* data, size_t n) override;
  // Positional writes use pwrite and touch no member: safe from several
  // threads for disjoint ranges after Presize.
  bool CanWriteAt() const override { return !stream_; }
  Status Presize(uint64_t total) override;
  Status WriteAt(uint64_t offset, const void* data, size_t n) override;
  uint64_t size() const { return size_; }
  // The temporary file being written (empty for a device or pipe, and for
  // one with no name yet).
  const std::string& temp_path() const { return tmp_; }
  // fsync, then rename over the final path (a device or pipe is closed),
  // then fsync the folder, so that the file survives a power loss under
  // its name.
  Status Commit();
  // The same without the fsync, for scratch files that need not survive a
  // crash (spooled input, decoded bases).
  Status CommitUnsynced();

 private:
  // Where the temporary file is.
  enum class Temp { kBeside, kScratch, kUnnamed, kInPlace };
  Status Finish(bool sync);
  Status MoveAcross();
  // Puts tmp_ where a signal's handler removes it (RemoveScratchOnSignals).
  void HoldTemp();
  AtomicFile(int fd, std::string path, std::string tmp, bool overwrite, bool stream, Temp temp = Temp::kBeside)
      : fd_(fd), path_(std::move(path)), tmp_(std::move(tmp)), overwrite_(overwrite), stream_(stream), temp_(temp) {}
  int fd_ = -1;
  std::string path_;
  std::string tmp_;  // empty when streaming, and while unnamed
  bool overwrite_ = false;
  bool stream_ = false;  // a device or pipe, written in place with write()
  Temp temp_ = Temp::kBeside;
  uint64_t size_ = 0;
  int slot_ = -1;  // of tmp_ among the paths removed on a signal; -1: none
};

// Removes the temporary files AtomicFile::CreateInWorkTree left in
// `scratch_dir` for a process that died before Commit: those no process
// holds locked (each takes its name only once locked), and those a process
// died with in the moment before its lock. Nothing where locks do not
// work (LocksWork). The number removed.
size_t RemoveAbandonedTemps(const std::string& scratch_dir);

// Reads a file descriptor (standard input) front to back; does not own it.
class FdReader : public ByteReader {
 public:
  explicit FdReader(int fd) : fd_(fd) {}
  Result<size_t> Read(void* out, size_t n) override;

 private:
  int fd_;
};

// A Channel over two file descriptors (standard input and output, or the
// ends of socket pairs); does not own them. Writes to a socket do not
// raise SIGPIPE.
class FdChannel : public Channel {
 public:
  FdChannel(int read_fd, int write_fd, std::string name)
      : reader_(read_fd), read_fd_(read_fd), write_fd_(write_fd), name_(std::move(name)) {}
  Result<size_t> Read(void* out, size_t n) override;
  Status Write(const void* data, size_t n) override;
  void SetTimeout(double seconds) override { timeout_ms_ = static_cast<int>(seconds * 1000); }
  void SetLowSpeed(const LowSpeed& limit) override;

 private:
  enum class Direction { kNone, kRead, kWrite };
  void Turn(Direction now);

  FdReader reader_;
  int read_fd_;
  int write_fd_;
  std::string name_;
  int timeout_ms_ = 0;  // 0: none
  RateMeter meter_;
  bool metered_ = false;
  Direction direction_ = Direction::kNone;
};

// A scratch file in `dir` (created if needed), named `<prefix>-XXXXXXXX`
// (8 hex digits), empty, with the mode a new file gets (0644 less the
// umask: an object linked into a shared store from it is readable as any
// other); removed when the TempFile goes away. AtomicFile::InTemp writes
// it. While it lives its process holds a shared lock on it (flock), so
// that a gc can tell a scratch file in use from one a killed process left
// (InUse). Once RemoveScratchOnSignals has run, a process stopped by a
// signal removes the scratch files it holds too.
class TempFile {
 public:
  static Result<TempFile> Create(const std::string& dir, const std::string& prefix);
  TempFile(TempFile&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_), slot_(o.slot_) {
    o.path_.clear();
    o.fd_ = -1;
    o.slot_ = -1;
  }
  TempFile& operator=(TempFile&& o) noexcept;  // removes the file it held
  ~TempFile();
  const std::string& path() const { return path_; }

 private:
  TempFile(std::string path, int fd, int slot) : path_(std::move(path)), fd_(fd), slot_(slot) {}
  void Remove();
  std::string path_;
  int fd_ = -1;    // holds the lock
  int slot_ = -1;  // where a signal finds its path, when one was free
};

// From now on, a process stopped by Ctrl-C (SIGINT), SIGTERM or SIGHUP
// first removes every TempFile it holds and the temporary file of every
// AtomicFile not yet committed, then dies of the signal as it would have:
// a stopped `git add` leaves no copy of its checkpoint in scratch, a
// stopped `restore -o` no half-written file beside its output. A signal the process was started ignoring stays ignored.
// Call once, before any thread starts.
void RemoveScratchOnSignals();

// A line (ending in a newline) that the handler RemoveScratchOnSignals
// sets writes to standard error before the process dies of the signal,
// saying what was stopped; "" for none. At most 1 KiB is kept.
void SetSignalNote(const std::string& note);

// Whether a live process holds a lock on the file at `path` (a TempFile,
// or an AtomicFile's temporary, being written): false for a file whose
// writer is gone, or that no lock was ever taken on.
bool InUse(const std::string& path);

// Whether locks in `dir` hold (a lock taken there is seen by InUse): on a
// file system whose flock succeeds and locks nothing, a live process's
// file cannot be told from a dead one's, and those who clean up after dead
// processes must fall back on age alone.
bool LocksWork(const std::string& dir);

// A hard link to an existing file under a fresh temporary name beside
// `path` (named as AtomicFile names its temporary files), removed unless
// Commit renames it over `path`. It moves no bytes: both names share the
// file, its contents, owner and mode.
class TempLink {
 public:
  // nullopt when the two places cannot share a file: another file system,
  // one without hard links, or a link refused by the kernel's rules.
  static Result<std::optional<TempLink>> Create(const std::string& file, const std::string& path);
  TempLink(TempLink&& o) noexcept : path_(std::move(o.path_)), tmp_(std::move(o.tmp_)) { o.tmp_.clear(); }
  TempLink& operator=(TempLink&&) = delete;
  ~TempLink();
  const std::string& temp_path() const { return tmp_; }
  // Renames the link over `path` (an existing file there is replaced),
  // then fsyncs the folder, so that the name survives a power loss.
  Status Commit();

 private:
  TempLink(std::string path, std::string tmp) : path_(std::move(path)), tmp_(std::move(tmp)) {}
  std::string path_;
  std::string tmp_;
};

// The name `file_name` would have had as a file before AtomicFile or
// TempLink gave it a temporary name ("<name>.tmp-<8 hex digits>"), or
// nullopt when it is not such a temporary name. Those who clean up after
// writers that died remove only files named so, never a file of someone
// else's that merely looks alike.
std::optional<std::string> TemporaryTarget(const std::string& file_name);

bool FileExists(const std::string& path);
// True for a regular file (after symlinks), not a folder or anything else.
bool IsRegularFile(const std::string& path);

// Writes all `n` bytes to `fd` (a pipe or a device takes them in parts);
// errors name `name`.
Status WriteAll(int fd, const void* data, size_t n, const std::string& name);
// Writes all `n` bytes at `offset` (pwrite, retried), `name` in errors;
// from several threads at once for ranges apart.
Status WriteAllAt(int fd, const void* data, size_t n, uint64_t offset, const std::string& name);

// mkdir -p. With `durable`, each folder it creates is made to survive a
// power loss (its parent fsynced, SyncFolder).
Status MakeDirectories(const std::string& path, bool durable = false);

// fsyncs the folder `dir`, so that the names just linked, renamed or
// created in it survive a power loss (an fsync of a file makes its bytes
// durable, not its name).
Status SyncFolder(const std::string& dir);

// Reads a whole (small) file; for tests, golden files and tools.
Result<std::vector<uint8_t>> ReadWholeFile(const std::string& path);

// The bytes of the regular file at `path` when it holds at most `limit`;
// nullopt for anything else (missing, larger, a link, a pipe or device,
// which are never waited on), for notes a process leaves for another.
std::optional<std::string> ReadSmallFile(const std::string& path, size_t limit);

}  // namespace zipnn
