// git zipnn push / pre-push: send the objects that pointers need to a
// remote's object store; pre-push is what the hook `install` writes runs
// before every `git push`.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/git/git.h"
#include "lib/git/pointers.h"
#include "lib/remote/select.h"
#include "lib/remote/transfer.h"

namespace zipnn::cmd {

namespace {

struct PushArgs {
  std::string remote;
  std::vector<std::string> refs;
  bool all = false;
  bool quiet = false;
};

Status RunPush(const PushArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
  ZIPNN_ASSIGN_OR_RETURN(const remote::RemoteSettings settings, remote::RemoteSettings::Read());
  ZIPNN_ASSIGN_OR_RETURN(std::string remote, remote::RemoteOrDefault(settings, a.remote));
  // A ref given as "--all" is a name, not the option it spells.
  for (const std::string& ref : a.refs) ZIPNN_RETURN_IF_ERROR(git::CheckRevision(ref));
  std::vector<std::string> revs = a.refs;
  if (a.all) revs = {"--all"};
  if (revs.empty()) revs = {"HEAD"};
  ZIPNN_ASSIGN_OR_RETURN(git::Repository git_repo, git::Repository::Discover());
  ZIPNN_ASSIGN_OR_RETURN(FoundPointers found, git::FindPointersIn(git_repo, revs));
  WarnDamaged(found);
  ZIPNN_ASSIGN_OR_RETURN(remote::Transferred done, remote::PushPointers(repo, settings, remote, found));
  PrintTransfer(/*push=*/true, done, a.quiet);
  return OkStatus();
}

bool IsRemoteName(const std::string& name) {
  auto remotes = git::Remotes();
  return remotes.ok() && std::find(remotes->begin(), remotes->end(), name) != remotes->end();
}

// git feeds the hook "<local ref> SP <local oid> SP <remote ref> SP
// <remote oid>" per ref it is about to push; the commits to look at are
// the local ones the remote does not have yet.
Status RunPrePush(const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(git::Repository git_repo, git::Repository::Discover());
  std::vector<std::string> revs;
  for (std::string line; std::getline(std::cin, line);) {
    std::istringstream fields(line);
    std::string local_ref, local_oid, remote_ref, remote_oid;
    if (!(fields >> local_ref >> local_oid >> remote_ref >> remote_oid)) continue;
    if (local_oid.find_first_not_of('0') == std::string::npos) continue;  // a deletion
    revs.push_back(local_oid);
    if (remote_oid.find_first_not_of('0') == std::string::npos) continue;  // a new ref
    auto have = git_repo.ResolveCommit(remote_oid);                        // what we know of the remote's side
    if (have.ok() && *have) revs.push_back("^" + remote_oid);
  }
  if (revs.empty()) return OkStatus();
  if (IsRemoteName(remote)) {
    revs.push_back("--not");
    revs.push_back("--remotes=" + remote);
  }
  ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
  ZIPNN_ASSIGN_OR_RETURN(FoundPointers found, git::FindPointersIn(git_repo, revs));
  if (found.pointers.empty()) return OkStatus();
  WarnDamaged(found);
  Result<remote::Transferred> pushed = remote::PushPointers(repo, remote, found);
  if (!pushed.ok()) {
    return Status(pushed.status().code(), pushed.status().message() +
                                              "\n(git push stopped so that no pointer reaches " + remote +
                                              " without its checkpoint; see docs/remotes.md)");
  }
  PrintTransfer(/*push=*/true, *pushed, /*quiet=*/false);
  return OkStatus();
}

}  // namespace

Action SetupPush(CLI::App& sub) {
  auto a = std::make_shared<PushArgs>();
  sub.add_option("remote", a->remote,
                 "Git remote whose object store receives the objects (default: the upstream, or origin)");
  sub.add_option("refs", a->refs, "Send what the commits reachable from these need (default: HEAD)");
  sub.add_flag("--all", a->all, "Every ref's history");
  sub.add_flag("-q,--quiet", a->quiet, "Print nothing on success");
  return [a] { return RunPush(*a); };
}

Action SetupPrePush(CLI::App& sub) {
  auto remote = std::make_shared<std::string>();
  auto url = std::make_shared<std::string>();
  sub.add_option("remote", *remote, "The remote git pushes to (git's first hook argument)")->required();
  sub.add_option("url", *url, "Its URL (git's second hook argument)");
  return [remote] { return RunPrePush(*remote); };
}

}  // namespace zipnn::cmd
