// Which remote object store a git remote means, and moving the objects
// that pointers need to and from it (docs/remotes.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cmd/util.h"
#include "lib/base/status.h"
#include "lib/store/checkpoints.h"
#include "lib/store/remote.h"

namespace zipnn::cmd {

// The remote to use when none is named: the current branch's upstream
// remote, else "origin", else the only remote. NotFound when there is none
// to choose.
Result<std::string> DefaultRemote();

// The object store of a git remote (a name, or a URL or path as
// `git push` accepts): remote.<name>.zipnnurl when set, else the store
// that goes with the remote's URL; for a repository on a path or file://
// URL, that repository's own store.
Result<std::unique_ptr<store::RemoteStore>> OpenRemoteStore(const std::string& remote);

// Sends the objects of every pointer in `found` (and every base of their
// chains) to `remote`, printing a summary unless `quiet`. A pointer whose
// chain is not whole locally fails before anything is sent, naming the
// object and where the pointer is.
Status PushPointers(const store::Repository& repo, const std::string& remote, const FoundPointers& found, bool quiet);

// Brings the objects of every pointer in `found` (and their bases) from
// `remote`.
Status FetchPointers(const store::Repository& repo, const std::string& remote, const FoundPointers& found,
                     bool quiet);

// Fetches what `id` needs from the default remote when its chain is not
// whole in the local store; nothing to do when it is, or when there is no
// remote (the restore then names the missing object).
Status FetchIfMissing(const store::Repository& repo, const ContentId& id);

// RestoreFile, fetching a missing chain from the default remote first.
Status RestoreFetching(const store::Repository& repo, const store::Pointer& pointer, const std::string& path,
                       ByteSink& out);

}  // namespace zipnn::cmd
