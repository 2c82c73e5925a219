#include "lib/ops/commit.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "lib/base/content_id.h"
#include "lib/base/file.h"
#include "lib/base/fs_ops.h"
#include "lib/git/commit.h"
#include "lib/git/git.h"
#include "lib/git/pointers.h"
#include "lib/git/textconv_cache.h"
#include "lib/ops/added.h"
#include "lib/ops/clean.h"
#include "lib/ops/filter_start.h"
#include "lib/remote/remote_store.h"
#include "lib/remote/select.h"
#include "lib/remote/transfer.h"

namespace zipnn::ops {

namespace fs = std::filesystem;

namespace {

// `given` (from the current folder) from the top of the work tree `top`;
// "." for the top itself. The folders above the last part are resolved
// as the kernel does (getcwd names the current folder so too), the last
// part is kept as named.
Result<std::string> FromTop(const std::string& given, const std::string& top) {
  std::error_code ec;
  const fs::path full = fs::absolute(given, ec).lexically_normal();
  if (ec) return InvalidArgument(given + ": " + ec.message());
  fs::path above = fs::weakly_canonical(full.parent_path(), ec);
  if (ec) above = full.parent_path();
  const fs::path path = full.has_filename() ? above / full.filename() : above;
  const fs::path rel = path.lexically_relative(fs::path(top));
  const std::string text = rel.generic_string();
  if (text.empty() || text == ".." || text.rfind("../", 0) == 0) {
    return InvalidArgument(given + " is outside the work tree of this repository (" + top + ")");
  }
  return text;
}

// The regular files under `folder` (from the top, the current folder),
// its .git folders left out, sorted.
std::vector<std::string> FilesUnder(const std::string& folder) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename() == ".git") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) files.push_back(it->path().lexically_normal().generic_string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The files of a save at `path` (from the top): a folder's, the file's,
// or (gone from the work tree) those the index holds there.
Result<std::vector<std::string>> FilesOfSave(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return FilesUnder(path);
  if (fs::exists(fs::symlink_status(path, ec))) return std::vector<std::string>{path};
  return git::FilesNamed(path);
}

// Tracked checkpoints gone from beside a save at `path` (from the top):
// for a folder, files of its sibling folders (a Trainer's
// save_total_limit removing checkpoint-400/ as it writes
// checkpoint-500/), with every other file of a sibling folder gone whole
// that held one (its trainer_state.json); for a file, files of its own
// folder.
Result<std::vector<std::string>> GoneBeside(const std::string& path, const std::string& top) {
  const bool folder = fs::is_directory(path);
  const size_t slash = path.rfind('/');
  const std::string around = slash == std::string::npos || path == "." ? "" : path.substr(0, slash);
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> deleted, git::DeletedUnder(around, top));
  const std::string prefix = around.empty() ? "" : around + "/";
  std::vector<std::string> beside;
  for (const std::string& f : deleted) {
    if (f.compare(0, prefix.size(), prefix) != 0) continue;
    const bool deeper = f.find('/', prefix.size()) != std::string::npos;
    if (folder ? deeper : !deeper) beside.push_back(f);
  }
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> gone, git::TrackedByZipnn(beside, top));
  if (!folder) return gone;
  // The sibling folder a file is in.
  auto sibling = [&](const std::string& f) { return f.substr(0, f.find('/', prefix.size())); };
  std::set<std::string> whole;
  for (const std::string& f : gone) {
    std::error_code ec;
    if (!fs::exists(sibling(f), ec)) whole.insert(sibling(f));
  }
  for (const std::string& f : beside) {
    if (whole.count(sibling(f)) && std::find(gone.begin(), gone.end(), f) == gone.end()) gone.push_back(f);
  }
  return gone;
}

std::string MessageFor(const CommitRequest& request, const std::vector<std::string>& paths) {
  if (!request.message.empty()) return request.message;
  if (request.step) return "checkpoint at step " + std::to_string(*request.step);
  std::string named;
  for (const std::string& p : paths) named += (named.empty() ? "" : " ") + p;
  return "checkpoint " + named;
}

// Of `files` (all the save's tracked files, sorted), those rank `rank` of
// `world` stores: the largest first, each to the rank holding the fewest
// bytes so far (the lowest of equals), so that every rank, listing the
// same files, deals them out alike.
std::vector<std::string> ShareOf(const std::vector<std::string>& files, int rank, int world) {
  std::vector<std::pair<uint64_t, std::string>> sized;
  for (const std::string& f : files) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(f, ec);
    sized.emplace_back(ec ? 0 : static_cast<uint64_t>(size), f);
  }
  std::stable_sort(sized.begin(), sized.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<uint64_t> load(static_cast<size_t>(world), 0);
  std::vector<std::string> mine;
  for (const auto& [size, f] : sized) {
    const size_t to = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[to] += size;
    if (static_cast<int>(to) == rank) mine.push_back(f);
  }
  std::sort(mine.begin(), mine.end());
  return mine;
}

// Where the ranks of one save meet: a folder named by what every rank of
// the round knows alike (the job, HEAD, the request). Rank 0 opens a
// round by emptying it and writing `begun`, a number of its own; every
// other file of the round starts with that number, so that what a round
// killed on the way left there counts for nothing:
//   stored.<rank>  "ok", or "error: <why>", once that rank has stored;
//   outcome        rank 0's "commit <id>", "none" or "error: <why>";
//   done.<rank>    once that rank has read the outcome.
// A rank that stored before rank 0 opened the round (or saw it opened
// again) writes its stored.<rank> again under the number in force. Rank 0
// removes the folder once every rank is done, and a rank that finds its
// own done.<rank> at the start waits for that, so the next round (the
// same paths at the next save) starts empty.
class Round {
 public:
  Round(std::string dir, int rank, int world, int timeout_seconds)
      : dir_(std::move(dir)), rank_(rank), world_(world), timeout_(timeout_seconds) {}

  Status Begin() {
    if (rank_ != 0) {
      return WaitFor([&] { return !FileExists(Marker("done", rank_)); },
                     [] { return std::string("the last save of these paths to end"); });
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
    SweepOldRounds();
    ZIPNN_RETURN_IF_ERROR(MakeDirectories(dir_));
    uint64_t number = 0;
    const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::read(fd, &number, sizeof number) != static_cast<ssize_t>(sizeof number)) {
      number = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^ ::getpid();
    }
    if (fd >= 0) ::close(fd);
    number_ = std::to_string(number);
    return Say(dir_ + "/begun", number_);
  }

  // Rank 0: says it stored (or why not), then waits until every rank has
  // said so in this round; the first rank's error, if any.
  Status AwaitStored(const Status& stored) {
    ZIPNN_RETURN_IF_ERROR(Say(Marker("stored", 0), Stamped(StoredText(stored))));
    ZIPNN_RETURN_IF_ERROR(WaitFor([&] { return Missing("stored", 0).empty(); },
                                  [&] { return Ranks(Missing("stored", 0)) + " to store their files"; }));
    for (int r = 0; r < world_; ++r) {
      std::string said = Said(Marker("stored", r)).value_or("");
      if (said.rfind("error: ", 0) == 0) said = said.substr(7);
      if (said != "ok") return IoError("rank " + std::to_string(r) + " could not store its files: " + said);
    }
    return OkStatus();
  }

  Status SayOutcome(const std::string& text) { return Say(dir_ + "/outcome", Stamped(text)); }

  // Ranks other than 0: says it stored (or why not) in the round rank 0
  // opened, then waits for what rank 0 did in it.
  Result<std::string> AwaitOutcome(const Status& stored) {
    std::string outcome;
    Status written;
    ZIPNN_RETURN_IF_ERROR(WaitFor(
        [&] {
          number_ = ReadFile(dir_ + "/begun");
          if (number_.empty()) return false;
          if (!Said(Marker("stored", rank_))) written = Say(Marker("stored", rank_), Stamped(StoredText(stored)));
          const std::optional<std::string> said = Said(dir_ + "/outcome");
          if (said) outcome = *said;
          return said.has_value() || !written.ok();
        },
        [&] {
          const std::string missing = Missing("stored", 0);
          return missing.empty() || number_.empty() ? std::string("rank 0 to commit")
                                                    : Ranks(missing) + " to store their files";
        }));
    ZIPNN_RETURN_IF_ERROR(written);
    (void)Say(Marker("done", rank_), Stamped(""));
    return outcome;
  }

  // Rank 0: once the others have read the outcome, the folder goes
  // (unless another rank 0 opened it again meanwhile, after this one
  // waited in vain).
  // A rank still there reads it within a poll (half a second); one that
  // gave up never will, so the wait is short, and what is left is
  // removed when the next round of these paths opens.
  void End() {
    const Status all_done = WaitFor([&] { return Missing("done", 1).empty(); },
                                    [&] { return Ranks(Missing("done", 1)) + " to read the outcome"; },
                                    std::min(timeout_, 30));
    std::error_code ec;
    if (all_done.ok() && ReadFile(dir_ + "/begun") == number_) fs::remove_all(dir_, ec);
  }

 private:
  // Rounds of other saves that nothing has touched for a day (and longer
  // than a rank waits): their jobs died.
  void SweepOldRounds() const {
    const auto stale = fs::file_time_type::clock::now() - std::chrono::seconds(std::max(timeout_, 86400));
    std::error_code ec;
    for (fs::directory_iterator it(fs::path(dir_).parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code old;
      if (it->is_directory(old) && fs::last_write_time(it->path(), old) < stale && !old) {
        fs::remove_all(it->path(), old);
      }
    }
  }

  static std::string StoredText(const Status& stored) { return stored.ok() ? "ok" : "error: " + stored.message(); }

  // The file rank `rank` leaves for `kind`.
  std::string Marker(const std::string& kind, int rank) const { return dir_ + "/" + kind + "." + std::to_string(rank); }

  // `text` under the round's number.
  std::string Stamped(const std::string& text) const { return number_ + "\n" + text; }

  // What the file at `path` says in this round; nullopt when it is
  // missing or of another round.
  std::optional<std::string> Said(const std::string& path) const {
    const std::string text = ReadFile(path);
    const size_t newline = text.find('\n');
    if (number_.empty() || newline == std::string::npos || text.compare(0, newline, number_) != 0) {
      return std::nullopt;
    }
    return text.substr(newline + 1);
  }

  // "rank 3", "ranks 3,5", or the first ten of more and how many.
  static std::string Ranks(const std::string& list) {
    const size_t commas = static_cast<size_t>(std::count(list.begin(), list.end(), ','));
    if (commas == 0) return "rank " + list;
    if (commas < 10) return "ranks " + list;
    size_t cut = 0;
    for (int i = 0; i < 10; ++i) cut = list.find(',', cut + 1);
    return "ranks " + list.substr(0, cut) + " and " + std::to_string(commas + 1 - 10) + " more";
  }

  // The ranks from `from` on that have said nothing of `kind` in this
  // round, as "3,5".
  std::string Missing(const std::string& kind, int from) const {
    std::string missing;
    for (int r = from; r < world_; ++r) {
      if (!Said(Marker(kind, r))) missing += (missing.empty() ? "" : ",") + std::to_string(r);
    }
    return missing;
  }

  // Writes `text` to the round's file `path`, whole or not at all.
  static Status Say(const std::string& path, const std::string& text) {
    ZIPNN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path, /*overwrite=*/true));
    ZIPNN_RETURN_IF_ERROR(file.Append(text.data(), text.size()));
    return file.CommitUnsynced();
  }

  static std::string ReadFile(const std::string& path) { return ReadSmallFile(path, 1 << 16).value_or(""); }

  // Polls `ready` until it holds (quickly at first), saying once on
  // stderr what it waits for after ten seconds; IoError at the timeout.
  // `seconds`: how long at most (0: the round's timeout).
  Status WaitFor(const std::function<bool()>& ready, const std::function<std::string()>& what, int seconds = 0) {
    const int limit = seconds > 0 ? seconds : timeout_;
    const auto start = std::chrono::steady_clock::now();
    bool said = false;
    for (int sleep_ms = 5;; sleep_ms = std::min(sleep_ms * 2, 500)) {
      if (ready()) return OkStatus();
      const auto waited = std::chrono::steady_clock::now() - start;
      if (waited > std::chrono::seconds(limit)) {
        return IoError("rank " + std::to_string(rank_) + " waited " + std::to_string(limit) + " s for " + what() +
                       " (" + dir_ + "): a rank that died, or runs with other paths, --step or message, or " +
                       "another WORLD_SIZE, leaves the others waiting so long (--timeout)");
      }
      if (!said && waited > std::chrono::seconds(10)) {
        std::fprintf(stderr, "git-zipnn commit: rank %d of %d waiting for %s (for up to %d s: --timeout)\n", rank_,
                     world_, what().c_str(), limit);
        said = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    }
  }

  const std::string dir_;
  const int rank_, world_, timeout_;
  std::string number_;  // the round's, as rank 0 wrote it in `begun`
};

// git's turn in this repository, held while it lives: one process of any
// job commits (or moves the clone) at a time, as git's index takes one at
// a time and a second would fail on its lock.
class GitTurn {
 public:
  static Result<std::unique_ptr<GitTurn>> Take(const std::string& rounds_dir) {
    ZIPNN_RETURN_IF_ERROR(MakeDirectories(rounds_dir));
    const std::string path = rounds_dir + "/git.lock";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return IoError(path + ": cannot open");
    std::unique_ptr<GitTurn> turn(new GitTurn(fd));
    int locked;
    while ((locked = FsLock(fd, LOCK_EX)) != 0 && errno == EINTR) {
    }
    if (locked != 0) return IoError(path + ": cannot lock");
    return turn;
  }
  ~GitTurn() { ::close(fd_); }
  GitTurn(const GitTurn&) = delete;
  GitTurn& operator=(const GitTurn&) = delete;

 private:
  explicit GitTurn(int fd) : fd_(fd) {}
  const int fd_;
};

// Stores `files` as clean would (one after the other, each with every
// core) and notes each for the `git add` that records them (added.h);
// with `remote`, also sends their objects there. With `publish_turns`
// (where GitTurn is taken) their objects are then made findable there
// (the map of a Git LFS host, the listings), one rank of this clone at a
// time, since each updates the clone's refs; else the push of the commit
// makes them so. Adds to `done`.
Status StoreFiles(Context& context, const std::vector<std::string>& files, const std::string& parent,
                  const std::string& remote, const std::string& publish_turns, Committed& done) {
  if (files.empty()) return OkStatus();
  ZIPNN_ASSIGN_OR_RETURN(FilterStart start, StartFilter(context, [](const std::string& said) {
                           std::fprintf(stderr, "git-zipnn: %s\n", said.c_str());
                         }));
  const std::string added_dir = start.store.added_dir;
  const store::Store store = start.store;
  Cleaner cleaner(std::move(start.store), start.series.get());
  if (auto cache = ListingsCache(start)) cleaner.KeepListings(std::move(*cache));
  if (!parent.empty()) cleaner.NameParent(parent);
  git::FoundPointers found;
  for (const std::string& file : files) {
    const std::optional<std::string> before = FileStamp(file);
    if (!before) return NotFound(file + " is no file this rank can store (missing, or not a regular file)");
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return IoError(file + ": cannot be read");
    FdReader in(fd);
    MemorySink out;
    const Status cleaned = cleaner.Clean(file, in, out);
    ::close(fd);
    ZIPNN_RETURN_IF_ERROR(Annotate(cleaned, file));
    const std::string text(reinterpret_cast<const char*>(out.buffer().data()), out.buffer().size());
    ZIPNN_RETURN_IF_ERROR(NoteAdded(added_dir, file, *before, text));
    Result<store::Pointer> pointer = store::ParsePointer(text);
    if (!pointer.ok()) continue;  // plain text kept as it is: nothing stored
    done.stored.push_back(file);
    done.stored_bytes += pointer->size;
    done.pointers.push_back({file, text.substr(0, text.find('\n'))});
    ZIPNN_ASSIGN_OR_RETURN(std::string blob, git::PointerBlob(text));
    found.pointers.emplace_back(*pointer, git::Place{"the index", file, blob});
  }
  const Status listed = cleaner.Finish();
  if (!listed.ok()) {
    std::fprintf(stderr, "git-zipnn: warning: the tensor listings for git log -p were not kept: %s\n",
                 listed.message().c_str());
  }
  if (remote.empty() || found.pointers.empty()) return OkStatus();
  ZIPNN_ASSIGN_OR_RETURN(const remote::RemoteSettings* settings, context.RemoteSettings());
  ZIPNN_RETURN_IF_ERROR(remote::PushPointers(store, *settings, remote, found, /*publish=*/false).status());
  if (publish_turns.empty()) return OkStatus();
  ZIPNN_ASSIGN_OR_RETURN(const std::unique_ptr<GitTurn> turn, GitTurn::Take(publish_turns));
  ZIPNN_ASSIGN_OR_RETURN(remote::Transferred sent, remote::PublishPointers(*settings, remote, found));
  if (!sent.listings.ok()) {
    std::fprintf(stderr, "git-zipnn: warning: the tensor listings did not reach %s: %s\n", remote.c_str(),
                 sent.listings.message().c_str());
  }
  return OkStatus();
}

// Whether the file at `path` is a pointer: on a node's clone, another
// node's file as --follow wrote it.
bool IsPointerFile(const std::string& path) {
  const std::optional<std::string> text = ReadSmallFile(path, store::kMaxPointerBytes);
  return text && store::ParsePointer(*text).ok();
}

// Whether `path` (from the top, as a pointer list names it) is a file of
// the save at `saves`, and nowhere git-zipnn must not write: no absolute
// path, no "." or ".." or empty part, nothing in a .git folder.
bool InSave(const std::string& path, const std::vector<std::string>& saves) {
  if (path.empty() || path[0] == '/') return false;
  for (size_t at = 0; at <= path.size();) {
    size_t end = path.find('/', at);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(at, end - at);
    if (part.empty() || part == "." || part == ".." || part == ".git") return false;
    at = end + 1;
  }
  return git::AtOrUnderAny(path, saves);
}

// The files of pointer lists (PointerListText), in order.
Result<std::vector<StoredFile>> ParsePointerLists(const std::vector<std::string>& lists) {
  std::vector<StoredFile> files;
  for (const std::string& list : lists) {
    for (size_t at = 0; at < list.size();) {
      size_t end = list.find('\n', at);
      if (end == std::string::npos) end = list.size();
      std::string line = list.substr(at, end - at);
      at = end + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();  // a list that went through Windows
      if (line.empty()) continue;
      const size_t tab = line.find('\t');
      if (tab == std::string::npos || tab + 1 == line.size()) {
        return InvalidArgument("\"" + line.substr(0, 200) +
                               "\" is no line of a pointer list (\"<pointer><TAB><path>\", as `git zipnn commit "
                               "--store-only` prints)");
      }
      files.push_back({line.substr(tab + 1), line.substr(0, tab)});
    }
  }
  return files;
}

// Writes each file another node stored into the work tree as its pointer,
// for the `git add` that commits it, once `remote`'s store is shown to
// hold every one: each must be a tracked file of the save at `saves`,
// named once, and no file of this work tree (unless it is that pointer
// already: a commit tried again).
Status PlaceStoredElsewhere(Context& context, const std::vector<StoredFile>& elsewhere,
                            const std::vector<std::string>& saves, const std::string& remote, const std::string& top) {
  if (elsewhere.empty()) return OkStatus();
  if (remote.empty()) {
    return InvalidArgument(
        "files stored on other nodes reach this clone only through the remote's store, and "
        "this commit has no remote: commit them with --push");
  }
  std::map<std::string, std::string> named;
  std::vector<ContentId> ids;
  std::vector<std::string> paths;
  for (const StoredFile& f : elsewhere) {
    Result<store::Pointer> pointer = store::ParsePointer(f.pointer + "\n");
    if (!pointer.ok()) {
      return InvalidArgument("a pointer list names " + f.path + " as \"" + f.pointer.substr(0, 200) +
                             "\", which is no pointer");
    }
    if (!InSave(f.path, saves)) {
      return InvalidArgument("a pointer list names " + f.path + ", which is no file of the save committed here");
    }
    const auto [it, fresh] = named.emplace(f.path, f.pointer);
    if (!fresh && it->second != f.pointer) {
      return InvalidArgument(f.path + " was stored on two nodes as two versions (" + it->second + "; " + f.pointer +
                             "): give each file of a save to one rank");
    }
    if (!fresh) continue;
    ids.push_back(pointer->id);
    paths.push_back(f.path);
  }
  ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> tracked, git::TrackedByZipnn(paths, top));
  const std::set<std::string> is_tracked(tracked.begin(), tracked.end());
  for (const std::string& path : paths) {
    if (!is_tracked.count(path)) {
      return InvalidArgument(path +
                             " was stored on another node, but git-zipnn does not track it here: track the "
                             "same patterns in every clone (.gitattributes, committed)");
    }
  }
  ZIPNN_ASSIGN_OR_RETURN(const remote::RemoteSettings* settings, context.RemoteSettings());
  ZIPNN_ASSIGN_OR_RETURN(const std::unique_ptr<remote::RemoteStore> store, remote::OpenRemoteStore(*settings, remote));
  ZIPNN_ASSIGN_OR_RETURN(const std::vector<bool> held, store->Has(ids));
  for (size_t i = 0; i < paths.size(); ++i) {
    if (i < held.size() && held[i]) continue;
    return NotFound(paths[i] + " was stored on another node as " + ids[i].Hex() + ", but " + store->where() +
                    " does not hold its object: that node's push has not finished; commit again once it has");
  }
  // Every file checked before any is written: a list is taken whole or
  // not at all.
  std::vector<std::string> to_write;
  for (const std::string& path : paths) {
    struct stat st;
    for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      const std::string folder = path.substr(0, slash);
      if (::lstat(folder.c_str(), &st) != 0) break;
      if (S_ISLNK(st.st_mode)) {
        return InvalidArgument(path + " was stored on another node, but " + folder +
                               " is a symbolic link here, and git commits a link, never the files it leads to");
      }
      if (!S_ISDIR(st.st_mode)) {
        return InvalidArgument(path + " was stored on another node, but " + folder + " is a file here");
      }
    }
    // A pointer there is the version this clone last committed of a file
    // another node saves over (one path overwritten each save).
    if (::lstat(path.c_str(), &st) != 0 || (S_ISREG(st.st_mode) && IsPointerFile(path))) {
      if (ReadSmallFile(path, named[path].size() + 1) != named[path] + "\n") to_write.push_back(path);
    } else {
      return InvalidArgument(path +
                             " is a file of this work tree, and another node stored it too: give each file "
                             "of a save to one rank");
    }
  }
  ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> ignored, git::IgnoredOf(to_write, top));
  if (!ignored.empty()) {
    return InvalidArgument(ignored[0] +
                           " was stored on another node, but git ignores it here (.gitignore, "
                           ".git/info/exclude), so no commit would hold it");
  }
  for (const std::string& path : to_write) {
    const std::string text = named[path] + "\n";
    const std::string folder = fs::path(path).parent_path().string();
    if (!folder.empty()) ZIPNN_RETURN_IF_ERROR(MakeDirectories(folder));
    ZIPNN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::Create(path, /*overwrite=*/true));
    ZIPNN_RETURN_IF_ERROR(file.Append(text.data(), text.size()));
    ZIPNN_RETURN_IF_ERROR(file.CommitUnsynced());
  }
  return OkStatus();
}

// git's part, for the one process that does it: stage the save and
// what went away beside it, commit those paths alone, push. Commits of
// other jobs in the repository wait for it (git's index takes one at a
// time, and a second would fail on its lock).
Result<std::string> CommitStaged(const std::vector<std::string>& saved, const std::string& message,
                                 const std::string& parent, const std::string& remote, const std::string& top,
                                 const std::string& rounds_dir) {
  ZIPNN_ASSIGN_OR_RETURN(const std::unique_ptr<GitTurn> turn, GitTurn::Take(rounds_dir));
  std::vector<std::string> paths = saved;
  for (const std::string& path : saved) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> gone, GoneBeside(path, top));
    paths.insert(paths.end(), gone.begin(), gone.end());
  }
  ZIPNN_RETURN_IF_ERROR(git::AddPaths(paths, parent, top));
  ZIPNN_ASSIGN_OR_RETURN(bool changed, git::StagedIn(paths, top));
  std::string commit;
  if (changed) {
    ZIPNN_ASSIGN_OR_RETURN(commit, git::CommitPaths(message, paths, top));
  }
  // Even with nothing new: a commit whose push failed goes now.
  if (!remote.empty()) ZIPNN_RETURN_IF_ERROR(git::PushHead(remote, top));
  return commit;
}

// What a save comes to before anything is stored: its files, the parent
// and the remote.
struct Prepared {
  std::vector<std::string> tracked;  // the save's files under a zipnn pattern, sorted
  std::vector<std::string> mine;     // the files this rank stores (a rank of a job)
  std::string parent;                // from the top
  std::string remote;                // to push to; empty: no push
};

// For a rank that stores for a commit made elsewhere: leaves out of
// `tracked` the files that are pointers here (other nodes' files, which
// are theirs to store), refuses a rank file that is one of those or that
// git-zipnn does not track (only pointers go to the rank that commits),
// and with `warn`, says which files of the save only this clone holds
// and no commit will.
Status KeepOwnFiles(const std::vector<std::string>& files, std::vector<std::string>& tracked,
                    const std::vector<std::string>& rank_files, bool warn) {
  tracked.erase(std::remove_if(tracked.begin(), tracked.end(), IsPointerFile), tracked.end());
  const std::set<std::string> checkpoints(tracked.begin(), tracked.end());
  for (const std::string& file : rank_files) {
    if (checkpoints.count(file)) continue;
    return InvalidArgument(file +
                           (IsPointerFile(file) ? " is a pointer here (another node's file)"
                                                : " is no checkpoint of the save that git-zipnn tracks") +
                           ": a rank on a node of its own stores the save's checkpoints, and only their pointers "
                           "reach the rank that commits");
  }
  if (!warn) return OkStatus();
  std::vector<std::string> left;
  for (const std::string& file : files) {
    if (!checkpoints.count(file) && !IsPointerFile(file)) left.push_back(file);
  }
  if (left.empty()) return OkStatus();
  std::fprintf(stderr,
               "git-zipnn commit: warning: %s%s %s not tracked by git-zipnn, and the rank that commits takes only "
               "checkpoints from other nodes: unless this clone is that rank's, no commit will hold %s\n",
               left[0].c_str(), left.size() > 1 ? (" and " + std::to_string(left.size() - 1) + " more").c_str() : "",
               left.size() > 1 ? "are" : "is", left.size() > 1 ? "them" : "it");
  return OkStatus();
}

// Moves this clone to the default remote's branch (git::FollowRemoteBranch),
// in git's turn.
Result<git::Followed> FollowInTurn(Context& context, const std::string& rounds_dir, const std::string& top) {
  ZIPNN_ASSIGN_OR_RETURN(const remote::RemoteSettings* settings, context.RemoteSettings());
  ZIPNN_ASSIGN_OR_RETURN(const std::string remote, remote::DefaultRemote(*settings));
  ZIPNN_ASSIGN_OR_RETURN(const std::unique_ptr<GitTurn> turn, GitTurn::Take(rounds_dir));
  return git::FollowRemoteBranch(remote, top);
}

// `paths` are from the top (the current folder), `parent` and
// `rank_files` as FromTop gave them.
Result<Prepared> Prepare(Context& context, const CommitRequest& request, const std::vector<std::string>& paths,
                         const Result<std::string>& parent, const Result<std::vector<std::string>>& rank_files,
                         const std::string& top) {
  Prepared p;
  if (!parent.ok()) {
    return InvalidArgument("the parent " + request.parent + " is not in the repository of " + request.paths[0] +
                           " (" + top + ")");
  }
  p.parent = *parent;
  ZIPNN_RETURN_IF_ERROR(rank_files.status());
  for (const std::string& file : *rank_files) {
    if (!FileExists(file)) return NotFound(file + " is no file this rank can store (missing)");
  }
  // Files stored on other nodes may be all the save holds (on the rank
  // that commits), or none of it be here (on a node's).
  const bool elsewhere = !request.stored_elsewhere.empty() || request.store_only;
  std::vector<std::string> files;
  for (size_t i = 0; i < paths.size(); ++i) {
    Result<std::vector<std::string>> of = FilesOfSave(paths[i]);
    if (!of.ok() && of.status().code() == StatusCode::kNotFound) {
      if (elsewhere) continue;
      return NotFound("nothing at " + request.paths[i] + ": no such file or folder, and git holds none there");
    }
    ZIPNN_RETURN_IF_ERROR(of.status());
    files.insert(files.end(), of->begin(), of->end());
  }
  ZIPNN_ASSIGN_OR_RETURN(p.tracked, git::TrackedByZipnn(files, top));
  if (request.store_only) {
    ZIPNN_RETURN_IF_ERROR(KeepOwnFiles(files, p.tracked, *rank_files, request.rank == 0));
  }
  if (!files.empty() && p.tracked.empty() && !elsewhere) {
    std::string named;
    for (const std::string& given : request.paths) named += (named.empty() ? "" : ", ") + given;
    return InvalidArgument(named + (request.paths.size() == 1 ? " is" : " are") +
                           " not tracked by git-zipnn, so git would store it whole: run `git zipnn track "
                           "'<pattern>'` for it first (git zipnn track --help)");
  }
  if (request.push) {
    ZIPNN_ASSIGN_OR_RETURN(const remote::RemoteSettings* settings, context.RemoteSettings());
    ZIPNN_ASSIGN_OR_RETURN(p.remote, remote::DefaultRemote(*settings));
  }
  p.mine = !rank_files->empty() ? *rank_files : ShareOf(p.tracked, request.rank, request.world_size);
  return p;
}

}  // namespace

Result<Committed> CommitSave(Context& context, const CommitRequest& request) {
  if (request.paths.empty()) return InvalidArgument("name the files or folders to commit");
  if (request.store_only + request.follow_only + !request.stored_elsewhere.empty() > 1) {
    return InvalidArgument("--store-only, --follow and --pointers are steps of three different ranks: give one");
  }
  if (request.world_size < 1 || request.rank < 0 || request.rank >= request.world_size) {
    return InvalidArgument("rank " + std::to_string(request.rank) + " is not one of the " +
                           std::to_string(request.world_size) + " ranks of the job (RANK, WORLD_SIZE)");
  }
  ZIPNN_ASSIGN_OR_RETURN(git::Folders folders, git::RepositoryFolders());
  if (!folders.top) return InvalidArgument("git zipnn commit needs a work tree");
  const std::string top = *folders.top;
  const std::string rounds_dir = folders.git_dir + "/zipnn/commit";
  std::vector<std::string> paths;
  for (const std::string& given : request.paths) {
    ZIPNN_ASSIGN_OR_RETURN(std::string path, FromTop(given, top));
    paths.push_back(path);
  }
  Result<std::string> parent = request.parent.empty() ? std::string() : FromTop(request.parent, top);
  Result<std::vector<std::string>> rank_files = std::vector<std::string>();
  for (const std::string& given : request.rank_files) {
    Result<std::string> path = FromTop(given, top);
    if (!path.ok()) {
      rank_files = path.status();
      break;
    }
    rank_files->push_back(*path);
  }
  // From here on paths are from the top, where git's filter runs too.
  if (::chdir(top.c_str()) != 0) return IoError(top + ": cannot go there");
  Committed done;
  if (request.follow_only) {
    ZIPNN_ASSIGN_OR_RETURN(const git::Followed followed, FollowInTurn(context, rounds_dir, top));
    if (!followed.stayed.empty()) return InvalidArgument("this clone stays where it is: " + followed.stayed);
    ZIPNN_ASSIGN_OR_RETURN(done.commit, git::HeadId(top));
    return done;
  }
  const std::string message = MessageFor(request, request.paths);
  if (request.store_only) {
    // After the save before this one (which may make files of this clone
    // other nodes' pointers), so that each file is stored as what follows
    // its last version.
    if (!request.push) {
      return InvalidArgument(
          "--store-only sends this rank's objects to the remote's store for the rank that "
          "commits: add --push");
    }
    ZIPNN_ASSIGN_OR_RETURN(const git::Followed followed, FollowInTurn(context, rounds_dir, top));
    if (!followed.stayed.empty()) {
      std::fprintf(stderr,
                   "git-zipnn commit: warning: this clone stays where it is (%s): its files are placed "
                   "among the versions it has\n",
                   followed.stayed.c_str());
    }
  }
  Result<Prepared> prepared = Prepare(context, request, paths, parent, rank_files, top);
  if (request.store_only) {
    ZIPNN_RETURN_IF_ERROR(prepared.status());
    ZIPNN_RETURN_IF_ERROR(StoreFiles(context, prepared->mine, prepared->parent, prepared->remote, rounds_dir, done));
    return done;
  }
  if (request.world_size == 1) {
    ZIPNN_RETURN_IF_ERROR(prepared.status());
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<StoredFile> elsewhere, ParsePointerLists(request.stored_elsewhere));
    ZIPNN_RETURN_IF_ERROR(PlaceStoredElsewhere(context, elsewhere, paths, prepared->remote, top));
    ZIPNN_ASSIGN_OR_RETURN(done.commit,
                           CommitStaged(paths, message, prepared->parent, prepared->remote, top, rounds_dir));
    done.pushed_to = prepared->remote;
    return done;
  }
  if (!request.stored_elsewhere.empty()) {
    return InvalidArgument(
        "files stored on other nodes are committed by one process, not a round of ranks: "
        "run it without --rank and --world-size");
  }
  // A round of a distributed save, named alike on every rank. What a rank
  // could not do goes through the round, so that every rank hears of it.
  ZIPNN_ASSIGN_OR_RETURN(std::string head, git::HeadId(top));
  std::string key = request.job + "\n" + head + "\n" + message + "\n" + std::to_string(request.world_size);
  for (const std::string& p : paths) key += "\n" + p;
  Round round(rounds_dir + "/" + HashBytes(key.data(), key.size()).Hex(), request.rank, request.world_size,
              request.timeout_seconds);
  ZIPNN_RETURN_IF_ERROR(round.Begin());
  const Status stored = prepared.ok()
                            ? StoreFiles(context, prepared->mine, prepared->parent, prepared->remote, "", done)
                            : prepared.status();
  if (request.rank != 0) {
    ZIPNN_ASSIGN_OR_RETURN(std::string outcome, round.AwaitOutcome(stored));
    ZIPNN_RETURN_IF_ERROR(stored);
    if (outcome.rfind("commit ", 0) == 0) done.commit = outcome.substr(7);
    if (outcome.rfind("error: ", 0) == 0) return IoError("rank 0 did not commit: " + outcome.substr(7));
    return done;
  }
  const Status all_stored = round.AwaitStored(stored);
  Result<std::string> commit =
      all_stored.ok() ? CommitStaged(paths, message, prepared->parent, prepared->remote, top, rounds_dir)
                      : Result<std::string>(all_stored);
  ZIPNN_RETURN_IF_ERROR(round.SayOutcome(!commit.ok()      ? "error: " + commit.status().message()
                                         : commit->empty() ? "none"
                                                           : "commit " + *commit));
  round.End();
  ZIPNN_ASSIGN_OR_RETURN(done.commit, std::move(commit));
  done.pushed_to = prepared->remote;
  return done;
}

Result<std::string> PointerListText(const std::vector<StoredFile>& files) {
  std::string text;
  for (const StoredFile& f : files) {
    if (f.path.find_first_of("\t\n") != std::string::npos) {
      return InvalidArgument("\"" + f.path + "\" has a tab or a newline in its name, which no pointer list can carry");
    }
    text += f.pointer + "\t" + f.path + "\n";
  }
  return text;
}

}  // namespace zipnn::ops
