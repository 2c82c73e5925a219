// What a download keeps of an object as it comes in, so that one cut
// short (the network, a timeout, a kill) resumes where it stopped: a file
// <dir>/<name> per object, locked (flock) while one process writes it, so
// that another downloads the same object without it. A Git LFS server's
// objects are kept under their oid (lfs.h), a store server's under the id
// and the word that names the server's file (served.h). What is kept is
// never trusted: it becomes part of an object that is proven as any
// download is, and a download that does not prove starts again.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/base/ranges.h"
#include "lib/base/status.h"

namespace zipnn::remote {

// Objects this large or larger are kept as they come in; a smaller one
// costs less to download again than to keep.
inline constexpr uint64_t kResumableBytes = uint64_t{1} << 20;

class Partial {
 public:
  // The kept download `name` in `dir` of an object of `size` bytes; none
  // (ok() false) when `dir` is empty, the object small (unless `any_size`),
  // or another process holds it. More than `size` bytes kept are not of
  // it, and are dropped.
  Partial(const std::string& dir, const std::string& name, uint64_t size, bool any_size = false);
  ~Partial();
  Partial(const Partial&) = delete;
  Partial& operator=(const Partial&) = delete;

  bool ok() const { return fd_ >= 0; }
  uint64_t have() const { return have_; }
  const std::string& path() const { return path_; }
  // Hands the bytes kept to `out`.
  Status CopyTo(ByteSink& out) const;
  // Drops what was kept: the download starts from its first byte.
  Status Restart();
  Status Keep(const void* data, size_t n);
  // fsyncs what is kept, before the file takes an object's name.
  Status Sync();
  // Everything it holds now, what it had and what it kept since, to `out`.
  Status CopyAllTo(ByteSink& out);
  // Once the download ended: kept for the next one only when it was cut
  // short (an I/O error: the network, a timeout), not when it came whole
  // or was refused.
  void Done(const Status& st);

 private:
  void Close();
  std::string path_;
  int fd_ = -1;
  uint64_t have_ = 0;  // when it was opened
  uint64_t kept_ = 0;  // since
};

// The name of a download of `id` an earlier try kept in `dir`,
// "<id>-<copy>" with a `copy` that `valid` takes (the word that names
// which copy of the object it is); nullopt when there is none.
std::optional<std::string> FindKept(const std::string& dir, const ContentId& id,
                                    const std::function<bool(const std::string&)>& valid);

// Passes a download on to `out`, keeping a copy in `partial`.
class KeepingSink : public ByteSink {
 public:
  KeepingSink(ByteSink& out, Partial& partial) : out_(out), partial_(partial) {}
  Status Append(const void* data, size_t n) override {
    ZIPNN_RETURN_IF_ERROR(partial_.Keep(data, n));
    return out_.Append(data, n);
  }

 private:
  ByteSink& out_;
  Partial& partial_;
};

// An object larger than this moves in ranges on several connections at
// once, and the first request of such a fetch asks for this much; a range
// holds at most kMaxRange bytes (one cut short by a kill is fetched again
// whole).
inline constexpr uint64_t kSpreadPart = uint64_t{4} << 20;
inline constexpr uint64_t kMaxRange = uint64_t{64} << 20;
// How large the ranges of an object of `size` bytes are: small enough
// that it moves on all `connections` at once, within those bounds.
inline uint64_t SpreadRangeSize(uint64_t size, int connections) {
  const uint64_t n = static_cast<uint64_t>(std::max(1, connections));
  return std::clamp((size + n - 1) / n, kSpreadPart, kMaxRange);
}

// A download of one object in ranges on several connections at once (a
// store server's get-range): <dir>/<name>.spread, sized to the object from
// the start, each range written where it lies, and <dir>/<name>.spread-done,
// a line "<from> <to>" for each range once all of it is in. A try cut
// short leaves both, and the next asks only for what the record does not
// name; `name` is a Partial's (<id>-<copy>), so only bytes of the same
// copy are ever put together. Locked (flock) while one process writes it.
// Once every range is in, the file takes the name <name>, where a Partial
// finds it whole. What is kept is never trusted, as for a Partial.
class SpreadPartial {
 public:
  // The spread download `name` in `dir` of an object of `size` bytes, with
  // the ranges an earlier try of that size noted (0: of the size the
  // earlier try gave it); none (ok() false) when another process holds
  // it, or it cannot be made.
  SpreadPartial(const std::string& dir, const std::string& name, uint64_t size);
  ~SpreadPartial();
  SpreadPartial(const SpreadPartial&) = delete;
  SpreadPartial& operator=(const SpreadPartial&) = delete;

  bool ok() const { return fd_ >= 0; }
  uint64_t size() const { return size_; }
  // The bytes earlier tries had noted when it was opened.
  uint64_t earlier() const { return earlier_; }
  // The ranges [from, to) no try noted yet, in order.
  std::vector<Range> Missing();
  // Bytes of the object at `at`; from several threads at once, for
  // ranges apart.
  Status WriteAt(uint64_t at, const void* data, size_t n);
  // Notes [from, to) as in (from several threads at once).
  Status Noted(uint64_t from, uint64_t to);
  // Runs `read`, which writes bytes of the object from `from` on into the
  // sink it is given, and notes what came as it comes (every kNoteEvery
  // bytes) and at the end: all of it, or what came before the link
  // dropped, so that a connection that never carries a whole range still
  // moves the download on, and a kill loses at most kNoteEvery bytes of
  // each range in flight. `read`'s error, else the note's.
  Status Take(uint64_t from, const std::function<Status(ByteSink& into)>& read);
  static constexpr uint64_t kNoteEvery = uint64_t{8} << 20;
  // Once nothing is missing: the file takes the name <name>, and the
  // record goes.
  Status Finish();
  // Removes the file and its record: what they hold is of no use.
  void Drop();

 private:
  void Close();
  std::string dir_, name_, path_, record_;
  int fd_ = -1, record_fd_ = -1;
  uint64_t size_ = 0;
  uint64_t earlier_ = 0;
  std::mutex mu_;  // guards done_ and the record's writes
  std::vector<Range> done_;
};

// Gets what `spread` (the download <dir>/<name>.spread of object `id`)
// lacks, in ranges of at most `step` bytes, `connections` at once:
// `fetch(from, to, into, changed)` writes bytes [from, to) of the copy
// `name` names into `into`, or sets `changed` when the remote holds
// another copy now. What came of every range is noted, also of one cut
// short; a changed copy, or a failure other than the network's (or any,
// without `resumable`), drops everything kept; else it stays for the next
// try. Once all is in, the file is the kept download <dir>/<name>, whole,
// every byte handed to `check` first.
using RangeFetch = std::function<Status(uint64_t from, uint64_t to, ByteSink& into, std::atomic<bool>& changed)>;
Result<std::unique_ptr<Partial>> FetchSpread(SpreadPartial& spread, const std::string& dir, const std::string& name,
                                             const ContentId& id, int connections, uint64_t step, bool resumable,
                                             const RangeFetch& fetch, ByteSink& check);

// The name (without ".spread") of a spread download of `id` an earlier
// try left in `dir`, "<id>-<copy>" with a `copy` that `valid` takes;
// nullopt when there is none.
std::optional<std::string> FindSpread(const std::string& dir, const ContentId& id,
                                      const std::function<bool(const std::string&)>& valid);

}  // namespace zipnn::remote
