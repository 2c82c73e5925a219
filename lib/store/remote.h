// Remote object stores: where `git zipnn push` sends objects and `fetch`
// (and smudge, on demand) gets them. A remote holds objects under the same
// names as a local store (<2 hex>/<2 hex>/<id>), so a shared folder can be
// another repository's own store.
//
// Push and fetch move whole objects, every base of a delta included, and
// skip what the other side has (one batched existence check). Transfers
// run in parallel, retry a failed object, and are atomic where the object
// lands: an object is written to a temporary name and checked before it
// takes its own (header, index and every chunk record against their
// checksums, and the content id it carries against the id it is filed
// under), so a broken or interrupted transfer leaves nothing behind under
// an object's name. A later push or fetch picks up where one stopped.
//
// No git here: which remote a git remote means is decided by the caller.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/store/checkpoints.h"

namespace zipnn::store {

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
  // Downloads the object for `id` into `out`; NotFound when the remote
  // does not hold it.
  virtual Status Get(const ContentId& id, ByteSink& out) = 0;
};

// A store in a folder of this machine's file system (a shared or network
// file system, or another repository's .git/zipnn/objects).
std::unique_ptr<RemoteStore> FolderRemote(std::string root);

// Checks an object file as a receiver does before it gives the file its
// name: the header, index and every chunk record against their checksums,
// and the content id the object carries against `id`.
Status CheckObject(const ByteSource& object, const ContentId& id);
// CheckObject of the file at `path` (a received object's temporary file).
Status CheckObjectFile(const std::string& path, const ContentId& id);

struct TransferOptions {
  int parallel = 4;  // objects in flight at once
  int attempts = 3;  // tries per object before giving up
  // Called after each object with the objects and bytes moved so far.
  std::function<void(size_t objects, uint64_t bytes)> progress;
};

struct TransferReport {
  size_t needed = 0;     // objects the ids need, bases included
  size_t moved = 0;      // objects sent or received
  size_t present = 0;    // already on the receiving side
  uint64_t bytes = 0;    // object bytes moved
};

// Sends every object `ids` need (each id's object and every base down its
// chain) that the remote lacks. A chain that is not whole in the local
// store fails, naming the missing object, before anything is sent.
Result<TransferReport> PushObjects(const Repository& repo, RemoteStore& remote, const std::vector<ContentId>& ids,
                                   const TransferOptions& options);

// Brings every object `ids` need that the local store lacks, following
// each delta's base as it arrives. An object the remote does not hold is
// NotFound, naming it and the remote.
Result<TransferReport> FetchObjects(const Repository& repo, RemoteStore& remote, const std::vector<ContentId>& ids,
                                    const TransferOptions& options);

}  // namespace zipnn::store
