#include "lib/ops/analyze.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "lib/access/versions.h"
#include "lib/base/progress.h"
#include "lib/codec/thin.h"
#include "lib/git/git.h"
#include "lib/git/series_versions.h"
#include "lib/ops/held.h"
#include "lib/series/series.h"

namespace zipnn::ops {

namespace {

// The precisions of --thin: nullopt when none is given (the analysis
// chooses by the float types), empty for "none".
Result<std::optional<std::vector<codec::Precision>>> ThinningPrecisions(const std::vector<std::string>& given) {
  if (given.empty()) return std::optional<std::vector<codec::Precision>>();
  std::vector<codec::Precision> precisions;
  for (const std::string& text : given) {
    if (text == "none") {
      if (given.size() > 1) return InvalidArgument("--thin none cannot be given with other precisions");
      break;
    }
    Result<codec::Precision> p = codec::ParsePrecision(text);
    if (!p.ok()) return Annotate(p.status(), "--thin");
    precisions.push_back(*p);
  }
  return std::optional<std::vector<codec::Precision>>(precisions);
}

// A checkpoint still to be read: where it is, and what to call it.
using Pending = git::VersionToRead;

// Files on disk in the order of their series: the versions of one series
// by step (the shell gives checkpoint-100 before checkpoint-20). Files of
// several series (two shards, two models, two layouts) are not versions
// of one another: refused, naming the series, unless `as_given`, which
// keeps the order given.
Result<std::vector<Pending>> FilesInOrder(const series::Rules& rules, const std::vector<std::string>& given,
                                          bool as_given) {
  // Placed and labelled by where they are, whatever way they were named
  // ("model.safetensors" beside "../checkpoint-80/model.safetensors").
  std::vector<std::string> paths = given;
  std::map<std::string, std::string> where;
  for (const std::string& p : paths) where[p] = std::filesystem::absolute(p).lexically_normal().string();
  std::vector<std::string> names;
  for (const std::string& p : paths) {
    const std::string name = rules.Place(where[p]).name;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  if (names.size() > 1 && !as_given) {
    // Named from the current folder, as the files were given.
    const std::string here = std::filesystem::current_path().string() + "/";
    std::string listed;
    for (size_t i = 0; i < names.size() && i < 3; ++i) {
      const std::string& name = names[i];
      listed += (i ? ", " : "") + (name.rfind(here, 0) == 0 ? name.substr(here.size()) : name);
    }
    if (names.size() > 3) listed += " and " + std::to_string(names.size() - 3) + " more";
    return InvalidArgument(
        "these " + std::to_string(paths.size()) + " files are not versions of one checkpoint: they " + "make " +
        std::to_string(names.size()) + " series (" + listed +
        "), and a shard or another model compared with the one before is no change of " +
        "weights; analyze one series at a time, or pass --as-given to compare them in the " + "order given");
  }
  if (names.size() == 1) {
    std::stable_sort(paths.begin(), paths.end(), [&](const std::string& x, const std::string& y) {
      return series::SeriesLess(rules.Place(where[x]), rules.Place(where[y]));
    });
  }
  std::vector<std::string> full;
  for (const std::string& p : paths) full.push_back(where[p]);
  const std::vector<std::string> labels = series::Labels(rules, full);
  std::vector<Pending> pending;
  for (size_t i = 0; i < paths.size(); ++i) pending.push_back(Pending{labels[i], paths[i], "", "", paths[i]});
  return pending;
}

// The versions of a tracked path to analyse, oldest first (lib/git).
Result<std::vector<Pending>> VersionsInGit(const store::Store& store, const std::string& given,
                                           const std::string& range) {
  ZIPNN_ASSIGN_OR_RETURN(const std::string path, git::TrackedPath(given));
  ZIPNN_ASSIGN_OR_RETURN(series::Rules rules, series::Rules::WithPatterns(store.policy.series));
  return git::VersionsToAnalyze(rules, path, range);
}

}  // namespace

bool OnDisk(const AnalyzeRequest& a) {
  if (a.paths.size() != 1) return true;
  return !git::TrackedPath(a.paths[0]).ok();
}

Result<AnalyzeResult> Analyze(Context& context, const AnalyzeRequest& a, const OnLeftOut& left_out) {
  if (a.against != "previous" && a.against != "base") {
    return InvalidArgument("--against must be 'previous' or 'base', not '" + a.against + "'");
  }
  analyze::Options options;
  options.against = a.against == "base" ? config::DeltaAgainst::kBase : config::DeltaAgainst::kPrevious;
  ZIPNN_ASSIGN_OR_RETURN(options.select, analyze::TensorsMatching(a.tensors, a.tensors_regex));
  options.filter_text = a.tensors.empty() ? a.tensors_regex : a.tensors;
  options.histogram_at = a.at;
  ZIPNN_ASSIGN_OR_RETURN(options.thinning, ThinningPrecisions(a.thin));

  const bool on_disk = OnDisk(a);
  store::Store* store = nullptr;  // the versions are read from it (a tracked checkpoint)
  std::vector<Pending> pending;
  if (on_disk) {
    if (!a.rev.empty()) return InvalidArgument("--rev needs one tracked checkpoint, not files on disk");
    // In a repository, its .zipnn.yaml is the policy the what-if marks,
    // and its series patterns order the files.
    series::Rules rules;
    if (auto opened = context.Store(); opened.ok()) {
      options.policy = (*opened)->policy;
      if (auto with = series::Rules::WithPatterns((*opened)->policy.series); with.ok()) rules = *with;
    }
    ZIPNN_ASSIGN_OR_RETURN(pending, FilesInOrder(rules, a.paths, a.as_given));
  } else {
    ZIPNN_ASSIGN_OR_RETURN(store, context.Store());
    options.policy = store->policy;
    ZIPNN_ASSIGN_OR_RETURN(pending, VersionsInGit(*store, a.paths[0], a.rev));
    if (pending.empty()) return NotFound(a.paths[0] + " has no versions in " + (a.rev.empty() ? "HEAD" : a.rev));
  }
  if (a.threads > 0) options.policy.threads = a.threads;
  options.base_interval = a.base_interval > 0 ? a.base_interval : options.policy.base_interval;

  analyze::Analyzer analyzer(options);
  {
    Progress progress("git-zipnn analyze", pending.size(), Progress::Unit::kItems);
    for (size_t i = 0; i < pending.size(); ++i) {
      const Pending& p = pending[i];
      progress.Update(p.label, i);
      Result<formats::Checkpoint> opened = store != nullptr
                                               ? access::Versions(*store, access::Copies::kAll).OpenAt(p.rev, p.path)
                                               : CheckpointInFile(context, p.path);
      if (opened.status().code() == StatusCode::kRemoved) {
        // Retention thinned or dropped it: the trajectory goes on without it.
        const std::string why = opened.status().message();
        // Its own words from "version ...", without the hint of a reader's flag.
        const size_t version = why.find("version "), start = version == std::string::npos ? 0 : version;
        const size_t hint = why.find(" (--approximate");
        left_out(p.label, why.substr(start, hint == std::string::npos ? std::string::npos : hint - start));
        continue;
      }
      ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint checkpoint, WithLayout(std::move(opened)));
      ZIPNN_RETURN_IF_ERROR(analyzer.Add(
          std::make_shared<analyze::Input>(analyze::Input{p.label, p.source, p.subject, std::move(checkpoint)})));
    }
  }
  return AnalyzeResult{analyzer.Finish(), on_disk};
}

}  // namespace zipnn::ops
