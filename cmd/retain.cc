// git zipnn retain: applies the retention rules of .zipnn.yaml
// (docs/retention.md) to this repository's store: keeps the versions the
// rules name exactly, and thins or drops the rest (lib/ops/retain.h).
// Here: parsing, the question before dropping what HEAD checks out, and
// what it keeps, thins and drops, and the bytes before and after.
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <unistd.h>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/strings.h"
#include "lib/ops/retain.h"

namespace zipnn::cmd {

namespace {

// "<series> (rule '<glob>'): 12 versions: keep 4 exactly, thin 8 (<precision>), drop 0".
// The precision is the thinned versions' own: one another series also
// holds is thinned as that series' rule says.
void PrintSeries(const std::string& name, const ops::RetentionRule& rule,
                 const std::vector<store::PlannedVersion>& plan) {
  size_t keep = 0, thin = 0, drop = 0;
  std::set<std::string> precisions;
  for (const auto& p : plan) {
    (p.fate == store::Fate::kKeep ? keep : p.fate == store::Fate::kThin ? thin : drop) += 1;
    if (p.fate == store::Fate::kThin) precisions.insert(p.precision.Text());
  }
  std::string precision;
  for (const std::string& text : precisions) precision += (precision.empty() ? " (" : ", ") + text;
  if (!precision.empty()) precision += ")";
  std::printf("%s (rule '%s'): %zu version%s: keep %zu exactly, thin %zu%s, drop %zu\n", name.c_str(),
              rule.checkpoints.c_str(), plan.size(), plan.size() == 1 ? "" : "s", keep, thin, precision.c_str(), drop);
}

std::string PlannedLabel(const store::PlannedVersion& p) { return p.version.path + "  " + ops::PlannedName(p); }

void PrintPlanned(const store::PlannedVersion& p, const std::string& sizes) {
  std::string note = p.why;
  if (p.fate != store::Fate::kKeep && p.record && p.why.empty()) note = "already " + p.record->Describe();
  std::printf("  %-4s %s%s%s%s\n", store::FateName(p.fate), PlannedLabel(p).c_str(), note.empty() ? "" : " (",
              note.c_str(), note.empty() ? "" : ")");
  if (!sizes.empty()) std::printf("       %s\n", sizes.c_str());
}

std::string Ratio(uint64_t after, uint64_t before) {
  if (before == 0) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, " (%.2fx)", static_cast<double>(after) / static_cast<double>(before));
  return buf;
}

// "9 exact objects", or "9 exact and 4 approximate objects" when versions
// thinned before are dropped.
std::string RemovedObjects(size_t exact, size_t approximate) {
  if (approximate == 0) return Counted(exact, "exact object");
  return std::to_string(exact) + " exact and " + Counted(approximate, "approximate object");
}

// `names`: each version of the plans, as they were printed.
void PrintRemote(const ops::RetainResult::Remote& there, bool dry_run, const std::map<ContentId, std::string>& names) {
  const remote::RemoteRetention& r = there.retention;
  const char* name = there.name.c_str();
  if (dry_run) {
    std::printf(
        "remote %s (%s): %zu objects, %s; would remove %s (%s), send %zu retention record%s%s, "
        "and re-send %zu object%s that %s on what goes\n",
        name, there.where.c_str(), r.objects, HumanBytes(r.bytes_before).c_str(),
        RemovedObjects(r.removed, r.unthinned).c_str(), HumanBytes(r.removed_bytes).c_str(), r.records,
        r.records == 1 ? "" : "s", there.thins ? " and the approximate versions of what is thinned" : "", r.replaced,
        r.replaced == 1 ? "" : "s", r.replaced == 1 ? "rests" : "rest");
  } else {
    std::printf(
        "remote %s (%s): %s -> %s%s; %s removed (%s), %zu approximate object%s sent (%s), "
        "%zu retention record%s, %zu object%s re-sent\n",
        name, there.where.c_str(), HumanBytes(r.bytes_before).c_str(), HumanBytes(r.bytes_after).c_str(),
        Ratio(r.bytes_after, r.bytes_before).c_str(), RemovedObjects(r.removed, r.unthinned).c_str(),
        HumanBytes(r.removed_bytes).c_str(), r.sent, r.sent == 1 ? "" : "s", HumanBytes(r.sent_bytes).c_str(),
        r.records, r.records == 1 ? "" : "s", r.replaced, r.replaced == 1 ? "" : "s");
  }
  for (const auto& [id, why] : r.kept) {
    const auto named = names.find(id);
    const std::string version = named != names.end() ? named->second : "version " + id.Hex().substr(0, 12);
    std::printf("  %s %s stays on %s: %s\n", dry_run ? "would keep" : "kept", version.c_str(), name, why.c_str());
  }
}

// Prints what the retain says as it goes, and asks on a terminal.
class Printer : public ops::RetainReport {
 public:
  explicit Printer(bool verbose) : verbose_(verbose) {}
  void DropsAtHead(const std::vector<std::string>& lines) override {
    std::printf("note: this plan drops what HEAD checks out:\n%s", ops::ListedAtHead(lines).c_str());
  }
  // Asks on a terminal; anywhere else, or on any answer but yes, refuses.
  Status ConfirmDropAtHead(const std::vector<std::string>& lines) override {
    const bool terminal = ::isatty(STDIN_FILENO) == 1 && ::isatty(STDERR_FILENO) == 1;
    if (terminal) {
      std::fprintf(stderr, "git-zipnn retain: the rules drop %s, for good:\n%sdrop %s? [y/N] ",
                   ops::WhatHeadChecksOut(lines.size()).c_str(), ops::ListedAtHead(lines).c_str(),
                   lines.size() == 1 ? "it" : "them");
      std::fflush(stderr);
      char answer[16] = {};
      if (std::fgets(answer, sizeof answer, stdin) != nullptr && (answer[0] == 'y' || answer[0] == 'Y')) {
        return OkStatus();
      }
    }
    return ops::DropAtHeadRefused(lines, /*asked=*/terminal);
  }
  void Planned(const std::string& name, const ops::RetentionRule& rule,
               const std::vector<store::PlannedVersion>& plan) override {
    PrintSeries(name, rule, plan);
    for (const auto& p : plan) {
      PrintPlanned(p, "");
      names_.emplace(p.version.id, PlannedLabel(p));
    }
  }
  void Note(const std::string& line) override { std::printf("%s\n", line.c_str()); }
  void Sharing(const std::string& user) override {
    std::printf("the store is shared: keeping what %s needs too\n", user.c_str());
  }
  void Progress(const std::string& what) override {
    if (!progress_) progress_.emplace("git-zipnn retain", 0);
    progress_->Update(what, 0);
  }
  void Retained(const std::string& name, const ops::RetentionRule& rule,
                const std::vector<store::RetainedVersion>& done) override {
    progress_.reset();
    uint64_t before = 0, after = 0;
    std::vector<store::PlannedVersion> planned;
    for (const auto& r : done) planned.push_back(r.planned);
    PrintSeries(name, rule, planned);
    for (const auto& r : done) {
      before += r.before;
      after += r.after;
      std::string sizes = HumanBytes(r.before) + " -> " + HumanBytes(r.after);
      if (r.record && !r.record->dropped && r.planned.fate == store::Fate::kThin) {
        char err[96];
        std::snprintf(err, sizeof err, "; max error %.3g absolute, %.3g relative", r.record->MaxAbs(),
                      r.record->MaxRel());
        sizes += err;
      }
      if (!r.error.ok()) sizes += "; error: " + r.error.message() + " (left as it was)";
      PrintPlanned(r.planned, verbose_ || !r.error.ok() ? sizes : "");
      names_.emplace(r.planned.version.id, PlannedLabel(r.planned));
    }
    std::printf("  stored %s -> %s%s\n", HumanBytes(before).c_str(), HumanBytes(after).c_str(),
                Ratio(after, before).c_str());
    std::fflush(stdout);
  }
  void StoreDone(const store::RetainTotals& t) override {
    progress_.reset();
    std::printf("store: %s -> %s%s; %s removed", HumanBytes(t.store_before).c_str(), HumanBytes(t.store_after).c_str(),
                Ratio(t.store_after, t.store_before).c_str(), RemovedObjects(t.removed, t.unthinned).c_str());
    if (t.restored_whole > 0) {
      std::printf("; %zu other version%s stored whole (they were deltas of versions that went)", t.restored_whole,
                  t.restored_whole == 1 ? "" : "s");
    }
    std::printf("\n");
  }
  void EndProgress() { progress_.reset(); }  // before what is said of the remote
  const std::map<ContentId, std::string>& names() const { return names_; }

 private:
  bool verbose_;
  std::map<ContentId, std::string> names_;     // each version of the plans, as printed
  std::optional<::zipnn::Progress> progress_;  // a line on a terminal, cleared as each series ends
};

struct RetainArgs : ops::RetainRequest {
  bool verbose = false;
};

Status RunRetain(const RetainArgs& a) {
  // A mistake in .zipnn.yaml stops retain with its error (ops::Retain):
  // the warning that the defaults hold, as an add says it, would say the
  // opposite first.
  ops::Context context(ops::Context::Options{0, /*print_warnings=*/false});
  ZIPNN_ASSIGN_OR_RETURN(store::Store * store, context.Store());
  ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
  Printer printer(a.verbose);
  ZIPNN_ASSIGN_OR_RETURN(ops::RetainResult done,
                         ops::Retain(*store, *git_repo, ops::OpenConfiguredRemote, a, printer));
  printer.EndProgress();
  if (done.remote) PrintRemote(*done.remote, done.dry_run, printer.names());
  for (const std::string& line : done.closing) std::printf("%s\n", line.c_str());
  return OkStatus();
}

}  // namespace

Action SetupRetain(CLI::App& sub) {
  auto a = std::make_shared<RetainArgs>();
  sub.add_option("paths", a->paths, "Tracked checkpoints whose series to apply the rules to (default: every series)");
  sub.add_flag("-n,--dry-run", a->dry_run, "Only print what would be kept, thinned and dropped");
  sub.add_option("--keep", a->keep, "Also keep this version exactly (REV:PATH); may be given more than once")
      ->allow_extra_args(false);
  sub.add_flag("-v,--verbose", a->verbose, "Print each version's bytes before and after");
  auto remote = std::make_shared<RemoteOption>(
      sub,
      "Apply the rules on this git remote's store too (default: the upstream, or origin); a plan only, unless --yes");
  sub.add_flag("-y,--yes", a->yes,
               "With --remote: apply it (here first, then on the remote); and drop the version HEAD checks out "
               "without asking when a rule drops it");
  sub.add_flag("--pushes-stopped", a->pushes_stopped,
               "With --remote on a store without a lock (S3): no one pushes to it until retain ends, so it may "
               "remove objects there");
  AddThreadsOption(sub, a->threads);
  return [a, remote] {
    a->remote = remote->value();
    return RunRetain(*a);
  };
}

}  // namespace zipnn::cmd
