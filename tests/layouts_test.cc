// Series as training code really saves them, through the real git: one
// small run (tests/layouts/train_layouts.py, Debian's torch) saved in the
// layouts of Hugging Face's Trainer (with and without save_total_limit),
// sharded safetensors, DeepSpeed, Megatron, Lightning, step-numbered
// files, one path overwritten in place, and two models side by side. Each
// save is committed on its own; then which version is a delta of which
// (inspect of each object), every commit checked out bit-exact, and a fresh clone's
// next commit against the original's.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "lib/series/series.h"
#include "tests/git_repo.h"

namespace zipnn {
namespace {

using testing::Repo;
using testing::Run;

constexpr int kSaves = 4;

// The snapshots of every layout, made once for all test cases.
const std::string& Snapshots() {
  static const std::string dir = [] {
    const char* t = std::getenv("TEST_TMPDIR");
    std::string d = std::string(t != nullptr ? t : "/tmp") + "/layouts-XXXXXX";
    REQUIRE(mkdtemp(d.data()) != nullptr);
    const std::string cmd = "/usr/bin/python3 tests/layouts/train_layouts.py --out '" + d + "' --saves " +
                            std::to_string(kSaves) + " >'" + d + "/train.log' 2>&1";
    REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "the training script failed; see " << d << "/train.log");
    return d;
  }();
  return dir;
}

std::string Snapshot(const std::string& layout, int k) { return Snapshots() + "/" + layout + "/" + std::to_string(k); }

// The work tree made equal to save `k` of `layout` (files of older saves
// that the layout deleted are deleted), staged with `git add -A`, committed.
// Each save gets file times of its own, as a trainer writing minutes apart
// would: commits made within one second could leave a file of the same
// size, time and (reused) inode looking unchanged to git.
void CommitSave(Repo& repo, const std::string& where, const std::string& layout, int k) {
  const std::string in = where.empty() ? "" : "cd " + where + " && ";
  const Run run = repo.Sh(in + "rm -rf out && cp -R '" + Snapshot(layout, k) +
                          "/out' out && "
                          "find out -exec touch -d @" +
                          std::to_string(1700000000 + 600 * k) +
                          " {} + && "
                          "git add -A && git commit -qm 'save " +
                          std::to_string(k) + "'");
  REQUIRE_MESSAGE(run.code == 0, run.out << run.err);
}

void Setup(Repo& repo) {
  REQUIRE(repo.Sh("git zipnn install --local >/dev/null && "
                  "git zipnn track '*.safetensors' '*.pt' '*.pth' '*.ckpt' >/dev/null && "
                  "git add .gitattributes && git commit -qm setup")
              .code == 0);
}

struct Stored {
  std::string path;
  bool delta = false;
  std::string base;  // content id of the base, for a delta
};

std::string ObjectPath(const std::string& id) {
  return ".git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id;
}

// Every version git holds in any commit, by content id (at the first path
// it is found at), with how the store holds it (inspect of its object).
std::map<std::string, Stored> AllVersions(Repo& repo, const std::string& where = ".") {
  std::map<std::string, Stored> all;
  const std::string in = "cd " + where + " && ";
  const std::string listed =
      repo.Sh(in +
              "for c in $(git rev-list HEAD); do git ls-tree -r $c -- out | "
              "while read -r mode type oid path; do echo \"$oid $path\"; done; done | sort -u -k1,1")
          .out;
  size_t from = 0;
  for (size_t nl; (nl = listed.find('\n', from)) != std::string::npos; from = nl + 1) {
    const std::string line = listed.substr(from, nl - from);
    const std::string oid = line.substr(0, 40), path = line.substr(41);
    const std::string id =
        repo.Sh(in + "git cat-file -p " + oid + " | grep -o 'xxh3-128:[0-9a-f]*' | cut -c10-").out.substr(0, 32);
    if (id.size() != 32 || all.count(id) != 0) continue;
    const std::string kind = repo.Sh(in + "git zipnn inspect " + ObjectPath(id) + " | sed -n 's/^kind *//p'").out;
    Stored s{path, kind.rfind("delta against ", 0) == 0, ""};
    if (s.delta) s.base = kind.substr(14, 32);
    all[id] = s;
  }
  return all;
}

// Every commit after setup checks out exactly the files of its save.
void CheckCheckouts(Repo& repo, const std::string& layout) {
  for (int k = 1; k <= kSaves; ++k) {
    CAPTURE(k);
    REQUIRE(repo.Sh("git checkout -q HEAD~" + std::to_string(kSaves - k) +
                    " 2>/dev/null || "
                    "git checkout -q main~" +
                    std::to_string(kSaves - k))
                .code == 0);
    const Run diff = repo.Sh("diff -r out '" + Snapshot(layout, k) + "/out'");
    CHECK_MESSAGE(diff.code == 0, diff.out << diff.err);
    REQUIRE(repo.Sh("git checkout -q main").code == 0);
  }
  CHECK(repo.Sh("git status --porcelain").out.empty());
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);
}

// Commits every save of `layout` and checks its deltas: each is made
// against the version of its own series at the step before (never a
// shard of the same save, never another model), and the files listed in
// `must_chain` are deltas from their second save on, but for the newest,
// which is stored whole.
void CheckLayout(const std::string& layout, const std::vector<std::string>& must_chain) {
  CAPTURE(layout);
  Repo repo;
  REQUIRE(repo.Sh("git checkout -q -b main").code == 0);
  Setup(repo);
  for (int k = 1; k <= kSaves; ++k) CommitSave(repo, "", layout, k);
  const series::Rules rules;
  const std::map<std::string, Stored> all = AllVersions(repo);
  int deltas = 0;
  for (const auto& [id, s] : all) {
    if (!s.delta) continue;
    ++deltas;
    CAPTURE(s.path);
    REQUIRE(all.count(s.base) == 1);
    const Stored& base = all.at(s.base);
    CHECK(rules.Place(base.path).name == rules.Place(s.path).name);
    const std::string step = rules.Place(s.path).step, base_step = rules.Place(base.path).step;
    // A step is before this one, or the path is overwritten in place.
    CHECK((series::StepLess(base_step, step) || (step.empty() && base.path == s.path)));
  }
  for (const std::string& name : must_chain) {
    CAPTURE(name);
    int chained = 0, versions = 0;
    for (const auto& [id, s] : all) {
      if (rules.Place(s.path).name != name) continue;
      ++versions;
      chained += s.delta;
    }
    CHECK(versions == kSaves);
    CHECK(chained == kSaves - 2);
  }
  MESSAGE(layout << ": " << all.size() << " versions, " << deltas << " deltas");
  CheckCheckouts(repo, layout);
}

TEST_CASE("Trainer folders: each file is a delta of the same file one save before") {
  CheckLayout("trainer", {"out/checkpoint-#/model.safetensors", "out/checkpoint-#/rng_state.pth"});
}

TEST_CASE("Trainer with save_total_limit=1: the new folder continues the deleted one's series") {
  CheckLayout("trainer-limit1", {"out/checkpoint-#/model.safetensors"});
}

TEST_CASE("sharded folders: shard k is a delta of shard k of the save before, never of another shard") {
  CheckLayout("sharded", {"out/checkpoint-#/model-00001-of-00002.safetensors",
                          "out/checkpoint-#/model-00002-of-00002.safetensors"});
}

TEST_CASE("DeepSpeed global_stepN folders: model states chain, ZeRO partitions stay apart") {
  CheckLayout("deepspeed", {"out/global_step#/mp_rank_00_model_states.pt"});
}

TEST_CASE("Megatron iter_N/mp_rank_XX folders: tensor-parallel ranks stay apart") { CheckLayout("megatron", {}); }

TEST_CASE("Lightning epoch=E-step=S.ckpt, step files, one overwritten path, two models side by side") {
  CheckLayout("lightning", {});
  CheckLayout("stepfiles", {"out/step_#.safetensors"});
  CheckLayout("overwrite", {"out/model.safetensors"});
  CheckLayout("sidebyside", {});
}

TEST_CASE("saves added in one git add still chain, in step order") {
  // git writes its index only when the add ends: the filter remembers
  // what it stored. Four Trainer folders at once, and four step files.
  for (const std::string layout : {"trainer", "stepfiles"}) {
    CAPTURE(layout);
    Repo repo;
    Setup(repo);
    CommitSave(repo, "", layout, kSaves);
    const series::Rules rules;
    const std::map<std::string, Stored> all = AllVersions(repo);
    const std::string name = layout == "trainer" ? "out/checkpoint-#/model.safetensors" : "out/step_#.safetensors";
    int chained = 0;
    for (const auto& [id, s] : all) {
      if (rules.Place(s.path).name != name || !s.delta) continue;
      ++chained;
      CHECK(series::StepLess(rules.Place(all.at(s.base).path).step, rules.Place(s.path).step));
    }
    CHECK(chained == kSaves - 2);  // all but the first and the newest
  }
}

// The objects of the newest commit's checkpoints in the repository at
// `where`: a digest of each object's bytes, by path.
std::map<std::string, std::string> NewObjects(Repo& repo, const std::string& where, const std::string& rev = "HEAD") {
  std::map<std::string, std::string> objects;
  const std::string in = "cd " + where + " && ";
  const std::string files = repo.Sh(in + "git diff --name-only " + rev + "~1 " + rev + " -- out").out;
  size_t from = 0;
  for (size_t nl; (nl = files.find('\n', from)) != std::string::npos; from = nl + 1) {
    const std::string path = files.substr(from, nl - from);
    const std::string id =
        repo.Sh(in + "git show " + rev + ":" + path + " | grep -o 'xxh3-128:[0-9a-f]*' | cut -c10-").out;
    if (id.size() < 32) continue;
    objects[path] = repo.Sh(in + "sha256sum " + ObjectPath(id.substr(0, 32))).out.substr(0, 64);
  }
  return objects;
}

TEST_CASE("a fresh clone's next commit stores the same objects the original repository stores") {
  for (const std::string layout : {"trainer", "overwrite", "sharded"}) {
    CAPTURE(layout);
    Repo repo;
    REQUIRE(repo.Sh("git checkout -q -b main").code == 0);
    Setup(repo);
    for (int k = 1; k < kSaves; ++k) CommitSave(repo, "", layout, k);
    REQUIRE(repo.Sh("git zipnn install >/dev/null && git init -q --bare ../hub.git && "
                    "git remote add origin ../hub.git && git push -q origin main && "
                    "cd .. && git clone -q -b main hub.git clone && cd clone && git config user.email t@example.com && "
                    "git config user.name T")
                .code == 0);
    CHECK(repo.Sh("cd ../clone && git status --porcelain").out.empty());
    // The clone knows each series whole from git: repack finds every
    // version and has nothing to rewrite.
    const Run repack = repo.Sh("cd ../clone && git zipnn repack");
    CHECK(repack.code == 0);
    const std::string name = layout == std::string("sharded")     ? "out/checkpoint-#/model-00001-of-00002.safetensors"
                             : layout == std::string("overwrite") ? "out/model.safetensors"
                                                                  : "out/checkpoint-#/model.safetensors";
    CHECK_MESSAGE(repack.out.find(name + ": " + std::to_string(kSaves - 1) + " versions\n") != std::string::npos,
                  repack.out);
    for (size_t at = repack.out.find("rewrote "); at != std::string::npos; at = repack.out.find("rewrote ", at + 1)) {
      CHECK(repack.out.compare(at, 10, "rewrote 0;") == 0);
    }
    // The clone's checkout fetched only the newest objects, stored whole;
    // with the rest of history fetched too, its next commit re-stores the
    // save before it as the original does.
    REQUIRE(repo.Sh("cd ../clone && git zipnn fetch --all -q").code == 0);
    CommitSave(repo, "", layout, kSaves);
    CommitSave(repo, "../clone", layout, kSaves);
    const auto here = NewObjects(repo, ".");
    const auto there = NewObjects(repo, "../clone");
    CHECK(!here.empty());
    CHECK(here == there);
    CHECK(NewObjects(repo, ".", "HEAD~1") == NewObjects(repo, "../clone", "HEAD~1"));
    // Deltas, not bases: the clone continued the chains (all but the
    // first and the newest of a series are deltas).
    int deltas = 0;
    for (const auto& [id, s] : AllVersions(repo, "../clone")) deltas += s.delta;
    CHECK(deltas >= kSaves - 2);
  }
}

}  // namespace
}  // namespace zipnn
