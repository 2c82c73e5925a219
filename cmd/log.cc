// git zipnn log: how each version of tracked checkpoints is stored.
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/git/discover.h"
#include "lib/git/git.h"
#include "lib/git/pointers.h"
#include "lib/git/repository.h"

namespace zipnn::cmd {

namespace {

struct LogArgs {
  std::vector<std::string> paths;
  bool json = false;
};

Status RunLog(const LogArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(store::Repository repo, OpenRepository());
  ZIPNN_ASSIGN_OR_RETURN(git::Repository git_repo, git::Repository::Discover());
  std::vector<std::string> paths;
  if (a.paths.empty()) {
    ZIPNN_ASSIGN_OR_RETURN(paths, git::TrackedPaths());
  } else {
    for (const std::string& p : a.paths) {
      ZIPNN_ASSIGN_OR_RETURN(std::string full, git::TrackedPath(p));
      paths.push_back(std::move(full));
    }
  }
  ZIPNN_ASSIGN_OR_RETURN(git::PathHistory history, git::PathHistory::Of(git_repo));
  // Each object is described once.
  std::map<ContentId, Result<store::StoredInfo>> described;
  // Why each base is one, from its place in its series (read on demand).
  std::unique_ptr<git::SeriesVersions> series;
  std::map<ContentId, std::string> why;
  auto why_base = [&](const std::string& path, const ContentId& id) -> std::string {
    auto known = why.find(id);
    if (known != why.end()) return known->second;
    if (!series) {
      auto opened = git::OpenSeries(repo);
      if (!opened.ok()) return "";
      series = std::move(*opened);
    }
    return why.emplace(id, git::WhyBase(repo, *series, path, id)).first->second;
  };

  nlohmann::ordered_json versions = nlohmann::ordered_json::array();
  for (const std::string& path : paths) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<git::PathVersion> path_versions, history.Versions(path));
    uint64_t raw_total = 0, stored_total = 0;
    std::set<std::string> counted;
    if (!a.json) std::printf("%s\n", path.c_str());
    for (const git::PathVersion& v : path_versions) {
      const git::CommitInfo& c = *v.commit;
      const store::Pointer& pointer = v.pointer;
      auto described_at = described.find(pointer.id);
      if (described_at == described.end()) {
        described_at = described.emplace(pointer.id, store::Describe(repo, pointer.id)).first;
      }
      const Result<store::StoredInfo>& info = described_at->second;
      const std::string kind = !info.ok() ? "missing" : info->delta ? "delta" : "base";
      const uint64_t stored = info.ok() ? info->object_size : 0;
      if (counted.insert(pointer.id.Hex()).second) {
        raw_total += pointer.size;
        stored_total += stored;
      }
      const std::string commit = c.id.Hex();
      const std::string reason = kind == "base" ? why_base(path, pointer.id) : "";
      if (a.json) {
        versions.push_back({{"path", path},
                            {"commit", commit},
                            {"date", c.author_date},
                            {"subject", c.subject},
                            {"id", pointer.id.Hex()},
                            {"kind", kind},
                            {"base", info.ok() && info->delta ? nlohmann::ordered_json(info->base.Hex()) : nullptr},
                            {"base_reason", reason.empty() ? nullptr : nlohmann::ordered_json(reason)},
                            {"depth", info.ok() ? info->depth : -1},
                            {"raw_bytes", pointer.size},
                            {"stored_bytes", stored}});
      } else {
        std::printf("  %.10s %.10s  %-5s depth %-3d %10s -> %10s %8s  %s%s\n", commit.c_str(), c.author_date.c_str(),
                    kind.c_str(), info.ok() ? info->depth : -1, HumanBytes(pointer.size).c_str(),
                    HumanBytes(stored).c_str(), Percent(stored, pointer.size).c_str(), c.subject.c_str(),
                    reason.empty() ? "" : ("  [" + reason + "]").c_str());
      }
    }
    if (!a.json) {
      std::printf("  total: %s raw in %zu version%s -> %s stored (%s)\n", HumanBytes(raw_total).c_str(),
                  counted.size(), counted.size() == 1 ? "" : "s", HumanBytes(stored_total).c_str(),
                  Percent(stored_total, raw_total).c_str());
    }
  }
  // Names and subjects that are not UTF-8 print with replacement
  // characters rather than as invalid JSON.
  if (a.json) std::printf("%s\n", versions.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  return OkStatus();
}

}  // namespace

Action SetupLog(CLI::App& sub) {
  auto a = std::make_shared<LogArgs>();
  sub.add_option("paths", a->paths, "Tracked checkpoints (default: every one in the index)");
  sub.add_flag("--json", a->json, "One JSON array of versions instead of the table");
  return [a] { return RunLog(*a); };
}

}  // namespace zipnn::cmd
