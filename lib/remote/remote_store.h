// Remote object stores: where `git zipnn push` sends objects and `fetch`
// (and smudge, on demand) gets them. A remote holds objects under the same
// names as a local store (<2 hex>/<2 hex>/<id>), so a shared folder can be
// another repository's own store.
//
// A remote is not trusted (docs/reliability.md, "Remotes that lie"):
// what it sends is proven by the push and fetch engine (sync.h) before
// it takes a name.
//
// A remote store is a small core every kind does (RemoteStore: where,
// Has, Put, Get, Publish) and optional capabilities a kind declares
// (Capabilities: side files, retention's stat/list/replace/remove,
// removal under a lock, demotion, ranged reads, old temporaries); a
// caller asks for a capability and does without where it is null. The
// push and fetch engine is sync.h; what a receiving store of this machine
// does with what it is sent, under its own lock, is lib/store/receive.h.
//
// No git here: which remote a git remote means is select.h's to decide.
// Thread-safe: an adapter is called from several transfer threads.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/file.h"
#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/container/format.h"
#include "lib/remote/partial.h"
#include "lib/store/object_store.h"
#include "lib/store/receive.h"

namespace zipnn::remote {

// An object a remote holds, opened where it lies to be read by parts
// (RangedReads::OpenRanges): its bytes, read as they are asked for, and
// its header and chunk index, read and checked.
struct RangedObject {
  std::unique_ptr<ByteSource> bytes;
  container::ObjectInfo info;
};

// Side files: small texts kept beside an object, one of each kind, under
// the object's name plus the kind's suffix on a folder, a store server
// and S3 (a Git LFS server keeps base notes in git's object map, lfs.h).
// One row of kSideKinds each (remote_store.cc); a kind added later has no
// request of its own in the store protocol and goes by put-side/get-side.
enum class SideKind {
  kBaseNote,  // why the object is standalone (lib/store/base_note.h); only a courtesy to `git zipnn log`
  kRecord,    // the retention record of a version thinned or dropped (lib/store/retention.h)
};
struct SideKindInfo {
  SideKind kind;
  const char* name;        // in the store protocol's put-side/get-side: "note", "record"
  const char* what;        // in messages: "base note"
  const char* short_what;  // in shorter ones: "base note", "record"
  const char* suffix;      // beside the object's name: ".base"
  uint64_t max_bytes;      // the most one may hold
  // The store protocol's own requests for it, from before put-side and
  // get-side, which a client keeps sending so that the servers of those
  // releases understand it.
  const char* put_verb;
  const char* get_verb;
  // How a store of this machine keeps it (checking the text first: a
  // note only when it explains the object held, a record only when it
  // parses as `id`'s) and reads it back.
  Status (*keep)(const store::ObjectStore& store, const ContentId& id, const std::string& text);
  Result<std::optional<std::string>> (*read)(const store::ObjectStore& store, const ContentId& id);
};
const SideKindInfo& Side(SideKind kind);
// The row whose name is `name`; null when none is.
const SideKindInfo* SideNamed(const std::string& name);

// Capabilities a kind of remote may have beyond the core. Each adapter
// implements those it has and names them in RemoteStore::capabilities().

// Side files (SideKind) kept beside objects. PutSide may say Unsupported
// for a kind the remote cannot keep; GetSide's nullopt is "none".
class SideFiles {
 public:
  virtual ~SideFiles() = default;
  virtual Status PutSide(SideKind kind, const ContentId& id, const std::string& text) = 0;
  virtual Result<std::optional<std::string>> GetSide(SideKind kind, const ContentId& id) = 0;
};

// What retention on the remote needs (lib/store/retention.h,
// docs/retention.md): seeing how it holds objects, and replacing and
// removing them. A Git LFS server has none of it (its API has no delete).
using Held = store::HeldObject;
class Retention {
 public:
  virtual ~Retention() = default;
  // How the remote holds `id`'s object, from its header alone: nullopt
  // when it holds none.
  virtual Result<std::optional<Held>> Stat(const ContentId& id) = 0;
  // Every object the remote holds, by id (retention looks for deltas of
  // what it would remove, a teammate's versions too).
  virtual Result<std::vector<ContentId>> List() = 0;
  // Puts `object` (a file of a local store, which proved it) in place of
  // whatever the remote holds for `id`, atomically: a base, or a delta
  // whose base the remote holds intact and whose base's chain does not
  // come back to `id`; the receiver checks it as a Put.
  virtual Status Replace(const ContentId& id, const ReadFile& object) = 0;
  // Removes `id`'s object (nothing when it holds none). Only retention
  // calls it, once no chain of what stays runs through it, and only on a
  // remote without LockedRemoval.
  virtual Status Remove(const ContentId& id) = 0;
};

// Removal under a lock that every object's arrival respects
// (store::ReceiveObject): a folder and a store server have it; S3 has no
// such lock.
using Pruned = store::Pruned;
class LockedRemoval {
 public:
  virtual ~LockedRemoval() = default;
  // Removes each of `ids` that no object the remote keeps rests on (a
  // delta whose chain runs through it), and says why each other one
  // stays: the look and the removal at once, under the remote's lock, so
  // that what was pushed since the caller looked (a teammate's fine-tune
  // stored as a delta of one of them) keeps its base, and what arrives
  // after needs its base there.
  virtual Result<Pruned> RemoveUnneeded(const std::set<ContentId>& ids) = 0;
};

// Re-storing a whole object as a delta in place.
class Demotion {
 public:
  virtual ~Demotion() = default;
  // Puts `delta`, a delta of a version the remote holds, in place of the
  // standalone object the remote holds for `id`, atomically: what a push
  // does for a version the local store re-stored as a delta of the one it
  // sends (lib/store/rebased.h), so that the remote's history stays as
  // small as the local one. Returns the size of the object it replaced,
  // or 0, with nothing changed, when the remote holds no standalone object
  // for `id` (a delta there stays), lacks the base, or when the base's
  // chain there comes back to `id`. A remote without the capability keeps
  // the whole one, which costs bytes, never data.
  virtual Result<uint64_t> Demote(const ContentId& id, const ReadFile& delta) = 0;
};

// Reading parts of an object where it lies.
class RangedReads {
 public:
  virtual ~RangedReads() = default;
  // The object the remote holds for `id`, to be read by parts where it
  // lies rather than fetched (a tensor of a version the local store
  // lacks: OpenRemoteVersion in transfer.h). Only for a remote that
  // serves parts of objects and can vouch for the object's header and
  // chunk index, whose checksums then vouch for every chunk record: that
  // they are those of the object that was pushed, which the pusher proved
  // to decode to `id` (a Git LFS server, through git's map of it, lfs.h).
  // Unsupported where what the server sends is not what was vouched for:
  // the caller fetches the objects whole, and proves them. `limit` as for
  // RemoteStore::Get.
  virtual Result<RangedObject> OpenRanges(const ContentId& id, uint64_t limit) = 0;
};

// Downloads kept where they land: the file a download writes (resuming
// what an earlier try kept of the same copy) is the one the object takes
// its name from, so that a fetch stopped at any point, even after an
// object came whole and before it took its name, gets again only what is
// missing, and no object is written twice on the way.
class KeptGets {
 public:
  virtual ~KeptGets() = default;
  // Downloads `id`'s object into a kept file of its own, locked while the
  // result lives, every byte also given to `check` (whose first error ends
  // it, as Get's sink's does); it holds the whole object when this
  // returns. As RemoteStore::Get otherwise; Unsupported when no file can
  // be kept now (the caller uses Get).
  virtual Result<std::unique_ptr<Partial>> GetKept(const ContentId& id, uint64_t limit, ByteSink& check) = 0;
};

// Temporary files left by killed uploads. Only a folder has any to remove
// from here: a store server removes them as it receives objects, and S3
// keeps no partial object.
class OldTemporaries {
 public:
  virtual ~OldTemporaries() = default;
  // Removes those left more than store::kOldTemporary ago; how many.
  virtual Result<size_t> RemoveOldTemporaries() = 0;
};

// Uploads that a remote records apart from sending them: a kind whose
// server neither decodes what it receives nor shows it to readers until
// it is recorded here (a Git LFS host, whose objects are known through
// git's map of it, lfs.h). A push may then send every level of its chains
// at once and record them lowest level first once they are there, so
// that what is recorded here always stands on a recorded chain, as it
// does when each level goes up after the one below it.
class UnrecordedPuts {
 public:
  virtual ~UnrecordedPuts() = default;
  // RemoteStore::Put without the record: the object goes up, and the step
  // returned records it (what Put does next). An object sent but never
  // recorded is sent again by the next push, which the server then takes
  // without its bytes if it holds them.
  virtual Result<std::function<Status()>> PutUnrecorded(const ContentId& id, const ByteSource& object) = 0;
  // Runs `steps` (records PutUnrecorded returned, and side files put
  // beside them), keeping what they record until it ends and writing it
  // then at once, as far as it went when a step fails: a Git LFS host's
  // map takes a push's records in one commit, not one each.
  virtual Status RecordTogether(const std::function<Status()>& steps) { return steps(); }
};

// The capabilities a remote has: each null where it has not.
struct Capabilities {
  SideFiles* side_files = nullptr;
  Retention* retention = nullptr;  // retention can apply there
  LockedRemoval* locked_removal = nullptr;
  Demotion* demotion = nullptr;
  RangedReads* ranged_reads = nullptr;
  OldTemporaries* old_temporaries = nullptr;
  KeptGets* kept_gets = nullptr;
  UnrecordedPuts* unrecorded_puts = nullptr;
};

// One remote store: what every kind does. Thread-safe: transfers call it
// from several threads.
class RemoteStore {
 public:
  virtual ~RemoteStore() = default;
  // Where it is, for messages ("/mnt/team/zipnn", "ssh://host/path").
  virtual const std::string& where() const = 0;
  // For each id, whether the remote holds its object.
  virtual Result<std::vector<bool>> Has(const std::vector<ContentId>& ids) = 0;
  // Has, as a push asks it: whether the object need not be sent. A kind
  // that learns what the remote holds from a record kept here (a Git LFS
  // server's map in git) answers from the record as it is, without a
  // round trip to refresh it; an object it does not know of is then sent,
  // and the server, which knows objects by their bytes, takes none it
  // holds already.
  virtual Result<std::vector<bool>> HeldAsKnown(const std::vector<ContentId>& ids) { return Has(ids); }
  // Uploads the object file `object` as the object for `id`.
  virtual Status Put(const ContentId& id, const ByteSource& object) = 0;
  // The same for an object that is a file of this machine (a local
  // store's), which a store may take without copying it.
  virtual Status PutFile(const ContentId& id, const ReadFile& object) { return Put(id, object); }
  // Downloads the object for `id` into `out`; NotFound when the remote
  // does not hold it. An object of more than `limit` bytes is refused
  // (Corruption) before or as soon as it passes the limit, and the first
  // error of `out` ends the download.
  virtual Status Get(const ContentId& id, uint64_t limit, ByteSink& out) = 0;
  // After a push has sent its objects: whatever else others need to find
  // them (a Git LFS server's map, lfs.h). Nothing for most stores.
  virtual Status Publish() { return OkStatus(); }
  // What else it can do.
  virtual Capabilities capabilities() { return {}; }

  // Bytes of the objects put and got since the last CountAfresh that were
  // there before the first try of them, and did not move: parts or ranges
  // the server held from an earlier, stopped transfer, the start of a
  // download one kept here. A transfer (sync.h) counts afresh as it
  // starts, so one transfer at a time has its figure.
  uint64_t carried() const {
    std::lock_guard<std::mutex> lock(carried_mu_);
    uint64_t sum = 0;
    for (const auto& held : carried_) sum += held.second;
    return sum;
  }
  void CountAfresh() {
    std::lock_guard<std::mutex> lock(carried_mu_);
    carried_.clear();
  }

 protected:
  // A put or a get of `what` (an object's id, or an LFS object's SHA-256)
  // found `bytes` of it there. Only the first look counts: what a later
  // try of the same transfer finds there, this transfer sent.
  void Carry(const std::string& what, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(carried_mu_);
    carried_.emplace(what, bytes);
  }

 private:
  mutable std::mutex carried_mu_;
  std::map<std::string, uint64_t> carried_;
};

// A side file of `id` on `remote`: PutSide is Unsupported, and GetSide
// nullopt, on a remote without side files.
Status PutSide(RemoteStore& remote, SideKind kind, const ContentId& id, const std::string& text);
Result<std::optional<std::string>> GetSide(RemoteStore& remote, SideKind kind, const ContentId& id);

// The most bytes the object of a checkpoint of `raw_size` bytes can take:
// every byte stored raw plus the container's tables and records at their
// largest (docs/format.md: at most 86 bytes a region and a chunk, and a
// region of a checkpoint holds more than 43 bytes of it), and 1 MiB more.
uint64_t ObjectSizeLimit(uint64_t raw_size);
// The limit when nothing says how big the checkpoint is (64 GiB).
inline constexpr uint64_t kUnknownObjectLimit = uint64_t{64} << 30;
// What a download past its limit fails with (Corruption): an object of
// `id` of `size` bytes, more than `limit`.
Status ObjectTooBig(const ContentId& id, uint64_t size, uint64_t limit);

// A store in a folder of this machine's file system (a shared or network
// file system, or another repository's .git/zipnn/objects). With `links`,
// an object pushed from a store on the same file system is hard-linked
// into it, as git links objects on a local clone, rather than copied:
// when the object file may be read by everyone (so the link gives no one
// less access than a copy would). A linked object passes the same check
// on arrival as a copied one before it takes its name. Sharing the file
// means one damaged copy is damaged in both stores; without `links`
// every object is copied.
std::unique_ptr<RemoteStore> FolderRemote(std::string root, bool links = true);

// What a receiving store of this machine checks and does (folder and
// store server alike) is lib/store/receive.h's.
using store::CheckObject;
using store::CheckObjectFile;
using store::HoldsIntact;
using store::kOldTemporary;
using store::RemoveOldTemporaries;

}  // namespace zipnn::remote
