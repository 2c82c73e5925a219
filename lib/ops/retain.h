// The use case of `git zipnn retain` (docs/retention.md): the retention
// rules of .zipnn.yaml applied to this repository's store, and with a
// remote named, to that remote's store after it. It reads what git holds
// (the versions of each series, tags, what HEAD checks out, the git
// remote's refs), plans each series (lib/store/retain.h), asks through
// its report before dropping what HEAD checks out, and carries the plan
// out holding the store's lock alone (Store::BeginRemoving), here and
// then there.
// cmd/retain.cc parses the command line, asks the question on a
// terminal, and prints what the report and the result hold.
//
// The pieces between git and the plan (PlanRetention, DropsAtHead, the
// refusals) are functions of their inputs, tested beside this file.
//
// Thread-compatible: a retain runs on one thread; the store's lock keeps
// other processes out while it changes anything.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/status.h"
#include "lib/config/policy.h"
#include "lib/git/pointers.h"
#include "lib/git/repository.h"
#include "lib/remote/remote_store.h"
#include "lib/remote/retention.h"
#include "lib/store/retain.h"
#include "lib/store/store.h"

namespace zipnn::ops {

using RetentionRule = config::Policy::RetentionRule;

// The parsed command line.
struct RetainRequest {
  std::vector<std::string> paths;  // tracked checkpoints whose series to retain; empty: every series
  std::vector<std::string> keep;   // versions also kept exactly: "<rev>:<path>"
  bool dry_run = false;
  std::optional<std::string> remote;  // retain there too: its name, "" for the default remote
  bool yes = false;                   // apply it on the remote; drop what HEAD checks out without asking
  bool pushes_stopped = false;        // no one pushes to a remote without a lock (S3) until retain ends
  int threads = 0;                    // 0: the policy's
};

// A git remote and the object store it uses.
struct OpenedRemote {
  std::string name;
  std::unique_ptr<remote::RemoteStore> store;
};
// Opens the remote named ("" for the default one).
using OpenRemote = std::function<Result<OpenedRemote>(const std::string& name)>;
// The remotes as git's configuration names them (lib/remote/select.h).
Result<OpenedRemote> OpenConfiguredRemote(const std::string& name);

// What retain says while it works, in the order it happens; the command
// prints it. Each method but ConfirmDropAtHead does nothing by default.
class RetainReport {
 public:
  virtual ~RetainReport() = default;
  // A dry run: the plan drops what HEAD checks out (DropsAtHead's lines).
  virtual void DropsAtHead(const std::vector<std::string>& lines) { (void)lines; }
  // A run without `yes`: whether to drop what HEAD checks out; an error
  // stops the retain before anything changed.
  virtual Status ConfirmDropAtHead(const std::vector<std::string>& lines) = 0;
  // A dry run: the plan of one series, in series order.
  virtual void Planned(const std::string& series, const RetentionRule& rule,
                       const std::vector<store::PlannedVersion>& plan) {
    (void)series, (void)rule, (void)plan;
  }
  // The store is shared: what the repository at `git_dir` needs stays.
  virtual void Sharing(const std::string& git_dir) { (void)git_dir; }
  // Before the plan: what this retain cannot do (the default remote
  // cannot remove objects, so only this store changes).
  virtual void Note(const std::string& line) { (void)line; }
  // Before a long step, here or on the remote ("thinning out/step-20...").
  virtual void Progress(const std::string& what) { (void)what; }
  // One series is done here.
  virtual void Retained(const std::string& series, const RetentionRule& rule,
                        const std::vector<store::RetainedVersion>& done) {
    (void)series, (void)rule, (void)done;
  }
  // This store is done (said before a version that failed stops the
  // retain, and before the remote's turn).
  virtual void StoreDone(const store::RetainTotals& totals) { (void)totals; }
};

struct RetainResult {
  bool dry_run = false;  // planned only: --dry-run, or a remote without `yes`
  // With a remote: what was (or, in a dry run, would be) done there.
  struct Remote {
    std::string name;
    std::string where;  // RemoteStore::where()
    remote::RemoteRetention retention;
    bool thins = true;  // a dry run's plan thins some version (so approximate versions are to be sent)
  };
  std::optional<Remote> remote;
  // Lines to end with, after what is said of the remote: what a dry run
  // did not do, and how to do it.
  std::vector<std::string> closing;
};

// Applies the rules. Nothing changes in a dry run; otherwise a version
// that could not be thinned leaves the retain an error (Corruption) after
// StoreDone, and the remote unchanged.
Result<RetainResult> Retain(const store::Store& store, const git::Repository& git_repo, const OpenRemote& open_remote,
                            const RetainRequest& request, RetainReport& report);

// --- The pieces, for tests ---

// The first rule whose glob matches a version of `series` (its newest
// first), or none.
const RetentionRule* RuleFor(const config::Policy& policy, const std::vector<store::Version>& series);

// The versions a list of "<rev>:<path>" names; an error for one that
// names none. `source` says where the list was written ("--keep").
using NamedBy =
    std::function<Result<std::set<ContentId>>(const std::vector<std::string>& specs, const std::string& source)>;
// git's reading of them (git::PointerAt): the one retain uses.
Result<std::set<ContentId>> NamedInGit(const std::vector<std::string>& specs, const std::string& source);

// What the rules make of each series.
// A planned version as `git zipnn log` names it: the commit that brought
// it in ("0aa4f7fdc6 2026-12-01 step 10"), else "version <content id>".
std::string PlannedName(const store::PlannedVersion& p);

struct RetentionPlan {
  store::Plans plans;                                 // one per series a rule governs, by name
  std::map<std::string, const RetentionRule*> rules;  // the rule of each (pointing into the policy)
};
// Plans each series of `all` (by name, each in series order) that a rule
// of `store.policy` governs, of those in `chosen` when it names any: a
// tag keeps the newest version of the series its commit holds, a version
// `named_here` or the rule's `keep` names is kept, and a content another
// series holds stays while that one keeps it (store::KeepWhatOthersHold;
// `series_of` says a path's series). InvalidArgument when no series has
// a rule.
Result<RetentionPlan> PlanRetention(const store::Store& store,
                                    const std::map<std::string, std::vector<store::Version>>& all,
                                    const std::set<std::string>& chosen, const git::CommittedVersions& committed,
                                    const std::set<ContentId>& named_here, const NamedBy& named_by,
                                    const std::function<std::string(const std::string&)>& series_of, int64_t now);

// "<path> <id> (rule '<glob>')" for each series whose newest version
// HEAD holds (`at_head`: the path where HEAD's tree holds each content)
// the plans drop now. Older versions HEAD still holds (step files a
// trainer left) are what a rule that keeps the newest is for, and a
// version dropped before has nothing left to lose.
std::vector<std::string> DropsAtHead(const RetentionPlan& plan, const std::map<ContentId, std::string>& at_head);

// DropsAtHead's lines as the note, the question and the refusal list
// them: each indented, each ended.
std::string ListedAtHead(const std::vector<std::string>& lines);
// "the version HEAD checks out", or "<n> versions HEAD checks out".
std::string WhatHeadChecksOut(size_t n);
// The refusal to drop what HEAD checks out (DropsAtHead's `lines`)
// without a yes: `asked` on a terminal, else not asked at all.
Status DropAtHeadRefused(const std::vector<std::string>& lines, bool asked);

// The refusal when the git remote holds refs whose objects this clone
// lacks: what they hold is unknown here, so nothing may go.
Status Unfetched(const std::string& remote, const std::vector<git::RemoteRef>& missing);
// The refusal when the git remote's refs changed between the plan and the
// removal there; OK when they did not.
Status RefsMoved(const std::string& remote, const git::RemoteTips& before, const git::RemoteTips& now);

}  // namespace zipnn::ops
