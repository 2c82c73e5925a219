// The push and fetch engine: moving the objects a set of versions needs
// between a local store and a RemoteStore (remote_store.h), whatever its
// kind.
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
// Thread-compatible: one push or fetch at a time on a Store; each runs
// its transfers on threads of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/remote/remote_store.h"
#include "lib/store/restore.h"
#include "lib/store/store.h"

namespace zipnn::remote {

// The proof a receiver asks for before an object takes its name: decodes
// `object` (not in the store yet, meant for `id`) into `out` and checks
// the result against `id`, every chunk checksum on the way. A delta reads
// its base from `base` (that checkpoint's bytes, already verified) or,
// when `base` is null, by decoding the base's chain from `local`,
// down to the first version `find_copy` has a copy of; the versions it
// references (format 8) are read from `local` the same way.
// Corruption when it holds other content than `id` names.
Status DecodeReceived(const store::Store& local, const ByteSource& object, const ContentId& id, const ByteSource* base,
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
  // Of those, what did not move again: an earlier try, stopped, had moved
  // it (RemoteStore::carried), or the server held it already.
  uint64_t carried = 0;
  bool delivered = false;  // TransferOptions::deliver holds the checkpoint
  // Push: standalone objects on the remote re-stored as the deltas the
  // local store holds them as (Demotion::Demote), and the bytes saved.
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
// on the remote where it is whole there (Demotion::Demote, where the remote
// has it); the first
// failure to do so ends that step, in TransferReport::demote_error.
Result<TransferReport> PushObjects(const store::Store& local, RemoteStore& remote, const std::vector<ContentId>& ids,
                                   const TransferOptions& options);

// Brings every object `ids` need that the local store lacks (or holds
// damaged: it is replaced), following each delta's base as it arrives.
// Received objects wait in temp_dir until their bases are in; then each
// is decoded (DecodeReceived) from the bases up and takes its name. An
// object the remote does not hold is NotFound, naming it and the remote;
// one that does not decode to its id is Corruption, and neither it nor
// anything above it is kept.
Result<TransferReport> FetchObjects(const store::Store& local, RemoteStore& remote, const std::vector<ContentId>& ids,
                                    const TransferOptions& options);

}  // namespace zipnn::remote
