// git zipnn fsck: every checkpoint the repository points at can be
// restored (lib/ops/fsck.h); this file parses and prints.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/strings.h"
#include "lib/ops/fsck.h"

namespace zipnn::cmd {

namespace {

struct FsckArgs {
  bool all = false;
  bool json = false;
  bool fast = false;
  int threads = 0;
  std::optional<std::string> remote;  // --remote [NAME]: "" for the default remote
};

// fsck --remote: the remote's store, not this one.
Status RunFsckRemote(ops::Context& context, const FsckArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(const ops::RemoteFsckResult check, ops::FsckRemote(context, a.all, *a.remote));
  const std::string& remote = check.remote;
  for (const auto& [place, what] : check.problems) {
    std::printf("%s at %.10s: %s\n", place.path.c_str(), place.rev.c_str(), what.c_str());
  }
  // Only a folder keeps what killed uploads left: the count is news only
  // when there was something to remove.
  const std::string removed =
      check.temporaries == 0 ? "" : "; " + Counted(check.temporaries, "old temporary file") + " removed";
  std::printf("remote %s (%s): %zu checkpoint%s, %s decode to their ids%s%s\n", remote.c_str(), check.where.c_str(),
              check.checkpoints, check.checkpoints == 1 ? "" : "s", Counted(check.objects, "object").c_str(),
              check.problems.empty() ? "" : (", " + std::to_string(check.problems.size()) + " with problems").c_str(),
              removed.c_str());
  if (check.problems.empty()) return OkStatus();
  return Corruption(std::to_string(check.problems.size()) + " checkpoint" + (check.problems.size() == 1 ? "" : "s") +
                    " cannot be fetched whole from " + remote +
                    " (git zipnn push from a clone that has them sends "
                    "them again)");
}

// The summary's verdict. In a clone that fetched only some checkpoints,
// it says how many were checked rather than "every one".
std::string Verdict(const ops::FsckResult& result, bool fast, const std::string& retained) {
  const size_t problems = result.problems.size();
  if (problems > 0) return std::to_string(problems) + " problem" + (problems == 1 ? "" : "s");
  if (result.not_fetched == 0) {
    if (fast) return "every object present, headers intact";
    return retained.empty() ? "every one restores exactly" : "every exact one restores exactly";
  }
  const size_t fetched = result.checkpoints - std::min(result.checkpoints, result.not_fetched);
  if (fetched == 0) return "none is fetched into this clone to check";
  const bool one = fetched == 1;
  const std::string checked = "the " + std::to_string(fetched) + " fetched into this clone";
  if (fast) return checked + (one ? ": its object present, header intact" : ": their objects present, headers intact");
  return checked + (one ? " restores exactly" : " restore exactly");
}

Status RunFsck(const FsckArgs& a) {
  ops::Context context(ops::Context::Options{a.threads});
  if (a.remote) return RunFsckRemote(context, a);
  ZIPNN_ASSIGN_OR_RETURN(const ops::FsckResult result, ops::Fsck(context, ops::FsckRequest{a.all, a.fast}));
  const std::vector<ops::FsckProblem>& problems = result.problems;
  const size_t pointers = result.pointers, checkpoints = result.checkpoints;
  const size_t thinned = result.thinned, dropped = result.dropped;
  std::string retained;
  if (thinned + dropped > 0) {
    retained = " (retention: " + std::to_string(thinned) + " thinned, checked as their approximate versions; " +
               std::to_string(dropped) + " dropped)";
  }

  const std::string scope = a.all ? "every ref, reflog, stash and the index" : "HEAD";
  if (a.json) {
    nlohmann::ordered_json doc = {{"scope", a.all ? "all" : "HEAD"},
                                  {"mode", a.fast ? "fast" : "full"},
                                  {"pointers", pointers},
                                  {"checkpoints", checkpoints},
                                  {"thinned", thinned},
                                  {"dropped", dropped},
                                  {"not_fetched", result.not_fetched},
                                  {"problems", nlohmann::ordered_json::array()}};
    for (const ops::FsckProblem& p : problems) {
      doc["problems"].push_back({{"path", p.place.path},
                                 {"rev", p.place.rev},
                                 {"id", p.id.empty() ? nullptr : nlohmann::ordered_json(p.id)},
                                 {"problem", p.what}});
    }
    std::printf("%s\n", doc.dump(1).c_str());
  } else {
    for (const ops::FsckProblem& p : problems) {
      std::printf("%s at %.10s: %s%s\n", p.place.path.c_str(), p.place.rev.c_str(),
                  p.id.empty() ? "" : ("checkpoint " + p.id + ": ").c_str(), p.what.c_str());
    }
    std::printf("%zu pointer%s to %zu checkpoint%s in %s: %s%s\n", pointers, pointers == 1 ? "" : "s", checkpoints,
                checkpoints == 1 ? "" : "s", scope.c_str(), Verdict(result, a.fast, retained).c_str(),
                retained.c_str());
    if (!result.not_fetched_line.empty()) std::printf("%s\n", result.not_fetched_line.c_str());
  }
  if (!problems.empty()) {
    // The advice for objects; each other problem's line says its own fix.
    const bool objects = std::any_of(problems.begin(), problems.end(), [](const ops::FsckProblem& p) { return !p.id.empty(); });
    return Corruption(
        std::to_string(problems.size()) + " problem" + (problems.size() == 1 ? "" : "s") + " found" +
        (objects ? " (fetch missing objects from a clone that has them, or restore the store)" : " (see above)"));
  }
  return OkStatus();
}

}  // namespace

Action SetupFsck(CLI::App& sub) {
  auto a = std::make_shared<FsckArgs>();
  sub.add_flag("--all", a->all,
               "Every commit reachable from a ref, a reflog or a stash, and the index (default: HEAD)");
  sub.add_flag("--fast", a->fast, "Check presence and headers of every object only; do not decode");
  sub.add_flag("--json", a->json, "One JSON object with the counts and every problem");
  auto remote = std::make_shared<RemoteOption>(
      sub,
      "Check the store of this git remote (default: the upstream, or origin) in place of "
      "the local one: every object there, decoded; old temporary files removed");
  AddThreadsOption(sub, a->threads);
  return [a, remote] {
    a->remote = remote->value();
    return RunFsck(*a);
  };
}

}  // namespace zipnn::cmd
