// Which object store a git remote means (docs/remotes.md): the remote to
// use when none is named, and the store behind it, opened as one
// RemoteStore whatever its kind. The kinds are the rows of kRemoteKinds
// (select.cc), tried in order, each saying whether a remote's URL and
// settings mean it, what it is in words, and how to open it: an S3
// bucket (s3.h), the Git LFS storage of the host that serves the
// repository (lfs_git.h), a store served over ssh by `git zipnn
// serve-store` (served.h), and a folder (a path or file:// URL, or the
// store of the repository there).
//
// Settings are read from git config and the environment as
// docs/remotes.md lists them: the git config ones at once, with one `git
// config` run (RemoteSettings), which a command reads once and passes to
// each call; each form without RemoteSettings reads them itself.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "lib/base/status.h"
#include "lib/git/git.h"
#include "lib/remote/remote_store.h"

namespace zipnn::remote {

// The git config settings remotes read: every remote's and branch's,
// git-zipnn's own (zipnn.*, diff.zipnn.*), Git LFS's (lfs.*) and
// core.sshCommand, read by one `git config` run. A value.
class RemoteSettings {
 public:
  static Result<RemoteSettings> Read();
  // As git::ConfigGet: the last value given, nullopt when unset. `key` as
  // git spells it, its section and name in any case ("zipnn.lowSpeedLimit").
  std::optional<std::string> Get(const std::string& key) const;
  // As git::ConfigGetInt (git's k, m and g suffixes); a value git would
  // not take is InvalidArgument, as git words it.
  Result<std::optional<int64_t>> GetInt(const std::string& key) const;
  // As git::ConfigFlag.
  bool Flag(const std::string& key, bool unset) const;
  // What was read, for lib/git's readers of the same keys.
  const git::ConfigSnapshot& config() const { return config_; }

 private:
  git::ConfigSnapshot config_;
};

// Each call below with `settings` reads git config from them.
Result<std::string> DefaultRemote(const RemoteSettings& settings);
Result<std::string> RemoteOrDefault(const RemoteSettings& settings, const std::string& named);
Result<std::string> DescribeStore(const RemoteSettings& settings, const std::string& remote);
// Whether the store behind `remote` can remove objects, without reaching
// it: false for a Git LFS host (its API has no delete), so that retention
// there frees space locally only. True where no store is known (nothing to
// warn of).
Result<bool> StoreRemoves(const RemoteSettings& settings, const std::string& remote);
// git config zipnn.keepRefetched: whether a read of a version retention
// removed here keeps what it fetches (transfer.h, FetchRetained).
bool KeepsRefetched(const RemoteSettings& settings);
Result<int> ConcurrentTransfers(const RemoteSettings& settings);
Result<std::unique_ptr<RemoteStore>> OpenRemoteStore(const RemoteSettings& settings, const std::string& remote);
// NotFound when `remote` names no remote and cannot be a path or URL (a
// name mistyped, with the names it may have meant), without reaching it.
Status CheckRemoteName(const RemoteSettings& settings, const std::string& remote);

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
