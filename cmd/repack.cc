// git zipnn repack: rewrites stored checkpoints as the policy would store
// them now (after base_interval or newest changed, to cut long chains, or
// to bring a store of git-zipnn 0.6 to the newest-whole placement), series
// by series (lib/store/repack.h), each object replaced atomically after
// its candidate was verified. Pointers and history never change.
#include <cstdio>
#include <map>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/ops/maintain.h"
#include "lib/store/repack.h"

namespace zipnn::cmd {

namespace {

struct RepackArgs {
  std::vector<std::string> paths;
  uint32_t base_interval = 0;  // 0: from .zipnn.yaml
  int max_chain = -1;          // -1: from .zipnn.yaml, or base_interval - 1
  int threads = 0;
};

std::string Form(const store::StoredInfo& info) {
  return info.delta ? "delta (chain " + std::to_string(info.depth) + ")" : "base";
}

// Repacks one series; returns how many versions it left as they were.
Result<size_t> RepackOne(const store::Store& store, const std::string& name,
                         const std::vector<store::Version>& versions) {
  size_t rewritten = 0, failed = 0, missing = 0, bases = 0;
  int chain_before = 0, chain_after = 0;
  uint64_t before = 0, after = 0;
  std::printf("%s: %zu version%s\n", name.c_str(), versions.size(), versions.size() == 1 ? "" : "s");
  std::fflush(stdout);
  ZIPNN_RETURN_IF_ERROR(store::RepackSeries(store, versions, [&](const store::RepackedVersion& v) {
    const std::string label = v.version.path + " " + v.version.id.Hex().substr(0, 12);
    if (v.missing) {
      ++missing;
      return;
    }
    if (!v.error.ok()) {
      ++failed;
      std::fprintf(stderr, "error: %s: %s (left as it was)\n", label.c_str(), v.error.message().c_str());
      return;
    }
    before += v.before.object_size;
    after += v.after.object_size;
    chain_before = std::max(chain_before, v.before.depth);
    chain_after = std::max(chain_after, v.after.depth);
    if (!v.after.delta) ++bases;
    if (!v.rewritten) return;
    ++rewritten;
    std::printf("  %s: %s -> %s, %s -> %s\n", label.c_str(), Form(v.before).c_str(), Form(v.after).c_str(),
                HumanBytes(v.before.object_size).c_str(), HumanBytes(v.after.object_size).c_str());
    std::fflush(stdout);
  }));
  std::printf("  rewrote %zu; now %zu base%s, longest chain %d (was %d); stored %s -> %s", rewritten, bases,
              bases == 1 ? "" : "s", chain_after, chain_before, HumanBytes(before).c_str(), HumanBytes(after).c_str());
  if (missing > 0) std::printf("; %zu version%s not in this store", missing, missing == 1 ? "" : "s");
  std::printf("\n");
  return failed;
}

Status RunRepack(const RepackArgs& a) {
  ops::Context context;
  ZIPNN_ASSIGN_OR_RETURN(store::Store * opened, context.Store());
  store::Store& store = *opened;
  const config::Policy configured = store.policy;
  // max_chain follows the interval unless .zipnn.yaml sets another.
  if (a.base_interval > 0) store.policy = config::WithBaseInterval(store.policy, a.base_interval);
  if (a.max_chain >= 0) store.policy.max_chain = static_cast<uint32_t>(a.max_chain);
  if (a.threads > 0) store.policy.threads = a.threads;
  // Shared, as adds: a gc waits until the repack is done.
  ZIPNN_ASSIGN_OR_RETURN(store::Adding adding, store.BeginAdding("git-zipnn repack"));

  // The series to repack, by name, each with its whole history as git
  // holds it (HEAD's history and the index), so a fresh clone or a
  // fetched store repacks like the repository that stored it.
  ZIPNN_ASSIGN_OR_RETURN(const auto chosen, ops::SeriesToRepack(context, a.paths));
  const bool against_base = store.policy.delta_against == config::DeltaAgainst::kBase;
  const char* deltas = store.policy.newest == config::Newest::kWhole
                           ? (against_base ? "the newest whole, deltas of the base"
                                           : "the newest whole, deltas of the next version toward a base")
                           : (against_base ? "delta against the base" : "delta against the previous version");
  std::printf("repacking %zu series: base every %u, %s, chains of at most %u\n", chosen.size(),
              store.policy.base_interval, deltas, store.policy.max_chain);
  size_t failed = 0;
  for (const auto& [name, versions] : chosen) {
    ZIPNN_ASSIGN_OR_RETURN(size_t left, RepackOne(store, name, versions));
    failed += left;
  }
  if (a.base_interval > 0 && a.base_interval != configured.base_interval) {
    std::printf(
        "note: later adds follow base_interval %u (.zipnn.yaml, or the default); set `base_interval: %u` "
        "in .zipnn.yaml to keep this layout\n",
        configured.base_interval, a.base_interval);
  }
  if (failed > 0) {
    return Corruption(std::to_string(failed) + " version" + (failed == 1 ? " was" : "s were") +
                      " left as they were (see above; `git zipnn fsck --all` checks the store)");
  }
  return OkStatus();
}

}  // namespace

Action SetupRepack(CLI::App& sub) {
  auto a = std::make_shared<RepackArgs>();
  sub.add_option("paths", a->paths, "Tracked checkpoints whose series to repack (default: every series in history)");
  sub.add_option("--base-interval", a->base_interval, "Store every K-th version standalone (default: .zipnn.yaml)")
      ->check(CLI::Range(1u, 1000000u));
  sub.add_option("--max-chain", a->max_chain,
                 "Longest chain of deltas (default: .zipnn.yaml, or the base interval - 1)")
      ->check(CLI::Range(0, store::kMaxChainDepth));
  AddThreadsOption(sub, a->threads);
  return [a] { return RunRepack(*a); };
}

}  // namespace zipnn::cmd
