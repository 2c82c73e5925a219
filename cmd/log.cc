// git zipnn log: how each version of tracked checkpoints is stored.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/store/retention.h"
#include "lib/base/strings.h"
#include "lib/git/discover.h"
#include "lib/git/git.h"
#include "lib/git/pointers.h"
#include "lib/git/repository.h"
#include "lib/git/series_versions.h"
#include "lib/series/series.h"
#include "lib/store/parents.h"

namespace zipnn::cmd {

namespace {

struct LogArgs {
  std::vector<std::string> paths;
  bool json = false;
  bool series = false;
};

// The tracked checkpoints to list: every one in the index, or those the
// arguments name (a file, or the checkpoints in a folder), in the order of
// their series and steps (checkpoint-20 before checkpoint-100).
// With `whole_series`, every path the series of each given checkpoint has
// had in HEAD's history or the index (checkpoint-N folders a trainer has
// deleted since included).
Result<std::vector<std::string>> PathsToList(const store::Store& repo, const std::vector<std::string>& given,
                                             bool whole_series) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> tracked, git::TrackedPaths());
  std::vector<std::string> paths;
  if (given.empty()) {
    paths = tracked;
  } else if (whole_series) {
    ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<git::SeriesVersions> series, git::OpenSeries(repo));
    for (const std::string& p : given) {
      ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> named, git::FilesNamed(p));
      for (const std::string& path : named) {
        ZIPNN_ASSIGN_OR_RETURN(std::vector<store::Version> versions,
                               series->Of(series->rules().Place(path).name, /*deep=*/true));
        for (const store::Version& v : versions) paths.push_back(v.path);
      }
    }
  } else {
    const std::set<std::string> checkpoints(tracked.begin(), tracked.end());
    for (const std::string& p : given) {
      ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> named, git::FilesNamed(p));
      for (std::string& path : named) {
        // A file named alone is listed whatever it is; of a folder, its
        // checkpoints.
        if (named.size() == 1 || checkpoints.count(path) != 0) paths.push_back(std::move(path));
      }
    }
  }
  ZIPNN_ASSIGN_OR_RETURN(const series::Rules rules, series::Rules::WithPatterns(repo.policy.series));
  // Newest first, as git log lists: the files of each series from the
  // last step back, as each path's versions are.
  std::vector<std::string> ordered = series::InSeriesOrder(rules, paths);
  for (auto from = ordered.begin(); from != ordered.end();) {
    const std::string name = rules.Place(*from).name;
    auto to = std::find_if(from, ordered.end(), [&](const std::string& p) { return rules.Place(p).name != name; });
    std::reverse(from, to);
    from = to;
  }
  return ordered;
}

// Where a checkpoint's bytes were first committed: a later version with
// the same bytes (an unchanged rng_state.pth or training_args.bin in every
// checkpoint folder) is stored once, as that one.
struct FirstHeld {
  std::string path;
  const git::CommitInfo* commit = nullptr;
};

Status RunLog(const LogArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
  ZIPNN_ASSIGN_OR_RETURN(git::Repository git_repo, git::Repository::Discover());
  ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> paths, PathsToList(repo, a.paths, a.series));
  ZIPNN_ASSIGN_OR_RETURN(git::PathHistory history, git::PathHistory::Of(git_repo));
  // Each object is described once.
  std::map<ContentId, HeldVersion> described;
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
  // Where a delta's parent in another series is, and why it was taken.
  auto parent_of = [&](const store::StoredInfo& info) -> std::string {
    if (info.choice == container::BaseChoice::kSeries) return "";
    if (!series) {
      auto opened = git::OpenSeries(repo);
      if (!opened.ok()) return store::BaseChoiceText(info.choice);
      series = std::move(*opened);
    }
    return git::ParentNote(*series, info.choice, info.base);
  };

  // Every listed version, read first: each content's first commit is
  // known before any row is printed (rows go newest first).
  std::vector<std::pair<std::string, std::vector<git::PathVersion>>> listed;
  std::map<ContentId, FirstHeld> first;
  for (const std::string& path : paths) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<git::PathVersion> path_versions, history.Versions(path));
    for (const git::PathVersion& v : path_versions) {
      FirstHeld& f = first[v.pointer.id];
      // Listed newest first: of equal times (one second), the last seen.
      if (f.commit == nullptr || v.commit->time <= f.commit->time) f = FirstHeld{path, v.commit};
    }
    listed.emplace_back(path, std::move(path_versions));
  }

  nlohmann::ordered_json versions = nlohmann::ordered_json::array();
  // Over every path: each object counted once.
  std::set<ContentId> all_objects;
  uint64_t all_raw = 0, all_stored = 0;
  size_t all_versions = 0, unreadable = 0;
  for (const auto& [path, path_versions] : listed) {
    uint64_t raw_total = 0, stored_total = 0;
    std::set<std::string> counted;
    if (!a.json) std::printf("%s\n", path.c_str());
    for (const git::PathVersion& v : path_versions) {
      const git::CommitInfo& c = *v.commit;
      const store::Pointer& pointer = v.pointer;
      auto described_at = described.find(pointer.id);
      if (described_at == described.end()) {
        described_at = described.emplace(pointer.id, DescribeHeld(repo, pointer.id)).first;
      }
      const HeldVersion& held = described_at->second;
      const Result<store::StoredInfo>& info = held.info;
      const std::optional<store::Retained>& retained = held.retained;
      const std::string& kind = held.kind;
      // A later version whose bytes were committed before: stored once,
      // counted and described where they first were.
      const FirstHeld& home = first.at(pointer.id);
      const bool same = home.path != path || home.commit != v.commit;
      const uint64_t stored = info.ok() && !same ? info->object_size : 0;
      if (counted.insert(pointer.id.Hex()).second) raw_total += pointer.size;
      stored_total += stored;  // at the row where the bytes were first
      ++all_versions;
      unreadable += info.ok() || retained ? 0 : 1;
      if (all_objects.insert(pointer.id).second) {
        all_raw += pointer.size;
        all_stored += info.ok() ? info->object_size : 0;
      }
      const std::string commit = c.id.Hex();
      const std::string same_as = home.path + " at " + home.commit->id.Hex().substr(0, 10);
      const std::string reason = same             ? "stored once: the bytes of " + same_as
                                 : retained       ? retained->Describe()
                                 : kind == "base"  ? why_base(path, pointer.id)
                                 : kind == "delta" ? parent_of(*info)
                                                   : "";
      if (a.json) {
        versions.push_back({{"path", path},
                            {"commit", commit},
                            {"date", c.author_date},
                            {"subject", c.subject},
                            {"id", pointer.id.Hex()},
                            {"kind", kind},
                            {"base", info.ok() && info->delta ? nlohmann::ordered_json(info->base.Hex()) : nullptr},
                            {"same_as", same ? nlohmann::ordered_json({{"path", home.path},
                                                                        {"commit", home.commit->id.Hex()}})
                                             : nullptr},
                            {"base_reason", same || reason.empty() || kind != "base" ? nullptr
                                                                                     : nlohmann::ordered_json(reason)},
                            {"retention", retained && !same ? nlohmann::ordered_json(reason) : nullptr},
                            {"parent", same || reason.empty() || kind != "delta" ? nullptr
                                                                                 : nlohmann::ordered_json(reason)},
                            {"depth", info.ok() ? info->depth : -1},
                            {"raw_bytes", pointer.size},
                            {"stored_bytes", stored}});
      } else {
        // Not in this store (not fetched, or lost): no depth or size to show.
        const bool shown = info.ok() && !same;
        std::printf("  %.10s %.10s  %-5s depth %-3s %10s -> %10s %8s  %s%s\n", commit.c_str(), c.author_date.c_str(),
                    same ? "same" : kind.c_str(), shown ? std::to_string(info->depth).c_str() : "-",
                    HumanBytes(pointer.size).c_str(), shown ? HumanBytes(stored).c_str() : same ? "0 B" : "-",
                    shown ? Percent(stored, pointer.size).c_str() : "-", c.subject.c_str(),
                    reason.empty() ? "" : ("  [" + reason + "]").c_str());
      }
    }
    if (!a.json && counted.size() > 1) {  // one version's row says it all
      std::printf("  total: %s raw in %zu version%s -> %s stored (%s)\n", HumanBytes(raw_total).c_str(), counted.size(),
                  counted.size() == 1 ? "" : "s", HumanBytes(stored_total).c_str(),
                  Percent(stored_total, raw_total).c_str());
    }
  }
  // Names and subjects that are not UTF-8 print with replacement
  // characters rather than as invalid JSON.
  if (a.json) {
    std::printf("%s\n", versions.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    return OkStatus();
  }
  if (paths.size() > 1) {
    // Chains: the distinct bases the listed versions rest on, and the
    // longest run of deltas above one.
    std::set<ContentId> bases;
    int longest = 0;
    for (const ContentId& id : all_objects) {
      const Result<store::StoredInfo>& info = described.at(id).info;
      if (!info.ok()) continue;
      bases.insert(info->last_base);
      longest = std::max(longest, info->depth);
    }
    std::printf("all: %s, %s: %s raw -> %s stored (%s) in %s; %s, the longest %s\n",
                Counted(paths.size(), "checkpoint").c_str(), Counted(all_versions, "version").c_str(),
                HumanBytes(all_raw).c_str(), HumanBytes(all_stored).c_str(), Percent(all_stored, all_raw).c_str(),
                Counted(all_objects.size(), "object").c_str(), Counted(bases.size(), "chain").c_str(),
                Counted(longest, "delta").c_str());
  }
  if (unreadable > 0) {
    std::printf("%s not in this store or not readable (a clone fetches what it checks out: `git zipnn fetch --all` "
                "gets the rest); `git zipnn fsck --all` says which and whether the remote has them\n",
                Counted(unreadable, "version").c_str());
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
