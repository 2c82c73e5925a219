// git zipnn analyze: how the weights moved over a trajectory of
// checkpoints (files on disk, the history of a tracked checkpoint, or a
// step-numbered series in git), and what each coder and storage policy
// would store for it.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/access/versions.h"
#include "lib/base/strings.h"
#include "lib/codec/thin.h"
#include "lib/analyze/analysis.h"
#include "lib/analyze/html_report.h"
#include "lib/analyze/report.h"
#include "lib/git/git.h"
#include "lib/git/series_versions.h"
#include "lib/series/series.h"

namespace zipnn::cmd {

namespace {

struct AnalyzeArgs {
  std::vector<std::string> paths;
  std::string rev;
  std::string tensors;
  std::string tensors_regex;
  std::string against = "previous";
  uint32_t base_interval = 0;
  std::string at;
  size_t top = 20;
  std::string csv, json, html;
  bool as_given = false;
  std::vector<std::string> thin;
  int threads = 0;
};

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
    if (!p.ok()) return InvalidArgument("--thin: " + p.status().message());
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
Result<std::vector<Pending>> VersionsInGit(const std::string& given, const std::string& range) {
  ZIPNN_ASSIGN_OR_RETURN(const std::string path, git::TrackedPath(given));
  ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
  ZIPNN_ASSIGN_OR_RETURN(series::Rules rules, series::Rules::WithPatterns(repo.policy.series));
  return git::VersionsToAnalyze(rules, path, range);
}

// Whether the arguments name files on disk (analysed in the order given)
// rather than one tracked checkpoint.
bool OnDisk(const AnalyzeArgs& a) {
  if (a.paths.size() != 1) return true;
  return !git::TrackedPath(a.paths[0]).ok();
}

Status RunAnalyze(const AnalyzeArgs& a) {
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
  std::optional<store::Store> repo;
  std::vector<Pending> pending;
  if (on_disk) {
    if (!a.rev.empty()) return InvalidArgument("--rev needs one tracked checkpoint, not files on disk");
    // In a repository, its .zipnn.yaml is the policy the what-if marks,
    // and its series patterns order the files.
    series::Rules rules;
    if (auto opened = OpenRepository(); opened.ok()) {
      options.policy = opened->policy;
      if (auto with = series::Rules::WithPatterns(opened->policy.series); with.ok()) rules = *with;
    }
    ZIPNN_ASSIGN_OR_RETURN(pending, FilesInOrder(rules, a.paths, a.as_given));
  } else {
    ZIPNN_ASSIGN_OR_RETURN(repo, OpenRepository());
    options.policy = repo->policy;
    ZIPNN_ASSIGN_OR_RETURN(pending, VersionsInGit(a.paths[0], a.rev));
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
      Result<formats::Checkpoint> opened =
          repo ? access::Versions(*repo, access::Copies::kAll).OpenAt(p.rev, p.path) : CheckpointInFile(p.path);
      if (opened.status().code() == StatusCode::kRemoved) {
        // Retention thinned or dropped it: the trajectory goes on without it.
        const std::string why = opened.status().message();
        // Its own words from "version ...", without the hint of a reader's flag.
        const size_t version = why.find("version "), start = version == std::string::npos ? 0 : version;
        const size_t hint = why.find(" (--approximate");
        std::fprintf(stderr, "git-zipnn analyze: %s left out: %s\n", p.label.c_str(),
                     why.substr(start, hint == std::string::npos ? std::string::npos : hint - start).c_str());
        continue;
      }
      ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint checkpoint, WithLayout(std::move(opened)));
      ZIPNN_RETURN_IF_ERROR(analyzer.Add(
          std::make_shared<analyze::Input>(analyze::Input{p.label, p.source, p.subject, std::move(checkpoint)})));
    }
  }
  const analyze::Analysis analysis = analyzer.Finish();
  if (!a.at.empty() && !analysis.histogram_at) {
    return InvalidArgument("--at '" + a.at + "' names no checkpoint (give a label from the first column, or an index)");
  }
  std::fputs(analyze::TextReport(analysis, analyze::TextOptions{a.top}).c_str(), stdout);
  if (!a.csv.empty()) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> files, analyze::WriteCsv(analysis, a.csv));
    for (const std::string& f : files) std::printf("wrote %s\n", f.c_str());
  }
  if (!a.json.empty()) {
    ZIPNN_RETURN_IF_ERROR(analyze::WriteJson(analysis, a.json));
    std::printf("wrote %s\n", a.json.c_str());
  }
  if (!a.html.empty()) {
    const std::string title = "git-zipnn analysis of " + (on_disk ? Counted(a.paths.size(), "checkpoint") : a.paths[0]);
    const std::string page = analyze::HtmlReport(analysis, title);
    ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(a.html, /*overwrite=*/true));
    ZIPNN_RETURN_IF_ERROR(out.Append(page.data(), page.size()));
    ZIPNN_RETURN_IF_ERROR(out.CommitUnsynced());
    std::printf("wrote %s\n", a.html.c_str());
  }
  return OkStatus();
}

}  // namespace

Action SetupAnalyze(CLI::App& sub) {
  auto a = std::make_shared<AnalyzeArgs>();
  sub.add_option("paths", a->paths,
                 "One tracked checkpoint (its history, or its step-numbered series), or checkpoint files of one "
                 "series (ordered by step)")
      ->required();
  sub.add_option("--rev", a->rev, "Revision range of the history (default HEAD; e.g. v1..main)");
  sub.add_option("--tensors", a->tensors, "Only tensors whose name matches this glob (e.g. 'blocks.*.attn.*')");
  sub.add_option("--tensors-regex", a->tensors_regex, "Only tensors whose name matches this regular expression");
  sub.add_option("--against", a->against, "Change statistics against the 'previous' checkpoint or the periodic 'base'")
      ->default_str("previous");
  sub.add_option("--base-interval", a->base_interval,
                 "Periodic base every K checkpoints (default: base_interval of .zipnn.yaml, else 7)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--at", a->at, "Checkpoint (label or index) whose exponent histograms are shown (default: the last)");
  sub.add_option("--top", a->top, "Tensors shown in the tensor table, those that moved most (0: all)")
      ->default_str("20");
  sub.add_option("--csv", a->csv, "Also write the tables as CSV: FILE and FILE's .tensors/.exponents/.policies.csv");
  sub.add_option("--json", a->json, "Also write every table to one JSON file");
  sub.add_option("--html", a->html, "Also write a self-contained HTML report with charts");
  sub.add_flag("--as-given", a->as_given,
               "Compare files in the order given, even when they are not versions of one series");
  sub.add_option("--thin", a->thin,
                 "A precision of the thinning what-if ('absolute 23', 'relative 5'), repeatable; 'none' for no "
                 "thinning table (default: chosen by the float types)")
      ->allow_extra_args(false);
  AddThreadsOption(sub, a->threads);
  return [a] { return RunAnalyze(*a); };
}

}  // namespace zipnn::cmd
