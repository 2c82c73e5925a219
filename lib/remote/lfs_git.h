// The Git LFS store of a git remote (lfs.h) with what only git knows: the
// object map kept in refs/zipnn/objects (lib/git/object_map.h), fetched
// from the remote the first time a version is missing from it and pushed
// to the remote after each push; credentials from git's helpers; and
// http.extraHeader, as Git LFS sends it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "lib/base/rate.h"
#include "lib/base/status.h"
#include "lib/remote/lfs.h"
#include "lib/remote/remote_store.h"

namespace zipnn::remote {

// How objects move to and from a Git LFS store (lfs::Options has each).
struct LfsTransfers {
  double timeout = 60;
  LowSpeed low_speed = kDefaultLowSpeed;
  uint64_t max_object_size = 0;
  uint64_t part_size = 0;
  int connections = 1;
};

// The store at the LFS API `endpoint` for git remote `remote`, moving
// objects as `transfers` says; with `authenticate` (a repository reached
// over ssh), the API's place and headers for each operation come from it
// instead. A limit the server states in refusing an upload is kept in
// remote.<name>.zipnnMaxObjectSize (for a remote with a name), and said
// on stderr.
Result<std::unique_ptr<RemoteStore>> OpenGitLfsStore(
    const std::string& remote, const std::string& endpoint, const LfsTransfers& transfers,
    std::function<Result<lfs::Grant>(const std::string& operation)> authenticate = nullptr);

}  // namespace zipnn::remote
