#include "lib/store/receive.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <ctime>

#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "lib/base/fs_ops.h"
#include "lib/container/format.h"
#include "lib/container/object.h"
#include "lib/store/base_note.h"
#include "lib/store/chain.h"

namespace zipnn::store {

Status CheckObject(const ByteSource& object, const ContentId& id) {
  ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(object));
  if (info.content_id != id) {
    return Corruption(object.name() + ": holds " + info.content_id.Hex() + ", not " + id.Hex());
  }
  return container::CheckRecords(object, info);
}

Status CheckObjectFile(const std::string& path, const ContentId& id) {
  ZIPNN_ASSIGN_OR_RETURN(ReadFile file, ReadFile::Open(path));
  return CheckObject(file, id);
}

bool HoldsIntact(const ObjectStore& store, const ContentId& id) {
  return store.Has(id) && CheckObjectFile(store.PathOf(id), id).ok();
}

namespace {

// A writer's temporary file of an object (only the name a writer gives
// it: a file of someone else's that merely looks alike is never removed).
bool IsTemporary(const std::string& path) { return ObjectStore::IsTemporaryName(path.substr(path.rfind('/') + 1)); }

bool IsOld(const struct stat& st) { return st.st_mtime + kOldTemporary < ::time(nullptr); }

}  // namespace

Result<size_t> RemoveOldTemporaries(const ObjectStore& store) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<ObjectStore::Entry> entries, store.List());
  size_t removed = 0;
  for (const ObjectStore::Entry& e : entries) {
    struct stat st;
    if (e.kind != ObjectStore::Kind::kTemporary || ::stat(e.path.c_str(), &st) != 0 || !IsOld(st)) continue;
    if (::unlink(e.path.c_str()) == 0) ++removed;
  }
  return removed;
}

namespace {

// Makes the folder the object at `path` goes into, and removes the
// temporary files killed writers left there.
// An object found in place already (put there by another push, or by an
// attempt of this one whose fsync of the folder failed) counts as sent
// only once its name is durable too: its folder is fsynced again.
Status SyncFolderOf(const std::string& path) { return SyncFolder(path.substr(0, path.rfind('/'))); }

Status PrepareFolder(const std::string& path) {
  const std::string folder = path.substr(0, path.rfind('/'));
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(folder, /*durable=*/true));
  if (DIR* d = ::opendir(folder.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string file = folder + "/" + e->d_name;
      struct stat st;
      if (IsTemporary(file) && ::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && IsOld(st)) {
        ::unlink(file.c_str());
      }
    }
    ::closedir(d);
  }
  return OkStatus();
}

// Whether the object `info` describes may take `id`'s place in `there`:
// every version it needs is held intact, and none of their chains comes
// back to `id` or runs longer than kMaxChainDepth with it on top.
Status StandsOn(const Store& there, const ContentId& id, const container::ObjectInfo& info) {
  for (const ContentId& needed : container::NeedsOf(info.header)) {
    if (!HoldsIntact(there.objects, needed)) {
      return InvalidArgument("the base " + needed.Hex() + " of the object sent for " + id.Hex() +
                             " is not here intact");
    }
    auto below = Describe(there, needed);
    bool loops = false;
    const Status walked = VisitChain(there, needed, [&](const ChainLink& link) { loops = loops || link.id == id; });
    if (!walked.ok() || !below.ok() || loops || below->depth + 2 > kMaxChainDepth) {
      return InvalidArgument("the chain under the object sent for " + id.Hex() + " is broken or comes back to it");
    }
  }
  return OkStatus();
}

// Gives the received object at `temp` its name through `commit`, under
// the store's lock (shared: arrivals go on side by side, a retain's
// removal waits), once the store is seen to hold the base of a delta.
Status CommitOnBase(const ObjectStore& store, const ContentId& id, const std::string& temp,
                    const std::function<Status()>& commit) {
  ZIPNN_ASSIGN_OR_RETURN(StoreLock lock, store.Lock(StoreLock::Mode::kShared, [] {}));
  ZIPNN_ASSIGN_OR_RETURN(ReadFile object, ReadFile::Open(temp));
  ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(object));
  for (const ContentId& needed : container::NeedsOf(info.header)) {
    if (store.Has(needed)) continue;
    return NotFound("object " + id.Hex() + " is a delta of " + needed.Hex() + ", which " + store.root() +
                    " does not hold (a retain removed it meanwhile?): push again, and the base goes with it");
  }
  return commit();
}

}  // namespace

namespace {

// The 8 hex digits of a kept arrival's temporary name: of the hash of its
// size and its sender's tag.
std::string KeptDigits(uint64_t size, const std::string& tag) {
  const std::string named = std::to_string(size) + " " + tag;
  return HashBytes(named.data(), named.size()).Hex().substr(0, 8);
}

// Locks a kept arrival's file, waiting a little for a session that holds
// it: most often the sender's own try before, whose connection dropped a
// moment ago and whose server is still writing the last bytes that came.
// False when it stays held (another sender's session, sending the same
// object now).
bool LockSoon(int fd, int mode = LOCK_EX) {
  for (int i = 0; i < 100; ++i) {
    if (FsLock(fd, mode | LOCK_NB) == 0) return true;
    if (errno != EWOULDBLOCK) return false;
    ::usleep(50 * 1000);
  }
  return false;
}

}  // namespace

Result<std::unique_ptr<ResumedArrival>> ResumedArrival::Open(const ObjectStore& store, const ContentId& id,
                                                             uint64_t size, const std::string& tag) {
  std::unique_ptr<ResumedArrival> a(new ResumedArrival(store, id));
  const std::string path = store.PathOf(id);
  ZIPNN_RETURN_IF_ERROR(PrepareFolder(path));
  const std::string kept = path + ".tmp-" + KeptDigits(size, tag);
  a->fd_ = ::open(kept.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
  struct stat st;
  // Only a plain file of one link: bytes written into a link planted there
  // would land in a file outside the store, which would then be the object.
  if (a->fd_ >= 0 && LockSoon(a->fd_) && ::fstat(a->fd_, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1) {
    a->kept_ = kept;
    a->have_ = static_cast<uint64_t>(st.st_size);
    if (a->have_ > size) {  // not of this object
      if (::ftruncate(a->fd_, 0) != 0) return IoError(kept + ": cannot empty it: " + std::strerror(errno));
      a->have_ = 0;
    }
    return a;
  }
  if (a->fd_ >= 0) ::close(a->fd_);
  a->fd_ = -1;
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile fresh, AtomicFile::Create(path, /*overwrite=*/true));
  a->fresh_.emplace(std::move(fresh));
  return a;
}

ResumedArrival::~ResumedArrival() {
  if (fd_ >= 0) ::close(fd_);
}

Status ResumedArrival::Append(const void* data, size_t n) {
  if (fresh_) return fresh_->Append(data, n);
  return WriteAll(fd_, data, n, kept_);
}

Status ResumedArrival::Finish(const std::function<Status(const std::string& temp)>& check) {
  const std::string path = store_.PathOf(id_);
  if (HoldsIntact(store_, id_)) {
    if (!kept_.empty()) ::unlink(kept_.c_str());
    return SyncFolderOf(path);
  }
  if (fresh_) {
    ZIPNN_RETURN_IF_ERROR(check(fresh_->temp_path()));
    return CommitOnBase(store_, id_, fresh_->temp_path(), [&] { return fresh_->Commit(); });
  }
  if (FsSync(fd_) != 0) return IoError(kept_ + ": fsync failed: " + std::strerror(errno));
  const Status checked = check(kept_);
  if (!checked.ok()) {
    ::unlink(kept_.c_str());
    return checked;
  }
  return CommitOnBase(store_, id_, kept_, [&]() -> Status {
    if (FsRename(kept_.c_str(), path.c_str()) != 0) {
      return IoError(path + ": cannot give the object its name: " + std::strerror(errno));
    }
    return SyncFolderOf(path);
  });
}

namespace {

// Opens the temporary file `path` of an arrival in ranges: only a plain
// file of one link (bytes written into a link planted there would land
// in a file outside the store); made when `make`.
int OpenArrivalFile(const std::string& path, int flags, bool make, struct stat& st) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | flags | (make ? O_CREAT : 0), 0644);
  if (fd < 0) return -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1) return fd;
  ::close(fd);
  return -1;
}

}  // namespace

Result<std::unique_ptr<RangedArrival>> RangedArrival::Open(const ObjectStore& store, const ContentId& id, uint64_t size,
                                                           const std::string& tag, bool start) {
  std::unique_ptr<RangedArrival> a(new RangedArrival(store, id, size));
  const std::string path = store.PathOf(id);
  if (start) ZIPNN_RETURN_IF_ERROR(PrepareFolder(path));
  a->data_ = path + ".tmp-" + KeptDigits(size, tag + " in ranges");
  a->record_ = path + ".tmp-" + KeptDigits(size, tag + " ranges noted");
  struct stat st, rst;
  a->fd_ = OpenArrivalFile(a->data_, 0, start, st);
  a->record_fd_ = a->fd_ < 0 ? -1 : OpenArrivalFile(a->record_, O_APPEND, start, rst);
  if (a->record_fd_ < 0) {
    return start ? IoError(path + ": cannot keep an arrival in ranges beside it")
                 : InvalidArgument("no arrival in ranges of object " + id.Hex() +
                                   " of that size and copy: put-ranges first");
  }
  // Each session that writes a range holds the file shared; the one that
  // asks what is held waits a little for the sessions of the sender's try
  // before (cut short a moment ago) to note what came.
  (void)LockSoon(a->fd_, start ? LOCK_EX : LOCK_SH);
  if (static_cast<uint64_t>(st.st_size) == size) return a;
  if (!start) return InvalidArgument("the arrival in ranges of object " + id.Hex() + " is of another size");
  // Of another size, or new: nothing kept is of use.
  if (::ftruncate(a->record_fd_, 0) != 0 || ::ftruncate(a->fd_, 0) != 0 ||
      ::ftruncate(a->fd_, static_cast<off_t>(size)) != 0) {
    return IoError(a->data_ + ": cannot size it: " + std::strerror(errno));
  }
  return a;
}

RangedArrival::~RangedArrival() {
  if (fd_ >= 0) ::close(fd_);
  if (record_fd_ >= 0) ::close(record_fd_);
}

std::vector<Range> RangedArrival::Noted() const { return ReadNotedRanges(record_, size_); }

Status RangedArrival::WriteAt(uint64_t at, const void* data, size_t n) {
  if (at > size_ || n > size_ - at) return InvalidArgument("bytes past the end of object " + id_.Hex());
  return WriteAllAt(fd_, data, n, at, data_);
}

Status RangedArrival::Note(uint64_t from, uint64_t to) { return NoteRange(record_fd_, from, to, record_); }

Status RangedArrival::Finish(const std::function<Status(const std::string& temp)>& check) {
  const std::string path = store_.PathOf(id_);
  if (HoldsIntact(store_, id_)) {
    ::unlink(data_.c_str());
    ::unlink(record_.c_str());
    return SyncFolderOf(path);
  }
  const std::vector<Range> missing = Uncovered(Noted(), size_);
  if (!missing.empty()) {
    return InvalidArgument("object " + id_.Hex() + " is not all in: bytes from " +
                           std::to_string(missing.front().first) + " on were never sent");
  }
  if (FsSync(fd_) != 0) return IoError(data_ + ": fsync failed: " + std::strerror(errno));
  const Status checked = check(data_);
  if (!checked.ok()) {
    ::unlink(data_.c_str());
    ::unlink(record_.c_str());
    return checked;
  }
  return CommitOnBase(store_, id_, data_, [&]() -> Status {
    if (FsRename(data_.c_str(), path.c_str()) != 0) {
      return IoError(path + ": cannot give the object its name: " + std::strerror(errno));
    }
    ::unlink(record_.c_str());
    return SyncFolderOf(path);
  });
}

Result<bool> ReceiveLinked(const ObjectStore& store, const ContentId& id, const std::string& file,
                           const std::function<Status(const std::string& temp)>& check) {
  struct stat st;
  if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & S_IROTH) == 0) return false;
  const std::string path = store.PathOf(id);
  if (HoldsIntact(store, id)) {
    ZIPNN_RETURN_IF_ERROR(SyncFolderOf(path));
    return true;
  }
  ZIPNN_RETURN_IF_ERROR(PrepareFolder(path));
  ZIPNN_ASSIGN_OR_RETURN(std::optional<TempLink> link, TempLink::Create(file, path));
  if (!link) return false;
  ZIPNN_RETURN_IF_ERROR(check(link->temp_path()));
  ZIPNN_RETURN_IF_ERROR(CommitOnBase(store, id, link->temp_path(), [&] { return link->Commit(); }));
  return true;
}

Status ReceiveObject(const ObjectStore& store, const ContentId& id, const std::function<Status(AtomicFile&)>& write,
                     const std::function<Status(const std::string& temp)>& check) {
  const std::string path = store.PathOf(id);
  if (HoldsIntact(store, id)) return SyncFolderOf(path);
  ZIPNN_RETURN_IF_ERROR(PrepareFolder(path));
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(path, /*overwrite=*/true));
  ZIPNN_RETURN_IF_ERROR(write(out));
  ZIPNN_RETURN_IF_ERROR(check(out.temp_path()));
  return CommitOnBase(store, id, out.temp_path(), [&] { return out.Commit(); });
}

Result<uint64_t> DemoteObject(const ObjectStore& store, const ContentId& id,
                              const std::function<Status(AtomicFile&)>& write,
                              const std::function<Status(const std::string& temp)>& check) {
  ZIPNN_ASSIGN_OR_RETURN(StoreLock lock, store.Lock(StoreLock::Mode::kExclusive, [] {}));
  const Store there{store, "", "", "", config::Policy{}};
  // Only the header is read to see what is there: a delta stays (most
  // often the push just sent it, checked whole). A standalone object is
  // replaced, damaged or not, by a delta that passes every check below.
  if (!store.Has(id)) return uint64_t{0};
  auto now = ReadLink(there, id);
  if (!now.ok() || now->delta) return uint64_t{0};
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(store.PathOf(id), /*overwrite=*/true));
  ZIPNN_RETURN_IF_ERROR(write(out));
  ZIPNN_ASSIGN_OR_RETURN(ReadFile sent, ReadFile::Open(out.temp_path()));
  ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(sent));
  if (info.content_id != id || info.header.kind != container::ObjectKind::kDelta) {
    return InvalidArgument("what was sent is not a delta of " + id.Hex());
  }
  if (!StandsOn(there, id, info).ok()) return uint64_t{0};
  ZIPNN_RETURN_IF_ERROR(check(out.temp_path()));
  ZIPNN_RETURN_IF_ERROR(out.Commit());
  RemoveBaseNote(store, id);  // it explained the standalone object
  return now->object_size;
}

Status ReplaceObject(const ObjectStore& store, const ContentId& id, const std::function<Status(AtomicFile&)>& write,
                     const std::function<Status(const std::string& temp)>& check) {
  ZIPNN_ASSIGN_OR_RETURN(StoreLock lock, store.Lock(StoreLock::Mode::kExclusive, [] {}));
  const Store there{store, "", "", "", config::Policy{}};
  ZIPNN_RETURN_IF_ERROR(PrepareFolder(store.PathOf(id)));
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(store.PathOf(id), /*overwrite=*/true));
  ZIPNN_RETURN_IF_ERROR(write(out));
  ZIPNN_ASSIGN_OR_RETURN(ReadFile sent, ReadFile::Open(out.temp_path()));
  ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(sent));
  if (info.content_id != id) return InvalidArgument("what was sent is not an object of " + id.Hex());
  ZIPNN_RETURN_IF_ERROR(StandsOn(there, id, info));
  ZIPNN_RETURN_IF_ERROR(check(out.temp_path()));
  return out.Commit();
}

Result<std::optional<HeldObject>> StatObject(const ObjectStore& store, const ContentId& id) {
  if (!store.Has(id)) return std::optional<HeldObject>();
  const Store there{store, "", "", "", config::Policy{}};
  ZIPNN_ASSIGN_OR_RETURN(ChainLink link, ReadLink(there, id));
  HeldObject held;
  ZIPNN_ASSIGN_OR_RETURN(ReadFile file, store.Open(id));
  held.size = file.size();
  if (link.delta) held.base = link.base;
  held.references = link.references;
  return std::optional<HeldObject>(held);
}

Status RemoveObject(const ObjectStore& store, const ContentId& id) {
  ZIPNN_ASSIGN_OR_RETURN(StoreLock lock, store.Lock(StoreLock::Mode::kExclusive, [] {}));
  const std::string path = store.PathOf(id);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return IoError(path + ": cannot remove: " + std::strerror(errno));
  RemoveBaseNote(store, id);
  return OkStatus();
}

Result<Pruned> PruneObjects(const ObjectStore& store, const std::set<ContentId>& ids) {
  ZIPNN_ASSIGN_OR_RETURN(StoreLock lock, store.Lock(StoreLock::Mode::kExclusive, [] {}));
  const Store there{store, "", "", "", config::Policy{}};
  ZIPNN_ASSIGN_OR_RETURN(std::vector<ContentId> held, ListObjects(store));
  // What each object rests on (its base and references), from its header.
  std::map<ContentId, std::vector<ContentId>> needs;
  for (const ContentId& id : held) {
    Result<ChainLink> link = ReadLink(there, id);
    if (!link.ok()) {
      if (ids.count(id) != 0) {  // going anyway: what it rests on is no matter
        needs.emplace(id, std::vector<ContentId>{});
        continue;
      }
      return Annotate(link.status(), "nothing was removed from " + store.root() + ": object " + id.Hex() +
                                         " there could rest on what would go");
    }
    needs.emplace(id, link->needs());
  }
  // Everything the objects that stay rest on, down their chains, with the
  // first object that stays found to need it.
  std::map<ContentId, ContentId> kept;  // kept -> an object outside `ids` that rests on it
  std::set<ContentId> reached;
  for (const auto& [id, below] : needs) {
    if (ids.count(id) != 0) continue;
    std::vector<ContentId> todo = below;
    while (!todo.empty()) {
      const ContentId at = todo.back();
      todo.pop_back();
      if (!reached.insert(at).second) continue;
      if (ids.count(at) != 0) kept.emplace(at, id);
      if (auto next = needs.find(at); next != needs.end())
        todo.insert(todo.end(), next->second.begin(), next->second.end());
    }
  }
  Pruned pruned;
  for (const ContentId& id : ids) {
    if (auto k = kept.find(id); k != kept.end()) {
      pruned.kept.emplace_back(id, k->second);
      continue;
    }
    const std::string path = store.PathOf(id);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return IoError(path + ": cannot remove: " + std::strerror(errno));
    RemoveBaseNote(store, id);
    pruned.removed.push_back(id);
  }
  return pruned;
}

Result<std::vector<ContentId>> ListObjects(const ObjectStore& store) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<ObjectStore::Entry> listed, store.List());
  std::vector<ContentId> ids;
  for (const auto& e : listed) {
    if (e.kind == ObjectStore::Kind::kObject && e.id) ids.push_back(*e.id);
  }
  return ids;
}


}  // namespace zipnn::store
