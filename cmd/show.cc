// git zipnn show: one stored checkpoint, its chain of bases and its layout.
#include <cstdio>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/git/checkpoint_at.h"
#include "lib/git/discover.h"
#include "lib/git/git.h"

namespace zipnn::cmd {

namespace {

Status RunShow(const std::string& what) {
  ZIPNN_ASSIGN_OR_RETURN(store::Repository repo, OpenRepository());
  // A content id, or <rev>:<path> as git spells it.
  std::optional<ContentId> id = ContentId::FromHex(what);
  std::string why;  // for a base given as <rev>:<path>
  if (!id) {
    if (what.find(':') == std::string::npos) {
      return InvalidArgument(what + " is neither a content id (32 hex digits) nor <rev>:<path>");
    }
    ZIPNN_ASSIGN_OR_RETURN(store::Pointer pointer, git::PointerAt(what));
    std::printf("%s: %s, %llu bytes\n", what.c_str(), pointer.format.c_str(),
                static_cast<unsigned long long>(pointer.size));
    id = pointer.id;
    auto series = git::OpenSeries(repo);
    if (series.ok()) {
      std::string path = what.substr(what.find(':') + 1);
      if (path.rfind("./", 0) == 0) {
        auto full = git::TrackedPath(path);
        if (full.ok()) path = *full;
      }
      why = git::WhyBase(repo, **series, path, *id);
    }
  }
  // The chain down to its base: what a checkout of this version decodes.
  std::printf("chain\n");
  ZIPNN_RETURN_IF_ERROR(store::VisitChain(repo, *id, [&](const store::ChainLink& link) {
    std::printf("  %*s%s %-5s %10s -> %10s %8s%s\n", 2 * link.depth, "", link.id.Hex().c_str(),
                link.delta ? "delta" : "base", HumanBytes(link.raw_size).c_str(), HumanBytes(link.object_size).c_str(),
                Percent(link.object_size, link.raw_size).c_str(),
                link.depth == 0 && !why.empty() ? ("  (" + why + ")").c_str() : "");
  }));
  std::printf("\n");
  return PrintObjectReport(repo.objects.PathOf(*id));
}

}  // namespace

Action SetupShow(CLI::App& sub) {
  auto what = std::make_shared<std::string>();
  sub.add_option("object", *what, "A content id, or <rev>:<path> of a tracked checkpoint")->required();
  return [what] { return RunShow(*what); };
}

}  // namespace zipnn::cmd
