// git zipnn push / pre-push: send the objects that pointers need to a
// remote's object store; pre-push is what the hook `install` writes runs
// before every `git push`.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/remote/select.h"
#include "lib/remote/transfer.h"

namespace zipnn::cmd {

namespace {

// How to keep checkpoints elsewhere when `remote`'s Git LFS API is not
// there (a host without Git LFS answers 404): said after such a failure.
std::string NoLfsHint(const Status& failed, const std::string& remote) {
  if (failed.message().find("/info/lfs") == std::string::npos ||
      failed.message().find("HTTP 404") == std::string::npos) {
    return "";
  }
  return "\n(" + remote +
         " answers no Git LFS API there: if its host serves none, keep the checkpoints elsewhere with "
         "`git config remote." +
         remote + ".zipnnurl <folder, ssh:// or s3:// URL>`)";
}

struct PushArgs {
  std::string remote;
  std::vector<std::string> refs;
  bool all = false;
  bool quiet = false;
};

Status RunPush(const PushArgs& a) {
  ops::Context context;
  ZIPNN_ASSIGN_OR_RETURN(store::Store * store, context.Store());
  ZIPNN_ASSIGN_OR_RETURN(const remote::RemoteSettings* settings, context.RemoteSettings());
  ZIPNN_ASSIGN_OR_RETURN(std::string remote, remote::RemoteOrDefault(*settings, a.remote));
  ZIPNN_ASSIGN_OR_RETURN(FoundPointers found, ops::PointersToPush(context, a.refs, a.all));
  WarnDamaged(found);
  Result<remote::Transferred> done = remote::PushPointers(*store, *settings, remote, found);
  if (!done.ok()) return WithHint(done.status(), NoLfsHint(done.status(), remote));
  PrintTransfer(/*push=*/true, *done, a.quiet);
  return OkStatus();
}

// git feeds the hook a line per ref it is about to push
// (ops::PointersBeforePush).
Status RunPrePush(const std::string& remote) {
  ops::Context context;
  std::vector<std::string> lines;
  for (std::string line; std::getline(std::cin, line);) lines.push_back(line);
  ZIPNN_ASSIGN_OR_RETURN(FoundPointers found, ops::PointersBeforePush(context, remote, lines));
  if (found.pointers.empty()) return OkStatus();
  WarnDamaged(found);
  ZIPNN_ASSIGN_OR_RETURN(store::Store * store, context.Store());
  const Result<const remote::RemoteSettings*> settings = context.RemoteSettings();
  Result<remote::Transferred> pushed =
      settings.ok() ? remote::PushPointers(*store, **settings, remote, found) : settings.status();
  if (!pushed.ok()) {
    return WithHint(pushed.status(), NoLfsHint(pushed.status(), remote) +
                                         "\n(git push stopped so that no pointer "
                                         "reaches " +
                                         remote + " without its checkpoint; see docs/remotes.md)");
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
  // `url` is written when the command line is parsed, after this returns:
  // the action holds it, or the parse would write into freed memory.
  return [remote, url] { return RunPrePush(*remote); };
}

}  // namespace zipnn::cmd
