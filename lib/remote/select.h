// Which object store a git remote means (docs/remotes.md): the remote to
// use when none is named, and the store behind it, opened as one
// RemoteStore whatever its kind: a folder (a path or file:// URL,
// or the store of the repository there), a store served over ssh by
// `git zipnn serve-store`, or an S3 bucket. Settings are read from git
// config and the environment as docs/remotes.md lists them.
// Thread-compatible.
#pragma once

#include <memory>
#include <string>

#include "lib/base/status.h"
#include "lib/remote/remote_store.h"

namespace zipnn::remote {

// The remote to use when none is named: the current branch's upstream
// remote, else "origin", else the only remote. NotFound when there is none
// to choose.
Result<std::string> DefaultRemote();

// `named`, or DefaultRemote() when it is empty.
Result<std::string> RemoteOrDefault(const std::string& named);

// What OpenRemoteStore would open for `remote`, in words ("the object
// store of the repository at /srv/hub.git"), without reaching it.
Result<std::string> DescribeStore(const std::string& remote);

// How many objects a push or fetch moves at once: zipnn.concurrentTransfers,
// else lfs.concurrenttransfers (as Git LFS users set it), else 4;
// InvalidArgument outside 1..64.
Result<int> ConcurrentTransfers();

// The object store of a git remote (a name, or a URL or path as
// `git push` accepts): remote.<name>.zipnnurl when set, else the store
// that goes with the remote's URL; for a repository on a path or file://
// URL, that repository's own store.
Result<std::unique_ptr<RemoteStore>> OpenRemoteStore(const std::string& remote);

}  // namespace zipnn::remote
