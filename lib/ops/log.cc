#include "lib/ops/log.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "lib/base/closest.h"
#include "lib/base/progress.h"
#include "lib/base/strings.h"
#include "lib/git/git.h"
#include "lib/git/pointers.h"
#include "lib/git/repository.h"
#include "lib/git/series_versions.h"
#include "lib/git/setup.h"
#include "lib/series/series.h"

namespace zipnn::ops {

namespace {

// The files `given` (from the current folder) names: one git holds, or a
// folder of them; else, when git holds none there any more (a checkpoint
// deleted since, a checkpoint-N folder a trainer removed), the paths of
// HEAD's history it names, with `in_history` set.
Result<std::vector<std::string>> NamedNowOrBefore(Context& context, const std::string& given, bool& in_history) {
  in_history = false;
  Result<std::vector<std::string>> named = git::FilesNamed(given);
  if (named.ok() || named.status().code() != StatusCode::kNotFound) return named;
  ZIPNN_ASSIGN_OR_RETURN(git::SeriesVersions * series, context.Series());
  ZIPNN_ASSIGN_OR_RETURN(std::string path, git::PatternFromHere(given));
  while (path.rfind("./", 0) == 0) path.erase(0, 2);
  while (!path.empty() && path.back() == '/') path.pop_back();
  ZIPNN_ASSIGN_OR_RETURN(const auto all, series->All());
  std::set<std::string> found, every;
  for (const auto& [name, versions] : all) {
    for (const store::Version& v : versions) {
      every.insert(v.path);
      if (v.path == path || (!path.empty() && v.path.rfind(path + "/", 0) == 0)) found.insert(v.path);
    }
  }
  if (found.empty()) {
    const std::vector<std::string> close = ClosestWords(path, std::vector<std::string>(every.begin(), every.end()));
    return NotFound("'" + given +
                    "' names no checkpoint that git holds here or held in HEAD's history, nor a folder "
                    "of them" +
                    (close.empty() ? "" : " (did you mean " + Alternatives(close) + "?)"));
  }
  in_history = true;
  return std::vector<std::string>(found.begin(), found.end());
}

// The tracked checkpoints to list: every one in the index, or those the
// arguments name (a file, or the checkpoints in a folder), in the order of
// their series and steps (checkpoint-20 before checkpoint-100).
// With `whole_series`, every path the series of each given checkpoint has
// had in HEAD's history or the index (checkpoint-N folders a trainer has
// deleted since included).
Result<std::vector<std::string>> PathsToList(Context& context, const store::Store& store,
                                             const std::vector<std::string>& given, bool whole_series) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> tracked, git::TrackedPaths());
  std::vector<std::string> paths;
  if (given.empty()) {
    paths = tracked;
  } else if (whole_series) {
    ZIPNN_ASSIGN_OR_RETURN(git::SeriesVersions * series, context.Series());
    for (const std::string& p : given) {
      bool in_history = false;
      ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> named, NamedNowOrBefore(context, p, in_history));
      for (const std::string& path : named) {
        ZIPNN_ASSIGN_OR_RETURN(std::vector<store::Version> versions,
                               series->Of(series->rules().Place(path).name, /*deep=*/true));
        for (const store::Version& v : versions) paths.push_back(v.path);
      }
    }
  } else {
    const std::set<std::string> checkpoints(tracked.begin(), tracked.end());
    for (const std::string& p : given) {
      bool in_history = false;
      ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> named, NamedNowOrBefore(context, p, in_history));
      for (std::string& path : named) {
        // A file named alone is listed whatever it is; of a folder, its
        // checkpoints (those of history are all checkpoints).
        if (named.size() == 1 || in_history || checkpoints.count(path) != 0) paths.push_back(std::move(path));
      }
    }
  }
  ZIPNN_ASSIGN_OR_RETURN(const series::Rules rules, series::Rules::WithPatterns(store.policy.series));
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

}  // namespace

Result<LogResult> Log(Context& context, const LogRequest& request) {
  ZIPNN_ASSIGN_OR_RETURN(store::Store * store, context.Store());
  ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
  ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> paths,
                         PathsToList(context, *store, request.paths, request.whole_series));
  ZIPNN_ASSIGN_OR_RETURN(git::PathHistory history, git::PathHistory::Of(*git_repo));
  // Each object is described once.
  std::map<ContentId, HeldVersion> described;
  // Why each base is one, from its place in its series (read on demand).
  std::map<ContentId, std::string> why;
  auto why_base = [&](const std::string& path, const ContentId& id) -> std::string {
    auto known = why.find(id);
    if (known != why.end()) return known->second;
    return why.emplace(id, WhyBase(context, path, id)).first->second;
  };
  // Versions read by parts here, never fetched: log shows what is here.
  const access::Versions local(*store, access::Options{/*fetch=*/false});
  // Where a delta's parent in another series is, and why it was taken;
  // for one holding its tensors under other names, how many of them.
  auto parent_of = [&](const store::StoredInfo& info, LogRow& row) -> std::string {
    if (info.choice == container::BaseChoice::kSeries) return "";
    std::string detail;
    if (info.choice == container::BaseChoice::kShared || !info.references.empty()) {
      if (auto shared = SharedWithBase(local, row.pointer.id); shared.ok()) {
        if (!shared->tensors.empty()) {
          detail = std::to_string(shared->tensors.size()) + " of its " + std::to_string(shared->of) + " tensors" +
                   UnderOtherNames(shared->tensors) + ", " + HumanBytes(BytesOf(shared->tensors));
        }
        if (!shared->references.empty()) {
          // The versions it references: how much it took from them.
          std::string from;
          for (size_t k = 0; k < shared->references.size(); ++k) {
            from += (k == 0                               ? ""
                     : k + 1 == shared->references.size() ? " and "
                                                          : ", ") +
                    WhereHeld(context, shared->references[k].id);
          }
          detail += (detail.empty() ? "" : "; ") + std::to_string(shared->ReferencedTensors()) +
                    (detail.empty() ? " of its " + std::to_string(shared->of) + " tensors" : " more") + ", " +
                    HumanBytes(shared->ReferencedBytes()) + ", from " + from;
        }
        row.shared = std::move(shared->tensors);
        for (SharedWith::Referenced& r : shared->references) {
          row.shared.insert(row.shared.end(), r.tensors.begin(), r.tensors.end());
        }
      }
    }
    return ParentNote(context, info.choice, info.base, detail);
  };

  // Every listed version, read first: each content's first commit is
  // known before any row is made (rows go newest first).
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

  LogResult result;
  // Over every path: each object counted once.
  std::set<ContentId> all_objects;
  for (const auto& [path, path_versions] : listed) {
    LogPath& out = result.paths.emplace_back();
    out.path = path;
    std::set<std::string> counted;
    for (const git::PathVersion& v : path_versions) {
      const git::CommitInfo& c = *v.commit;
      const store::Pointer& pointer = v.pointer;
      auto described_at = described.find(pointer.id);
      if (described_at == described.end()) {
        described_at = described.emplace(pointer.id, DescribeHeld(*store, pointer.id)).first;
      }
      LogRow row{c.id.Hex(), c.author_date, c.subject, pointer, described_at->second};
      const Result<store::StoredInfo>& info = row.held.info;
      const std::optional<store::Retained>& retained = row.held.retained;
      const std::string& kind = row.held.kind;
      const FirstHeld& home = first.at(pointer.id);
      row.same = home.path != path || home.commit != v.commit;
      row.same_path = home.path;
      row.same_commit = home.commit->id.Hex();
      row.stored = info.ok() && !row.same ? info->object_size : 0;
      if (counted.insert(pointer.id.Hex()).second && info.ok()) {
        out.raw_total += pointer.size;
        ++out.held;
      }
      out.stored_total += row.stored;  // at the row where the bytes were first
      ++result.versions;
      result.unreadable += info.ok() || retained ? 0 : 1;
      if (all_objects.insert(pointer.id).second && info.ok()) {
        result.raw += pointer.size;
        result.stored += info->object_size;
        ++result.objects;
      }
      const std::string same_as = home.path + " at " + row.same_commit.substr(0, 10);
      row.reason = row.same            ? "stored once: the bytes of " + same_as
                   : retained          ? retained->Describe()
                   : kind == "base"    ? why_base(path, pointer.id)
                   : kind == "delta"   ? parent_of(*info, row)
                                       : "";
      out.rows.push_back(std::move(row));
    }
    out.versions = counted.size();
  }
  // Chains: the distinct bases the listed versions rest on, and the
  // longest run of deltas above one.
  std::set<ContentId> bases;
  for (const ContentId& id : all_objects) {
    const Result<store::StoredInfo>& info = described.at(id).info;
    if (!info.ok()) continue;
    bases.insert(info->last_base);
    result.longest = std::max(result.longest, info->depth);
  }
  result.chains = bases.size();
  return result;
}

}  // namespace zipnn::ops
