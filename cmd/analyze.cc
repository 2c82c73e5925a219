// git zipnn analyze: how the weights moved over a trajectory of
// checkpoints (files on disk, the history of a tracked checkpoint, or a
// step-numbered series in git), and what each coder and storage policy
// would store for it.
#include <fnmatch.h>

#include <cstdio>
#include <memory>
#include <regex>
#include <sstream>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/analyze/analysis.h"
#include "lib/analyze/html_report.h"
#include "lib/analyze/report.h"
#include "lib/formats/detect.h"
#include "lib/git/checkpoint_at.h"
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
  int threads = 0;
};

// A checkpoint still to be read: where it is, and what to call it.
struct Pending {
  std::string label, source, subject;
  std::string rev, path;  // in git: restored from <rev>:<path>
};

std::string FileName(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// A checkpoint's step by the series rules, or its file name.
std::string FileLabel(const series::Rules& rules, const std::string& path) {
  const std::string step = rules.Place(path).step;
  return step.empty() ? FileName(path) : step;
}

// The versions of a tracked path to analyse, oldest first: the other files
// of its step-numbered series at the range's last revision if it has any,
// else the commits of the range that changed it.
Result<std::vector<Pending>> VersionsInGit(const std::string& given, const std::string& range) {
  ZIPNN_ASSIGN_OR_RETURN(const std::string path, git::TrackedPath(given));
  ZIPNN_ASSIGN_OR_RETURN(std::string top, git::TopLevel());
  const std::string rev = range.empty() ? "HEAD" : range;
  // The tip of a range "a..b" is b; of "a.." it is HEAD.
  std::string tip = rev;
  if (size_t dots = rev.find(".."); dots != std::string::npos) {
    tip = rev.substr(dots + (rev.compare(dots, 3, "...") == 0 ? 3 : 2));
    if (tip.empty()) tip = "HEAD";
  }
  ZIPNN_ASSIGN_OR_RETURN(store::Repository repo, OpenRepository());
  ZIPNN_ASSIGN_OR_RETURN(series::Rules rules, series::Rules::WithPatterns(repo.policy.series));
  ZIPNN_ASSIGN_OR_RETURN(std::vector<git::SeriesFile> found, git::SeriesFilesAt(rules, tip, path, top));
  std::vector<Pending> versions;
  if (found.size() > 1) {
    for (const git::SeriesFile& f : found) {
      versions.push_back(Pending{f.step.empty() ? FileName(f.path) : f.step, tip + ":" + f.path, "", tip, f.path});
    }
    return versions;
  }
  ZIPNN_ASSIGN_OR_RETURN(std::vector<git::CommitTouching> history, git::CommitsTouching(rev, path, top));
  for (const git::CommitTouching& c : history) {
    versions.push_back(Pending{c.commit.substr(0, 10), c.commit + ":" + path, c.subject, c.commit, path});
  }
  return versions;
}

// Whether the arguments name files on disk (analysed in the order given)
// rather than one tracked checkpoint.
bool OnDisk(const AnalyzeArgs& a) {
  if (a.paths.size() != 1) return true;
  return !git::TrackedPath(a.paths[0]).ok();
}

Result<std::function<bool(const std::string&)>> TensorFilter(const AnalyzeArgs& a) {
  if (!a.tensors.empty() && !a.tensors_regex.empty()) {
    return InvalidArgument("give --tensors or --tensors-regex, not both");
  }
  if (!a.tensors.empty()) {
    const std::string glob = a.tensors;
    return std::function<bool(const std::string&)>(
        [glob](const std::string& name) { return ::fnmatch(glob.c_str(), name.c_str(), 0) == 0; });
  }
  if (!a.tensors_regex.empty()) {
    std::regex re;
    try {
      re = std::regex(a.tensors_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return InvalidArgument("--tensors-regex '" + a.tensors_regex + "' is not a valid regular expression (" +
                             e.what() + ")");
    }
    return std::function<bool(const std::string&)>(
        [re](const std::string& name) { return std::regex_search(name, re); });
  }
  return std::function<bool(const std::string&)>();
}

Status RunAnalyze(const AnalyzeArgs& a) {
  if (a.against != "previous" && a.against != "base") {
    return InvalidArgument("--against must be 'previous' or 'base', not '" + a.against + "'");
  }
  analyze::Options options;
  options.against = a.against == "base" ? config::DeltaAgainst::kBase : config::DeltaAgainst::kPrevious;
  ZIPNN_ASSIGN_OR_RETURN(options.select, TensorFilter(a));
  options.filter_text = a.tensors.empty() ? a.tensors_regex : a.tensors;
  options.histogram_at = a.at;

  const bool on_disk = OnDisk(a);
  std::optional<store::Repository> repo;
  std::vector<Pending> pending;
  if (on_disk) {
    if (!a.rev.empty()) return InvalidArgument("--rev needs one tracked checkpoint, not files on disk");
    for (const std::string& p : a.paths) pending.push_back(Pending{FileLabel(series::Rules(), p), p, "", "", p});
    // In a repository, its .zipnn.yaml is the policy the what-if marks.
    if (auto opened = OpenRepository(); opened.ok()) options.policy = opened->policy;
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
    Progress progress("git-zipnn analyze", pending.size());
    for (size_t i = 0; i < pending.size(); ++i) {
      const Pending& p = pending[i];
      progress.Update(p.label, i);
      ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint checkpoint,
                             WithLayout(repo ? git::CheckpointAt(*repo, p.rev, p.path) : CheckpointInFile(p.path)));
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
    const std::string title = "git-zipnn analysis of " + (on_disk ? std::to_string(a.paths.size()) + " checkpoints"
                                                                  : a.paths[0]);
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
                 "One tracked checkpoint (its history, or its step-numbered series), or checkpoint files in order")
      ->required();
  sub.add_option("--rev", a->rev, "Revision range of the history (default HEAD; e.g. v1..main)");
  sub.add_option("--tensors", a->tensors, "Only tensors whose name matches this glob (e.g. 'blocks.*.attn.*')");
  sub.add_option("--tensors-regex", a->tensors_regex, "Only tensors whose name matches this regular expression");
  sub.add_option("--against", a->against, "Change statistics against the 'previous' checkpoint or the periodic 'base'")
      ->default_str("previous");
  sub.add_option("--base-interval", a->base_interval,
                 "Periodic base every K checkpoints (default: base_interval of .zipnn.yaml, else 10)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--at", a->at, "Checkpoint (label or index) whose exponent histograms are shown (default: the last)");
  sub.add_option("--top", a->top, "Tensors shown in the tensor table, those that moved most (0: all)")->default_str("20");
  sub.add_option("--csv", a->csv, "Also write the tables as CSV: FILE and FILE's .tensors/.exponents/.policies.csv");
  sub.add_option("--json", a->json, "Also write every table to one JSON file");
  sub.add_option("--html", a->html, "Also write a self-contained HTML report with charts");
  AddThreadsOption(sub, a->threads);
  return [a] { return RunAnalyze(*a); };
}

}  // namespace zipnn::cmd
