// git zipnn analyze: how the weights moved over a trajectory of
// checkpoints (files on disk, the history of a tracked checkpoint, or a
// step-numbered series in git), and what each coder and storage policy
// would store for it. The work is lib/ops/analyze.h's; this file parses,
// prints and writes the reports asked for.
#include <cstdio>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/analyze/html_report.h"
#include "lib/analyze/report.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/ops/analyze.h"

namespace zipnn::cmd {

namespace {

struct AnalyzeArgs {
  ops::AnalyzeRequest request;
  size_t top = 20;
  std::string csv, json, html;
};

Status RunAnalyze(const AnalyzeArgs& args) {
  const ops::AnalyzeRequest& a = args.request;
  ops::Context context;
  const auto left_out = [](const std::string& label, const std::string& why) {
    std::fprintf(stderr, "git-zipnn analyze: %s left out: %s\n", label.c_str(), why.c_str());
  };
  ZIPNN_ASSIGN_OR_RETURN(const ops::AnalyzeResult result, ops::Analyze(context, a, left_out));
  const analyze::Analysis& analysis = result.analysis;
  if (!a.at.empty() && !analysis.histogram_at) {
    return InvalidArgument("--at '" + a.at + "' names no checkpoint (give a label from the first column, or an index)");
  }
  std::fputs(analyze::TextReport(analysis, analyze::TextOptions{args.top}).c_str(), stdout);
  if (!args.csv.empty()) {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> files, analyze::WriteCsv(analysis, args.csv));
    for (const std::string& f : files) std::printf("wrote %s\n", f.c_str());
  }
  if (!args.json.empty()) {
    ZIPNN_RETURN_IF_ERROR(analyze::WriteJson(analysis, args.json));
    std::printf("wrote %s\n", args.json.c_str());
  }
  if (!args.html.empty()) {
    const std::string title =
        "git-zipnn analysis of " + (result.on_disk ? Counted(a.paths.size(), "checkpoint") : a.paths[0]);
    const std::string page = analyze::HtmlReport(analysis, title);
    ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(args.html, /*overwrite=*/true));
    ZIPNN_RETURN_IF_ERROR(out.Append(page.data(), page.size()));
    ZIPNN_RETURN_IF_ERROR(out.CommitUnsynced());
    std::printf("wrote %s\n", args.html.c_str());
  }
  return OkStatus();
}

}  // namespace

Action SetupAnalyze(CLI::App& sub) {
  auto a = std::make_shared<AnalyzeArgs>();
  ops::AnalyzeRequest& r = a->request;
  sub.add_option("paths", r.paths,
                 "One tracked checkpoint (its history, or its step-numbered series), or checkpoint files of one "
                 "series (ordered by step)")
      ->required();
  sub.add_option("--rev", r.rev, "Revision range of the history (default HEAD; e.g. v1..main)");
  sub.add_option("--tensors", r.tensors, "Only tensors whose name matches this glob (e.g. 'blocks.*.attn.*')");
  sub.add_option("--tensors-regex", r.tensors_regex, "Only tensors whose name matches this regular expression");
  sub.add_option("--against", r.against, "Change statistics against the 'previous' checkpoint or the periodic 'base'")
      ->default_str("previous");
  sub.add_option("--base-interval", r.base_interval,
                 "Periodic base every K checkpoints (default: base_interval of .zipnn.yaml, else 7)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--at", r.at, "Checkpoint (label or index) whose exponent histograms are shown (default: the last)");
  sub.add_option("--top", a->top, "Tensors shown in the tensor table, those that moved most (0: all)")
      ->default_str("20");
  sub.add_option("--csv", a->csv, "Also write the tables as CSV: FILE and FILE's .tensors/.exponents/.policies.csv");
  sub.add_option("--json", a->json, "Also write every table to one JSON file");
  sub.add_option("--html", a->html, "Also write a self-contained HTML report with charts");
  sub.add_flag("--as-given", r.as_given,
               "Compare files in the order given, even when they are not versions of one series");
  sub.add_option("--thin", r.thin,
                 "A precision of the thinning what-if ('absolute 23', 'relative 5'), repeatable; 'none' for no "
                 "thinning table (default: chosen by the float types)")
      ->allow_extra_args(false);
  AddThreadsOption(sub, r.threads);
  return [a] { return RunAnalyze(*a); };
}

}  // namespace zipnn::cmd
