// Tests of retain's use case between git and the plan (retain.h): which
// rule governs a series, what tags, names and the chosen paths keep, what
// HEAD checks out that the plan drops, and the refusals about a remote's
// refs. git's part comes in as values; the store is a scratch one holding
// small versions (lib/store/test_objects.h).
#include "lib/ops/retain.h"

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/store/test_objects.h"

namespace zipnn::ops {
namespace {

using store::Fate;
using store::Version;

RetentionRule Rule(const std::string& glob, uint32_t keep_newest) {
  RetentionRule rule;
  rule.checkpoints = glob;
  rule.keep_newest = keep_newest;
  rule.drop = true;
  return rule;
}

// A scratch store holding `n` versions of the series "run/step-#", and
// one for "release/model.safetensors" that holds the last's content.
struct Scratch {
  store::Store store;
  std::vector<Version> steps;
  std::map<std::string, std::vector<Version>> all;
  git::CommittedVersions committed;

  static store::Store Empty() {
    const std::string dir = store::testing::TempDir();
    return store::Store{store::ObjectStore(dir + "/objects"), dir + "/tmp", dir + "/cache", "", {}, "", {}};
  }
  explicit Scratch(int n) : store(Empty()) {
    store.policy.retention = {Rule("run/**", 1)};
    for (int i = 0; i < n; ++i) {
      const std::string step = std::to_string(10 * (i + 1));
      steps.push_back(Version{store::testing::StoreVersion(store, i), step, "run/step-" + step});
      committed.first_committed[steps.back().id] = 1000 + i;
      git::CommitInfo commit;
      commit.id.bytes.fill(static_cast<uint8_t>(0xa0 + i));
      commit.author_date = "2026-12-0" + std::to_string(i + 1) + "T10:00:00+00:00";
      commit.subject = "step " + step;
      committed.first_commit[steps.back().id] = commit;
      committed.paths[steps.back().id].insert(steps.back().path);
    }
    all["run/step-#"] = steps;
  }

  Result<RetentionPlan> Plan(const std::set<std::string>& chosen = {}, const std::set<ContentId>& named_here = {},
                             const NamedBy& named_by = NoneNamed) {
    return PlanRetention(store, all, chosen, committed, named_here, named_by, SeriesOf, 2000000000);
  }
  static Result<std::set<ContentId>> NoneNamed(const std::vector<std::string>&, const std::string&) {
    return std::set<ContentId>();
  }
  static std::string SeriesOf(const std::string& path) { return path.rfind("run/", 0) == 0 ? "run/step-#" : path; }
  Fate FateOf(const RetentionPlan& plan, size_t i) const { return plan.plans.front().second.at(i).fate; }
};

TEST_CASE("the first rule whose glob matches a series' newest version governs it") {
  config::Policy policy;
  policy.retention = {Rule("release/**", 1), Rule("run/**", 2), Rule("run/step-*", 3)};
  const std::vector<Version> series = {Version{{}, "10", "old/step-10"}, Version{{}, "20", "run/step-20"}};
  REQUIRE(RuleFor(policy, series) != nullptr);
  CHECK(RuleFor(policy, series)->keep_newest == 2);
  // An older version's path counts too, when no rule matches the newest.
  const std::vector<Version> moved = {Version{{}, "10", "run/step-10"}, Version{{}, "20", "old/step-20"}};
  CHECK(RuleFor(policy, moved)->keep_newest == 2);
  CHECK(RuleFor(policy, {Version{{}, "", "elsewhere.bin"}}) == nullptr);
}

TEST_CASE("a tag keeps only the newest version of the series its commit holds") {
  Scratch s(4);
  // A tagged step-files commit holds every step file up to the third.
  s.committed.tags.emplace_back("v1.0", std::set<ContentId>{s.steps[0].id, s.steps[1].id, s.steps[2].id});
  auto plan = s.Plan();
  REQUIRE_MESSAGE(plan.ok(), plan.status().message());
  CHECK(s.FateOf(*plan, 0) == Fate::kDrop);
  CHECK(s.FateOf(*plan, 1) == Fate::kDrop);
  CHECK(s.FateOf(*plan, 2) == Fate::kKeep);
  CHECK(plan->plans.front().second[2].why == "tagged v1.0");
  CHECK(s.FateOf(*plan, 3) == Fate::kKeep);  // the newest
  CHECK(plan->rules.at("run/step-#")->checkpoints == "run/**");
}

TEST_CASE("a version named on the command line or in the rule's keep list is kept") {
  Scratch s(4);
  s.store.policy.retention[0].keep = {"v1:run/step-20"};
  std::vector<std::string> asked;
  auto named_by = [&](const std::vector<std::string>& specs, const std::string& source) -> Result<std::set<ContentId>> {
    for (const std::string& spec : specs) asked.push_back(source + " " + spec);
    return specs.empty() ? std::set<ContentId>() : std::set<ContentId>{s.steps[1].id};
  };
  auto plan = s.Plan({}, {s.steps[0].id}, named_by);
  REQUIRE(plan.ok());
  CHECK(asked == std::vector<std::string>{".zipnn.yaml v1:run/step-20"});
  CHECK(s.FateOf(*plan, 0) == Fate::kKeep);
  CHECK(s.FateOf(*plan, 1) == Fate::kKeep);
  CHECK(plan->plans.front().second[1].why == "named");
  CHECK(s.FateOf(*plan, 2) == Fate::kDrop);
}

TEST_CASE("a keep list that names no version stops the plan with its error") {
  Scratch s(2);
  s.store.policy.retention[0].keep = {"v9:run/step-10"};
  auto plan =
      s.Plan({}, {}, [](const std::vector<std::string>&, const std::string& source) -> Result<std::set<ContentId>> {
        return InvalidArgument(source + " names a typo");
      });
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().message() == ".zipnn.yaml names a typo");
}

TEST_CASE("only the chosen series are planned, and none governed by a rule is an error that counts them") {
  Scratch s(3);
  s.all["notes/model.bin"] = {Version{s.steps[0].id, "", "notes/model.bin"}};
  auto chosen = s.Plan({"run/step-#"});
  REQUIRE(chosen.ok());
  CHECK(chosen->plans.size() == 1);
  auto unruled = s.Plan({"notes/model.bin"});
  REQUIRE_FALSE(unruled.ok());
  CHECK(unruled.status().message() ==
        "no series matches a retention rule of .zipnn.yaml (1 series checked; `git zipnn ls-files` lists the "
        "tracked checkpoints)");
}

TEST_CASE("a content another series holds stays while no plan of that series takes it") {
  Scratch s(3);
  s.committed.paths[s.steps[0].id].insert("release/model.safetensors");
  auto plan = s.Plan();
  REQUIRE(plan.ok());
  CHECK(s.FateOf(*plan, 0) == Fate::kKeep);
  CHECK(plan->plans.front().second[0].why == "also release/model.safetensors, which no rule covers");
  CHECK(s.FateOf(*plan, 1) == Fate::kDrop);
}

TEST_CASE("of what HEAD checks out, only each series' newest version there is asked about") {
  Scratch s(4);
  auto plan = s.Plan();
  REQUIRE(plan.ok());
  // HEAD holds steps 10 and 20 (a trainer left them); the rule keeps only 40.
  std::map<ContentId, std::string> at_head = {{s.steps[0].id, "run/step-10"}, {s.steps[1].id, "run/step-20"}};
  const std::vector<std::string> asked = DropsAtHead(*plan, at_head);
  REQUIRE(asked.size() == 1);
  // Named as log names it: the commit that brought it in.
  CHECK(asked[0] == "run/step-20  a1a1a1a1a1 2026-12-02 step 20 (rule 'run/**')");
  // One no commit holds (only staged) by its content id.
  s.committed.first_commit.erase(s.steps[1].id);
  auto staged = s.Plan();
  REQUIRE(staged.ok());
  CHECK(DropsAtHead(*staged, at_head).at(0) ==
        "run/step-20  version " + s.steps[1].id.Hex().substr(0, 12) + " (rule 'run/**')");
  // Nothing is asked when HEAD holds the kept newest.
  at_head[s.steps[3].id] = "run/step-40";
  CHECK(DropsAtHead(*plan, at_head).empty());
}

TEST_CASE("a version an earlier retain dropped is not asked about again") {
  Scratch s(3);
  auto plan = s.Plan();
  REQUIRE(plan.ok());
  store::PlannedVersion& p = plan->plans.front().second[1];
  REQUIRE(p.fate == Fate::kDrop);
  p.record = store::Retained{};
  p.record->dropped = true;
  CHECK(DropsAtHead(*plan, {{s.steps[1].id, "run/step-20"}}).empty());
  p.record->dropped = false;  // thinned before, dropped now: its approximate bytes go
  CHECK(DropsAtHead(*plan, {{s.steps[1].id, "run/step-20"}}).size() == 1);
}

TEST_CASE("dropping what HEAD checks out is refused with what to do, asked or not") {
  const std::vector<std::string> one = {"run/step-20 0123456789ab (rule 'run/**')"};
  CHECK(DropAtHeadRefused(one, /*asked=*/false).message() ==
        "the rules drop the version HEAD checks out:\n  run/step-20 0123456789ab (rule 'run/**')\nrun `git zipnn "
        "retain --yes` to drop it anyway, or keep it with `--keep HEAD:<path>` (or keep_newest in the rule); nothing "
        "was changed");
  const std::vector<std::string> two = {"a", "b"};
  CHECK(DropAtHeadRefused(two, /*asked=*/true).message() ==
        "not confirmed: run `git zipnn retain --yes` to drop them anyway, or keep them with `--keep HEAD:<path>` (or "
        "keep_newest in the rule); nothing was changed");
  CHECK(WhatHeadChecksOut(2) == "2 versions HEAD checks out");
  CHECK(ListedAtHead(two) == "  a\n  b\n");
}

TEST_CASE("refs a remote holds that this clone lacks are named, five at most") {
  std::vector<git::RemoteRef> missing;
  for (int i = 0; i < 7; ++i) missing.push_back({"refs/tags/v" + std::to_string(i), std::string(40, 'a' + i)});
  const std::string message = Unfetched("origin", missing).message();
  CHECK(message.find("remote origin has refs this clone has not fetched: refs/tags/v0 (aaaaaaaaaaaa), ") == 0);
  CHECK(message.find("refs/tags/v4 (eeeeeeeeeeee) and 2 more; the versions they hold must stay there") !=
        std::string::npos);
  CHECK(message.find("refs/tags/v5") == std::string::npos);
  CHECK(Unfetched("origin", {missing[0]}).message().find("has a ref this clone") != std::string::npos);
}

TEST_CASE("a remote's refs that moved since the plan stop the removal there; the same refs do not") {
  git::RemoteTips before;
  before.tips.push_back(git::ExtraTip{"v1 on origin", git::Oid()});
  CHECK(RefsMoved("origin", before, before).ok());
  git::RemoteTips pushed = before;
  pushed.tips.push_back(git::ExtraTip{"v2 on origin", git::Oid()});
  const Status moved = RefsMoved("origin", before, pushed);
  REQUIRE_FALSE(moved.ok());
  CHECK(moved.message().find("the refs of remote origin changed while retain ran (a push to it)") == 0);
  git::RemoteTips unfetched = before;
  unfetched.missing.push_back(git::RemoteRef{"refs/heads/main", std::string(40, 'f')});
  CHECK_FALSE(RefsMoved("origin", before, unfetched).ok());
}

}  // namespace
}  // namespace zipnn::ops
