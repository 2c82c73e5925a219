// git zipnn ls-files: the checkpoints git-zipnn stores at a revision.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/strings.h"
#include "lib/ops/status.h"

namespace zipnn::cmd {

namespace {

Status RunLsFiles(const std::string& rev) {
  ops::Context context;
  ZIPNN_ASSIGN_OR_RETURN(const auto checkpoints, ops::CheckpointsAt(context, rev));
  ZIPNN_ASSIGN_OR_RETURN(store::Store * store, context.Store());
  uint64_t raw_total = 0, stored_total = 0;
  int count = 0;
  size_t absent = 0, retained = 0;
  for (const auto& [path, p] : checkpoints) {
    const ops::HeldVersion held = ops::DescribeHeld(*store, p.id);
    const Result<store::StoredInfo>& info = held.info;
    const std::string& kind = held.kind;
    absent += info.ok() || held.retained ? 0 : 1;
    if (held.retained) ++retained;
    const uint64_t stored = info.ok() ? info->object_size : 0;
    std::printf("%.12s %-7s %-11s %10s -> %10s %8s  %s\n", p.id.Hex().c_str(), kind.c_str(), p.format.c_str(),
                HumanBytes(p.size).c_str(), HumanBytes(stored).c_str(), Percent(stored, p.size).c_str(),
                path.c_str());
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
