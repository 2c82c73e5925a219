// Moving the objects that git's pointers need between the local store and
// a git remote's store (lib/remote/select.h), on behalf of push, fetch,
// pull, fsck --remote and a smudge that finds an object missing. Progress
// is shown on stderr while objects move; summaries are the caller's to
// print. Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/git/pointers.h"
#include "lib/store/restore.h"
#include "lib/store/pointer.h"
#include "lib/remote/remote_store.h"
#include "lib/remote/select.h"
#include "lib/remote/sync.h"

namespace zipnn::remote {

// What a push or fetch moved, and the store it moved to or from.
struct Transferred {
  TransferReport report;
  std::string where;
  // Whether the tensor listings of what moved went with it (lib/git/listings.h):
  // a failure costs `git log -p` time, not data, so it does not fail the
  // transfer.
  Status listings;
};

// Sends the objects of every pointer in `found` (and every base of their
// chains) to `remote`. Each call here without RemoteSettings reads them
// (select.h) once, for all it does. A pointer whose chain is not whole locally fails
// before anything is sent, naming the object and where the pointer is.
Result<Transferred> PushPointers(const store::Store& local, const std::string& remote, const git::FoundPointers& found);
// With `publish` false, only the objects go: what makes them findable
// (the object map of a Git LFS server, the listings) waits for a later
// push, as one rank of a distributed save leaves it to the rank that
// pushes the commit (lib/ops/commit.h).
Result<Transferred> PushPointers(const store::Store& local, const RemoteSettings& settings, const std::string& remote,
                                 const git::FoundPointers& found, bool publish = true);
// The rest of a push whose objects went with `publish` false: makes them
// findable on `remote`, asking nothing of its objects again (only
// Transferred::where and listings are set).
Result<Transferred> PublishPointers(const RemoteSettings& settings, const std::string& remote,
                                    const git::FoundPointers& found);

// Brings the objects of every pointer in `found` (and their bases) from
// `remote`.
Result<Transferred> FetchPointers(const store::Store& local, const std::string& remote, const git::FoundPointers& found);
Result<Transferred> FetchPointers(const store::Store& local, const RemoteSettings& settings, const std::string& remote,
                                  const git::FoundPointers& found);

// What `git zipnn fsck --remote` found on a remote's store.
struct RemoteCheck {
  std::string where;                                                // the store
  size_t checkpoints = 0;                                           // distinct ones checked
  size_t objects = 0;                                               // objects that decoded to their ids
  size_t temporaries = 0;                                           // old temporary files removed
  std::vector<std::pair<const git::Place*, std::string>> problems;  // where a pointer is, and what is wrong
};

// Checks that `remote` holds every object the checkpoints of `found` need,
// each decoding to its id: they are fetched into a scratch store in
// temp_dir (as a fetch would, refusing what a fetch refuses) and thrown
// away; the local store is not touched. Old temporary files of killed
// pushes are removed.
Result<RemoteCheck> CheckRemote(const store::Store& local, const std::string& remote, const git::FoundPointers& found);
Result<RemoteCheck> CheckRemote(const store::Store& local, const RemoteSettings& settings, const std::string& remote,
                                const git::FoundPointers& found);

// Fetches from the default remote what `id` needs and the local store
// lacks; nothing to do without a remote (a restore then names what is
// missing). `raw_size`, the pointer's size when known, bounds the object;
// `find_copy` and `deliver` as in TransferOptions. Whether the checkpoint
// was delivered.
Result<bool> FetchChain(const store::Store& local, const ContentId& id, std::optional<uint64_t> raw_size = std::nullopt,
                        const store::FindCopy& find_copy = nullptr, ByteSink* deliver = nullptr);

// The exact bytes of a version retention removed here (its record is
// here), from the default remote, to `deliver`: whether they came. What is
// fetched is kept in the local store only with git config
// zipnn.keepRefetched; otherwise it goes into a scratch store in
// local.temp_dir, is restored from there and removed, so that reading a
// version does not undo the retain that removed it. False when there is
// no remote; NotFound when the remote lacks it.
Result<bool> FetchRetained(const store::Store& local, const ContentId& id, uint64_t raw_size,
                           const store::FindCopy& find_copy, ByteSink& deliver);

// Random access to version `id` (`raw_size` bytes, its pointer's size)
// without fetching what the local store lacks of its chain: each object
// missing here is read by parts where it lies on the default remote
// (RangedReads::OpenRanges), down to the first version the local store
// holds whole, and each chunk read of the version is checked against its
// raw checksum, as store::OpenVersion's are. Nothing fetched is stored.
// Unsupported when that cannot be: no default remote, one that does not
// serve parts or cannot vouch for an object, a top object older than
// format 5 (the caller then fetches whole objects: FetchChain).
Result<std::unique_ptr<ByteSource>> OpenRemoteVersion(const store::Store& local, const ContentId& id, uint64_t raw_size);

}  // namespace zipnn::remote
