#include "lib/ops/retain.h"

#include <algorithm>
#include <ctime>
#include <utility>

#include "lib/git/checkpoint_at.h"
#include "lib/git/discover.h"
#include "lib/git/git.h"
#include "lib/git/series_versions.h"
#include "lib/git/shared_store.h"
#include "lib/remote/select.h"
#include "lib/series/series.h"

namespace zipnn::ops {

namespace {

// The versions the rules keep now although an earlier retain took their
// exact bytes here: the remote keeps what it holds of them.
std::set<ContentId> RuleKeeps(const store::Plans& plans) {
  std::set<ContentId> keeps;
  for (const auto& [name, plan] : plans) {
    for (const store::PlannedVersion& p : plan) {
      if (p.rule_keeps) keeps.insert(p.version.id);
    }
  }
  return keeps;
}

// The path where HEAD's tree holds each content; empty without a HEAD.
Result<std::map<ContentId, std::string>> AtHead(const git::Repository& git_repo) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<git::Oid> head, git_repo.ResolveCommit("HEAD"));
  std::map<ContentId, std::string> at_head;
  if (!head) return at_head;
  ZIPNN_ASSIGN_OR_RETURN(git::FoundPointers checked_out, git::FindPointersInTrees(git_repo, {"HEAD"}));
  for (const auto& [pointer, place] : checked_out.pointers) at_head.emplace(pointer.id, place.path);
  return at_head;
}

// What a retain without --remote says first when the default remote
// cannot remove objects (a Git LFS host): that it frees space here only,
// and what reads of the versions it removes do. Nothing without a remote.
std::optional<std::string> CannotRemoveThere() {
  Result<remote::RemoteSettings> settings = remote::RemoteSettings::Read();
  if (!settings.ok()) return std::nullopt;
  Result<std::string> name = remote::DefaultRemote(*settings);
  if (!name.ok()) return std::nullopt;
  Result<bool> removes = remote::StoreRemoves(*settings, *name);
  if (!removes.ok() || *removes) return std::nullopt;
  Result<std::string> where = remote::DescribeStore(*settings, *name);
  const bool keeps = remote::KeepsRefetched(*settings);
  return "note: " + *name + " (" + (where.ok() ? *where : *name) +
         ") cannot remove objects (a Git LFS server's API has no delete): this retain frees space here only, and " +
         *name + " keeps the exact bytes of every version it holds. " +
         (keeps ? "A read of a version retained here fetches them and keeps them here again "
                  "(zipnn.keepRefetched is set; unset it to read them through)."
                : "A read of a version retained here fetches them without keeping them "
                  "(`git config zipnn.keepRefetched true` keeps them).");
}

}  // namespace

Result<OpenedRemote> OpenConfiguredRemote(const std::string& name) {
  OpenedRemote opened;
  ZIPNN_ASSIGN_OR_RETURN(opened.name, remote::RemoteOrDefault(name));
  ZIPNN_ASSIGN_OR_RETURN(opened.store, remote::OpenRemoteStore(opened.name));
  return opened;
}

const RetentionRule* RuleFor(const config::Policy& policy, const std::vector<store::Version>& series) {
  for (const auto& rule : policy.retention) {
    for (auto v = series.rbegin(); v != series.rend(); ++v) {
      if (series::GlobMatches(rule.checkpoints, v->path)) return &rule;
    }
  }
  return nullptr;
}

// A typo here could let a version the user meant to keep go: a spec that
// names nothing is an error.
Result<std::set<ContentId>> NamedInGit(const std::vector<std::string>& specs, const std::string& source) {
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

Result<RetentionPlan> PlanRetention(const store::Store& store,
                                    const std::map<std::string, std::vector<store::Version>>& all,
                                    const std::set<std::string>& chosen, const git::CommittedVersions& committed,
                                    const std::set<ContentId>& named_here, const NamedBy& named_by,
                                    const std::function<std::string(const std::string&)>& series_of, int64_t now) {
  RetentionPlan out;
  size_t unruled = 0;
  for (const auto& [name, versions] : all) {
    if (!chosen.empty() && chosen.count(name) == 0) continue;
    const RetentionRule* rule = RuleFor(store.policy, versions);
    if (rule == nullptr) {
      ++unruled;
      continue;
    }
    ZIPNN_ASSIGN_OR_RETURN(std::set<ContentId> named, named_by(rule->keep, ".zipnn.yaml"));
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
    std::vector<store::PlannedVersion> plan = store::PlanSeries(store, versions, *rule, facts, now);
    for (store::PlannedVersion& p : plan) {
      if (auto it = committed.first_commit.find(p.version.id); it != committed.first_commit.end()) {
        const git::CommitInfo& c = it->second;
        p.commit = c.id.Hex().substr(0, 10) + " " + c.author_date.substr(0, 10) + " " + c.subject;
      }
    }
    out.plans.emplace_back(name, std::move(plan));
    out.rules[name] = rule;
  }
  if (out.plans.empty()) {
    return InvalidArgument("no series matches a retention rule of .zipnn.yaml (" + std::to_string(unruled) +
                           " series checked; `git zipnn ls-files` lists the tracked checkpoints)");
  }
  // A content another series holds stays while that series keeps it.
  store::KeepWhatOthersHold(out.plans, committed.paths, series_of);
  return out;
}

std::string PlannedName(const store::PlannedVersion& p) {
  return p.commit.empty() ? "version " + p.version.id.Hex().substr(0, 12) : p.commit;
}

std::vector<std::string> DropsAtHead(const RetentionPlan& plan, const std::map<ContentId, std::string>& at_head) {
  std::vector<std::string> dropped;
  for (const auto& [name, versions] : plan.plans) {
    // Plans are in series order: the newest HEAD holds is the last found.
    for (auto p = versions.rbegin(); p != versions.rend(); ++p) {
      auto it = at_head.find(p->version.id);
      if (it == at_head.end()) continue;
      // Dropped now: its exact bytes, or the approximate ones left of it.
      if (p->fate == store::Fate::kDrop && !(p->record && p->record->dropped)) {
        dropped.push_back(it->second + "  " + PlannedName(*p) + " (rule '" + plan.rules.at(name)->checkpoints + "')");
      }
      break;
    }
  }
  return dropped;
}

std::string ListedAtHead(const std::vector<std::string>& lines) {
  std::string list;
  for (const std::string& line : lines) list += "  " + line + "\n";
  return list;
}

std::string WhatHeadChecksOut(size_t n) {
  return n == 1 ? "the version HEAD checks out" : std::to_string(n) + " versions HEAD checks out";
}

Status DropAtHeadRefused(const std::vector<std::string>& lines, bool asked) {
  const size_t n = lines.size();
  const std::string todo = "run `git zipnn retain --yes` to drop " + std::string(n == 1 ? "it" : "them") +
                           " anyway, or keep " + (n == 1 ? "it" : "them") +
                           " with `--keep HEAD:<path>` (or keep_newest in the rule); nothing was changed";
  if (asked) return InvalidArgument("not confirmed: " + todo);
  return InvalidArgument("the rules drop " + WhatHeadChecksOut(n) + ":\n" + ListedAtHead(lines) + todo);
}

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

// Nothing is removed there: the next retain plans with the new refs.
Status RefsMoved(const std::string& remote, const git::RemoteTips& before, const git::RemoteTips& now) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const git::ExtraTip& tip : before.tips) seen.emplace(tip.tag, tip.commit.Hex());
  std::vector<git::RemoteRef> moved = now.missing;
  for (const git::ExtraTip& tip : now.tips) {
    if (seen.count({tip.tag, tip.commit.Hex()}) == 0) moved.push_back(git::RemoteRef{tip.tag, tip.commit.Hex()});
  }
  if (moved.empty()) return OkStatus();
  return InvalidArgument("the refs of remote " + remote +
                         " changed while retain ran (a push to it): nothing was "
                         "removed there (this store is retained, the records are sent); run `git fetch --tags " +
                         remote + "` and `git zipnn retain --remote " + remote + " --yes` again");
}

Result<RetainResult> Retain(const store::Store& given, const git::Repository& git_repo, const OpenRemote& open_remote,
                            const RetainRequest& a, RetainReport& report) {
  store::Store store = given;
  if (a.threads > 0) store.policy.threads = a.threads;
  // Storing goes on under a policy with mistakes; removing does not.
  ZIPNN_ASSIGN_OR_RETURN(std::string top, git::TopLevel());
  Result<config::Policy> strict = config::LoadPolicy(top + "/.zipnn.yaml");
  if (!strict.ok()) {
    return WithHint(strict.status(), "; retain changes nothing until .zipnn.yaml is right");
  }
  if (store.policy.retention.empty()) {
    return InvalidArgument(
        "no retention rules: .zipnn.yaml has no 'retention' list (docs/retention.md shows how to write one, "
        "such as `retention: [{checkpoints: 'out/**', keep_newest: 3, rest: thin, precision: absolute 23}]`)");
  }
  RetainResult result;
  // A remote is only changed when asked twice: the plan first.
  const bool dry = result.dry_run = a.dry_run || (a.remote && !a.yes);
  OpenedRemote there;
  if (a.remote) {
    ZIPNN_ASSIGN_OR_RETURN(there, open_remote(*a.remote));
    if (there.store->capabilities().retention == nullptr) {
      return Unsupported("remote " + there.name + " (" + there.store->where() +
                         ") cannot remove objects: a Git LFS server's API has no delete, so retention cannot "
                         "apply there; nothing was changed (`git zipnn retain` without --remote applies it here)");
    }
    if (!dry && there.store->capabilities().locked_removal == nullptr && !a.pushes_stopped) {
      return remote::NoLockRefusal(*there.store, there.name);
    }
  } else {
    if (std::optional<std::string> note = CannotRemoveThere()) report.Note(*note);
    // --yes is mostly said for a remote: without one, say what it does.
    if (a.yes) {
      report.Note(
          "note: without --remote, --yes only lets this retain drop what HEAD checks out without asking; no remote "
          "changes (`git zipnn retain --remote <name> --yes` applies the rules there too)");
    }
  }
  // The store's lock alone, as gc: no add may build on a version while
  // it goes. Held from before the plan is read to the end, the remote's
  // turn too.
  std::optional<store::Removing> removing;
  if (!dry) {
    ZIPNN_ASSIGN_OR_RETURN(removing, store.BeginRemoving("git-zipnn retain"));
  }
  // What the git remote holds keeps its versions there (and here) too: a
  // teammate's tag or branch pushed since this clone last fetched.
  git::RemoteTips remote_tips;
  if (there.store) {
    Result<git::RemoteTips> read = git::ReadRemoteTips(git_repo, there.name);
    if (!read.ok()) {
      return WithHint(read.status(),
                      "; retain --remote reads them so that what a teammate's branch or tag "
                                              "holds stays there: nothing was changed");
    }
    remote_tips = std::move(*read);
    if (!remote_tips.missing.empty()) return Unfetched(there.name, remote_tips.missing);
  }
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<git::SeriesVersions> series, git::OpenSeries(store));
  ZIPNN_ASSIGN_OR_RETURN(auto all, series->All());
  std::set<std::string> chosen;
  for (const std::string& p : a.paths) {
    auto full = git::TrackedPath(p);
    if (!full.ok()) return NotFound(p + " is not a checkpoint git holds here (`git zipnn ls-files` lists them)");
    chosen.insert(series->rules().Place(*full).name);
  }
  ZIPNN_ASSIGN_OR_RETURN(git::CommittedVersions committed, git::FindCommittedVersions(git_repo, remote_tips.tips));
  ZIPNN_ASSIGN_OR_RETURN(std::set<ContentId> named_here, NamedInGit(a.keep, "--keep"));
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  ZIPNN_ASSIGN_OR_RETURN(RetentionPlan plan,
                         PlanRetention(
                             store, all, chosen, committed, named_here, NamedInGit,
                             [&](const std::string& path) { return series->rules().Place(path).name; }, now));

  // What this repository's history names: nothing of it goes unless
  // retained here.
  ZIPNN_ASSIGN_OR_RETURN(git::FoundPointers found, git::FindPointers(git_repo, /*all=*/true));
  store::RetainOptions options;
  options.now = now;
  for (const auto& [pointer, place] : found.pointers) options.every_version.push_back(pointer.id);
  if (!remote_tips.tips.empty()) {
    std::vector<std::string> tips;
    for (const git::ExtraTip& tip : remote_tips.tips) tips.push_back(tip.commit.Hex());
    ZIPNN_ASSIGN_OR_RETURN(git::FoundPointers in_tips, git::FindPointersIn(git_repo, tips));
    for (const auto& [pointer, place] : in_tips.pointers) options.every_version.push_back(pointer.id);
  }

  // The version HEAD checks out is dropped only when the user says so.
  ZIPNN_ASSIGN_OR_RETURN(auto at_head, AtHead(git_repo));
  const std::vector<std::string> head_drops = DropsAtHead(plan, at_head);
  if (!head_drops.empty()) {
    if (dry) {
      report.DropsAtHead(head_drops);
    } else if (!a.yes) {
      ZIPNN_RETURN_IF_ERROR(report.ConfirmDropAtHead(head_drops));
    }
  }

  if (dry) {
    std::vector<ContentId> planned;
    bool thins = false;
    std::string thinned_path;  // the newest path of the first series thinned, for analyze
    for (const auto& [name, versions] : plan.plans) {
      report.Planned(name, *plan.rules.at(name), versions);
      for (const auto& p : versions) {
        if (p.fate == store::Fate::kThin && !thins) thinned_path = versions.back().version.path;
        thins = thins || p.fate == store::Fate::kThin;
        // Versions the retain takes now, as well as those thinned before
        // that it drops now.
        const bool thinned = p.record && !p.record->dropped;
        if ((p.fate != store::Fate::kKeep && p.exact) || (p.fate == store::Fate::kDrop && thinned)) {
          planned.push_back(p.version.id);
        }
      }
    }
    // What thinning stores is known only by doing it, or by analyze's
    // what-if, which rounds the same way (a precision finer than the
    // dtype's own spacing changes little: absolute 23 on bf16).
    if (thins) {
      result.closing.push_back("what thinning would store: `git zipnn analyze " + thinned_path +
                               "` (its thinning what-if rounds as retain does, at several precisions)");
    }
    if (there.store) {
      ZIPNN_ASSIGN_OR_RETURN(remote::RemoteRetention retention,
                             remote::RetainOnRemote(store, *there.store, options.every_version, /*dry_run=*/true,
                                                    planned, nullptr, false, nullptr, RuleKeeps(plan.plans)));
      result.remote = RetainResult::Remote{there.name, there.store->where(), retention, thins};
      if (there.store->capabilities().locked_removal == nullptr) {
        result.closing.push_back(there.name +
                                 " has no lock that pushes respect: applying it needs --pushes-stopped, once no one "
                                 "pushes to it until retain ends");
      }
      result.closing.push_back("dry run: nothing was changed here or on " + there.name +
                               " (run `git zipnn retain --remote " + there.name + " --yes` to apply it to both)");
    } else {
      result.closing.push_back("dry run: nothing was changed (run `git zipnn retain` without --dry-run to apply it)");
    }
    return result;
  }
  store::Needed others;
  ZIPNN_ASSIGN_OR_RETURN(git::OthersNeed sharing,
                         git::NeedOthers(store, git_repo.common_dir(), {}, /*dry_run=*/true, others));
  for (const std::string& user : sharing.sharing) report.Sharing(user);
  options.also_needed = others.ids;
  options.progress = [&](const std::string& what) { report.Progress(what); };
  size_t failed = 0;
  options.each = [&](const std::string& name, const std::vector<store::RetainedVersion>& done) {
    for (const auto& r : done) failed += !r.error.ok();
    report.Retained(name, *plan.rules.at(name), done);
  };
  ZIPNN_ASSIGN_OR_RETURN(store::RetainTotals totals, store::ApplyRetention(store, *removing, plan.plans, options));
  report.StoreDone(totals);
  if (failed > 0) {
    return Corruption(std::to_string(failed) + " version" +
                      (failed == 1 ? " was left as it was" : "s were left as they were") + " (see above)" +
                      (there.store ? "; " + there.name + " was not changed" : ""));
  }
  if (there.store) {
    // The git remote's refs once more: one pushed since the plan read
    // them may hold what would go.
    auto refs_stayed = [&]() -> Status {
      ZIPNN_ASSIGN_OR_RETURN(git::RemoteTips now_tips, git::ReadRemoteTips(git_repo, there.name));
      return RefsMoved(there.name, remote_tips, now_tips);
    };
    auto progress = [&](const std::string& what) { report.Progress(what); };
    ZIPNN_ASSIGN_OR_RETURN(remote::RemoteRetention retention,
                           remote::RetainOnRemote(store, *there.store, options.every_version, /*dry_run=*/false, {},
                                                  progress, a.pushes_stopped, refs_stayed, RuleKeeps(plan.plans)));
    result.remote = RetainResult::Remote{there.name, there.store->where(), retention};
  }
  return result;
}

}  // namespace zipnn::ops
