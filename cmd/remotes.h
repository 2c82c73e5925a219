// Which remote object store a git remote means, and moving the objects
// that pointers need to and from it (docs/remotes.md).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cmd/util.h"
#include "lib/base/status.h"
#include "lib/store/checkpoints.h"
#include "lib/store/remote.h"

namespace zipnn::cmd {

// The object store of the git repository at `path` (its work tree or, if
// bare, its git folder): its zipnn.storepath, else <git dir>/zipnn/objects.
// git is told the folder with --git-dir, which wins over the GIT_DIR that
// git exports to filters and hooks.
Result<std::string> StoreOfRepository(const std::string& path);

// The names `git remote` lists.
Result<std::vector<std::string>> GitRemotes();

// The remote to use when none is named: the current branch's upstream
// remote, else "origin", else the only remote. NotFound when there is none
// to choose.
Result<std::string> DefaultRemote();

// `named`, or DefaultRemote() when it is empty.
Result<std::string> RemoteOrDefault(const std::string& named);

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

// What `git zipnn fsck --remote` found on a remote's store.
struct RemoteCheck {
  std::string where;        // the store
  size_t checkpoints = 0;   // distinct ones checked
  size_t objects = 0;       // objects that decoded to their ids
  size_t temporaries = 0;   // old temporary files removed
  std::vector<std::pair<const Place*, std::string>> problems;  // where a pointer is, and what is wrong
};

// Checks that `remote` holds every object the checkpoints of `found` need,
// each decoding to its id: they are fetched into a scratch store in
// temp_dir (as a fetch would, refusing what a fetch refuses) and thrown
// away; the local store is not touched. Old temporary files of killed
// pushes are removed.
Result<RemoteCheck> CheckRemote(const store::Repository& repo, const std::string& remote, const FoundPointers& found);

// Fetches from the default remote what `id` needs and the local store
// lacks; nothing to do without a remote (a restore then names what is
// missing). `raw_size`, the pointer's size when known, bounds the object.
Status FetchChain(const store::Repository& repo, const ContentId& id, std::optional<uint64_t> raw_size = std::nullopt);

// RestoreFile; when an object of the chain is missing, FetchChain and
// restore again.
Status RestoreFetching(const store::Repository& repo, const store::Pointer& pointer, const std::string& path,
                       ByteSink& out);

}  // namespace zipnn::cmd
