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

// The store at the LFS API `endpoint` for git remote `remote`, sending
// objects over `max_object_size` bytes (0: no limit known) in parts; with
// `authenticate` (a repository reached over ssh), the API's place and
// headers for each operation come from it instead. A limit the server
// states in refusing an upload is kept in remote.<name>.zipnnMaxObjectSize
// (for a remote with a name), and said on stderr.
Result<std::unique_ptr<RemoteStore>> OpenGitLfsStore(
    const std::string& remote, const std::string& endpoint, double timeout, LowSpeed low_speed,
    uint64_t max_object_size, std::function<Result<lfs::Grant>(const std::string& operation)> authenticate = nullptr);

}  // namespace zipnn::remote
