// git zipnn ls-files: the checkpoints git-zipnn stores at a revision.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/strings.h"
#include "lib/git/git.h"
#include "lib/git/pointers.h"
#include "lib/git/repository.h"
#include "lib/series/series.h"
#include "lib/store/chain.h"

namespace zipnn::cmd {

namespace {

Status RunLsFiles(const std::string& rev) {
  ZIPNN_RETURN_IF_ERROR(git::CheckRevision(rev));
  ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
  ZIPNN_ASSIGN_OR_RETURN(git::Repository git_repo, git::Repository::Discover());
  ZIPNN_ASSIGN_OR_RETURN(std::optional<git::Oid> commit, git_repo.ResolveCommit(rev));
  if (!commit) return NotFound("unknown revision '" + rev + "' (not a branch, tag or commit in this repository)");
  ZIPNN_ASSIGN_OR_RETURN(std::vector<git::FileEntry> files, git_repo.TreeFiles(*commit));
  // By series and step: checkpoint-20 before checkpoint-100.
  series::Rules rules;
  if (auto with = series::Rules::WithPatterns(repo.policy.series); with.ok()) rules = *with;
  std::stable_sort(files.begin(), files.end(), [&](const git::FileEntry& x, const git::FileEntry& y) {
    const series::Placed a = rules.Place(x.path), b = rules.Place(y.path);
    return a.name != b.name ? a.name < b.name : series::StepLess(a.step, b.step);
  });
  uint64_t raw_total = 0, stored_total = 0;
  int count = 0;
  size_t absent = 0, retained = 0;
  for (const git::FileEntry& file : files) {
    // Pointers are small blobs: only those are read.
    Result<std::optional<store::Pointer>> pointer = git::PointerInBlob(git_repo, file.blob);
    if (!pointer.ok() && pointer.status().code() == StatusCode::kGit) return pointer.status();
    if (!pointer.ok() || !*pointer) continue;
    const store::Pointer& p = **pointer;
    const HeldVersion held = DescribeHeld(repo, p.id);
    const Result<store::StoredInfo>& info = held.info;
    const std::string& kind = held.kind;
    absent += info.ok() || held.retained ? 0 : 1;
    if (held.retained) ++retained;
    const uint64_t stored = info.ok() ? info->object_size : 0;
    std::printf("%.12s %-7s %-11s %10s -> %10s %8s  %s\n", p.id.Hex().c_str(), kind.c_str(), p.format.c_str(),
                HumanBytes(p.size).c_str(), HumanBytes(stored).c_str(), Percent(stored, p.size).c_str(),
                file.path.c_str());
    raw_total += p.size;
    stored_total += stored;
    ++count;
  }
  std::printf("%d checkpoint%s at %s: %s raw, %s stored (%s)\n", count, count == 1 ? "" : "s", rev.c_str(),
              HumanBytes(raw_total).c_str(), HumanBytes(stored_total).c_str(),
              Percent(stored_total, raw_total).c_str());
  if (retained > 0) {
    std::printf("%s thinned or dropped by retention (`git zipnn log` says when and how)\n",
                Counted(retained, "version").c_str());
  }
  if (absent > 0) {
    // A clone that has not fetched every object yet (or a damaged store).
    std::printf(
        "%s not here or not readable: `git zipnn fetch` gets missing ones from the remote, `git zipnn fsck` "
        "says which and why\n",
        Counted(absent, "object").c_str());
  }
  return OkStatus();
}

}  // namespace

Action SetupLsFiles(CLI::App& sub) {
  auto rev = std::make_shared<std::string>("HEAD");
  sub.add_option("rev", *rev, "Revision (default HEAD)");
  return [rev] { return RunLsFiles(*rev); };
}

}  // namespace zipnn::cmd
