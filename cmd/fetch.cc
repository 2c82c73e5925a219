// git zipnn fetch / pull: bring the objects that pointers need from a
// remote's object store; pull then writes the checkpoints into the work
// tree where git left pointers (GIT_ZIPNN_SKIP_SMUDGE, or a checkout
// without the objects). The work is lib/ops/fetch.h's; this file parses
// and prints.
#include <cstdio>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/redact.h"
#include "lib/ops/fetch.h"

namespace zipnn::cmd {

namespace {

struct FetchArgs {
  ops::FetchRequest request;
  bool quiet = false;
};

Status Transfer(ops::Context& context, const ops::FetchPlan& plan, const FetchArgs& a) {
  WarnDamaged(plan.found);
  ZIPNN_ASSIGN_OR_RETURN(remote::Transferred done, ops::Fetch(context, plan));
  PrintTransfer(/*push=*/false, done, a.quiet);
  return OkStatus();
}

Status Fetch(ops::Context& context, const FetchArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(const ops::FetchPlan plan, ops::PlanFetch(context, a.request));
  return Transfer(context, plan, a);
}

// Restores what it can: a remote that is out of reach, or an object it
// lacks, costs only the files that need it; they stay pointers, are named,
// and the exit code says so. A remote or revision given that names
// nothing, or a mistake in what was asked (a pattern that matches no
// file), stops it before anything is written (with no remote given,
// what this clone holds is still written when there is none).
Status RunPull(const FetchArgs& a) {
  ops::Context context;
  ZIPNN_RETURN_IF_ERROR(context.Store().status());
  const Result<ops::FetchPlan> plan = ops::PlanFetch(context, a.request);
  const bool mistake = !plan.ok() && plan.status().code() == StatusCode::kInvalidArgument;
  if (!plan.ok() && (mistake || !a.request.remote.empty() || !a.request.refs.empty())) return plan.status();
  const Status fetched = plan.ok() ? Transfer(context, *plan, a) : plan.status();
  if (!fetched.ok()) std::fprintf(stderr, "git-zipnn pull: %s\n", RedactSecrets(fetched.message()).c_str());
  auto said = [&](const std::string& path, const Result<std::optional<ContentId>>& written) {
    if (written.status().code() == StatusCode::kRemoved) {
      // Retention took it: it stays a pointer, as a checkout leaves it.
      std::fprintf(stderr, "git-zipnn: %s; left as its pointer\n", RedactSecrets(written.status().message()).c_str());
    } else if (!written.ok()) {
      const std::string why = RedactSecrets(written.status().message());
      const bool named = why.find(path) != std::string::npos;
      std::fprintf(stderr, "error: %s%s (left as it was)\n", named ? "" : (path + ": ").c_str(), why.c_str());
    } else if (*written && !a.quiet) {
      std::printf("%s: restored %s\n", path.c_str(), (*written)->Hex().c_str());
    }
  };
  ZIPNN_ASSIGN_OR_RETURN(const ops::PullResult pulled, ops::RestorePointerFiles(context, a.request, said));
  if (pulled.failed > 0) {
    return NotFound(std::to_string(pulled.failed) + " checkpoint" + (pulled.failed == 1 ? "" : "s") +
                    " could not be restored (see above); restored " + std::to_string(pulled.restored));
  }
  return OkStatus();
}

void AddFetchOptions(CLI::App& sub, FetchArgs& a) {
  ops::FetchRequest& r = a.request;
  sub.add_option("remote", r.remote,
                 "Git remote whose object store has the objects (default: the upstream, or origin)");
  sub.add_option("refs", r.refs, "Get what the files of these revisions need (default: HEAD)");
  sub.add_flag("--all", r.all, "What every version in every ref's history needs");
  sub.add_flag("--recent", r.recent,
               "What HEAD and the branches committed to in the last zipnn.fetchrecentrefsdays (7) days need");
  sub.add_option("-I,--include", r.include, "Only checkpoints whose paths match these patterns (comma-separated)")
      ->allow_extra_args(false);
  sub.add_option("-X,--exclude", r.exclude, "Not the checkpoints whose paths match these patterns")
      ->allow_extra_args(false);
  sub.add_flag("-q,--quiet", a.quiet, "Print nothing on success");
}

}  // namespace

Action SetupFetch(CLI::App& sub) {
  auto a = std::make_shared<FetchArgs>();
  AddFetchOptions(sub, *a);
  return [a]() -> Status {
    ops::Context context;
    ZIPNN_RETURN_IF_ERROR(context.Store().status());
    return Fetch(context, *a);
  };
}

Action SetupPull(CLI::App& sub) {
  auto a = std::make_shared<FetchArgs>();
  AddFetchOptions(sub, *a);
  return [a] { return RunPull(*a); };
}

// The post-checkout and post-merge hooks: the checkpoints smudge left as
// pointers for being larger than git's filter takes, written now. git's
// own arguments to the hook say nothing this needs.
Action SetupWriteLeftOutside(CLI::App& sub) {
  sub.allow_extras();
  return []() -> Status {
    ops::Context context;
    auto said = [](const std::string& path, const Result<std::optional<ContentId>>& written) {
      if (written.status().code() == StatusCode::kRemoved) {
        std::fprintf(stderr, "git-zipnn: %s; left as its pointer\n", RedactSecrets(written.status().message()).c_str());
      } else if (!written.ok()) {
        std::fprintf(stderr, "error: %s: %s (left as its pointer: `git zipnn pull` writes it once that is mended)\n",
                     path.c_str(), RedactSecrets(written.status().message()).c_str());
      } else if (*written) {
        std::fprintf(stderr, "git-zipnn: wrote %s\n", path.c_str());
      }
    };
    ZIPNN_ASSIGN_OR_RETURN(const ops::PullResult written, ops::WriteLeftOutside(context, said));
    if (written.failed > 0) {
      return NotFound(std::to_string(written.failed) + " checkpoint" + (written.failed == 1 ? "" : "s") +
                      " could not be written (see above)");
    }
    return OkStatus();
  };
}

}  // namespace zipnn::cmd
