// git zipnn log: how each version of tracked checkpoints is stored
// (lib/ops/log.h); this file parses and prints.
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/strings.h"
#include "lib/ops/log.h"

namespace zipnn::cmd {

namespace {

struct LogArgs {
  std::vector<std::string> paths;
  bool json = false;
  bool series = false;
};

// A delta's tensors that are its parent's bytes under other names, and
// those it takes from the versions it references, or null.
nlohmann::ordered_json SharedJson(const ops::LogRow& row) {
  if (row.same || row.shared.empty()) return nullptr;
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const ops::SharedTensor& t : row.shared) {
    tensors.push_back({{"name", t.name},
                       {"parent_name", t.base_name},
                       {"bytes", t.bytes},
                       {"from", t.from ? nlohmann::ordered_json(t.from->Hex()) : nlohmann::ordered_json(nullptr)}});
  }
  return tensors;
}

nlohmann::ordered_json JsonRow(const std::string& path, const ops::LogRow& row) {
  const Result<store::StoredInfo>& info = row.held.info;
  const std::string& kind = row.held.kind;
  const std::string& reason = row.reason;
  return {{"path", path},
          {"commit", row.commit},
          {"date", row.author_date},
          {"subject", row.subject},
          {"id", row.pointer.id.Hex()},
          {"kind", kind},
          {"base", info.ok() && info->delta ? nlohmann::ordered_json(info->base.Hex()) : nullptr},
          {"same_as", row.same ? nlohmann::ordered_json({{"path", row.same_path}, {"commit", row.same_commit}})
                               : nullptr},
          {"base_reason", row.same || reason.empty() || kind != "base" ? nullptr : nlohmann::ordered_json(reason)},
          {"retention", row.held.retained && !row.same ? nlohmann::ordered_json(reason) : nullptr},
          {"parent", row.same || reason.empty() || kind != "delta" ? nullptr : nlohmann::ordered_json(reason)},
          {"shared", SharedJson(row)},
          {"depth", info.ok() ? info->depth : -1},
          {"raw_bytes", row.pointer.size},
          {"stored_bytes", row.stored}};
}

void PrintRow(const ops::LogRow& row) {
  const Result<store::StoredInfo>& info = row.held.info;
  // Not in this store (not fetched, or lost): no depth or size to show.
  const bool shown = info.ok() && !row.same;
  std::printf("  %.10s %.10s  %-5s depth %-3s %10s -> %10s %8s  %s%s\n", row.commit.c_str(), row.author_date.c_str(),
              row.same ? "same" : row.held.kind.c_str(), shown ? std::to_string(info->depth).c_str() : "-",
              HumanBytes(row.pointer.size).c_str(), shown ? HumanBytes(row.stored).c_str() : row.same ? "0 B" : "-",
              shown ? Percent(row.stored, row.pointer.size).c_str() : "-", row.subject.c_str(),
              row.reason.empty() ? "" : ("  [" + row.reason + "]").c_str());
}

Status RunLog(const LogArgs& a) {
  ops::Context context;
  ZIPNN_ASSIGN_OR_RETURN(const ops::LogResult log, ops::Log(context, ops::LogRequest{a.paths, a.series}));
  if (a.json) {
    nlohmann::ordered_json versions = nlohmann::ordered_json::array();
    for (const ops::LogPath& p : log.paths) {
      for (const ops::LogRow& row : p.rows) versions.push_back(JsonRow(p.path, row));
    }
    // Names and subjects that are not UTF-8 print with replacement
    // characters rather than as invalid JSON.
    std::printf("%s\n", versions.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    return OkStatus();
  }
  for (const ops::LogPath& p : log.paths) {
    std::printf("%s\n", p.path.c_str());
    for (const ops::LogRow& row : p.rows) PrintRow(row);
    if (p.versions > 1) {  // one version's row says it all
      const std::string which =
          p.held == p.versions
              ? Counted(p.versions, "version")
              : std::to_string(p.held) + " of its " + std::to_string(p.versions) + " versions (those in this store)";
      std::printf("  total: %s raw in %s -> %s stored (%s)\n", HumanBytes(p.raw_total).c_str(), which.c_str(),
                  HumanBytes(p.stored_total).c_str(), Percent(p.stored_total, p.raw_total).c_str());
    }
  }
  if (log.paths.size() > 1) {
    std::printf("all: %s, %s: %s raw -> %s stored (%s) in %s; %s, the longest %s\n",
                Counted(log.paths.size(), "checkpoint").c_str(), Counted(log.versions, "version").c_str(),
                HumanBytes(log.raw).c_str(), HumanBytes(log.stored).c_str(), Percent(log.stored, log.raw).c_str(),
                Counted(log.objects, "object").c_str(), Counted(log.chains, "chain").c_str(),
                Counted(log.longest, "delta").c_str());
  }
  if (log.unreadable > 0) {
    std::printf(
        "%s not in this store or not readable (a clone fetches what it checks out: `git zipnn fetch --all` "
        "gets the rest; the totals above count only what is here); `git zipnn fsck --all` says which and "
        "whether the remote has them\n",
        Counted(log.unreadable, "version").c_str());
  }
  return OkStatus();
}

}  // namespace

Action SetupLog(CLI::App& sub) {
  auto a = std::make_shared<LogArgs>();
  sub.add_option("paths", a->paths, "Tracked checkpoints (default: every one in the index)");
  sub.add_flag("--json", a->json, "One JSON array of versions instead of the table");
  sub.add_flag("--series", a->series,
               "Every checkpoint of the series of each path given (checkpoint-N folders, step files), deleted "
               "ones included");
  return [a] { return RunLog(*a); };
}

}  // namespace zipnn::cmd
