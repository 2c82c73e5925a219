// git zipnn retain: applies the retention rules of .zipnn.yaml
// (docs/retention.md) to this repository's store: keeps the versions the
// rules name exactly, and thins or drops the rest (lib/store/retain.h).
// Prints what it will keep, thin and drop, and the bytes before and
// after. Pointers and history never change.
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <unistd.h>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/strings.h"
#include "lib/git/checkpoint_at.h"
#include "lib/git/discover.h"
#include "lib/git/git.h"
#include "lib/git/pointers.h"
#include "lib/git/repository.h"
#include "lib/git/series_versions.h"
#include "lib/git/shared_store.h"
#include "lib/remote/retention.h"
#include "lib/remote/select.h"
#include "lib/series/series.h"
#include "lib/store/retain.h"

namespace zipnn::cmd {

namespace {

struct RetainArgs {
  std::vector<std::string> paths;
  std::vector<std::string> keep;
  bool dry_run = false;
  bool verbose = false;
  std::optional<std::string> remote;  // --remote [NAME]: "" for the default remote
  bool yes = false;
  bool pushes_stopped = false;  // --pushes-stopped: no one pushes to a remote without a lock (S3) meanwhile
  int threads = 0;
};

// The first rule whose glob matches a version of the series (its newest
// first), or none.
const config::Policy::RetentionRule* RuleFor(const config::Policy& policy, const std::vector<store::Version>& series) {
  for (const auto& rule : policy.retention) {
    for (auto v = series.rbegin(); v != series.rend(); ++v) {
      if (series::GlobMatches(rule.checkpoints, v->path)) return &rule;
    }
  }
  return nullptr;
}

// The versions `specs` ("<rev>:<path>") name; an error for one that names
// none, since a typo here could let a version the user meant to keep go.
Result<std::set<ContentId>> Named(const std::vector<std::string>& specs, const std::string& source) {
  std::set<ContentId> named;
  for (const std::string& spec : specs) {
    if (spec.find(':') == std::string::npos) {
      // A path given alone, or a revision given alone.
      const bool path_like = spec.find_first_of("/.") != std::string::npos;
      return InvalidArgument(source + " names '" + spec + "' to keep: name a version as <rev>:<path>, such as " +
                             (path_like ? "HEAD:" + spec : spec + ":<path>") + "; nothing was changed");
    }
    Result<store::Pointer> pointer = git::PointerAt(spec);
    if (!pointer.ok()) {
      return InvalidArgument(source + " names '" + spec + "' to keep, which is no tracked checkpoint here (" +
                             pointer.status().message() + "); nothing was changed");
    }
    named.insert(pointer->id);
  }
  return named;
}

std::string Summary(const std::vector<store::PlannedVersion>& plan, const config::Policy::RetentionRule& rule) {
  size_t keep = 0, thin = 0, drop = 0;
  for (const auto& p : plan) {
    (p.fate == store::Fate::kKeep ? keep : p.fate == store::Fate::kThin ? thin : drop) += 1;
  }
  std::string s = "keep " + std::to_string(keep) + " exactly, thin " + std::to_string(thin);
  if (thin > 0) s += " (" + rule.precision.Text() + ")";
  s += ", drop " + std::to_string(drop);
  return s;
}

void PrintPlanned(const store::PlannedVersion& p, const std::string& sizes) {
  std::string note = p.why;
  if (p.fate != store::Fate::kKeep && p.record && p.why.empty()) note = "already " + p.record->Describe();
  std::printf("  %-4s %s %s%s%s%s\n", store::FateName(p.fate), p.version.path.c_str(),
              p.version.id.Hex().substr(0, 12).c_str(), note.empty() ? "" : " (", note.c_str(), note.empty() ? "" : ")");
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

void PrintRemote(const std::string& name, const remote::RemoteStore& store, const remote::RemoteRetention& r,
                 bool dry_run) {
  if (dry_run) {
    std::printf("remote %s (%s): %zu objects, %s; would remove %s (%s), send %zu retention record%s "
                "and the approximate versions of what is thinned, and re-send %zu object%s that %s on what goes\n",
                name.c_str(), store.where().c_str(), r.objects, HumanBytes(r.bytes_before).c_str(),
                RemovedObjects(r.removed, r.unthinned).c_str(), HumanBytes(r.removed_bytes).c_str(), r.records, r.records == 1 ? "" : "s",
                r.replaced, r.replaced == 1 ? "" : "s", r.replaced == 1 ? "rests" : "rest");
  } else {
    std::printf("remote %s (%s): %s -> %s%s; %s removed (%s), %zu approximate object%s sent (%s), "
                "%zu retention record%s, %zu object%s re-sent\n",
                name.c_str(), store.where().c_str(), HumanBytes(r.bytes_before).c_str(),
                HumanBytes(r.bytes_after).c_str(), Ratio(r.bytes_after, r.bytes_before).c_str(),
                RemovedObjects(r.removed, r.unthinned).c_str(), HumanBytes(r.removed_bytes).c_str(), r.sent, r.sent == 1 ? "" : "s",
                HumanBytes(r.sent_bytes).c_str(), r.records, r.records == 1 ? "" : "s", r.replaced,
                r.replaced == 1 ? "" : "s");
  }
  for (const auto& [id, why] : r.kept) {
    std::printf("  %s %s stays on %s: %s\n", dry_run ? "would keep" : "kept", id.Hex().substr(0, 12).c_str(),
                name.c_str(), why.c_str());
  }
}

// The refusal when the git remote holds refs whose objects this clone
// lacks: what they hold is unknown here, so nothing may go.
Status Unfetched(const std::string& remote, const std::vector<git::RemoteRef>& missing) {
  std::string names;
  for (size_t i = 0; i < missing.size() && i < 5; ++i) {
    names += (i == 0 ? "" : ", ") + missing[i].name + " (" + missing[i].object.substr(0, 12) + ")";
  }
  if (missing.size() > 5) names += " and " + std::to_string(missing.size() - 5) + " more";
  return InvalidArgument("remote " + remote + " has " + (missing.size() == 1 ? "a ref" : "refs") +
                            " this clone has not fetched: " + names + "; the versions " +
                            (missing.size() == 1 ? "it holds" : "they hold") +
                            " must stay there, and retain cannot see them: run `git fetch --tags " + remote +
                            "` and retain again; nothing was changed");
}

// The refusal when the git remote's refs changed between the plan and the
// removal: nothing is removed there; the next retain plans with them.
Status RefsMoved(const std::string& remote, const git::RemoteTips& before, const git::RemoteTips& now) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const git::ExtraTip& tip : before.tips) seen.emplace(tip.tag, tip.commit.Hex());
  std::vector<git::RemoteRef> moved = now.missing;
  for (const git::ExtraTip& tip : now.tips) {
    if (seen.count({tip.tag, tip.commit.Hex()}) == 0) moved.push_back(git::RemoteRef{tip.tag, tip.commit.Hex()});
  }
  if (moved.empty()) return OkStatus();
  return InvalidArgument("the refs of remote " + remote + " changed while retain ran (a push to it): nothing was "
                         "removed there (this store is retained, the records are sent); run `git fetch --tags " +
                         remote + "` and `git zipnn retain --remote " + remote + " --yes` again");
}

// The versions the rules keep now although an earlier retain took their
// exact bytes here: the remote keeps what it holds of them.
std::set<ContentId> RuleKeeps(const std::vector<std::pair<std::string, std::vector<store::PlannedVersion>>>& plans) {
  std::set<ContentId> keeps;
  for (const auto& [name, plan] : plans) {
    for (const store::PlannedVersion& p : plan) {
      if (p.rule_keeps) keeps.insert(p.version.id);
    }
  }
  return keeps;
}

// "<path> <id> (rule '<glob>')" for each series whose newest version in
// HEAD's tree the plans drop: what a checkout of HEAD gives for it. Older
// versions HEAD still holds (step files a trainer left) are what a rule
// that keeps the newest is for, and are not asked about.
Result<std::vector<std::string>> DroppedAtHead(
    const git::Repository& git_repo, const std::vector<std::pair<std::string, std::vector<store::PlannedVersion>>>& plans,
    const std::map<std::string, const config::Policy::RetentionRule*>& rules) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<git::Oid> head, git_repo.ResolveCommit("HEAD"));
  std::vector<std::string> dropped;
  if (!head) return dropped;
  ZIPNN_ASSIGN_OR_RETURN(FoundPointers checked_out, git::FindPointersInTrees(git_repo, {"HEAD"}));
  std::map<ContentId, std::string> at_head;
  for (const auto& [pointer, place] : checked_out.pointers) at_head.emplace(pointer.id, place.path);
  for (const auto& [name, plan] : plans) {
    // Plans are in series order: the newest HEAD holds is the last found.
    for (auto p = plan.rbegin(); p != plan.rend(); ++p) {
      auto it = at_head.find(p->version.id);
      if (it == at_head.end()) continue;
      // Dropped now: its exact bytes, or the approximate ones left of it.
      if (p->fate == store::Fate::kDrop && !(p->record && p->record->dropped)) {
        dropped.push_back(it->second + " " + p->version.id.Hex().substr(0, 12) + " (rule '" +
                          rules.at(name)->checkpoints + "')");
      }
      break;
    }
  }
  return dropped;
}

// Asks on a terminal whether to drop what HEAD checks out; refuses, and
// says what to do, anywhere else or on any answer but yes.
Status ConfirmDropAtHead(const std::string& list, size_t n) {
  const std::string what = n == 1 ? "the version HEAD checks out" : std::to_string(n) + " versions HEAD checks out";
  const std::string todo = "run `git zipnn retain --yes` to drop " + std::string(n == 1 ? "it" : "them") +
                           " anyway, or keep " + (n == 1 ? "it" : "them") +
                           " with `--keep HEAD:<path>` (or keep_newest in the rule); nothing was changed";
  if (::isatty(STDIN_FILENO) == 1 && ::isatty(STDERR_FILENO) == 1) {
    std::fprintf(stderr, "git-zipnn retain: the rules drop %s, for good:\n%sdrop %s? [y/N] ", what.c_str(),
                 list.c_str(), n == 1 ? "it" : "them");
    std::fflush(stderr);
    char answer[16] = {};
    if (std::fgets(answer, sizeof answer, stdin) != nullptr && (answer[0] == 'y' || answer[0] == 'Y')) {
      return OkStatus();
    }
    return InvalidArgument("not confirmed: " + todo);
  }
  return InvalidArgument("the rules drop " + what + ":\n" + list + todo);
}

Status RunRetain(const RetainArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
  if (a.threads > 0) repo.policy.threads = a.threads;
  // Storing goes on under a policy with mistakes; removing does not.
  ZIPNN_ASSIGN_OR_RETURN(std::string top, git::TopLevel());
  Result<config::Policy> strict = config::LoadPolicy(top + "/.zipnn.yaml");
  if (!strict.ok()) {
    return Status(strict.status().code(),
                  strict.status().message() + "; retain changes nothing until .zipnn.yaml is right");
  }
  if (repo.policy.retention.empty()) {
    return InvalidArgument(
        "no retention rules: .zipnn.yaml has no 'retention' list (docs/retention.md shows how to write one, "
        "such as `retention: [{checkpoints: 'out/**', keep_newest: 3, rest: thin, precision: absolute 23}]`)");
  }
  // A remote is only changed when asked twice: the plan first.
  const bool dry = a.dry_run || (a.remote && !a.yes);
  std::string remote_name;
  std::unique_ptr<remote::RemoteStore> remote_store;
  if (a.remote) {
    ZIPNN_ASSIGN_OR_RETURN(remote_name, remote::RemoteOrDefault(*a.remote));
    ZIPNN_ASSIGN_OR_RETURN(remote_store, remote::OpenRemoteStore(remote_name));
    if (remote_store->capabilities().retention == nullptr) {
      return Unsupported("remote " + remote_name + " (" + remote_store->where() +
                         ") cannot remove objects: a Git LFS server's API has no delete, so retention cannot "
                         "apply there; nothing was changed (`git zipnn retain` without --remote applies it here)");
    }
    if (!dry && remote_store->capabilities().locked_removal == nullptr && !a.pushes_stopped) {
      return remote::NoLockRefusal(*remote_store, remote_name);
    }
  }
  // Exclusive, as gc: no add may build on a version while it goes.
  std::optional<store::StoreLock> lock;
  if (!dry) {
    ZIPNN_ASSIGN_OR_RETURN(lock, repo.objects.Lock(store::StoreLock::Mode::kExclusive, [] {
      std::fprintf(stderr, "git-zipnn retain: waiting for running adds to finish\n");
    }));
  }
  ZIPNN_ASSIGN_OR_RETURN(git::Repository git_repo, git::Repository::Discover());
  // What the git remote holds keeps its versions there (and here) too: a
  // teammate's tag or branch pushed since this clone last fetched.
  git::RemoteTips remote_tips;
  if (remote_store) {
    Result<git::RemoteTips> read = git::ReadRemoteTips(git_repo, remote_name);
    if (!read.ok()) {
      return Status(read.status().code(), read.status().message() +
                                              "; retain --remote reads them so that what a teammate's branch or tag "
                                              "holds stays there: nothing was changed");
    }
    remote_tips = std::move(*read);
    if (!remote_tips.missing.empty()) return Unfetched(remote_name, remote_tips.missing);
  }
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<git::SeriesVersions> series, git::OpenSeries(repo));
  ZIPNN_ASSIGN_OR_RETURN(auto all, series->All());
  std::set<std::string> chosen;
  for (const std::string& p : a.paths) {
    auto full = git::TrackedPath(p);
    if (!full.ok()) return NotFound(p + " is not a checkpoint git holds here (`git zipnn ls-files` lists them)");
    chosen.insert(series->rules().Place(*full).name);
  }
  ZIPNN_ASSIGN_OR_RETURN(git::CommittedVersions committed, git::FindCommittedVersions(git_repo, remote_tips.tips));
  ZIPNN_ASSIGN_OR_RETURN(std::set<ContentId> named_here, Named(a.keep, "--keep"));
  const int64_t now = static_cast<int64_t>(std::time(nullptr));

  std::vector<std::pair<std::string, std::vector<store::PlannedVersion>>> plans;
  std::map<std::string, const config::Policy::RetentionRule*> rules;
  size_t unruled = 0;
  for (const auto& [name, versions] : all) {
    if (!chosen.empty() && chosen.count(name) == 0) continue;
    const config::Policy::RetentionRule* rule = RuleFor(repo.policy, versions);
    if (rule == nullptr) {
      ++unruled;
      continue;
    }
    ZIPNN_ASSIGN_OR_RETURN(std::set<ContentId> named, Named(rule->keep, ".zipnn.yaml"));
    named.insert(named_here.begin(), named_here.end());
    // A tag keeps the newest version of the series its commit holds (a
    // tagged step-files commit holds every earlier step file too).
    std::map<ContentId, std::vector<std::string>> tagged;
    for (const auto& [tag, held] : committed.tags) {
      for (auto v = versions.rbegin(); v != versions.rend(); ++v) {
        if (held.count(v->id) == 0) continue;
        tagged[v->id].push_back(tag);
        break;
      }
    }
    auto facts = [&](const ContentId& id) {
      store::VersionFacts f;
      if (auto it = committed.first_committed.find(id); it != committed.first_committed.end()) f.committed = it->second;
      if (auto it = tagged.find(id); it != tagged.end()) f.tags = it->second;
      f.named = named.count(id) != 0;
      return f;
    };
    plans.emplace_back(name, store::PlanSeries(repo, versions, *rule, facts, now));
    rules[name] = rule;
  }
  if (plans.empty()) {
    return InvalidArgument("no series matches a retention rule of .zipnn.yaml (" + std::to_string(unruled) +
                           " series checked; `git zipnn ls-files` lists the tracked checkpoints)");
  }
  // A content another series holds stays while that series keeps it.
  store::KeepWhatOthersHold(plans, committed.paths,
                            [&](const std::string& path) { return series->rules().Place(path).name; });

  // What this repository's history names: nothing of it goes unless
  // retained here.
  ZIPNN_ASSIGN_OR_RETURN(FoundPointers found, git::FindPointers(git_repo, /*all=*/true));
  store::RetainOptions options;
  options.now = now;
  for (const auto& [pointer, place] : found.pointers) options.every_version.push_back(pointer.id);
  if (!remote_tips.tips.empty()) {
    std::vector<std::string> tips;
    for (const git::ExtraTip& tip : remote_tips.tips) tips.push_back(tip.commit.Hex());
    ZIPNN_ASSIGN_OR_RETURN(FoundPointers there, git::FindPointersIn(git_repo, tips));
    for (const auto& [pointer, place] : there.pointers) options.every_version.push_back(pointer.id);
  }

  // The version HEAD checks out is dropped only when the user says so.
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> at_head, DroppedAtHead(git_repo, plans, rules));
  if (!at_head.empty()) {
    std::string list;
    for (const std::string& line : at_head) list += "  " + line + "\n";
    if (dry) {
      std::printf("note: this plan drops what HEAD checks out:\n%s", list.c_str());
    } else if (!a.yes) {
      ZIPNN_RETURN_IF_ERROR(ConfirmDropAtHead(list, at_head.size()));
    }
  }

  if (dry) {
    std::vector<ContentId> planned;
    for (const auto& [name, plan] : plans) {
      std::printf("%s (rule '%s'): %zu version%s: %s\n", name.c_str(), rules[name]->checkpoints.c_str(), plan.size(),
                  plan.size() == 1 ? "" : "s", Summary(plan, *rules[name]).c_str());
      for (const auto& p : plan) {
        PrintPlanned(p, "");
        // Versions the retain takes now, as well as those thinned before
        // that it drops now.
        const bool thinned = p.record && !p.record->dropped;
        if ((p.fate != store::Fate::kKeep && p.exact) || (p.fate == store::Fate::kDrop && thinned)) {
          planned.push_back(p.version.id);
        }
      }
    }
    if (remote_store) {
      ZIPNN_ASSIGN_OR_RETURN(remote::RemoteRetention there,
                             remote::RetainOnRemote(repo, *remote_store, options.every_version, /*dry_run=*/true,
                                                    planned, nullptr, false, nullptr, RuleKeeps(plans)));
      PrintRemote(remote_name, *remote_store, there, /*dry_run=*/true);
      if (remote_store->capabilities().locked_removal == nullptr) {
        std::printf("%s has no lock that pushes respect: applying it needs --pushes-stopped, once no one pushes "
                    "to it until retain ends\n",
                    remote_name.c_str());
      }
      std::printf("dry run: nothing was changed here or on %s (run `git zipnn retain --remote %s --yes` to apply "
                  "it to both)\n",
                  remote_name.c_str(), remote_name.c_str());
    } else {
      std::printf("dry run: nothing was changed (run `git zipnn retain` without --dry-run to apply it)\n");
    }
    return OkStatus();
  }
  store::Needed others;
  ZIPNN_ASSIGN_OR_RETURN(git::OthersNeed sharing,
                         git::NeedOthers(repo, git_repo.common_dir(), {}, /*dry_run=*/true, others));
  for (const std::string& user : sharing.sharing) {
    std::printf("the store is shared: keeping what %s needs too\n", user.c_str());
  }
  options.also_needed = others.ids;
  std::optional<Progress> progress;  // a line on a terminal, cleared as each series ends
  options.progress = [&](const std::string& what) {
    if (!progress) progress.emplace("git-zipnn retain", 0);
    progress->Update(what, 0);
  };
  size_t failed = 0;
  options.each = [&](const std::string& name, const std::vector<store::RetainedVersion>& done) {
    progress.reset();
    uint64_t before = 0, after = 0;
    std::vector<store::PlannedVersion> planned;
    for (const auto& r : done) planned.push_back(r.planned);
    std::printf("%s (rule '%s'): %zu version%s: %s\n", name.c_str(), rules[name]->checkpoints.c_str(), done.size(),
                done.size() == 1 ? "" : "s", Summary(planned, *rules[name]).c_str());
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
      if (!r.error.ok()) {
        ++failed;
        sizes += "; error: " + r.error.message() + " (left as it was)";
      }
      PrintPlanned(r.planned, a.verbose || !r.error.ok() ? sizes : "");
    }
    std::printf("  stored %s -> %s%s\n", HumanBytes(before).c_str(), HumanBytes(after).c_str(),
                Ratio(after, before).c_str());
    std::fflush(stdout);
  };
  ZIPNN_ASSIGN_OR_RETURN(store::RetainTotals totals, store::ApplyRetention(repo, plans, options));
  progress.reset();
  std::printf("store: %s -> %s%s; %s removed", HumanBytes(totals.store_before).c_str(),
              HumanBytes(totals.store_after).c_str(), Ratio(totals.store_after, totals.store_before).c_str(),
              RemovedObjects(totals.removed, totals.unthinned).c_str());
  if (totals.restored_whole > 0) {
    std::printf("; %zu other version%s stored whole (they were deltas of versions that went)", totals.restored_whole,
                totals.restored_whole == 1 ? "" : "s");
  }
  std::printf("\n");
  if (failed > 0) {
    return Corruption(std::to_string(failed) + " version" + (failed == 1 ? " was left as it was" : "s were left as they were") +
                      " (see above)" + (remote_store ? "; " + remote_name + " was not changed" : ""));
  }
  if (remote_store) {
    std::optional<Progress> shown;
    ZIPNN_ASSIGN_OR_RETURN(remote::RemoteRetention there,
                           remote::RetainOnRemote(repo, *remote_store, options.every_version, /*dry_run=*/false, {},
                                                  [&](const std::string& what) {
                                                    if (!shown) shown.emplace("git-zipnn retain", 0);
                                                    shown->Update(what, 0);
                                                  },
                                                  a.pushes_stopped, [&]() -> Status {
                                                    // The git remote's refs once more: one pushed since the
                                                    // plan read them may hold what would go.
                                                    ZIPNN_ASSIGN_OR_RETURN(git::RemoteTips now,
                                                                           git::ReadRemoteTips(git_repo, remote_name));
                                                    return RefsMoved(remote_name, remote_tips, now);
                                                  },
                                                  RuleKeeps(plans)));
    shown.reset();
    PrintRemote(remote_name, *remote_store, there, /*dry_run=*/false);
  }
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
