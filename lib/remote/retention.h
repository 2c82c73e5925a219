// Retention on a remote (docs/retention.md, "On a remote"): once the
// local store has applied the rules (lib/store/retain.h), the remote is
// made to hold what the local one holds for the same versions: the
// approximate versions of what was thinned, and the records of what was
// thinned or dropped, sent; then the exact objects of those versions
// removed, and the approximate ones of versions the remote had thinned
// that are dropped now (its own records say which), but only once nothing
// the remote keeps is a delta of them.
// Every object the remote holds is looked at, not only the versions this
// clone knows: a teammate's version stored there as a delta of one that
// would go is re-sent whole from here when this store holds it, and
// otherwise keeps the object it needs (and says so).
//
// In order, so that a kill at any point leaves every kept version whole
// on the remote: approximate versions sent (each proved by the receiver),
// deltas of what goes replaced, records sent, and only then objects
// removed. Running it again finishes the work.
//
// The plan is made from a listing, and the remote may change after it: a
// teammate pushes a fine-tune as a delta of a version that goes, another
// retain runs. So the removal looks again, under the remote's lock, which
// every object's arrival takes too (LockedRemoval::RemoveUnneeded): what
// rests on an object then keeps it. A remote without such a lock (S3)
// is changed only when the caller says no one pushes to it meanwhile
// (`pushes_stopped`), and is looked at once more just before removing.
// `before_removal`, when given, runs once the records are sent and before
// anything is removed (the caller reads the git remote's refs again): an
// error there ends the retain with nothing removed.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/status.h"
#include "lib/remote/remote_store.h"
#include "lib/remote/sync.h"
#include "lib/store/store.h"

namespace zipnn::remote {

struct RemoteRetention {
  size_t objects = 0;          // on the remote before
  uint64_t bytes_before = 0;   // their bytes
  uint64_t bytes_after = 0;    // after (or, in a dry run, as it would be)
  size_t removed = 0;          // exact objects of thinned or dropped versions removed (or to remove)
  // Approximate objects of versions thinned there before and dropped now.
  size_t unthinned = 0;
  uint64_t removed_bytes = 0;  // of both
  size_t sent = 0;             // approximate objects sent (or to send)
  uint64_t sent_bytes = 0;
  size_t records = 0;          // records sent (or to send)
  size_t replaced = 0;         // objects re-sent whole or re-based so as not to need one that goes
  // Objects that stay although retention took their version, and why (a
  // version this clone does not know is a delta of it).
  std::vector<std::pair<ContentId, std::string>> kept;
};

// Carries retention to `remote` for the versions `every_version` names
// (all of this repository's history), as the local store's records say.
// With `dry_run`, changes nothing and says what it would do, counting
// `planned` (versions a local retain would take, not yet taken) as taken;
// what their approximate versions will add is not counted. Versions in
// `stays` (the rules keep them now, PlannedVersion::rule_keeps) keep their
// exact objects there, whatever the local records say. Unsupported for a
// remote without the Retention capability (remote_store.h).
Result<RemoteRetention> RetainOnRemote(const store::Store& local, RemoteStore& remote,
                                       const std::vector<ContentId>& every_version, bool dry_run,
                                       const std::vector<ContentId>& planned,
                                       const std::function<void(const std::string&)>& progress,
                                       bool pushes_stopped = false,
                                       const std::function<Status()>& before_removal = nullptr,
                                       const std::set<ContentId>& stays = {});

// The refusal for a remote that cannot remove under a lock (S3) when
// the caller has not said that no one pushes to it meanwhile.
Status NoLockRefusal(const RemoteStore& remote, const std::string& name);

// When the default remote holds the retention record of `id` (a version
// retention thinned or dropped there): the record, checked, kept in the
// local store. False when there is none or no remote to ask.
Result<bool> FetchRecord(const store::Store& local, const ContentId& id);

}  // namespace zipnn::remote
