// Remote object stores: where `git zipnn push` sends objects and `fetch`
// (and smudge, on demand) gets them. A remote holds objects under the same
// names as a local store (<2 hex>/<2 hex>/<id>), so a shared folder can be
// another repository's own store.
//
// Push and fetch move whole objects, every base of a delta included, and
// skip what the other side holds intact (one batched existence check).
// Transfers run in parallel, retry a failed object, and are atomic where
// the object lands: an object is written to a temporary name and checked
// before it takes its own, so a broken or interrupted transfer leaves
// nothing behind under an object's name. A later push or fetch picks up
// where one stopped.
//
// A remote is not trusted (docs/reliability.md, "Remotes that lie"): a
// fetched object takes its name only once it has been decoded, against
// its base, to exactly the content its id names. Checksums alone would
// not do: whoever forges an object can recompute them. So bases are
// fetched before the deltas on them are accepted, an object is refused as
// soon as it grows past what its checkpoint can take, and a local object
// that is present but damaged is fetched again and replaced.
//
// No git here: which remote a git remote means is select.h's to decide.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/file.h"
#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/container/format.h"
#include "lib/store/restore.h"
#include "lib/store/object_store.h"

namespace zipnn::remote {

// An object a remote holds, opened where it lies to be read by parts
// (RemoteStore::OpenRanges): its bytes, read as they are asked for, and
// its header and chunk index, read and checked.
struct RangedObject {
  std::unique_ptr<ByteSource> bytes;
  container::ObjectInfo info;
};

// One remote store. Thread-safe: transfers call it from several threads.
class RemoteStore {
 public:
  virtual ~RemoteStore() = default;
  // Where it is, for messages ("/mnt/team/zipnn", "ssh://host/path").
  virtual const std::string& where() const = 0;
  // For each id, whether the remote holds its object.
  virtual Result<std::vector<bool>> Has(const std::vector<ContentId>& ids) = 0;
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
  // Puts `delta`, a delta of a version the remote holds, in place of the
  // standalone object the remote holds for `id`, atomically: what a push
  // does for a version the local store re-stored as a delta of the one it
  // sends (lib/store/rebased.h), so that the remote's history stays as
  // small as the local one. Returns the size of the object it replaced,
  // or 0, with nothing changed, when the remote holds no standalone object
  // for `id` (a delta there stays), lacks the base, or when the base's
  // chain there comes back to `id`. A remote that cannot replace an
  // object returns 0 always: it keeps the whole one, which costs bytes,
  // never data.
  virtual Result<uint64_t> Demote(const ContentId& id, const ReadFile& delta) {
    (void)id;
    (void)delta;
    return uint64_t{0};
  }
  // The object the remote holds for `id`, to be read by parts where it
  // lies rather than fetched (a tensor of a version the local store
  // lacks: OpenRemoteVersion in transfer.h). Only for a remote that
  // serves parts of objects and can vouch for the object's header and
  // chunk index, whose checksums then vouch for every chunk record: that
  // they are those of the object that was pushed, which the pusher proved
  // to decode to `id` (a Git LFS server, through git's map of it, lfs.h).
  // Unsupported where it cannot (the default), or where what the server
  // sends is not what was vouched for: the caller fetches the objects
  // whole, and proves them. `limit` as for Get.
  virtual Result<RangedObject> OpenRanges(const ContentId& id, uint64_t limit) {
    (void)limit;
    return Unsupported(where() + " cannot serve parts of object " + id.Hex());
  }
  // After a push has sent its objects: whatever else others need to find
  // them (a Git LFS server's map, lfs.h). Nothing for most stores.
  virtual Status Publish() { return OkStatus(); }
  // Retention on the remote (lib/store/retention.h, docs/retention.md):
  // whether it can remove objects and keep the records of versions that
  // were thinned or dropped. A Git LFS server cannot (its API has no
  // delete): the default.
  virtual bool CanRetain() const { return false; }
  // How the remote holds `id`'s object, from its header alone: nullopt
  // when it holds none.
  struct Held {
    uint64_t size = 0;
    std::optional<ContentId> base;  // for a delta
  };
  virtual Result<std::optional<Held>> Stat(const ContentId& id) {
    (void)id;
    return Unsupported(where() + " cannot say how it holds objects");
  }
  // Every object the remote holds, by id (retention looks for deltas of
  // what it would remove, a teammate's versions too).
  virtual Result<std::vector<ContentId>> List() { return Unsupported(where() + " cannot list its objects"); }
  // Puts `object` (a file of a local store, which proved it) in place of
  // whatever the remote holds for `id`, atomically: a base, or a delta
  // whose base the remote holds intact and whose base's chain does not
  // come back to `id`; the receiver checks it as a Put.
  virtual Status Replace(const ContentId& id, const ReadFile& object) {
    (void)object;
    return Unsupported(where() + " cannot replace object " + id.Hex());
  }
  // Removes `id`'s object (nothing when it holds none). Only retention
  // calls it, once no chain of what stays runs through it, and only on a
  // remote without a lock (LocksRemoval).
  virtual Status Remove(const ContentId& id) { return Unsupported(where() + " cannot remove object " + id.Hex()); }
  // Whether the remote removes under a lock that every object's arrival
  // respects (RemoveUnneeded): a folder and a store server do; S3 has no
  // such lock.
  virtual bool LocksRemoval() const { return false; }
  // Removes each of `ids` that no object the remote keeps rests on (a
  // delta whose chain runs through it), and says why each other one
  // stays: the look and the removal at once, under the remote's lock,
  // which every arriving object takes too (ReceiveObject), so that what
  // was pushed since the caller looked (a teammate's fine-tune stored as
  // a delta of one of them) keeps its base, and what arrives after needs
  // its base there.
  struct Pruned {
    std::vector<ContentId> removed;
    std::vector<std::pair<ContentId, ContentId>> kept;  // (kept, an object that rests on it)
  };
  virtual Result<Pruned> RemoveUnneeded(const std::set<ContentId>& ids) {
    (void)ids;
    return Unsupported(where() + " cannot remove objects under a lock");
  }
  // The record of a thinned or dropped version (its text, RecordText),
  // stored beside where its object was; GetRecord's nullopt: none.
  virtual Status PutRecord(const ContentId& id, const std::string& text) {
    (void)text;
    return Unsupported(where() + " cannot keep the retention record of " + id.Hex());
  }
  virtual Result<std::optional<std::string>> GetRecord(const ContentId& id) {
    (void)id;
    return std::optional<std::string>();
  }

  // The base note of `id`'s object (store/base_note.h: why it is
  // standalone), kept beside it (by a Git LFS server's store, in git's
  // object map). Only a courtesy to `git zipnn log`: a remote that cannot
  // keep notes (a store server of an older git-zipnn) says Unsupported,
  // and GetBaseNote's nullopt is "none". The receiver keeps a note only when it explains the object it
  // holds (store::KeepBaseNote).
  virtual Status PutBaseNote(const ContentId& id, const std::string& text) {
    (void)text;
    return Unsupported(where() + " cannot keep the base note of " + id.Hex());
  }
  virtual Result<std::optional<std::string>> GetBaseNote(const ContentId& id) {
    (void)id;
    return std::optional<std::string>();
  }

  // Removes the temporary files that killed uploads left more than
  // kOldTemporary ago; how many. Only a folder has any to remove here: a
  // store server removes them as it receives objects, and S3 keeps no
  // partial object.
  virtual Result<size_t> RemoveOldTemporaries() { return size_t{0}; }
};

// The most bytes the object of a checkpoint of `raw_size` bytes can take:
// every byte stored raw plus the container's tables and records at their
// largest (docs/format.md: at most 86 bytes a region and a chunk, and a
// region of a checkpoint holds more than 43 bytes of it), and 1 MiB more.
uint64_t ObjectSizeLimit(uint64_t raw_size);
// The limit when nothing says how big the checkpoint is (64 GiB).
inline constexpr uint64_t kUnknownObjectLimit = uint64_t{64} << 30;

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

// Checks an object file as a receiver does before it gives the file its
// name: the header, index and every chunk record against their checksums,
// and the content id the object carries against `id`.
Status CheckObject(const ByteSource& object, const ContentId& id);
// CheckObject of the file at `path` (a received object's temporary file).
Status CheckObjectFile(const std::string& path, const ContentId& id);

// How a receiver stores an object it is sent: unless `store` holds `id`
// intact already, the bytes `write` produces go to a temporary file beside
// the object's place, must pass `check`, and then take the name, in place
// of a damaged copy if there is one. Temporary files that killed writers
// left in that folder more than kOldTemporary ago are removed first.
// The name is taken under the store's lock (shared), and only while the
// store holds the base of a delta: a retain's removal (PruneObjects)
// either sees the new object and keeps its base, or has removed the base
// and the object is refused, naming it (the sender pushes again, base
// and all).
Status ReceiveObject(const store::ObjectStore& store, const ContentId& id,
                     const std::function<Status(AtomicFile&)>& write,
                     const std::function<Status(const std::string& temp)>& check);
inline constexpr int64_t kOldTemporary = 24 * 3600;  // seconds
// How a receiver carries out RemoteStore::Demote: under the store's lock
// (exclusive: two demotions at once could each make the other's base a
// delta of itself, and a gc must not run meanwhile), if `store` holds a
// standalone object for `id` (as its header says: a copy damaged further
// on is replaced too, and a delta is left unread), the bytes `write` produces go to a
// temporary file beside it; they must be a delta for `id` whose base the
// store holds intact and whose base's chain does not come back to `id`,
// and must pass `check`; then they take the name. Returns the size of the
// object replaced, or 0 with nothing changed (then `write` may not have
// been called).
Result<uint64_t> DemoteObject(const store::ObjectStore& store, const ContentId& id,
                              const std::function<Status(AtomicFile&)>& write,
                              const std::function<Status(const std::string& temp)>& check);
// How a receiver carries out RemoteStore::Replace: under the store's lock
// (exclusive, as DemoteObject), the bytes `write` produces go to a
// temporary file beside `id`'s place; they must be an object for `id`, a
// base or a delta whose base the store holds intact and whose base's
// chain does not come back to `id`, and pass `check`; then they take the
// name, whatever was there.
Status ReplaceObject(const store::ObjectStore& store, const ContentId& id,
                     const std::function<Status(AtomicFile&)>& write,
                     const std::function<Status(const std::string& temp)>& check);
// How a receiver keeps a retention record: `text` must parse as the
// record of `id` (store::ParseRecord) before it is written, atomically.
Status ReceiveRecord(const store::ObjectStore& store, const ContentId& id, const std::string& text);
// The rest of a store's side of retention: how it holds `id` (Stat), its
// object removed under the store's lock (Remove), a record's text
// (GetRecord).
Result<std::optional<RemoteStore::Held>> StatObject(const store::ObjectStore& store, const ContentId& id);
Status RemoveObject(const store::ObjectStore& store, const ContentId& id);
// RemoteStore::RemoveUnneeded for a store of this machine: under the
// store's lock (exclusive), every object's header is read, and each of
// `ids` that the chain of an object outside `ids` runs through stays.
// An object whose header cannot be read could rest on any of them:
// nothing is removed, and the error names it.
Result<RemoteStore::Pruned> PruneObjects(const store::ObjectStore& store, const std::set<ContentId>& ids);
Result<std::vector<ContentId>> ListObjects(const store::ObjectStore& store);
Result<std::optional<std::string>> RecordText(const store::ObjectStore& store, const ContentId& id);
// Whether `store` holds `id`'s object and it passes CheckObject.
bool HoldsIntact(const store::ObjectStore& store, const ContentId& id);
// Removes the temporary files (".tmp-" in the name) of `store` whose last
// change is more than kOldTemporary ago; how many it removed.
Result<size_t> RemoveOldTemporaries(const store::ObjectStore& store);

// The proof a receiver asks for before an object takes its name: decodes
// `object` (not in the store yet, meant for `id`) into `out` and checks
// the result against `id`, every chunk checksum on the way. A delta reads
// its base from `base` (that checkpoint's bytes, already verified) or,
// when `base` is null, by decoding the base's chain from `repo`'s store,
// down to the first version `find_copy` has a copy of.
// Corruption when it holds other content than `id` names.
Status DecodeReceived(const store::Store& repo, const ByteSource& object, const ContentId& id, const ByteSource* base,
                      ByteSink& out, const store::FindCopy& find_copy = nullptr);

struct TransferOptions {
  int parallel = 4;  // objects in flight at once
  int attempts = 3;  // tries per object before giving up
  // Called after each object with the objects moved so far, of those
  // known to be moved (a fetch learns of a delta's base when the delta
  // is in), and the bytes moved.
  std::function<void(size_t objects, size_t total, uint64_t bytes)> progress;
  // Fetch: the size of the checkpoint each id names, where the caller
  // knows it (from its pointer). It bounds the object's size
  // (ObjectSizeLimit) and must match the object's header.
  std::map<ContentId, uint64_t> raw_sizes;
  // Fetch: verified copies of versions (store::FindCopy) that a stored
  // base's chain may start from instead of being decoded whole, such as
  // the files a checkout has just written.
  store::FindCopy find_copy;
  // Fetch of one id: when that id's object arrives, its proof decodes it
  // into this sink (where a checkout waits for the checkpoint) rather than
  // nowhere, and TransferReport::delivered says so. Bytes reach the sink
  // before the proof ends: an object refused at its end fails the fetch
  // after some were written, as a restore that fails its check does.
  ByteSink* deliver = nullptr;
};

struct TransferReport {
  size_t needed = 0;       // objects the ids need, bases included
  size_t moved = 0;        // objects sent or received
  size_t present = 0;      // already on the receiving side
  uint64_t bytes = 0;      // object bytes moved
  bool delivered = false;  // TransferOptions::deliver holds the checkpoint
  // Push: standalone objects on the remote re-stored as the deltas the
  // local store holds them as (RemoteStore::Demote), and the bytes saved.
  size_t demoted = 0;
  uint64_t demoted_saved = 0;
  // Why the re-storing stopped, if it did (a server too old to do it, a
  // refused delta): the push itself succeeded, the remote keeps those
  // versions whole.
  std::string demote_error;
};

// Sends every object `ids` need (each id's object and every base down its
// chain) that the remote lacks, one chain level after the other, so that a
// receiver that decodes what it is given has every base first. A chain
// that is not whole in the local store fails, naming the missing object,
// before anything is sent. Then each version the local store re-stored as
// a delta of one of those objects (lib/store/rebased.h) is re-stored so
// on the remote where it is whole there (RemoteStore::Demote); the first
// failure to do so ends that step, in TransferReport::demote_error.
Result<TransferReport> PushObjects(const store::Store& repo, RemoteStore& remote, const std::vector<ContentId>& ids,
                                   const TransferOptions& options);

// Brings every object `ids` need that the local store lacks (or holds
// damaged: it is replaced), following each delta's base as it arrives.
// Received objects wait in temp_dir until their bases are in; then each
// is decoded (DecodeReceived) from the bases up and takes its name. An
// object the remote does not hold is NotFound, naming it and the remote;
// one that does not decode to its id is Corruption, and neither it nor
// anything above it is kept.
Result<TransferReport> FetchObjects(const store::Store& repo, RemoteStore& remote, const std::vector<ContentId>& ids,
                                    const TransferOptions& options);

}  // namespace zipnn::remote
