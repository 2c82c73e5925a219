// git zipnn restore: one version of a tracked checkpoint, written straight
// to a file (not through git, which would hold it all in memory),
// verified against its content id.
#include <cstdio>
#include <memory>

#include "cmd/command.h"
#include "cmd/remotes.h"
#include "cmd/util.h"
#include "lib/base/file.h"
#include "lib/git/git.h"

namespace zipnn::cmd {

namespace {

struct RestoreArgs {
  std::string path;
  std::string rev = "HEAD";
  std::string output;
  int threads = 0;
};

Status RunRestore(const RestoreArgs& a) {
  ASSIGN_OR_RETURN(store::Repository repo, OpenRepository());
  if (a.threads > 0) repo.policy.threads = a.threads;
  // "./path" makes git resolve the path from the current folder.
  ASSIGN_OR_RETURN(store::Pointer pointer, PointerAt(a.rev + ":./" + a.path));
  const std::string target = a.output.empty() ? a.path : a.output;
  ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(target, /*overwrite=*/true));
  Status restored;
  {
    Progress progress("git-zipnn: " + target, pointer.size);  // its line is cleared when done
    progress.Update("restoring", 0);
    ProgressSink sink(out, progress, "restoring");
    restored = RestoreFetching(repo, pointer, a.path, sink);
  }
  RETURN_IF_ERROR(restored);
  RETURN_IF_ERROR(out.Commit());  // only verified bytes reach the name
  if (a.output.empty()) RefreshIndex({a.path});
  std::printf("%s: restored %s (%llu bytes) from %s\n", target.c_str(), pointer.id.Hex().c_str(),
              static_cast<unsigned long long>(pointer.size), a.rev.c_str());
  return OkStatus();
}

}  // namespace

Action SetupRestore(CLI::App& sub) {
  auto a = std::make_shared<RestoreArgs>();
  sub.add_option("path", a->path, "Tracked checkpoint, relative to the current folder")->required();
  sub.add_option("--rev", a->rev, "Revision to take it from (default HEAD)");
  sub.add_option("-o,--output", a->output, "Write here instead of replacing the work-tree file");
  AddThreadsOption(sub, a->threads);
  return [a] { return RunRestore(*a); };
}

}  // namespace zipnn::cmd
