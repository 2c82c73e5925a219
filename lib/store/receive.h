// How a store of this machine takes objects that come from elsewhere: a
// push into a folder (lib/remote's folder store) or to a store server
// (lib/remote/served.h, serve-store). Each object waits under a temporary
// name beside its place until it passes the caller's check, then takes
// its name atomically; so a broken or killed transfer leaves nothing
// under an object's name.
//
// The store's lock is taken here and nowhere above lib/store: an arrival
// takes it shared (arrivals go on side by side), a demotion, replacement,
// removal or prune takes it exclusive, so that a removal that looks at
// what rests on an object and the arrival of an object that rests on it
// never interleave.
//
// Thread-safe and safe across processes (the lock and the file system
// arbitrate).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/file.h"
#include "lib/base/io.h"
#include "lib/base/ranges.h"
#include "lib/base/status.h"
#include "lib/store/object_store.h"

namespace zipnn::store {

// Checks an object file as a receiver does before it gives the file its
// name: the header, index and every chunk record against their checksums,
// and the content id the object carries against `id`.
Status CheckObject(const ByteSource& object, const ContentId& id);
// CheckObject of the file at `path` (a received object's temporary file).
Status CheckObjectFile(const std::string& path, const ContentId& id);
// Whether `store` holds `id`'s object and it passes CheckObject.
bool HoldsIntact(const ObjectStore& store, const ContentId& id);

inline constexpr int64_t kOldTemporary = 24 * 3600;  // seconds
// Removes the temporary files (".tmp-" in the name) of `store` whose last
// change is more than kOldTemporary ago; how many it removed.
Result<size_t> RemoveOldTemporaries(const ObjectStore& store);

// How a receiver stores an object it is sent: unless `store` holds `id`
// intact already, the bytes `write` produces go to a temporary file beside
// the object's place, must pass `check`, and then take the name, in place
// of a damaged copy if there is one. Temporary files that killed writers
// left in that folder more than kOldTemporary ago are removed first.
// The name is taken under the store's lock (shared), and only while the
// store holds the base of a delta and the versions it references: a
// retain's removal (PruneObjects) either sees the new object and keeps
// them, or has removed one and the object is refused, naming it (the
// sender pushes again, base and all).
Status ReceiveObject(const ObjectStore& store, const ContentId& id, const std::function<Status(AtomicFile&)>& write,
                     const std::function<Status(const std::string& temp)>& check);
// An arrival that resumes (the store protocol's put-from, served.h): the
// bytes of an object for `id` of `size` bytes, as the sender's copy that
// `tag` names has them, are kept as they come in under a temporary name
// of their own beside the object's place (a writer's temporary name,
// whose 8 digits are those of `size` and `tag`), locked while one session
// writes them. A session cut short leaves them there, and the sender's
// next try sends only the rest; left alone, they go as any killed
// writer's temporary files do (kOldTemporary). What is kept is not
// trusted: the whole object must pass the check, as any arrival's. A
// session that holds them is waited for up to 5 s (the sender's try
// before, whose server is still taking what came); where another session
// writes the same object for longer, this one keeps nothing of its own
// (have() is 0, and its bytes go to a temporary file as ReceiveObject's
// do).
class ResumedArrival : public ByteSink {
 public:
  static Result<std::unique_ptr<ResumedArrival>> Open(const ObjectStore& store, const ContentId& id, uint64_t size,
                                                      const std::string& tag);
  ~ResumedArrival() override;
  // The bytes kept from the tries before: the sender sends the rest.
  uint64_t have() const { return have_; }
  Status Append(const void* data, size_t n) override;
  // Once every byte is in: unless the store holds `id` intact already,
  // `check`, then the name, as ReceiveObject. Bytes that fail the check
  // are removed, so that the next try sends them all again.
  Status Finish(const std::function<Status(const std::string& temp)>& check);

 private:
  ResumedArrival(const ObjectStore& store, const ContentId& id) : store_(store), id_(id) {}
  const ObjectStore& store_;
  const ContentId id_;
  std::string kept_;  // the kept file's path; empty when the bytes go to `fresh_`
  int fd_ = -1;
  uint64_t have_ = 0;
  std::optional<AtomicFile> fresh_;
};

// An arrival in ranges (the store protocol's put-ranges, put-range and
// put-end, served.h): the bytes of an object for `id` of `size` bytes, as
// the sender's copy that `tag` names has them, come in ranges on several
// sessions at once, each written where it lies into a temporary file
// beside the object's place, sized to the object, and noted (what came
// of it, when its session was cut short) in a second temporary file
// beside it. A try cut short leaves both, and the sender's next try sends
// only what is not noted; left alone, they go as any killed writer's
// temporary files do (kOldTemporary). What is kept is not trusted: the
// whole object must pass the check, as any arrival's. The sessions of
// one sender write ranges apart; two senders of the same copy of the same
// object write the same bytes.
class RangedArrival {
 public:
  // Opens the arrival; with `start`, makes its files (keeping what they
  // hold when they are of this size), else they must be there already.
  static Result<std::unique_ptr<RangedArrival>> Open(const ObjectStore& store, const ContentId& id, uint64_t size,
                                                     const std::string& tag, bool start);
  ~RangedArrival();
  RangedArrival(const RangedArrival&) = delete;
  RangedArrival& operator=(const RangedArrival&) = delete;
  // The ranges [from, to) noted so far, within the object.
  std::vector<Range> Noted() const;
  // Bytes of the object at `at`.
  Status WriteAt(uint64_t at, const void* data, size_t n);
  // Notes [from, to) as in.
  Status Note(uint64_t from, uint64_t to);
  // Once every range is noted: unless the store holds `id` intact
  // already, `check`, then the name, as ReceiveObject. Bytes that fail the
  // check are removed, so that the next try sends them all again.
  Status Finish(const std::function<Status(const std::string& temp)>& check);

 private:
  RangedArrival(const ObjectStore& store, const ContentId& id, uint64_t size) : store_(store), id_(id), size_(size) {}
  const ObjectStore& store_;
  const ContentId id_;
  const uint64_t size_;
  std::string data_, record_;  // the two temporary files
  int fd_ = -1, record_fd_ = -1;
};

// The object `file` (a file of this machine) is taken as the object for
// `id` of `store` by a hard link, when it can be: false when it cannot
// (the caller copies it). The link waits under a temporary name until it
// passes `check`, and takes the name as ReceiveObject's does.
Result<bool> ReceiveLinked(const ObjectStore& store, const ContentId& id, const std::string& file,
                           const std::function<Status(const std::string& temp)>& check);
// How a receiver re-stores a standalone object as a delta: under the
// store's lock (exclusive: two demotions at once could each make the
// other's base a delta of itself, and a gc must not run meanwhile), if
// `store` holds a standalone object for `id` (as its header says: a copy
// damaged further on is replaced too, and a delta is left unread), the
// bytes `write` produces go to a temporary file beside it; they must be a
// delta for `id` whose base (and references) the store holds intact and
// whose chains do not come back to `id`, and must pass `check`; then they take the
// name. Returns the size of the object replaced, or 0 with nothing
// changed (then `write` may not have been called).
Result<uint64_t> DemoteObject(const ObjectStore& store, const ContentId& id,
                              const std::function<Status(AtomicFile&)>& write,
                              const std::function<Status(const std::string& temp)>& check);
// How a receiver replaces an object (retention): under the store's lock
// (exclusive, as DemoteObject), the bytes `write` produces go to a
// temporary file beside `id`'s place; they must be an object for `id`, a
// base or a delta whose base (and references) the store holds intact and
// whose chains do not come back to `id`, and pass `check`; then they take the
// name, whatever was there.
Status ReplaceObject(const ObjectStore& store, const ContentId& id, const std::function<Status(AtomicFile&)>& write,
                     const std::function<Status(const std::string& temp)>& check);

// How the store holds `id`'s object, from its header alone.
struct HeldObject {
  uint64_t size = 0;
  std::optional<ContentId> base;      // for a delta
  std::vector<ContentId> references;  // for a delta of format 8: versions it takes tensors from besides its base
  // Its base and references: what it rests on.
  std::vector<ContentId> needs() const {
    std::vector<ContentId> all;
    if (base) all.push_back(*base);
    all.insert(all.end(), references.begin(), references.end());
    return all;
  }
};
// nullopt when the store holds no object for `id`.
Result<std::optional<HeldObject>> StatObject(const ObjectStore& store, const ContentId& id);
// Every object the store holds, by id.
Result<std::vector<ContentId>> ListObjects(const ObjectStore& store);
// Removes `id`'s object and its base note under the store's lock
// (exclusive); nothing when it holds none.
Status RemoveObject(const ObjectStore& store, const ContentId& id);

// What PruneObjects removed, and what it kept and why.
struct Pruned {
  std::vector<ContentId> removed;
  std::vector<std::pair<ContentId, ContentId>> kept;  // (kept, an object that rests on it)
};
// Removes each of `ids` that no object the store keeps rests on: under the
// store's lock (exclusive), every object's header is read, and each of
// `ids` that the chain of an object outside `ids` runs through stays.
// An object whose header cannot be read could rest on any of them:
// nothing is removed, and the error names it.
Result<Pruned> PruneObjects(const ObjectStore& store, const std::set<ContentId>& ids);

}  // namespace zipnn::store
