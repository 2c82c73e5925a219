// git-zipnn driven through the real git binary, in temporary repositories
// with their own HOME and GIT_CONFIG_NOSYSTEM=1: install and track, add and
// commit a real trajectory, stored kinds by the policy, git status clean
// after every step, every old commit checked out bit-exact, pointers
// re-added unchanged, a missing object reported by id and path, and the
// log and restore commands.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/file.h"
#include "tests/git_repo.h"
#include "tests/test_util.h"

namespace zipnn {
namespace {

using testing::CommitTrajectory;
using testing::IdAt;
using testing::kSteps;
using testing::Repo;
using testing::Run;
using testing::Slurp;
using testing::Step12;

TEST_CASE("a trajectory committed to one path: policy kinds, clean status, exact checkouts") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && "
                  "printf 'base_interval: 3\\n' > .zipnn.yaml && git add .gitattributes .zipnn.yaml && "
                  "git commit -qm setup")
              .code == 0);
  CHECK(repo.Sh("git config filter.zipnn.process").out == "git-zipnn filter-process\n");
  CHECK(repo.Sh("git zipnn track").out == "Tracked patterns:\n    *.safetensors (.gitattributes)\n");
  // Installing again changes nothing.
  REQUIRE(repo.Sh("git zipnn install --local").code == 0);
  CHECK(repo.Sh("git config --get-all filter.zipnn.process | wc -l").out == "1\n");

  for (const char* step : kSteps) {
    CAPTURE(step);
    REQUIRE(repo.Sh("cp '" + repo.Data(std::string("cnn-bf16/step-") + step + ".safetensors") +
                    "' model.safetensors && git add model.safetensors")
                .code == 0);
    const std::string staged = repo.Sh("git status --porcelain").out;
    CHECK((staged == "M  model.safetensors\n" || staged == "A  model.safetensors\n"));
    REQUIRE(repo.Sh(std::string("git commit -qm 'step ") + step + "'").code == 0);
    CHECK(repo.Sh("git status --porcelain").out.empty());
  }
  // git holds pointers, the store holds the objects.
  const Run pointer = repo.Sh("git show HEAD:model.safetensors");
  CHECK(pointer.out.rfind("git-zipnn pointer 2 ", 0) == 0);
  CHECK(pointer.out.find(" xxh3-128:") != std::string::npos);
  CHECK(pointer.out.size() < 200);
  // With base_interval 3 and the newest whole: a base, a delta of it, a
  // delta of the version after it, a base, and the newest whole.
  Run kinds = repo.Sh(
      "for c in $(git rev-list --reverse HEAD~5..HEAD); do "
      "id=$(git show $c:model.safetensors | grep -o 'xxh3-128:[0-9a-f]*' | cut -c10-); "
      "git zipnn inspect .git/zipnn/objects/${id:0:2}/${id:2:2}/$id | sed -n 's/^kind *//p' | cut -c1-5; "
      "done");
  CHECK(kinds.out == "base \ndelta\ndelta\nbase \nbase \n");
  // Every commit checks out to the exact bytes.
  for (int back = 4; back >= 0; --back) {
    CAPTURE(back);
    REQUIRE(repo.Sh("git checkout -q HEAD~" + std::to_string(back) + " -- model.safetensors").code == 0);
    CHECK(Slurp(repo.File("model.safetensors")) ==
          Slurp(repo.Data(std::string("cnn-bf16/step-") + kSteps[4 - back] + ".safetensors")));
  }
  REQUIRE(repo.Sh("git checkout -q HEAD -- model.safetensors").code == 0);
  CHECK(repo.Sh("git status --porcelain").out.empty());
  // A fresh checkout of the whole tree (smudge from scratch) is exact too.
  REQUIRE(repo.Sh("rm model.safetensors && git checkout -q -- . && git status --porcelain").out.empty());
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data("cnn-bf16/step-000200.safetensors")));
}

TEST_CASE("pointers pass clean unchanged; a missing object is named in the error") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.pt' && git add .gitattributes && "
                  "cp '" +
                  repo.Data("pt-cnn/step-000040.pt") + "' a.pt && git add a.pt && git commit -qm one")
              .code == 0);
  const std::string pointer = repo.Sh("git show HEAD:a.pt").out;
  REQUIRE(pointer.find(" pytorch\n") != std::string::npos);
  // A pointer in the work tree cleans to itself.
  REQUIRE(repo.Sh("git show HEAD:a.pt > b.pt && git add b.pt && git commit -qm two").code == 0);
  CHECK(repo.Sh("git show HEAD:b.pt").out == pointer);

  const std::string id = pointer.substr(pointer.find("xxh3-128:") + 9, 32);
  REQUIRE(repo.Sh("rm -f .git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id).code == 0);
  const Run missing = repo.Sh("rm a.pt && git checkout -- a.pt");
  CHECK(missing.code != 0);
  CHECK(missing.err.find("object " + id + " for a.pt is not in the store") != std::string::npos);
}

TEST_CASE("log shows each version's kind, chain depth and sizes, as a table and as JSON") {
  Repo repo;
  CommitTrajectory(repo);
  const Run json = repo.Sh("git zipnn log --json");
  REQUIRE(json.code == 0);
  const nlohmann::json versions = nlohmann::json::parse(json.out);
  REQUIRE(versions.size() == 5);
  // Newest first, as git log lists them.
  const char* kinds[] = {"base", "delta", "delta", "delta", "base"};
  const int depths[] = {0, 1, 2, 1, 0};
  uint64_t stored_total = 0, raw_total = 0;
  for (size_t i = 0; i < versions.size(); ++i) {
    CAPTURE(i);
    const nlohmann::json& v = versions[i];
    CHECK(v["path"] == "model.safetensors");
    CHECK(v["subject"] == std::string("step ") + kSteps[4 - i]);
    CHECK(v["kind"] == kinds[i]);
    CHECK(v["depth"] == depths[i]);
    CHECK(v["raw_bytes"] == Slurp(repo.Data(std::string("cnn-bf16/step-") + kSteps[4 - i] + ".safetensors")).size());
    const std::string id = v["id"];
    const std::string object = repo.File(".git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id);
    CHECK(v["stored_bytes"] == Slurp(object).size());
    CHECK(v["stored_bytes"] < v["raw_bytes"]);
    stored_total += v["stored_bytes"].get<uint64_t>();
    raw_total += v["raw_bytes"].get<uint64_t>();
    if (v["kind"] == "delta") {
      // A delta's base is the version before it, or (in the second half
      // of the stretch between two bases) the one after it.
      CHECK(v["base"] == versions[i == 1 ? 0 : i + 1]["id"]);
    } else {
      CHECK(v["base"].is_null());
    }
  }
  const Run table = repo.Sh("git zipnn log model.safetensors");
  REQUIRE(table.code == 0);
  CHECK(table.out.rfind("model.safetensors\n", 0) == 0);
  CHECK(table.out.find("delta depth 2") != std::string::npos);
  CHECK(table.out.find("step 000040") != std::string::npos);
  CHECK(table.out.find("in 5 versions") != std::string::npos);
  CHECK(repo.Sh("git zipnn log runs/other.bin").err ==
        "error: 'runs/other.bin' names no checkpoint that git holds here or held in HEAD's history, nor a folder "
        "of them\n");
  CHECK(repo.Sh("git zipnn log model.safetensor").err ==
        "error: 'model.safetensor' names no checkpoint that git holds here or held in HEAD's history, nor a folder "
        "of them (did you mean model.safetensors?)\n");
}

TEST_CASE("log lists a folder's checkpoints by step, newest first, and ends with a total over all of them") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track 'out/**/*.safetensors' && git add .gitattributes && "
                  "git commit -qm setup && echo notes > notes.txt && git add notes.txt")
              .code == 0);
  for (int i = 0; i < 5; ++i) {
    const std::string folder = "out/checkpoint-" + std::to_string(20 * (i + 1) * (i == 4 ? 5 : 1));
    REQUIRE(repo.Sh("mkdir -p " + folder + " && cp '" +
                    repo.Data(std::string("cnn-bf16/step-") + kSteps[i] + ".safetensors") + "' " + folder +
                    "/model.safetensors && git add -A && git commit -qm s" + std::to_string(i))
                .code == 0);
  }
  // Newest first, as git log lists: checkpoint-500 first, by its number;
  // the folder's checkpoints only.
  const Run log = repo.Sh("git zipnn log out");
  REQUIRE(log.code == 0);
  std::vector<std::string> order;
  std::istringstream lines(log.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("out/", 0) == 0) order.push_back(line);
  }
  CHECK(order == std::vector<std::string>{"out/checkpoint-500/model.safetensors", "out/checkpoint-80/model.safetensors",
                                          "out/checkpoint-60/model.safetensors", "out/checkpoint-40/model.safetensors",
                                          "out/checkpoint-20/model.safetensors"});
  // The total: five versions, a chain of three deltas on the first base,
  // and the newest whole (a chain of its own).
  const std::string last = log.out.substr(log.out.rfind("all: "));
  CHECK(last.rfind("all: 5 checkpoints, 5 versions: ", 0) == 0);
  CHECK(last.find(" in 5 objects; 2 chains, the longest 3 deltas\n") != std::string::npos);
  // One checkpoint: no total line.
  CHECK(repo.Sh("git zipnn log out/checkpoint-20/model.safetensors").out.find("all: ") == std::string::npos);
  // ls-files lists them by step too.
  const std::string listed = repo.Sh("git zipnn ls-files").out;
  CHECK(listed.find("out/checkpoint-80/") < listed.find("out/checkpoint-500/"));
  CHECK(listed.find("out/checkpoint-20/") < listed.find("out/checkpoint-40/"));
  // --series: the whole run from any of its checkpoints, a deleted folder included.
  REQUIRE(repo.Sh("git rm -rq out/checkpoint-40 && git commit -qm 'save_total_limit'").code == 0);
  const Run series = repo.Sh("git zipnn log --series out/checkpoint-500/model.safetensors");
  REQUIRE(series.code == 0);
  CHECK(series.out.find("out/checkpoint-40/model.safetensors\n") != std::string::npos);
  CHECK(series.out.find("all: 5 checkpoints, 5 versions: ") != std::string::npos);
}


TEST_CASE("log shows a file saved unchanged in every checkpoint folder as stored once, where it was first") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track 'out/**/*.pt' 'out/**/*.safetensors' && "
                  "git add .gitattributes && git commit -qm setup && head -c 5000 /dev/urandom > ../rng")
              .code == 0);
  for (int i = 0; i < 3; ++i) {
    const std::string folder = "out/checkpoint-" + std::to_string(100 * (i + 1));
    REQUIRE(repo.Sh("mkdir -p " + folder + " && cp ../rng " + folder + "/rng_state.pt && cp '" +
                    repo.Data(std::string("cnn-bf16/step-") + kSteps[i] + ".safetensors") + "' " + folder +
                    "/model.safetensors && git add -A && git commit -qm 'save " + std::to_string(i) + "'")
                .code == 0);
  }
  const Run log = repo.Sh("git zipnn log out");
  REQUIRE(log.code == 0);
  const std::string first = repo.Sh("git rev-parse HEAD~2").out.substr(0, 10);
  for (const char* later : {"out/checkpoint-300/rng_state.pt\n", "out/checkpoint-200/rng_state.pt\n"}) {
    const size_t at = log.out.find(later);
    REQUIRE(at != std::string::npos);
    const std::string row = log.out.substr(at + std::strlen(later), log.out.find('\n', at + std::strlen(later)) -
                                                                         at - std::strlen(later));
    CHECK(row.find("  same  depth -  ") != std::string::npos);
    CHECK(row.find("->        0 B") != std::string::npos);
    CHECK(row.find("[stored once: the bytes of out/checkpoint-100/rng_state.pt at " + first + "]") !=
          std::string::npos);
  }
  const size_t home = log.out.find("out/checkpoint-100/rng_state.pt\n");
  REQUIRE(home != std::string::npos);
  CHECK(log.out.find("  base  depth 0", home) != std::string::npos);
  // The total counts its bytes once; JSON says where the same bytes were.
  Run json = repo.Sh("git zipnn log --json out | python3 -c 'import json,sys; "
                     "print(sum(1 for v in json.load(sys.stdin) if v[\"same_as\"]))'");
  CHECK(json.out == "2\n");
  CHECK(log.out.find("all: 6 checkpoints, 6 versions") != std::string::npos);
  CHECK(log.out.find("in 4 objects") != std::string::npos);
}

TEST_CASE("log lists a checkpoint git no longer holds from HEAD's history, alone or as a folder") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local >/dev/null && git zipnn track '*.safetensors' >/dev/null && "
                  "mkdir -p out/checkpoint-40 && cp '" +
                  repo.Data("cnn-bf16/step-000040.safetensors") +
                  "' out/checkpoint-40/model.safetensors && git add -A && git commit -qm one && "
                  "git rm -q -r out && git commit -qm gone")
              .code == 0);
  for (const std::string& named : {"out/checkpoint-40/model.safetensors", "out/checkpoint-40", "out"}) {
    CAPTURE(named);
    const Run log = repo.Sh("git zipnn log " + named);
    CHECK(log.code == 0);
    CHECK(log.out.rfind("out/checkpoint-40/model.safetensors\n  ", 0) == 0);
    CHECK(log.out.find("  base  depth 0 ") != std::string::npos);
  }
  CHECK(repo.Sh("cd out 2>/dev/null || mkdir out && cd out && git zipnn log checkpoint-40")
            .out.rfind("out/checkpoint-40/model.safetensors\n", 0) == 0);
  const Run nothing = repo.Sh("git zipnn log out/checkpoint-80");
  CHECK(nothing.code != 0);
  CHECK(nothing.err ==
        "error: 'out/checkpoint-80' names no checkpoint that git holds here or held in HEAD's history, nor a folder "
        "of them\n");
}

TEST_CASE("untrack removes tracked patterns and names one that is not tracked") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' '*.pt'").code == 0);
  const Run typo = repo.Sh("git zipnn untrack '*.safetensor'");
  CHECK(typo.code != 0);
  CHECK(typo.err ==
        "git-zipnn: \"*.safetensor\" is not a tracked pattern (did you mean \"*.safetensors\"?)\n"
        "git-zipnn: the tracked patterns are \"*.safetensors\", \"*.pt\" (`git zipnn track` lists them)\n"
        "error: nothing untracked: .gitattributes is unchanged\n");
  const Run some = repo.Sh("git zipnn untrack '*.pt' model.bin");
  CHECK(some.code == 0);
  CHECK(some.out == "Untracking \"*.pt\"\n");
  CHECK(some.err.find("\"model.bin\" is not a tracked pattern\n") != std::string::npos);
  CHECK(repo.Sh("cat .gitattributes").out == "*.safetensors filter=zipnn diff=zipnn -text\n");
}

TEST_CASE("track names a pattern that matches no file where a close one would, and says nothing ahead of files") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local").code == 0);
  // No file yet: a pattern tracked ahead of its checkpoints is fine.
  const Run ahead = repo.Sh("git zipnn track '*.safetensor'");
  CHECK(ahead.code == 0);
  CHECK(ahead.err.empty());
  REQUIRE(repo.Sh("git zipnn untrack '*.safetensor' && mkdir runs && cp '" +
                  repo.Data("cnn-bf16/step-000040.safetensors") + "' runs/model.safetensors")
              .code == 0);
  const Run typo = repo.Sh("cd runs && git zipnn track '*.safetensor' '*.pt'");
  CHECK(typo.code == 0);
  CHECK(typo.out == "Tracking \"runs/*.safetensor\"\nTracking \"runs/*.pt\"\n");
  CHECK(typo.err ==
        "warning: \"*.safetensor\" matches no file here (did you mean \"*.safetensors\"? `git zipnn untrack "
        "\"*.safetensor\"` takes it back)\n");
  CHECK(repo.Sh("cd runs && git zipnn untrack '*.safetensor' && git zipnn track '*.safetensors'").err.empty());
}

TEST_CASE("a pattern tracked in a subfolder applies there, as Git LFS writes it, and git follows it") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && mkdir -p runs/a other && cd runs && git zipnn track '*.safetensors' "
                  "'/top.safetensors'")
              .code == 0);
  CHECK(repo.Sh("cat .gitattributes").out ==
        "runs/*.safetensors filter=zipnn diff=zipnn -text\nruns/top.safetensors filter=zipnn diff=zipnn -text\n");
  // git reads it so: a checkpoint in runs/ is filtered, one elsewhere is not.
  CHECK(repo.Sh("git check-attr filter runs/x.safetensors other/x.safetensors runs/a/x.safetensors").out ==
        "runs/x.safetensors: filter: zipnn\nother/x.safetensors: filter: unspecified\n"
        "runs/a/x.safetensors: filter: unspecified\n");
  const Run again = repo.Sh("cd runs && git zipnn track '*.safetensors'");
  CHECK(again.out == "\"runs/*.safetensors\" already tracked\n");
  const Run untracked = repo.Sh("cd runs && git zipnn untrack '*.safetensors'");
  CHECK(untracked.out == "Untracking \"runs/*.safetensors\"\n");
  CHECK(repo.Sh("cat .gitattributes").out == "runs/top.safetensors filter=zipnn diff=zipnn -text\n");
}

TEST_CASE("restore writes any version bit-exact, to the work tree or elsewhere") {
  Repo repo;
  CommitTrajectory(repo);
  // An old version to another file; the work tree is untouched.
  REQUIRE(repo.Sh("git zipnn restore model.safetensors --rev HEAD~3 -o old.bin").code == 0);
  CHECK(Slurp(repo.File("old.bin")) == Slurp(repo.Data("cnn-bf16/step-000080.safetensors")));
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data("cnn-bf16/step-000200.safetensors")));
  // Into the work tree, from a subfolder; status stays clean.
  REQUIRE(repo.Sh("rm old.bin && mkdir sub && rm model.safetensors && cd sub && "
                  "git zipnn restore ../model.safetensors")
              .code == 0);
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data("cnn-bf16/step-000200.safetensors")));
  CHECK(repo.Sh("git status --porcelain").out.empty());
  // A file git does not hold through git-zipnn is refused.
  const Run refused = repo.Sh("git zipnn restore .zipnn.yaml -o x");
  CHECK(refused.code != 0);
  CHECK(refused.err ==
        "error: HEAD:./.zipnn.yaml is not stored by git-zipnn: git holds the file itself (it is not "
        "tracked, or was committed before `git zipnn install` and `track`)\n");
  CHECK(repo.Sh("test -e x").code != 0);
  // A revision or a file git does not have is named as such.
  CHECK(repo.Sh("git zipnn restore model.safetensors --rev HEAD~9 -o x").err ==
        "error: no revision 'HEAD~9' in this repository (for model.safetensors)\n");
  CHECK(repo.Sh("cd sub && git zipnn restore nothing.safetensors --rev HEAD~1 -o x").err ==
        "error: nothing.safetensors is not in HEAD~1\n");
  // A slip of the fingers is answered with the file meant.
  CHECK(repo.Sh("git zipnn restore model.safetensor -o x").err ==
        "error: model.safetensor is not in HEAD (did you mean model.safetensors?)\n");
  // Outside a repository, the way out rather than git's command line.
  CHECK(repo.Sh("cd / && git zipnn restore model.safetensors").err ==
        "error: not inside a git repository: run this in a repository's work tree (`git init` makes one)\n");
  // An old version from a subfolder, by a path relative to it.
  REQUIRE(repo.Sh("mkdir -p deep/er && git mv model.safetensors deep/er/ && git commit -qm moved && cd deep && "
                  "git zipnn restore er/model.safetensors --rev HEAD -o ../v")
              .code == 0);
  CHECK(Slurp(repo.File("v")) == Slurp(repo.Data("cnn-bf16/step-000200.safetensors")));
  // Into a folder that was removed (as a trainer removes old saves).
  REQUIRE(repo.Sh("rm -r deep && git zipnn restore deep/er/model.safetensors").code == 0);
  CHECK(Slurp(repo.File("deep/er/model.safetensors")) == Slurp(repo.Data("cnn-bf16/step-000200.safetensors")));
  CHECK(repo.Sh("git status --porcelain").out == "?? v\n");
}

TEST_CASE("restore never changes the index and never writes over work git does not hold") {
  Repo repo;
  CommitTrajectory(repo);
  const std::string v80 = repo.Data("cnn-bf16/step-000080.safetensors");
  const std::string v200 = repo.Data("cnn-bf16/step-000200.safetensors");
  // An old version into the work tree: the file is modified, nothing is
  // staged, and the next commit does not take it unless added.
  REQUIRE(repo.Sh("git zipnn restore model.safetensors --rev HEAD~3").code == 0);
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(v80));
  CHECK(repo.Sh("git status --porcelain").out == " M model.safetensors\n");
  CHECK(repo.Sh("git diff --cached --quiet").code == 0);
  // Restoring HEAD's version over it: the old one is what the index does
  // not hold, so it is refused without --force.
  const Run refused = repo.Sh("git zipnn restore model.safetensors");
  CHECK(refused.code != 0);
  CHECK(refused.err ==
        "error: model.safetensors is not the version in the index, and may be work not saved anywhere; "
        "restoring would replace it. Commit or stash it first, restore to another file with -o, or "
        "pass --force\n");
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(v80));
  REQUIRE(repo.Sh("git zipnn restore --force model.safetensors").code == 0);
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(v200));
  CHECK(repo.Sh("git status --porcelain").out.empty());
  // The version the index holds may be restored over itself.
  CHECK(repo.Sh("git zipnn restore model.safetensors").code == 0);
  // -o does not write over a file either.
  REQUIRE(repo.Sh("echo notes > notes.txt").code == 0);
  const Run kept = repo.Sh("git zipnn restore model.safetensors --rev HEAD~3 -o notes.txt");
  CHECK(kept.code != 0);
  CHECK(kept.err == "error: notes.txt exists; restore does not write over it (pass --force to replace it)\n");
  CHECK(Slurp(repo.File("notes.txt")) == "notes\n");
  REQUIRE(repo.Sh("git zipnn restore model.safetensors --rev HEAD~3 -o notes.txt -f").code == 0);
  CHECK(Slurp(repo.File("notes.txt")) == Slurp(v80));
}

TEST_CASE("tracking before install warns, and fsck names what git holds whole until it is renormalized") {
  Repo repo;
  const Run track = repo.Sh("git zipnn track '*.safetensors'");
  REQUIRE(track.code == 0);
  CHECK(track.err ==
        "warning: the git-zipnn filter is not installed, so `git add` would store these files whole in "
        "git; run `git zipnn install` first (files added already: `git add --renormalize .` after it)\n");
  REQUIRE(repo.Sh("cp '" + repo.Data("cnn-fp32/step-000040.safetensors") +
                  "' m.safetensors && git add . && "
                  "git commit -qm raw")
              .code == 0);
  // Installed after: it names what git holds whole, and the way out.
  const Run install = repo.Sh("git zipnn install --local");
  REQUIRE(install.code == 0);
  CHECK(install.out.find("\n1 file of tracked patterns is whole in git (added before the filter was installed): "
                         "`git add --renormalize .` and a commit store it as checkpoints\n") != std::string::npos);
  CHECK(repo.Sh("git zipnn track '*.safetensors'").err.empty());
  const Run fsck = repo.Sh("git zipnn fsck");
  CHECK(fsck.code != 0);
  CHECK(fsck.out ==
        "m.safetensors at index: tracked, but git holds the file itself, not a git-zipnn pointer (it was "
        "added before `git zipnn install`): git add --renormalize -- m.safetensors, then commit\n"
        "0 pointers to 0 checkpoints in HEAD: 1 problem\n");
  CHECK(fsck.err == "error: 1 problem found (see above)\n");
  REQUIRE(repo.Sh("git add --renormalize . && git commit -qm renormalized").code == 0);
  CHECK(repo.Sh("git zipnn fsck").out == "1 pointer to 1 checkpoint in HEAD: every one restores exactly\n");
}

TEST_CASE("a commit that would put a file of a tracked pattern whole into git stops, naming it and the way out") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local >/dev/null && printf 'notes\\n' > notes.txt && git add notes.txt && "
                  "git commit -qm notes")
              .code == 0);
  // Staged before the pattern was tracked: git holds it whole.
  REQUIRE(repo.Sh("cp '" + repo.Data("cnn-fp32/step-000040.safetensors") +
                  "' 'my model.safetensors' && git add 'my model.safetensors'")
              .code == 0);
  // track says so at once.
  const Run track = repo.Sh("git zipnn track '*.safetensors' && git add .gitattributes");
  REQUIRE(track.code == 0);
  CHECK(track.err ==
        "note: 1 file of tracked patterns is whole in git's index (added before a pattern matched): git add "
        "--renormalize -- 'my model.safetensors' stores it as checkpoints\n");
  const Run stopped = repo.Sh("git commit -qm save");
  CHECK(stopped.code != 0);
  CHECK_MESSAGE(stopped.err ==
                    "error: 1 file of tracked patterns is staged whole, not through git-zipnn's filter, so this "
                    "commit would put it into git's history:\n  my model.safetensors (228.1 KiB)\n(they were staged "
                    "before a tracked pattern matched them, or while the filter was not installed). To store them as "
                    "checkpoints: git add --renormalize -- 'my model.safetensors', then commit again; `git commit "
                    "--no-verify` commits them whole; nothing was committed\n",
                stopped.err);
  CHECK(repo.Sh("git log --oneline | wc -l").out == "1\n");
  // status says the same, and not that git add would store it.
  const Run status = repo.Sh("git zipnn status");
  CHECK(status.out.find("Checkpoints staged whole, not through the filter (a commit would put them into git; `git "
                        "add --renormalize -- <path>` stores them):\n        my model.safetensors  228.1 KiB\n") !=
        std::string::npos);
  CHECK(status.out.find("not staged") == std::string::npos);
  // The way out it names: stored, then committed as a pointer.
  REQUIRE(repo.Sh("git add --renormalize -- 'my model.safetensors'").code == 0);
  const Run committed = repo.Sh("git commit -qm save");
  CHECK_MESSAGE(committed.code == 0, committed.err);
  CHECK(repo.Sh("git cat-file -p 'HEAD:my model.safetensors' | head -c 40 | grep -q zipnn").code == 0);

  // --no-verify commits one whole, as asked; later commits that do not
  // change it are not stopped for it (status and fsck name it).
  REQUIRE(
      repo.Sh("cp '" + repo.Data("cnn-fp32/step-000080.safetensors") +
              "' b.safetensors && git -c filter.zipnn.process= -c filter.zipnn.clean= -c filter.zipnn.required=false "
              "add b.safetensors && git commit -q --no-verify -m whole")
          .code == 0);
  CHECK(repo.Sh("git cat-file -s HEAD:b.safetensors").out == "233608\n");
  const Run later = repo.Sh("printf 'more\\n' >> notes.txt && git commit -qam notes");
  CHECK_MESSAGE(later.code == 0, later.err);
}

TEST_CASE("install in a clone made before it says to pull; uninstall inside a repository says it was global") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && cp '" +
                  repo.Data("cnn-fp32/step-000040.safetensors") +
                  "' m.safetensors && git add . && git commit -qm one && git init -q --bare ../hub.git && "
                  "git remote add origin ../hub.git && git push -q origin HEAD:main")
              .code == 0);
  // The filter is installed in `repo` only: the clone checks out pointers.
  REQUIRE(repo.Sh("cd .. && git clone -q -b main hub.git early").code == 0);
  CHECK(repo.Sh("head -c 18 ../early/m.safetensors").out == "git-zipnn pointer ");
  const Run install = repo.Sh("cd ../early && git zipnn install --local");
  REQUIRE(install.code == 0);
  CHECK(install.out.find("1 tracked file in this work tree is still a pointer (checked out before the filter was "
                         "installed): run `git zipnn pull` to write the checkpoints") != std::string::npos);
  REQUIRE(repo.Sh("cd ../early && git zipnn pull").code == 0);
  CHECK(repo.Sh("cmp ../early/m.safetensors '" + repo.Data("cnn-fp32/step-000040.safetensors") + "'").code == 0);
  CHECK(repo.Sh("cd ../early && git zipnn install --local").out.find("still a pointer") == std::string::npos);

  // The default level reaches every repository; inside one that is said.
  const Run uninstall = repo.Sh("git zipnn install >/dev/null && git zipnn uninstall");
  REQUIRE(uninstall.code == 0);
  CHECK(uninstall.out.find("note: that was your global configuration: no repository of yours runs the filter now") !=
        std::string::npos);
  CHECK(repo.Sh("cd .. && git zipnn uninstall").out.find("note:") == std::string::npos);
  CHECK(repo.Sh("git zipnn uninstall --local").out.find("note:") == std::string::npos);
}

TEST_CASE("a file under a tracked pattern that is no checkpoint is said once and stored for its size") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.pt' && head -c 3000 /dev/urandom > notes.pt").code ==
          0);
  const Run add = repo.Sh("git add notes.pt");
  REQUIRE(add.code == 0);
  CHECK(add.err ==
        "git-zipnn: note: notes.pt is not a checkpoint git-zipnn can read (no safetensors or torch.save layout); "
        "stored as plain bytes, compressed whole\n");
  CHECK(repo.Sh("touch notes.pt && git add notes.pt").err.empty());  // stored already: nothing new to say
  const Run log = repo.Sh("git commit -qm notes && git zipnn log --json notes.pt");
  REQUIRE(log.code == 0);
  const nlohmann::json version = nlohmann::json::parse(log.out).at(0);
  CHECK(version["stored_bytes"].get<uint64_t>() <= 3000 + 256);
}

// The versions `git zipnn log --json` lists, by content id.
std::map<std::string, nlohmann::json> Versions(Repo& repo) {
  const Run log = repo.Sh("git zipnn log --json");
  REQUIRE(log.code == 0);
  std::map<std::string, nlohmann::json> by_id;
  for (const nlohmann::json& v : nlohmann::json::parse(log.out)) by_id[v["id"]] = v;
  return by_id;
}

TEST_CASE("step-numbered files form one series; k=5, each a delta of a neighbour, the newest whole") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && "
                  "printf 'base_interval: 5\n' > .zipnn.yaml && git add . && git commit -qm setup && mkdir run")
              .code == 0);
  // Twelve checkpoints in three commits, each added as training writes it.
  for (int i = 0; i < 12; ++i) {
    REQUIRE(repo.Sh("cp '" + repo.Data("cnn12-bf16/" + Step12(i)) + "' run/ && git add run").code == 0);
    if (i % 4 == 3) REQUIRE(repo.Sh("git commit -qm 'to " + Step12(i) + "' && git status --porcelain").out.empty());
  }
  const auto versions = Versions(repo);
  REQUIRE(versions.size() == 12);
  std::vector<std::string> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(IdAt(repo, "HEAD:run/" + Step12(i)));
  // A base every 5; after each, two deltas of the version before them and
  // two of the version after them; the newest whole.
  const int depths[] = {0, 1, 2, 2, 1, 0, 1, 2, 2, 1, 0, 0};
  for (int i = 0; i < 12; ++i) {
    CAPTURE(i);
    const nlohmann::json& v = versions.at(ids[i]);
    CHECK(v["kind"] == (depths[i] == 0 ? "base" : "delta"));
    CHECK(v["depth"] == depths[i]);
    if (depths[i] > 0 && (i % 5 == 1 || i % 5 == 2)) CHECK(v["base"] == ids[i - 1]);
    if (depths[i] > 0 && (i % 5 == 3 || i % 5 == 4)) CHECK(v["base"] == ids[i + 1]);
  }
  // ls-files lists each with its id and kind; show follows a chain to its base.
  const Run listed = repo.Sh("git zipnn ls-files HEAD~1");
  REQUIRE(listed.code == 0);
  CHECK(listed.out.find(IdAt(repo, "HEAD:run/" + Step12(5)).substr(0, 12) + " base    safetensors") !=
        std::string::npos);
  CHECK(listed.out.find(IdAt(repo, "HEAD:run/" + Step12(7)).substr(0, 12) + " delta   safetensors") !=
        std::string::npos);
  CHECK(listed.out.find("run/" + Step12(8)) == std::string::npos);  // not yet at HEAD~1
  CHECK(listed.out.find("8 checkpoints at HEAD~1:") != std::string::npos);
  const Run shown = repo.Sh("cd run && git zipnn show HEAD:run/" + Step12(7));
  REQUIRE(shown.code == 0);
  size_t chain_at = 0;
  for (int i = 7; i >= 5; --i) {  // two deltas, then the base
    const size_t found = shown.out.find(ids[i] + (i == 5 ? " base " : " delta"), chain_at);
    CHECK(found != std::string::npos);
    chain_at = found;
  }
  CHECK(shown.out.find("kind         delta against " + ids[6]) != std::string::npos);
  CHECK(repo.Sh("git zipnn show " + IdAt(repo, "HEAD:run/" + Step12(5))).out.find("kind         base") !=
        std::string::npos);
  CHECK(repo.Sh("git zipnn show HEAD:.zipnn.yaml").err.find("not stored by git-zipnn") != std::string::npos);
  // A fresh checkout of every file, and restore of one from an old commit.
  REQUIRE(repo.Sh("rm -r run && git checkout -q -- run && git status --porcelain").out.empty());
  for (int i = 0; i < 12; ++i) {
    CHECK(Slurp(repo.File("run/" + Step12(i))) == Slurp(repo.Data("cnn12-bf16/" + Step12(i))));
  }
  REQUIRE(repo.Sh("git zipnn restore run/" + Step12(4) + " --rev HEAD~1 -o old").code == 0);
  CHECK(Slurp(repo.File("old")) == Slurp(repo.Data("cnn12-bf16/" + Step12(4))));
  // The end of the chain of four deltas, decoded in one pass by any
  // number of threads.
  for (const char* threads : {"1", "3"}) {
    REQUIRE(repo.Sh("git zipnn restore run/" + Step12(9) + " -T " + threads + " -f -o deep").code == 0);
    CHECK(Slurp(repo.File("deep")) == Slurp(repo.Data("cnn12-bf16/" + Step12(9))));
  }
  CHECK(repo.Sh("git zipnn fsck --threads 1").code == 0);
}

TEST_CASE("one path overwritten twelve times; k=5 against the series' base") {
  Repo repo;
  // min_gain 0: every delta that is not larger than a base is kept (the
  // early steps of this run move too much to gain 10% against step 10).
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && "
                  "printf 'base_interval: 5\ndelta_against: base\nmin_gain: 0\n' > .zipnn.yaml && git add . && "
                  "git commit -qm setup")
              .code == 0);
  for (int i = 0; i < 12; ++i) {
    REQUIRE(repo.Sh("cp '" + repo.Data("cnn12-bf16/" + Step12(i)) +
                    "' model.safetensors && "
                    "git add model.safetensors && git commit -qm " +
                    std::to_string(i))
                .code == 0);
    CHECK(repo.Sh("git status --porcelain").out.empty());
  }
  const auto versions = Versions(repo);
  REQUIRE(versions.size() == 12);
  std::string base;
  for (int i = 0; i < 12; ++i) {
    CAPTURE(i);
    const std::string rev = "HEAD~" + std::to_string(11 - i);
    const std::string id = IdAt(repo, rev + ":model.safetensors");
    const nlohmann::json& v = versions.at(id);
    // A base every 5, the others deltas of it, and the newest whole.
    const bool whole = i % 5 == 0 || i == 11;
    if (i % 5 == 0) base = id;
    CHECK(v["kind"] == (whole ? "base" : "delta"));
    CHECK(v["depth"] == (whole ? 0 : 1));
    if (!whole) CHECK(v["base"] == base);
    // Every commit, through git checkout and through restore.
    REQUIRE(repo.Sh("git checkout -q " + rev + " -- model.safetensors && git zipnn restore model.safetensors --rev " +
                    rev + " -f -o restored")
                .code == 0);
    CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data("cnn12-bf16/" + Step12(i))));
    CHECK(Slurp(repo.File("restored")) == Slurp(repo.Data("cnn12-bf16/" + Step12(i))));
  }
}

TEST_CASE("a checkpoint larger than raw_cache is read where git read it; other streams are stored as git sent them") {
  Repo repo;
  // raw_cache 0: every file is larger than what the raw cache keeps, so
  // none is copied to scratch when the work tree holds what git streams.
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && "
                  "printf 'raw_cache: 0\\n' > .zipnn.yaml && git add . && git commit -qm setup")
              .code == 0);
  for (const char* step : kSteps) {
    CAPTURE(step);
    REQUIRE(repo.Sh("cp '" + repo.Data(std::string("cnn-bf16/step-") + step + ".safetensors") +
                    "' model.safetensors && git add model.safetensors && git commit -qm " + step)
                .code == 0);
  }
  for (int back = 4; back >= 0; --back) {
    CAPTURE(back);
    REQUIRE(
        repo.Sh("git zipnn restore model.safetensors --rev HEAD~" + std::to_string(back) + " -f -o restored").code ==
        0);
    CHECK(Slurp(repo.File("restored")) ==
          Slurp(repo.Data(std::string("cnn-bf16/step-") + kSteps[4 - back] + ".safetensors")));
  }
  CHECK(repo.Sh("ls .git/zipnn/tmp | grep clean-").out.empty());

  // Streams the work tree does not hold, each cleaned for a path whose
  // work-tree file is `big`: parting from it within its first read, after
  // two reads of the same bytes, ending early, running on past it, and
  // another checkpoint altogether. Each is stored as streamed.
  std::string big(3u << 20, '\0');
  uint32_t x = 12345;
  for (char& c : big) c = static_cast<char>((x = x * 1664525u + 1013904223u) >> 24);
  std::string late = big;
  late.replace((5u << 20) / 2, 2, "XY");
  std::string early = big;
  early[100] ^= 1;
  const std::map<std::string, std::string> streams = {
      {"early", early},
      {"late", late},
      {"short", big.substr(0, (3u << 20) / 2)},
      {"longer", big + "and more"},
      {"other", Slurp(repo.Data("cnn-bf16/step-000080.safetensors"))},
  };
  { std::ofstream(repo.File("big.safetensors"), std::ios::binary) << big; }
  for (const auto& [name, bytes] : streams) {
    CAPTURE(name);
    { std::ofstream(repo.File("../" + name), std::ios::binary) << bytes; }
    const Run blob = repo.Sh("git hash-object -w --stdin --path=big.safetensors < ../" + name);
    REQUIRE(blob.code == 0);
    CHECK(repo.Sh("git cat-file -p " + blob.out.substr(0, 40)).out.find(HashBytes(bytes.data(), bytes.size()).Hex()) !=
          std::string::npos);
    REQUIRE(repo.Sh("git update-index --add --cacheinfo 100644," + blob.out.substr(0, 40) + "," + name +
                    ".safetensors && git commit -qm " + name + " && git zipnn restore " + name +
                    ".safetensors -f -o restored")
                .code == 0);
    CHECK(Slurp(repo.File("restored")) == bytes);
  }
  // The work-tree file itself, added: read in place.
  REQUIRE(repo.Sh("git add big.safetensors && git commit -qm big && rm big.safetensors && "
                  "git checkout -- big.safetensors")
              .code == 0);
  CHECK(Slurp(repo.File("big.safetensors")) == big);
}

TEST_CASE("a step added out of order takes its place by number") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && git add . && "
                  "git commit -qm setup")
              .code == 0);
  for (int i : {0, 1, 3, 2}) {
    REQUIRE(repo.Sh("cp '" + repo.Data("cnn12-bf16/" + Step12(i)) + "' . && git add " + Step12(i)).code == 0);
  }
  REQUIRE(repo.Sh("git commit -qm four").code == 0);
  const auto versions = Versions(repo);
  // step 30, added last, is a delta against step 20, the step before it;
  // step 40, the newest, stays whole.
  const nlohmann::json& late = versions.at(IdAt(repo, "HEAD:" + Step12(2)));
  CHECK(late["kind"] == "delta");
  CHECK(late["base"] == IdAt(repo, "HEAD:" + Step12(1)));
  CHECK(versions.at(IdAt(repo, "HEAD:" + Step12(3)))["kind"] == "base");
}

TEST_CASE("a checkout back to a later commit starts each restore from a save the work tree still holds") {
  Repo repo;
  REQUIRE(
      repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && git add . && git commit -qm setup && "
              "mkdir run")
          .code == 0);
  for (int i = 0; i < 5; ++i) {
    REQUIRE(
        repo.Sh("cp '" + repo.Data("cnn12-bf16/" + Step12(i)) + "' run/ && git add run && git commit -qm " + Step12(i))
            .code == 0);
  }
  // One chain, steps 10 to 50. Back two commits, steps 10 to 30 remain.
  // Once the index is older than the files (git status refreshes it after
  // a pause), git trusts their stat data and does not clean them again.
  REQUIRE(repo.Sh("git checkout -q HEAD~2 && sleep 1.1 && git status --porcelain").code == 0);
  // The objects below step 30 are gone: only the work tree's saves can
  // stand for them, and its step 30 is what steps 40 and 50 need.
  for (int i = 0; i < 2; ++i) {
    const std::string id = IdAt(repo, "HEAD:run/" + Step12(i));
    REQUIRE(repo.Sh("rm .git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id).code == 0);
  }
  REQUIRE(repo.Sh("git checkout -q -").code == 0);
  for (int i = 3; i < 5; ++i) {
    CHECK(repo.Sh("cmp run/" + Step12(i) + " '" + repo.Data("cnn12-bf16/" + Step12(i)) + "'").code == 0);
  }
  CHECK(repo.Sh("git status --porcelain").out.empty());
  // The objects were not stored again on the way: the work tree served.
  CHECK(repo.Sh("git zipnn fsck").code != 0);
}

TEST_CASE("a checkout hands delayed Trainer folders back in step order, not git's path order") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install && git zipnn track '*.safetensors' && git add . && git commit -qm setup").code ==
          0);
  // checkpoint-20 ... checkpoint-240: by path, 100 to 180 come before 20.
  for (int i = 0; i < 12; ++i) {
    const std::string folder = "run/checkpoint-" + std::to_string(20 * (i + 1));
    REQUIRE(repo.Sh("mkdir -p " + folder + " && cp '" + repo.Data("cnn12-bf16/" + Step12(i)) + "' " + folder +
                    "/model.safetensors && git add run && git commit -qm " + folder)
                .code == 0);
  }
  // The filter's answers to list_available_blobs, as git traces them
  // ("clone< pathname=...").
  const Run clone = repo.Sh("cd .. && GIT_TRACE_PACKET=1 git clone -q repo clone 2>&1 | grep -a '< pathname='");
  std::vector<std::string> order;
  const std::string listed = "< pathname=run/checkpoint-";
  for (size_t at = 0; (at = clone.out.find(listed, at)) != std::string::npos;) {
    at += listed.size();
    order.push_back(clone.out.substr(at, clone.out.find('/', at) - at));
  }
  CHECK(order ==
        std::vector<std::string>{"20", "40", "60", "80", "100", "120", "140", "160", "180", "200", "220", "240"});
  for (int i = 0; i < 12; ++i) {
    CHECK(repo.Sh("cmp ../clone/run/checkpoint-" + std::to_string(20 * (i + 1)) + "/model.safetensors '" +
                  repo.Data("cnn12-bf16/" + Step12(i)) + "'")
              .code == 0);
  }
  CHECK(repo.Sh("cd ../clone && git status --porcelain").out.empty());
}

TEST_CASE("branches and merges of pointer files, with a conflict resolved to one side") {
  Repo repo;
  CommitTrajectory(repo);
  const std::string file = "cnn-bf16/step-000";
  REQUIRE(repo.Sh("git branch -q side HEAD~1 && git checkout -q side && "
                  "cp '" +
                  repo.Data("cnn12-bf16/" + Step12(0)) +
                  "' other.safetensors && "
                  "cp '" +
                  repo.Data("cnn-fp32/step-000040.safetensors") +
                  "' model.safetensors && "
                  "git add . && git commit -qm side")
              .code == 0);
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data("cnn-fp32/step-000040.safetensors")));
  REQUIRE(repo.Sh("git checkout -q master 2>/dev/null || git checkout -q main").code == 0);
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data(file + "200.safetensors")));
  CHECK(repo.Sh("test -e other.safetensors").code != 0);
  // Both sides changed the checkpoint: git reports a conflict in the pointer.
  const Run merge = repo.Sh("git merge side");
  CHECK(merge.code != 0);
  CHECK(merge.out.find("CONFLICT (content): Merge conflict in model.safetensors") != std::string::npos);
  // The conflict is checked out as text, and adding it unresolved is refused.
  CHECK(Slurp(repo.File("model.safetensors")).find("<<<<<<< ") != std::string::npos);
  const Run unresolved = repo.Sh("git add model.safetensors");
  CHECK(unresolved.code != 0);
  CHECK(unresolved.err.find("model.safetensors holds a damaged git-zipnn pointer") != std::string::npos);
  REQUIRE(repo.Sh("git checkout -q --theirs -- model.safetensors && git add model.safetensors && "
                  "git commit -qm merged && git status --porcelain")
              .out.empty());
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data("cnn-fp32/step-000040.safetensors")));
  CHECK(Slurp(repo.File("other.safetensors")) == Slurp(repo.Data("cnn12-bf16/" + Step12(0))));
  CHECK(IdAt(repo, "HEAD:model.safetensors") == IdAt(repo, "side:model.safetensors"));
}

TEST_CASE("a clone that shares the store path checks out without copying objects") {
  Repo repo;
  REQUIRE(repo.Sh("git config zipnn.storepath \"$HOME/../shared\" && git zipnn install --global").code == 0);
  CommitTrajectory(repo);
  CHECK(repo.Sh("test -d .git/zipnn/objects").code != 0);
  REQUIRE(repo.Sh("cd .. && git clone -q -c zipnn.storepath=\"$HOME/../shared\" repo copy && "
                  "cd copy && git status --porcelain")
              .out.empty());
  CHECK(Slurp(repo.File("../copy/model.safetensors")) == Slurp(repo.Data("cnn-bf16/step-000200.safetensors")));
  REQUIRE(repo.Sh("cd ../copy && git checkout -q HEAD~3 -- model.safetensors").code == 0);
  CHECK(Slurp(repo.File("../copy/model.safetensors")) == Slurp(repo.Data("cnn-bf16/step-000080.safetensors")));
  // Without the store path a clone fetches what its checkout needs from
  // its origin's store (the shared one, as origin's configuration says).
  const Run fetched = repo.Sh("cd .. && git clone -q repo fetched");
  CHECK_MESSAGE(fetched.code == 0, fetched.err);
  CHECK(Slurp(repo.File("../fetched/model.safetensors")) == Slurp(repo.Data("cnn-bf16/step-000200.safetensors")));
  CHECK(repo.Sh("find ../fetched/.git/zipnn/objects -type f -path '*/?\?/?\?/*' ! -name '*.base' | wc -l").out ==
        "1\n");  // step 200, the newest, stored whole
}

TEST_CASE("a corrupted object is refused, naming it; nothing wrong reaches the work tree") {
  Repo repo;
  CommitTrajectory(repo);
  const std::string id = IdAt(repo, "HEAD~4:model.safetensors");  // the first base
  const std::string object = ".git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id;
  // Flip one byte in the middle of the object.
  REQUIRE(repo.Sh("chmod u+w " + object + " && size=$(stat -c %s " + object +
                  ") && "
                  "printf '\\xff' | dd of=" +
                  object + " bs=1 seek=$((size / 2)) conv=notrunc status=none")
              .code == 0);
  // restore leaves no file; git removes the old file and reports.
  const Run restore = repo.Sh("git zipnn restore model.safetensors --rev HEAD~2 -o out");  // two deltas on it
  CHECK(restore.code != 0);
  CHECK(restore.err.find(id + ": chunk") != std::string::npos);
  CHECK(restore.err.find("checksum mismatch") != std::string::npos);
  CHECK(repo.Sh("test -e out").code != 0);
  const Run bad = repo.Sh("git checkout -q HEAD~4 -- model.safetensors");
  CHECK(bad.code != 0);
  CHECK(bad.err.find(id + ": chunk") != std::string::npos);
  CHECK(repo.Sh("test -e model.safetensors").code != 0);
  // The newest, and the delta on it, still check out.
  REQUIRE(repo.Sh("git checkout -q HEAD~1 -- model.safetensors").code == 0);
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data("cnn-bf16/step-000160.safetensors")));
}

TEST_CASE("a terminal is told what each add stored; a pipe is told nothing") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && git add . && "
                  "git commit -qm setup && cp '" +
                  repo.Data("cnn12-bf16/" + Step12(0)) + "' '" + repo.Data("cnn12-bf16/" + Step12(1)) + "' .")
              .code == 0);
  // script(1) gives git a terminal for stderr.
  const Run tty = repo.Sh("script -qec 'git add " + Step12(0) + "' /dev/null");
  REQUIRE(tty.code == 0);
  CHECK(tty.out.find("git-zipnn: " + Step12(0) + ": stored as a base (first of its series), 9.7 KiB -> ") !=
        std::string::npos);
  const Run piped = repo.Sh("git add " + Step12(1));
  REQUIRE(piped.code == 0);
  CHECK(piped.err.empty());
  // The third of the series: the newest, whole; the second becomes a
  // delta of the first.
  const Run delta = repo.Sh("cp '" + repo.Data("cnn12-bf16/" + Step12(2)) + "' . && script -qec 'git add " + Step12(2) +
                            "' /dev/null");
  CHECK(delta.out.find("git-zipnn: " + Step12(2) + ": stored as a base (newest of its series), 9.7 KiB -> ") !=
        std::string::npos);
  CHECK(delta.out.find("; the version before it is now a delta, 6.0 KiB -> 5.0 KiB") != std::string::npos);
  // Nothing new to store (git status cleans again): nothing to say.
  CHECK(repo.Sh("touch " + Step12(2) + " && script -qec 'git status --porcelain' /dev/null").out.find("git-zipnn") ==
        std::string::npos);
}

TEST_CASE("two repositories adding the same and different checkpoints at once into one store") {
  Repo repo;
  REQUIRE(repo.Sh("git config --global zipnn.storepath \"$HOME/../shared\" && git config --global user.name T && "
                  "git config --global user.email t@example.com && git zipnn install --global && "
                  "git zipnn track '*.safetensors' && git add . && git commit -qm setup && "
                  "git clone -q . ../other")
              .code == 0);
  // Both add steps 10..60 (the same bytes) and one step of their own,
  // at the same time, over and over.
  std::string adds;
  for (int i = 0; i < 6; ++i) adds += "cp '" + repo.Data("cnn12-bf16/" + Step12(i)) + "' . && ";
  REQUIRE(repo.Sh(adds + "cp * ../other/ && cp '" + repo.Data("cnn12-bf16/" + Step12(6)) +
                  "' mine.safetensors && "
                  "cp '" +
                  repo.Data("cnn12-bf16/" + Step12(7)) +
                  "' ../other/theirs.safetensors && "
                  "{ git add . & (cd ../other && git add .) & wait; } && "
                  "git commit -qm mine && cd ../other && git commit -qm theirs")
              .code == 0);
  // Every object is whole: fresh checkouts in both are exact and clean.
  for (const char* where : {"repo", "other"}) {
    CAPTURE(where);
    const std::string dir = std::string("../") + where;
    REQUIRE(
        repo.Sh("cd " + dir + " && rm -f *.safetensors && git checkout -q -- . && git status --porcelain").out.empty());
    for (int i = 0; i < 6; ++i) {
      CHECK(Slurp(repo.File(dir + "/" + Step12(i))) == Slurp(repo.Data("cnn12-bf16/" + Step12(i))));
    }
  }
  CHECK(Slurp(repo.File("mine.safetensors")) == Slurp(repo.Data("cnn12-bf16/" + Step12(6))));
  CHECK(Slurp(repo.File("../other/theirs.safetensors")) == Slurp(repo.Data("cnn12-bf16/" + Step12(7))));
  // No temporary file was left in the store.
  CHECK(repo.Sh("find \"$HOME/../shared\" -name '*.tmp-*' | wc -l").out == "0\n");
}

TEST_CASE("log works from a subfolder with paths relative to it") {
  Repo repo;
  CommitTrajectory(repo);
  const Run log = repo.Sh("mkdir -p sub && cd sub && git zipnn log --json ../model.safetensors");
  REQUIRE(log.code == 0);
  const nlohmann::json versions = nlohmann::json::parse(log.out);
  CHECK(versions.size() == 5);
  CHECK(versions[0]["path"] == "model.safetensors");
  // Without paths: every tracked checkpoint of the tree, not only below.
  CHECK(nlohmann::json::parse(repo.Sh("cd sub && git zipnn log --json").out).size() == 5);
}

TEST_CASE("a missing base is named as the base of the version asked for") {
  Repo repo;
  CommitTrajectory(repo);
  // HEAD~1 is a delta of HEAD, the newest; HEAD's object goes, and so do
  // the copies smudge could take instead (the work-tree file and the raw
  // copies the add kept).
  const std::string base = IdAt(repo, "HEAD:model.safetensors");
  const std::string head = IdAt(repo, "HEAD~1:model.safetensors");
  REQUIRE(
      repo.Sh("rm -r .git/zipnn/cache .git/zipnn/objects/" + base.substr(0, 2) + "/" + base.substr(2, 2) + "/" + base)
          .code == 0);
  const Run restore = repo.Sh("git zipnn restore model.safetensors --rev HEAD~1 -o out");
  CHECK(restore.code != 0);
  CHECK(restore.err.find("object " + base + " (a base of " + head + ") for model.safetensors is not in the store") !=
        std::string::npos);
  CHECK(repo.Sh("test -e out").code != 0);
  const Run checkout = repo.Sh("rm model.safetensors && git checkout HEAD~1 -- model.safetensors");
  CHECK(checkout.code != 0);
  CHECK(checkout.err.find("object " + base + " (a base of " + head + ")") != std::string::npos);
  const Run show = repo.Sh("git zipnn show HEAD~1:model.safetensors");
  CHECK(show.code != 0);
  CHECK(show.err.find("object " + base + " is not in the store") != std::string::npos);
}

// The what-if row of a policy in `git zipnn analyze --json` output.
const nlohmann::json& PolicyRow(const nlohmann::json& analysis, int k, const std::string& against) {
  for (const nlohmann::json& p : analysis["policies"]) {
    if (p["base_interval"] == k && p["against"] == against) return p;
  }
  FAIL("no policy row for k=" << k << " " << against);
  return analysis;
}

TEST_CASE("analyze reads a step-numbered series from git; its what-if matches what the store holds") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && "
                  "printf 'base_interval: 5\n' > .zipnn.yaml && git add . && git commit -qm setup && mkdir run")
              .code == 0);
  for (int i = 11; i >= 0; --i) {  // added newest first: the series is ordered by step, not by add
    REQUIRE(repo.Sh("cp '" + repo.Data("cnn12-bf16/" + Step12(i)) + "' run/ && git add run").code == 0);
  }
  REQUIRE(repo.Sh("git commit -qm run").code == 0);
  // Versions were stored in add order, so the store's chains differ from
  // the series order; re-add them in step order into a fresh store. The
  // store goes after `git rm`: git re-reads racily clean files through the
  // clean filter there, which would store them out of order in it.
  REQUIRE(repo.Sh("git rm -rq --cached run && rm -rf .git/zipnn && git commit -qm drop && "
                  "for f in run/*; do git add $f; done && git commit -qm again")
              .code == 0);
  const Run analyzed = repo.Sh("cd run && git zipnn analyze step-000070.safetensors --json ../a.json");
  REQUIRE(analyzed.code == 0);
  const nlohmann::json a = nlohmann::json::parse(Slurp(repo.File("a.json")));
  REQUIRE(a["checkpoints"].size() == 12);
  CHECK(a["base_interval"] == 5);
  for (int i = 0; i < 12; ++i) {
    CAPTURE(i);
    const nlohmann::json& row = a["checkpoints"][i];
    CHECK(row["label"] == Step12(i).substr(5, 6));
    CHECK(row["id"] == IdAt(repo, "HEAD:run/" + Step12(i)));
    CHECK(row["raw_bytes"] == Slurp(repo.Data("cnn12-bf16/" + Step12(i))).size());
  }
  // The policy of .zipnn.yaml, played over the series, stores exactly
  // what the clean filter stored.
  uint64_t stored = 0;
  for (const auto& [id, v] : Versions(repo)) stored += v["stored_bytes"].get<uint64_t>();
  const nlohmann::json& current = PolicyRow(a, 5, "previous");
  CHECK(current["current"] == true);
  CHECK(current["stored_bytes"] == stored);
  CHECK(current["worst_chain"] == 2);
  // The same files analysed on disk give the same figures.
  REQUIRE(repo.Sh("git zipnn analyze run/*.safetensors --json b.json").code == 0);
  const nlohmann::json b = nlohmann::json::parse(Slurp(repo.File("b.json")));
  for (int i = 0; i < 12; ++i) {
    for (const char* column :
         {"id", "changed_params", "relative_update", "standalone_auto", "previous_auto", "base_bound"}) {
      CHECK(a["checkpoints"][i][column] == b["checkpoints"][i][column]);
    }
  }
  CHECK(a["policies"] == b["policies"]);
  // A scratch copy of every version was removed when done.
  CHECK(repo.Sh("ls .git/zipnn/tmp | grep -c version").out == "0\n");
}

TEST_CASE("analyze walks the history of one path, within a revision range") {
  Repo repo;
  CommitTrajectory(repo);
  const Run all = repo.Sh("git zipnn analyze model.safetensors --csv out.csv --at 2");
  REQUIRE(all.code == 0);
  const std::string csv = Slurp(repo.File("out.csv"));
  std::vector<std::string> lines;
  std::istringstream in(csv);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 6);  // a header and five versions, oldest first
  for (int i = 0; i < 5; ++i) {
    // Labelled by short commit and subject.
    const std::string commit = repo.Sh("git rev-parse HEAD~" + std::to_string(4 - i)).out.substr(0, 7);
    CHECK(lines[i + 1].find(std::to_string(i) + "," + commit + " step " + kSteps[i] + ",") == 0);
  }
  CHECK(Slurp(repo.File("out.exponents.csv")).find("\n2,") != std::string::npos);  // --at picked index 2
  CHECK(all.out.find("Policy what-if") != std::string::npos);
  const Run range = repo.Sh("git zipnn analyze model.safetensors --rev HEAD~2..HEAD --json r.json");
  REQUIRE(range.code == 0);
  CHECK(nlohmann::json::parse(Slurp(repo.File("r.json")))["checkpoints"].size() == 2);
  CHECK(repo.Sh("git zipnn analyze model.safetensors --at nope").err.find("--at 'nope' names no checkpoint") !=
        std::string::npos);
  CHECK(repo.Sh("git zipnn analyze model.safetensors --tensors-regex '('").err.find("not a valid regular") !=
        std::string::npos);
}

TEST_CASE("git diff and git log -p show what changed in a tracked checkpoint, tensor by tensor") {
  Repo repo;
  CommitTrajectory(repo);
  const Run diff = repo.Sh("git diff HEAD~1 HEAD -- model.safetensors");
  REQUIRE(diff.code == 0);
  CHECK(diff.out.find("diff --git-zipnn a/model.safetensors b/model.safetensors") != std::string::npos);
  CHECK(diff.out.find("parameters changed, relative update") != std::string::npos);
  CHECK(diff.out.find("c1.weight") != std::string::npos);
  CHECK(diff.out.find("Binary files") == std::string::npos);
  // A changed work tree: git hands the driver the file itself.
  REQUIRE(repo.Sh("cp '" + repo.Data("cnn-bf16/step-000040.safetensors") + "' model.safetensors").code == 0);
  const Run worktree = repo.Sh("git diff");
  CHECK(worktree.out.find("diff --git-zipnn a/model.safetensors") != std::string::npos);
  CHECK(worktree.out.find("25 tensors:") != std::string::npos);
  REQUIRE(repo.Sh("git checkout -- model.safetensors").code == 0);
  // log -p runs no external diff: it diffs the per-tensor listings.
  const Run log = repo.Sh("git log -p -1 --format=%s -- model.safetensors");
  REQUIRE(log.code == 0);
  CHECK(log.out.find("\n-c1.weight bf16 [") != std::string::npos);
  CHECK(log.out.find("\n+c1.weight bf16 [") != std::string::npos);
  CHECK(log.out.find("\n-checkpoint " + IdAt(repo, "HEAD~1:model.safetensors")) != std::string::npos);
  // The command itself: two revisions of a path, or <rev>:<path> and a file.
  const Run revs = repo.Sh("git zipnn diff HEAD~4 HEAD model.safetensors --all");
  REQUIRE(revs.code == 0);
  CHECK(revs.out.find("--- HEAD~4:model.safetensors (") != std::string::npos);
  CHECK(revs.out.find("25 tensors: ") != std::string::npos);
  // With git's `--` between the revisions and the path: the same.
  const Run dashes = repo.Sh("git zipnn diff HEAD~4 HEAD --all -- model.safetensors");
  CHECK_MESSAGE(dashes.code == 0, dashes.err);
  CHECK(dashes.out == revs.out);
  const Run same = repo.Sh("git zipnn diff HEAD:model.safetensors model.safetensors");
  REQUIRE(same.code == 0);
  CHECK(same.out.find("0 changed, 25 frozen") != std::string::npos);
  CHECK(same.out.find("0.0% of") != std::string::npos);
  // Given a pointer, textconv reads the work-tree file the index holds
  // for its version, which needs no object; a changed file is not used.
  REQUIRE(repo.Sh("git show HEAD:model.safetensors > ../pointer && mv .git/zipnn/objects ../objects && "
                  "rm -rf .git/zipnn/cache")
              .code == 0);
  const Run in_place = repo.Sh("git zipnn textconv ../pointer");
  CHECK(in_place.out.find("checkpoint " + IdAt(repo, "HEAD:model.safetensors") + ": ") == 0);
  CHECK(in_place.out.find("\nc1.weight bf16 [") != std::string::npos);
  REQUIRE(repo.Sh("cp '" + repo.Data("cnn-bf16/step-000040.safetensors") + "' model.safetensors").code == 0);
  CHECK(repo.Sh("git zipnn textconv ../pointer").out.find("git-zipnn: cannot show this checkpoint: ") == 0);
  REQUIRE(repo.Sh("rm -rf .git/zipnn/objects && mv ../objects .git/zipnn/objects && "
                  "git checkout -- model.safetensors")
              .code == 0);
  CHECK(repo.Sh("git zipnn textconv ../pointer").out == in_place.out);
  // Uninstalled, git falls back to its own binary diff of the pointers.
  REQUIRE(repo.Sh("git zipnn uninstall --local").code == 0);
  CHECK(repo.Sh("git diff HEAD~1 HEAD").out.find("git-zipnn pointer") != std::string::npos);
}

TEST_CASE("git log -p reads the listings clean kept in git's textconv cache: no restore, textconv's own text") {
  Repo repo;
  CommitTrajectory(repo);
  // One note per version, on its pointer blob, in a commit git accepts as
  // its cache for the textconv command.
  CHECK(repo.Sh("git notes --ref=textconv/zipnn list | wc -l").out == "5\n");
  CHECK(repo.Sh("git log -1 --format=%s refs/notes/textconv/zipnn").out == "git-zipnn textconv --\n");
  const std::string head_blob = repo.Sh("git rev-parse HEAD:model.safetensors").out.substr(0, 40);
  CHECK(repo.Sh("git notes --ref=textconv/zipnn show " + head_blob).out ==
        repo.Sh("git show HEAD:model.safetensors > ../p && git zipnn textconv ../p").out);
  // git reads them and starts neither the filter (no smudge) nor textconv.
  const Run traced = repo.Sh("GIT_TRACE=1 git log -p --format=%s -- model.safetensors");
  REQUIRE(traced.code == 0);
  CHECK(traced.err.find("git-zipnn") == std::string::npos);
  CHECK(traced.out.find("\n-c1.weight bf16 [") != std::string::npos);
  // The same text git gets when it restores each version and asks textconv.
  const Run uncached =
      repo.Sh("GIT_TRACE=1 git -c diff.zipnn.cachetextconv=false log -p --format=%s -- model.safetensors");
  CHECK(uncached.err.find("'git-zipnn textconv --'") != std::string::npos);
  CHECK(uncached.out == traced.out);
  // An error textconv printed (the object missing when git asked) is
  // listed anew the next time clean meets the version; a good note is kept.
  REQUIRE(repo.Sh("git notes --ref=textconv/zipnn add -f -m 'git-zipnn: cannot show this checkpoint: gone' " +
                  head_blob + " && c=$(git commit-tree refs/notes/textconv/zipnn^{tree} -m 'git-zipnn textconv --')" +
                  " && git update-ref refs/notes/textconv/zipnn $c")
              .code == 0);
  CHECK(repo.Sh("git log -p -1 --format=%s -- model.safetensors").out.find("+git-zipnn: cannot show") !=
        std::string::npos);
  const std::string before = repo.Sh("git rev-parse refs/notes/textconv/zipnn").out;
  REQUIRE(repo.Sh("touch model.safetensors && git add --renormalize model.safetensors").code == 0);
  CHECK(repo.Sh("git rev-parse refs/notes/textconv/zipnn").out != before);
  CHECK(repo.Sh("git log -p --format=%s -- model.safetensors").out == traced.out);
  CHECK(repo.Sh("git notes --ref=textconv/zipnn list | wc -l").out == "5\n");
  // Cleaning it once more writes nothing: the listing is there.
  const std::string listed = repo.Sh("git rev-parse refs/notes/textconv/zipnn").out;
  REQUIRE(repo.Sh("touch model.safetensors && git add --renormalize model.safetensors").code == 0);
  CHECK(repo.Sh("git rev-parse refs/notes/textconv/zipnn").out == listed);
  // A cache git kept for another textconv command is not git's cache for
  // this one: clean starts it anew rather than adding to it.
  REQUIRE(repo.Sh("c=$(git commit-tree refs/notes/textconv/zipnn^{tree} -m 'other-textconv') && "
                  "git update-ref refs/notes/textconv/zipnn $c && "
                  "touch model.safetensors && git add --renormalize model.safetensors")
              .code == 0);
  CHECK(repo.Sh("git log -1 --format=%s refs/notes/textconv/zipnn").out == "git-zipnn textconv --\n");
  CHECK(repo.Sh("git notes --ref=textconv/zipnn list | wc -l").out == "1\n");
  // Without cachetextconv (an install before 0.7), nothing is written.
  REQUIRE(repo.Sh("git config diff.zipnn.cachetextconv false && git update-ref -d refs/notes/textconv/zipnn && "
                  "touch model.safetensors && git add --renormalize model.safetensors")
              .code == 0);
  CHECK(repo.Sh("git rev-parse -q --verify refs/notes/textconv/zipnn").code != 0);
}

TEST_CASE("git diff compares a new step file with the version before it in its series") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track 'out/**/*.safetensors' && git add .gitattributes && "
                  "git commit -qm setup")
              .code == 0);
  for (const char* step : {"40", "80"}) {
    REQUIRE(repo.Sh(std::string("mkdir -p out/checkpoint-") + step + " && cp '" +
                    repo.Data(std::string("cnn-bf16/step-0000") + step + ".safetensors") + "' out/checkpoint-" + step +
                    "/model.safetensors && git add -A && git commit -qm " + step)
                .code == 0);
  }
  const Run diff = repo.Sh("git diff HEAD~1 HEAD");
  REQUIRE(diff.code == 0);
  CHECK(diff.out.find("diff --git-zipnn a/out/checkpoint-80/model.safetensors b/out/checkpoint-80/model.safetensors\n"
                      "new file, compared with the version before it in its series: "
                      "out/checkpoint-40/model.safetensors\n--- a/out/checkpoint-40/model.safetensors (") == 0);
  CHECK(diff.out.find("parameters changed, relative update") != std::string::npos);
  CHECK(diff.out.find("/dev/null") == std::string::npos);
  // The first of a series has nothing before it: a new file, as git shows one.
  const Run first = repo.Sh("git diff HEAD~2 HEAD~1");
  CHECK(first.out.find("--- /dev/null\n+++ b/out/checkpoint-40/model.safetensors (") != std::string::npos);
  // A reader that stops early is no failure of the diff.
  const Run head = repo.Sh("git diff HEAD~1 HEAD | head -1");
  CHECK(head.code == 0);
  CHECK(head.out == "diff --git-zipnn a/out/checkpoint-80/model.safetensors b/out/checkpoint-80/model.safetensors\n");
  CHECK(head.err.empty());
}

TEST_CASE("fsck finds missing and damaged objects of HEAD, or of all history with --all") {
  Repo repo;
  CommitTrajectory(repo);  // base_interval 5: HEAD~1's version is a delta on HEAD's
  // A sixth checkpoint, only in a stash.
  REQUIRE(
      repo.Sh("cp '" + repo.Data("cnn-fp32/step-000040.safetensors") + "' model.safetensors && git stash -q").code ==
      0);
  const Run clean = repo.Sh("git zipnn fsck --all");
  REQUIRE(clean.code == 0);
  CHECK(clean.out ==
        "6 pointers to 6 checkpoints in every ref, reflog, stash and the index: every one restores exactly\n");
  CHECK(repo.Sh("git zipnn fsck").out == "1 pointer to 1 checkpoint in HEAD: every one restores exactly\n");
  auto object = [&](const std::string& rev) {
    const std::string id = IdAt(repo, rev + ":model.safetensors");
    return ".git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id;
  };
  // A byte flipped inside a chunk of HEAD~3's object (a delta on HEAD~4's
  // base, and HEAD~2's base): its header still reads, so only a full fsck,
  // which decodes, finds it, and only with --all, since HEAD does not need
  // it. Both versions whose chain holds it are named.
  REQUIRE(repo.Sh("f=" + object("HEAD~3") +
                  " && chmod u+w $f && printf '\\377' | "
                  "dd of=$f bs=1 seek=$(( $(stat -c %s $f) - 200 )) conv=notrunc 2>/dev/null")
              .code == 0);
  CHECK(repo.Sh("git zipnn fsck").code == 0);
  CHECK(repo.Sh("git zipnn fsck --all --fast").code == 0);
  const Run damaged = repo.Sh("git zipnn fsck --all");
  CHECK(damaged.code != 0);
  const std::string id3 = IdAt(repo, "HEAD~3:model.safetensors");
  CHECK(damaged.out.find("model.safetensors at " + repo.Sh("git rev-parse HEAD~3").out.substr(0, 10) + ": checkpoint " +
                         id3 + ": ") != std::string::npos);
  CHECK(damaged.out.find("checksum mismatch") != std::string::npos);
  CHECK(damaged.out.find(": checkpoint " + IdAt(repo, "HEAD~2:model.safetensors") + ": ") != std::string::npos);
  CHECK(damaged.err.find("error: 2 problems found") != std::string::npos);
  // HEAD's object (the base of HEAD~1's) missing fails HEAD, even in the
  // fast mode, and the JSON names path, revision and id.
  REQUIRE(repo.Sh("rm " + object("HEAD")).code == 0);
  const Run missing = repo.Sh("git zipnn fsck --fast --json");
  CHECK(missing.code != 0);
  const nlohmann::json report = nlohmann::json::parse(missing.out);
  CHECK(report["scope"] == "HEAD");
  CHECK(report["mode"] == "fast");
  REQUIRE(report["problems"].size() == 1);
  CHECK(report["problems"][0]["path"] == "model.safetensors");
  CHECK(report["problems"][0]["rev"] == "HEAD");
  CHECK(report["problems"][0]["id"] == IdAt(repo, "HEAD:model.safetensors"));
  CHECK(report["problems"][0]["problem"].get<std::string>().find("object " + IdAt(repo, "HEAD:model.safetensors") +
                                                                 " is not in the store") != std::string::npos);
}

TEST_CASE("fsck --all and gc see pointers only in a reflog, in a merge's own resolution, or in the index") {
  Repo repo;
  auto step = [&](int i) { return "cp '" + repo.Data("cnn12-bf16/" + Step12(i)) + "' m.safetensors && "; };
  // Step 10 on main; step 20 on a side branch and step 30 on main conflict,
  // and the merge resolves to step 40, which no parent has. Step 50 is
  // committed and dropped again (only the reflog has it); step 60, in a
  // series of its own, is only staged.
  REQUIRE(
      repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && git add . && git commit -qm setup && " +
              step(0) + "git add . && git commit -qm 10 && git checkout -qb side && " + step(1) +
              "git commit -qam 20 && git checkout -q - && " + step(2) +
              "git commit -qam 30 && "
              "{ git merge -q side >/dev/null 2>&1; true; } && " +
              step(3) + "git add . && git commit -qm merged && " + step(4) +
              "git commit -qam 50 && git reset -q --hard HEAD~1 && cp '" + repo.Data("cnn12-bf16/" + Step12(5)) +
              "' n.safetensors && git add n.safetensors")
          .code == 0);
  const Run all = repo.Sh("git zipnn fsck --all");
  CHECK(all.code == 0);
  CHECK(all.out ==
        "6 pointers to 6 checkpoints in every ref, reflog, stash and the index: every one restores exactly\n");
  // gc keeps all six, even with no grace period.
  CHECK(repo.Sh("git zipnn gc --keep-recent 0").out.find("removed 0 objects") == 0);
  CHECK(repo.Sh("find .git/zipnn/objects -type f -path '*/?\?/?\?/*' ! -name '*.base' | wc -l").out == "6\n");
  // Expire the reflog, and step 50 goes (once it is over a second old).
  REQUIRE(repo.Sh("git reflog expire --expire=now --all && sleep 1.1").code == 0);
  CHECK(repo.Sh("git zipnn gc --keep-recent 0").out.find("removed 1 object") == 0);
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);
}

TEST_CASE("gc removes what nothing needs and keeps every base of a live delta") {
  Repo repo;
  // newest: delta, so that the newest version is a delta on one no
  // pointer names.
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && "
                  "printf 'base_interval: 3\nnewest: delta\n' > .zipnn.yaml && git add . && git commit -qm setup")
              .code == 0);
  // Step 10 is staged, then replaced by step 20 (a delta on it) before the
  // commit: no pointer names step 10, yet step 20 needs it as its base.
  // An fp32 checkpoint is staged and unstaged: nothing needs it.
  REQUIRE(repo.Sh("cp '" + repo.Data("cnn12-bf16/" + Step12(0)) +
                  "' m.safetensors && git add m.safetensors && "
                  "cp '" +
                  repo.Data("cnn12-bf16/" + Step12(1)) +
                  "' m.safetensors && git add m.safetensors && "
                  "git commit -qm v1 && cp '" +
                  repo.Data("cnn-fp32/step-000040.safetensors") +
                  "' x.safetensors && "
                  "git add x.safetensors && git rm -q --cached x.safetensors && rm x.safetensors && sleep 1.1")
              .code == 0);
  const std::string objects = "find .git/zipnn/objects -type f -path '*/?\?/?\?/*' ! -name '*.base' | wc -l";
  REQUIRE(repo.Sh(objects).out == "3\n");
  // Within the grace period everything stays.
  // Both paths are overwritten in place: the newest version of each (one
  // a path: step 10's went when step 20 came) is kept raw for the next
  // delta, and stays while gc keeps its object.
  CHECK(repo.Sh("git zipnn gc").out ==
        "removed 0 objects (0 B) and 0 leftover files; kept 3 (needed by 1 pointer, or used in the last 14 days)\n"
        "raw cache: 2 copies kept (237.8 KiB of a 512.0 MiB budget)\n");
  const Run dry = repo.Sh("git zipnn gc --keep-recent 0 --dry-run");
  REQUIRE(dry.code == 0);
  CHECK(dry.out.find("would remove ") == 0);
  CHECK(dry.out.find("would remove 1 object (") != std::string::npos);
  CHECK(repo.Sh(objects).out == "3\n");
  const Run gc = repo.Sh("git zipnn gc --keep-recent 0");
  REQUIRE(gc.code == 0);
  CHECK(gc.out.find("removed 1 object (") == 0);
  // The unstaged checkpoint's raw copy went with its object.
  CHECK(gc.out.find("raw cache: freed 228.1 KiB; 1 copy kept (9.7 KiB of a 512.0 MiB budget)\n") != std::string::npos);
  CHECK(repo.Sh(objects).out == "2\n");
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);
  REQUIRE(repo.Sh("rm m.safetensors && git checkout -- m.safetensors").code == 0);
  CHECK(Slurp(repo.File("m.safetensors")) == Slurp(repo.Data("cnn12-bf16/" + Step12(1))));
  // An object a gc left aside when it was interrupted is put back first;
  // scratch files of a dead process go after an hour, fresh ones stay.
  const std::string id = IdAt(repo, "HEAD:m.safetensors");
  const std::string path = ".git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id;
  REQUIRE(repo.Sh("mv " + path + " " + path +
                  ".gc && mkdir -p .git/zipnn/tmp && "
                  "touch -d '2 hours ago' .git/zipnn/tmp/version-old && touch .git/zipnn/tmp/version-new")
              .code == 0);
  CHECK(repo.Sh("git zipnn fsck").code != 0);
  CHECK(repo.Sh("git zipnn gc --keep-recent 0").out.find("removed 0 objects (0 B) and 1 leftover file;") == 0);
  CHECK(repo.Sh("git zipnn fsck").code == 0);
  CHECK(repo.Sh("ls .git/zipnn/tmp | grep version").out == "version-new\n");
}

TEST_CASE("gc keeps what a linked work tree has staged, and a needed object it cannot read") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && git add . && "
                  "git commit -qm setup && cp '" +
                  repo.Data("cnn12-bf16/" + Step12(0)) +
                  "' m.safetensors && git add m.safetensors && git commit -qm v1 && "
                  "git worktree add -q ../wt && cd ../wt && cp '" +
                  repo.Data("cnn-fp32/step-000040.safetensors") +
                  "' x.safetensors && git add x.safetensors && sleep 1.1")
              .code == 0);
  // The version staged only in the other work tree, and v1 with its
  // header damaged (a byte of the header checksum's input).
  const std::string staged =
      repo.Sh("cd ../wt && git show :x.safetensors | grep -o 'xxh3-128:[0-9a-f]*' | cut -c10- | head -c 32").out;
  REQUIRE(staged.size() == 32);
  const std::string v1 = IdAt(repo, "HEAD:m.safetensors");
  auto path = [](const std::string& id) {
    return ".git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id;
  };
  REQUIRE(repo.Sh("printf '\\377' | dd of=" + path(v1) + " bs=1 seek=20 conv=notrunc status=none").code == 0);
  const Run gc = repo.Sh("git zipnn gc --keep-recent 0");
  CHECK(gc.code == 0);
  CHECK(gc.out.find("removed 0 objects") == 0);
  CHECK(gc.err.find("warning: object " + v1 + " cannot be read, kept: ") != std::string::npos);
  CHECK(repo.Sh("test -f " + path(v1) + " && test -f " + path(staged)).code == 0);
  // The other work tree commits what it staged, and it restores.
  REQUIRE(repo.Sh("cd ../wt && git commit -qm x && rm x.safetensors && git checkout -- x.safetensors").code == 0);
  CHECK(Slurp(repo.File("../wt/x.safetensors")) == Slurp(repo.Data("cnn-fp32/step-000040.safetensors")));
}

TEST_CASE("git add stores a damaged object anew, and says the store held a damaged one") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && cp '" +
                  repo.Data("cnn12-bf16/" + Step12(0)) + "' m.safetensors && git add . && git commit -qm v1")
              .code == 0);
  const std::string id = IdAt(repo, "HEAD:m.safetensors");
  const std::string path = ".git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id;
  REQUIRE(repo.Sh("printf '\\377' | dd of=" + path + " bs=1 seek=$(( $(stat -c %s " + path +
                  ") / 2 )) conv=notrunc status=none")
              .code == 0);
  REQUIRE(repo.Sh("git zipnn fsck").code != 0);
  const Run add = repo.Sh("touch m.safetensors && git add m.safetensors");
  CHECK(add.code == 0);
  CHECK(add.err.find("git-zipnn: warning: m.safetensors: the store holds a damaged object (") != std::string::npos);
  CHECK(add.err.find("checksum mismatch); this version is stored anew without it.") != std::string::npos);
  CHECK(repo.Sh("git zipnn fsck").code == 0);
}

TEST_CASE("gc in one repository keeps what another sharing its store needs, until that one is forgotten") {
  Repo repo;
  const std::string fp32 = repo.Data("cnn-fp32/step-000040.safetensors");
  const Run setup = repo.Sh(
      "git zipnn install --local && git zipnn track '*.safetensors' && git add . && "
      "git commit -qm setup && cp '" +
      repo.Data("cnn12-bf16/" + Step12(0)) +
      "' m.safetensors && git add m.safetensors && git commit -qm a && "
      "git init -q ../b && cd ../b && git config user.email b@example.com && git config user.name B && "
      "git config zipnn.storepath \"$(cd ../repo && pwd)/.git/zipnn/objects\" && "
      "git zipnn install --local && git zipnn track '*.safetensors' && cp '" +
      fp32 + "' x.safetensors && git add . && git commit -qm b && sleep 1.1");
  REQUIRE_MESSAGE(setup.code == 0, setup.err);
  const std::string objects = "find .git/zipnn/objects -type f -path '*/?\?/?\?/*' ! -name '*.base' | wc -l";
  REQUIRE(repo.Sh(objects).out == "2\n");
  const Run gc = repo.Sh("git zipnn gc --keep-recent 0");
  CHECK_MESSAGE(gc.code == 0, gc.err);
  CHECK(gc.out.find("the store is shared: keeping what ") == 0);
  CHECK(gc.out.find("removed 0 objects (0 B) and 0 leftover files; kept 2 (needed by 2 pointers,") !=
        std::string::npos);
  CHECK(repo.Sh("cd ../b && git zipnn fsck").code == 0);
  // --forget does not drop a repository that is still there.
  const Run alive = repo.Sh("git zipnn gc --keep-recent 0 --forget ../b/.git");
  CHECK(alive.code != 0);
  CHECK(alive.err.find("that repository is still there and keeps its checkpoints in this store") != std::string::npos);
  CHECK(repo.Sh(objects).out == "2\n");
  // Once b is gone, what it needed is unknown: gc removes nothing and
  // says how to go on.
  const std::string b = repo.Sh("cd ../b/.git && pwd").out;
  REQUIRE(repo.Sh("rm -rf ../b").code == 0);
  const Run refused = repo.Sh("git zipnn gc --keep-recent 0");
  CHECK(refused.code != 0);
  CHECK(refused.err.find("is shared with repositories that cannot be read:\n  " + b.substr(0, b.size() - 1)) !=
        std::string::npos);
  CHECK(refused.err.find("git zipnn gc --forget <its git folder>") != std::string::npos);
  CHECK(repo.Sh(objects).out == "2\n");
  CHECK(refused.err.find(" (no longer exists)") != std::string::npos);
  // A dry run forgets nothing.
  const Run dry = repo.Sh("git zipnn gc -n --keep-recent 0 --forget ../b/.git");
  CHECK(dry.code == 0);
  CHECK(dry.err.find("would forget ") != std::string::npos);
  CHECK(dry.out.find("would remove 1 object") != std::string::npos);
  CHECK(repo.Sh("git zipnn gc --keep-recent 0").code != 0);
  CHECK(repo.Sh(objects).out == "2\n");
  const Run typo = repo.Sh("git zipnn gc --forget ../c/.git");
  CHECK(typo.code != 0);
  CHECK(typo.err.find("not a repository of the store") != std::string::npos);
  const Run forgot = repo.Sh("git zipnn gc --keep-recent 0 --forget ../b/.git");
  CHECK_MESSAGE(forgot.code == 0, forgot.err);
  CHECK(forgot.out.find("removed 1 object (") == 0);
  CHECK(repo.Sh(objects).out == "1\n");
  CHECK(repo.Sh("git zipnn fsck").code == 0);
}

TEST_CASE("a chain that loops is refused at once, by show, restore and fsck") {
  Repo repo;
  // Step 10 committed; then its object, and step 20's, replaced by a delta
  // on the other each: each object is sound, together they make a loop.
  const std::string a = repo.Data("cnn12-bf16/" + Step12(0)), b = repo.Data("cnn12-bf16/" + Step12(1));
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && cp '" + a +
                  "' m.safetensors && git add . && git commit -qm loop")
              .code == 0);
  REQUIRE(repo.Sh("git zipnn compress '" + a + "' --base '" + b +
                  "' -q -o A.zipnn && "
                  "git zipnn compress '" +
                  b + "' --base '" + a +
                  "' -q -o B.zipnn && "
                  "for f in A B; do id=$(git zipnn inspect $f.zipnn | awk '/content id/{print $3}'); "
                  "d=.git/zipnn/objects/${id:0:2}/${id:2:2}; mkdir -p $d && mv -f $f.zipnn $d/$id && echo $id > "
                  "../$f.id; done")
              .code == 0);
  const Run show = repo.Sh("git zipnn show $(cat ../A.id)");
  CHECK(show.code != 0);
  CHECK(show.err.find(" loops: object ") != std::string::npos);
  CHECK(show.out.size() < 1000);  // two chain lines, not a thousand
  // Checkout and fsck refuse the commit's pointer, naming the loop.
  const Run restore = repo.Sh("git zipnn restore m.safetensors -o out");
  CHECK(restore.code != 0);
  CHECK(restore.err.find(" loops: object ") != std::string::npos);
  CHECK(repo.Sh("test -e out").code != 0);
  CHECK(repo.Sh("git zipnn fsck --fast").out.find(" loops: object ") != std::string::npos);
  // Adding the same content again stores it anew in place of the broken
  // object, and the commit restores again.
  REQUIRE(repo.Sh("git add --renormalize m.safetensors").code == 0);
  CHECK(repo.Sh("git zipnn fsck").code == 0);
  REQUIRE(repo.Sh("git zipnn restore m.safetensors -o out").code == 0);
  CHECK(Slurp(repo.File("out")) == Slurp(a));
}

}  // namespace
}  // namespace zipnn

namespace zipnn {
namespace {

// The what-if row of analyze for the policy .zipnn.yaml sets, against
// what `git zipnn log` says the store holds after adding the same twelve
// checkpoints one commit at a time: bases, stored bytes, longest chain.
TEST_CASE("analyze's what-if for the policy in force is what the store holds, version for version") {
  for (const char* yaml : {"base_interval: 3\n", "base_interval: 5\ndelta_against: base\n", "base_interval: 10\n",
                           "base_interval: 3\nnewest: delta\n", "base_interval: 5\nnewest: delta\nmax_chain: 2\n",
                           "base_interval: 4\nnewest: delta\ndelta_against: base\n"}) {
    const std::string policy = yaml;
    CAPTURE(policy);
    Repo repo;
    REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && printf '" + std::string(yaml) +
                    "' > .zipnn.yaml && git add -A && git commit -qm setup")
                .code == 0);
    for (int i = 0; i < 12; ++i) {
      REQUIRE(repo.Sh("cp '" + repo.Data("cnn12-bf16/" + Step12(i)) +
                      "' model.safetensors && git add model.safetensors && git commit -qm 'step " + std::to_string(i) +
                      "'")
                  .code == 0);
    }
    Run log = repo.Sh("git zipnn log --json model.safetensors");
    REQUIRE(log.code == 0);
    uint64_t bases = 0, stored = 0, chain = 0;
    for (const auto& v : nlohmann::json::parse(log.out)) {
      bases += v["kind"] == "base";
      stored += v["stored_bytes"].get<uint64_t>();
      chain = std::max(chain, v["depth"].get<uint64_t>());
    }
    REQUIRE(repo.Sh("git zipnn analyze --json ../a.json model.safetensors").code == 0);
    const nlohmann::json analysis = nlohmann::json::parse(repo.Sh("cat ../a.json").out);
    int current = 0;
    for (const auto& row : analysis["policies"]) {
      if (!row["current"].get<bool>()) continue;
      ++current;
      CHECK(row["bases"].get<uint64_t>() == bases);
      CHECK(row["stored_bytes"].get<uint64_t>() == stored);
      CHECK(row["worst_chain"].get<uint64_t>() == chain);
    }
    CHECK(current == 1);
  }
}


// A Trainer run with save_total_limit 2 keeps two folders at its tip;
// analyze reads every folder its history holds, by step, and a path
// saved over and over is labelled by commit and subject.
TEST_CASE("analyze reads every save a run's history holds, and labels an overwritten path by commit and subject") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track 'out/**/*.safetensors' model.safetensors && "
                  "git add -A && git commit -qm setup")
              .code == 0);
  for (int i = 1; i <= 6; ++i) {
    const std::string folder = "out/checkpoint-" + std::to_string(i * 100);
    REQUIRE(repo.Sh("mkdir -p " + folder + " && cp '" + repo.Data("cnn12-bf16/" + Step12(i - 1)) + "' " + folder +
                    "/model.safetensors && cp " + folder + "/model.safetensors model.safetensors && " +
                    "ls -d out/checkpoint-* | sort -t- -k2 -n | head -n -2 | xargs -r rm -r && git add -A && " +
                    "git commit -qm 'step " + std::to_string(i * 100) + "'")
                .code == 0);
  }
  REQUIRE(repo.Sh("ls out").out == "checkpoint-500\ncheckpoint-600\n");
  Run all = repo.Sh("git zipnn analyze out/checkpoint-600/model.safetensors | sed -n '3,8p' | awk '{print $1}'");
  REQUIRE(all.code == 0);
  CHECK(all.out ==
        "checkpoint-100\ncheckpoint-200\ncheckpoint-300\ncheckpoint-400\ncheckpoint-500\ncheckpoint-600\n");
  Run range = repo.Sh("git zipnn analyze --rev HEAD~2..HEAD out/checkpoint-600/model.safetensors | sed -n '3,9p'");
  CHECK(range.out.find("checkpoint-300") == std::string::npos);
  CHECK(range.out.find("checkpoint-400") != std::string::npos);
  const std::string head = repo.Sh("git rev-parse --short=7 HEAD").out.substr(0, 7);
  Run overwritten = repo.Sh("git zipnn analyze model.safetensors | sed -n 8p");
  CHECK(overwritten.out.rfind("  " + head + " step 600 ", 0) == 0);
}


TEST_CASE("env says the versions, filter, store, policy with its mistakes and remotes, and works outside a repository") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && git remote add origin ../hub.git && "
                  "printf 'base_interval: 4\\nmax_chian: 2\\n' > .zipnn.yaml")
              .code == 0);
  const Run env = repo.Sh("git zipnn env");
  REQUIRE(env.code == 0);
  const std::string top = repo.root() + "/repo";
  CHECK(env.out.find("filter          installed (local: filter.zipnn.process = git-zipnn filter-process)\n") !=
        std::string::npos);
  CHECK(env.out.find("repository      " + top + " (git folder " + top + "/.git)\n") != std::string::npos);
  CHECK(env.out.find("pre-push hook   " + top + "/.git/hooks/pre-push (runs git-zipnn)\n") != std::string::npos);
  CHECK(env.out.find("pre-commit hook " + top + "/.git/hooks/pre-commit (runs git-zipnn)\n") != std::string::npos);
  CHECK(env.out.find("tracked         *.safetensors (.gitattributes)\n") != std::string::npos);
  CHECK(env.out.find("object store    " + top + "/.git/zipnn/objects (the default)\n") != std::string::npos);
  CHECK(env.out.find("policy          base every 4, ") != std::string::npos);
  CHECK(env.out.find("(.zipnn.yaml)\n                warning: ") != std::string::npos);
  CHECK(env.out.find("'max_chian' is not a policy key (did you mean 'max_chain'?)") != std::string::npos);
  CHECK(env.out.find("remotes         origin (the default): the object store of the repository at ") !=
        std::string::npos);
  CHECK(env.out.rfind("git-zipnn ", 0) == 0);
  // Outside a repository: what it can say.
  const Run outside = repo.Sh("cd .. && git zipnn env");
  CHECK(outside.code == 0);
  CHECK(outside.out.find("filter          not installed: `git zipnn install` (or --local) sets it\n") !=
        std::string::npos);
  CHECK(outside.out.find("repository      none here (") != std::string::npos);
}


// A hub with two checkpoints on main (three versions each) and two more
// branches, one last committed to 30 days ago; a clone of it, which has
// fetched the newest version of each file on main only.
void HubAndClone(Repo& repo) {
  REQUIRE(repo.Sh("git symbolic-ref HEAD refs/heads/main && git zipnn install && "
                  "git zipnn track '*.safetensors' && git add -A && git commit -qm setup")
              .code == 0);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(repo.Sh("cp '" + repo.Data(std::string("cnn-bf16/step-") + kSteps[i] + ".safetensors") +
                    "' a.safetensors && cp '" + repo.Data(std::string("cnn-fp32/step-") + kSteps[i] + ".safetensors") +
                    "' b.safetensors && git add -A && git commit -qm 'save " + std::to_string(i) + "'")
                .code == 0);
  }
  REQUIRE(repo.Sh("git checkout -q -b old && cp '" + repo.Data("cnn-bf16/step-000160.safetensors") +
                  "' a.safetensors && GIT_COMMITTER_DATE=\"$(date -d '30 days ago' +%s) +0000\" git commit -qam old && "
                  "git checkout -q -b new main && cp '" + repo.Data("cnn-bf16/step-000200.safetensors") +
                  "' a.safetensors && git commit -qam new && git checkout -q main && "
                  "git init -q --bare ../hub.git && git remote add origin ../hub.git && "
                  "git push -q origin main old new && cd .. && git clone -q -b main hub.git clone")
              .code == 0);
}

TEST_CASE("fetch chooses what it gets as Git LFS does: --include and --exclude paths, --recent branches") {
  Repo repo;
  HubAndClone(repo);
  auto missing = [&](Repo& r, const std::string& rev_or_path, bool log) {
    const std::string cmd = log ? "git zipnn log --json " + rev_or_path + " | grep -o 'depth.:-1' | wc -l"
                                : "git zipnn ls-files " + rev_or_path + " | grep -c ' missing ' || true";
    return r.Sh("cd ../clone && " + cmd).out;
  };
  // The clone has what main's files need; --include takes a's versions
  // on the other branches too, and none of b's history.
  REQUIRE(missing(repo, "origin/old", false) != "0\n");
  REQUIRE(missing(repo, "b.safetensors", true) == "2\n");
  REQUIRE(repo.Sh("cd ../clone && git zipnn fetch --all -I 'a.*'").code == 0);
  CHECK(missing(repo, "origin/old", false) == "0\n");
  CHECK(missing(repo, "origin/new", false) == "0\n");
  CHECK(missing(repo, "b.safetensors", true) == "2\n");
  // --exclude, with a list as Git LFS writes it.
  REQUIRE(repo.Sh("cd ../clone && git zipnn fetch --all -X 'a.*,c.*'").code == 0);
  CHECK(missing(repo, "b.safetensors", true) == "0\n");

  // --recent: HEAD and the branches committed to in the last 7 days, not
  // the one of 30 days ago; zipnn.fetchrecentrefsdays widens it.
  Repo other;
  HubAndClone(other);
  REQUIRE(missing(other, "origin/new", false) != "0\n");
  const std::string old_missing = missing(other, "origin/old", false);
  REQUIRE(old_missing != "0\n");
  REQUIRE(other.Sh("cd ../clone && git zipnn fetch --recent").code == 0);
  CHECK(missing(other, "origin/new", false) == "0\n");
  CHECK(missing(other, "origin/old", false) == old_missing);
  REQUIRE(other.Sh("cd ../clone && git -c zipnn.fetchrecentrefsdays=40 zipnn fetch --recent").code == 0);
  CHECK(missing(other, "origin/old", false) == "0\n");
  // With zipnn.fetchrecentcommitsdays, the versions of the recent commits
  // of those branches too: b's history, committed today.
  REQUIRE(missing(other, "b.safetensors", true) == "2\n");
  REQUIRE(other.Sh("cd ../clone && git -c zipnn.fetchrecentcommitsdays=1 zipnn fetch --recent").code == 0);
  CHECK(missing(other, "b.safetensors", true) == "0\n");
  CHECK(other.Sh("cd ../clone && git zipnn fetch --all --recent").err ==
        "error: --all and --recent choose differently; give one\n");
}

TEST_CASE("status says when the filter is not installed, lists checkpoints git holds whole, and claims no remote") {
  Repo repo;
  const std::string step = repo.Data("cnn-bf16/step-000160.safetensors");
  // Tracked before the filter is installed: git stores the file whole.
  Run track = repo.Sh("git zipnn track '*.safetensors'");
  REQUIRE(track.code == 0);
  CHECK(track.err.find("the git-zipnn filter is not installed") != std::string::npos);
  REQUIRE(repo.Sh("cp '" + step + "' a.safetensors && git add -A && git commit -qm whole").code == 0);
  Run whole = repo.Sh("git zipnn status");
  REQUIRE(whole.code == 0);
  CHECK(whole.out.find("The git-zipnn filter is not installed: `git add` stores tracked checkpoints whole in git. Run "
                       "`git zipnn install`") != std::string::npos);
  CHECK(whole.out.find("Checkpoints git holds whole, not stored here (added without the filter: `git zipnn install`, "
                       "then `git add --renormalize <path>` and commit):\n        a.safetensors\n") !=
        std::string::npos);
  CHECK(whole.out.find("on a remote branch") == std::string::npos);
  // Installed: the way out no longer says to install; renormalized and
  // staged, the file is the staged section's only.
  REQUIRE(repo.Sh("git zipnn install >/dev/null").code == 0);
  const Run installed = repo.Sh("git zipnn status");
  CHECK(installed.out.find("Checkpoints git holds whole, not stored here (added without the filter: `git add "
                           "--renormalize <path>` and commit store them):\n        a.safetensors\n") !=
        std::string::npos);
  CHECK(installed.out.find("not staged") == std::string::npos);
  REQUIRE(repo.Sh("git add --renormalize .").code == 0);
  const Run renormalized = repo.Sh("git zipnn status");
  CHECK(renormalized.out.find("git holds whole") == std::string::npos);
  CHECK(renormalized.out.find("Checkpoints staged for commit:\n        a.safetensors  new  ") != std::string::npos);
  // Committed: stored here, and no remote is claimed.
  REQUIRE(repo.Sh("git commit -qm stored").code == 0);
  Run stored = repo.Sh("git zipnn status");
  REQUIRE(stored.code == 0);
  CAPTURE(stored.out);
  CHECK(stored.out.find("not installed") == std::string::npos);
  CHECK(stored.out.find("git holds whole") == std::string::npos);
  CHECK(stored.out.find("Checkpoints in commits on no remote branch (this repository has no remote yet: `git remote "
                        "add origin <url>`, then `git push`):\n        a.safetensors  ") != std::string::npos);
  CHECK(stored.out.find("Every checkpoint") == std::string::npos);
}

TEST_CASE("status lists checkpoints not pushed, staged, changed, not added, and not in this store") {
  Repo repo;
  HubAndClone(repo);
  auto status = [&](Repo& r) { return r.Sh("cd ../clone && git zipnn status"); };
  Run clean = status(repo);
  REQUIRE(clean.code == 0);
  CHECK(clean.out ==
        "On branch main\nEvery checkpoint of HEAD is stored here and on a remote branch; nothing is staged or "
        "changed.\n");
  const std::string step160 = repo.Data("cnn-bf16/step-000160.safetensors");
  REQUIRE(repo.Sh("cd ../clone && git config user.email t@example.com && git config user.name T && cp '" + step160 +
                  "' a.safetensors && git commit -qam more && cp '" +
                  repo.Data("cnn-bf16/step-000200.safetensors") + "' a.safetensors && git add a.safetensors && cp '" +
                  step160 + "' b.safetensors && cp '" + step160 + "' c.safetensors")
              .code == 0);
  Run changed = status(repo);
  REQUIRE(changed.code == 0);
  const std::string a160 = repo.Sh("cd ../clone && git show HEAD:a.safetensors | grep -o '[0-9a-f]\\{32\\}'").out.substr(0, 12);
  const std::string a200 = repo.Sh("cd ../clone && git show :a.safetensors | grep -o '[0-9a-f]\\{32\\}'").out.substr(0, 12);
  CHECK_MESSAGE(changed.out.find("Checkpoints in commits on no remote branch (git push sends their objects):\n"
                                 "        a.safetensors  " + a160 + "  ") != std::string::npos, changed.out);
  CHECK(changed.out.find("Checkpoints staged for commit:\n        a.safetensors  modified  " + a200 + "  ") !=
        std::string::npos);
  CHECK(changed.out.find("Checkpoints changed and not staged (git add stores them):\n        b.safetensors  "
                         "modified\n") != std::string::npos);
  CHECK(changed.out.find("Checkpoints not added yet (they match a tracked pattern):\n        c.safetensors\n") !=
        std::string::npos);
  // A version HEAD names that this store lacks.
  REQUIRE(repo.Sh("cd ../clone && git add -A && git commit -qm all && git checkout -q HEAD~2 2>/dev/null && "
                  "git checkout -q main && rm -r .git/zipnn/objects a.safetensors").code == 0);
  Run lacking = status(repo);
  const std::string a_id = repo.Sh("cd ../clone && git show HEAD:a.safetensors | grep -o '[0-9a-f]\\{32\\}'").out;
  CHECK_MESSAGE(lacking.out.find("Checkpoints of HEAD or the index not in this store (git zipnn fetch gets them):\n"
                                 "        a.safetensors  " + a_id.substr(0, 12) + "\n") != std::string::npos,
                lacking.out);
  CHECK(lacking.out.find("        a.safetensors  deleted\n") != std::string::npos);
  // A branch name with a slash is said whole.
  CHECK(repo.Sh("cd ../clone && git checkout -q -b feature/x && git zipnn status").out.rfind("On branch feature/x\n", 0) ==
        0);
}


// What a git add stopped by Ctrl-C leaves: its spooled input in the
// scratch folder and an unfinished object in the store, young and held by
// no process. gc keeps them for an hour (a process may still be writing
// them) and says so; gc --now removes them at once, but never a file a
// live process holds (its lock, as every scratch file's writer holds one).
TEST_CASE("gc --now removes what a git add stopped by Ctrl-C left, and nothing a running process holds") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && cp '" +
                  repo.Data("cnn-bf16/step-000040.safetensors") +
                  "' kept.safetensors && git add -A && git commit -qm kept && mkdir -p .git/zipnn/tmp && "
                  "head -c 300000 /dev/urandom > .git/zipnn/tmp/clean-0badf00d && "
                  "head -c 100000 /dev/urandom > .git/zipnn/objects/ab/cd/abcd0000000000000000000000000000.tmp-1234abcd "
                  "2>/dev/null || { mkdir -p .git/zipnn/objects/ab/cd && head -c 100000 /dev/urandom > "
                  ".git/zipnn/objects/ab/cd/abcd0000000000000000000000000000.tmp-1234abcd; }")
              .code == 0);
  // A live process's scratch file: locked as long as it runs.
  REQUIRE(repo.Sh("head -c 1000 /dev/urandom > .git/zipnn/tmp/clean-11ve0000 && "
                  "{ flock -s -o .git/zipnn/tmp/clean-11ve0000 sleep 30 >/dev/null 2>&1 & echo $! > ../holder; } && "
                  "for i in $(seq 100); do flock -n -x .git/zipnn/tmp/clean-11ve0000 true || exit 0; sleep 0.05; done; "
                  "exit 1")
              .code == 0);
  Run gc = repo.Sh("git zipnn gc");
  REQUIRE(gc.code == 0);
  CHECK(gc.out.find("and 0 leftover files") != std::string::npos);
  CHECK_MESSAGE(gc.out.find("390.6 KiB of leftovers no running process holds (2 files of a git add or fetch that was "
                            "stopped) kept until they are an hour old; `git zipnn gc --now` removes them\n") !=
                    std::string::npos,
                gc.out);
  Run now = repo.Sh("git zipnn gc --now");
  REQUIRE(now.code == 0);
  CHECK_MESSAGE(now.out.find("and 2 leftover files") != std::string::npos, now.out);
  CHECK(repo.Sh("ls .git/zipnn/tmp").out == "clean-11ve0000\n");
  CHECK(repo.Sh("find .git/zipnn/objects -name '*.tmp-*' | wc -l").out == "0\n");
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);
  // Its process gone, the last one goes too.
  REQUIRE(repo.Sh("kill $(cat ../holder); sleep 0.2; git zipnn gc --now").out.find("and 1 leftover file") !=
          std::string::npos);
  CHECK(repo.Sh("ls .git/zipnn/tmp").out == "");
  // The scratch store of a read killed mid-way (a version retention
  // removed here, fetched to be read): its files, then its folders.
  REQUIRE(repo.Sh("mkdir -p .git/zipnn/tmp/refetch-dead0000/objects/ab/cd && head -c 1000 /dev/urandom > "
                  ".git/zipnn/tmp/refetch-dead0000/objects/ab/cd/abcd0000000000000000000000000000")
              .code == 0);
  CHECK(repo.Sh("git zipnn gc --now").out.find("and 1 leftover file") != std::string::npos);
  CHECK(repo.Sh("ls -A .git/zipnn/tmp").out == "");
}

// The next git add after a Ctrl-C frees what the stopped one spooled,
// without gc: a scratch file no live process holds, once it is more than
// a few seconds old (a younger one may be a live process's, not locked
// yet). A held one stays, as does a young one.
TEST_CASE("the next git add removes the scratch files a stopped one left, and nothing a running process holds") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && mkdir -p .git/zipnn/tmp && "
                  "head -c 300000 /dev/urandom > .git/zipnn/tmp/clean-0badf00d && "
                  "mkdir -p .git/zipnn/tmp/candidates && "
                  "head -c 200000 /dev/urandom > .git/zipnn/tmp/candidates/object-0badf00d && "
                  "touch -d '1 minute ago' .git/zipnn/tmp/clean-0badf00d .git/zipnn/tmp/candidates/object-0badf00d && "
                  "head -c 1000 /dev/urandom > .git/zipnn/tmp/clean-0000y0un9 && "
                  "head -c 1000 /dev/urandom > .git/zipnn/tmp/clean-11ve0000 && "
                  "touch -d '1 minute ago' .git/zipnn/tmp/clean-11ve0000")
              .code == 0);
  REQUIRE(repo.Sh("{ flock -s -o .git/zipnn/tmp/clean-11ve0000 sleep 30 >/dev/null 2>&1 & echo $! > ../holder; } && "
                  "for i in $(seq 100); do flock -n -x .git/zipnn/tmp/clean-11ve0000 true || exit 0; sleep 0.05; done; "
                  "exit 1")
              .code == 0);
  const Run add =
      repo.Sh("cp '" + repo.Data("cnn-bf16/step-000040.safetensors") + "' m.safetensors && git add m.safetensors");
  REQUIRE(add.code == 0);
  CHECK_MESSAGE(add.err.find("git-zipnn: removed 488.3 KiB of scratch files that a stopped command left in ") !=
                    std::string::npos,
                add.err);
  CHECK(repo.Sh("find .git/zipnn/tmp -type f | sort").out ==
        ".git/zipnn/tmp/clean-0000y0un9\n.git/zipnn/tmp/clean-11ve0000\n");
  // Said once, and only when something went.
  const Run again = repo.Sh("cp '" + repo.Data("cnn-bf16/step-000080.safetensors") + "' m.safetensors && git add m.safetensors");
  CHECK(again.err.find("removed") == std::string::npos);
  REQUIRE(repo.Sh("kill $(cat ../holder)").code == 0);
  CHECK(repo.Sh("git commit -qm m && git zipnn fsck --all").code == 0);
}

// The raw copy a large add keeps costs disk beside the store: the first
// one a repository keeps says so, and how to change it; later ones do not.
TEST_CASE("the first large raw copy an add keeps is named with its size, the budget and how to change it, once") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors'").code == 0);
  // A 72 MiB safetensors of one fp32 tensor (random values).
  const std::string make =
      "python3 -c 'import json, os, struct, sys; n = 72 << 20; "
      "h = json.dumps({\"w\": {\"dtype\": \"F32\", \"shape\": [n // 4], \"data_offsets\": [0, n]}}).encode(); "
      "h += b\" \" * (-len(h) % 8); f = open(sys.argv[1], \"wb\"); f.write(struct.pack(\"<Q\", len(h)) + h); "
      "f.write(os.urandom(n))' ";
  const Run first = repo.Sh(make + "big.safetensors && git add big.safetensors");
  REQUIRE_MESSAGE(first.code == 0, first.err);
  CHECK_MESSAGE(
      first.err.find("git-zipnn: note: a copy of big.safetensors (72.0 MiB) is kept in ") != std::string::npos,
      first.err);
  CHECK(first.err.find(".git/zipnn/cache/raw, so that its next save is stored as a delta without decoding this one; "
                       "such copies take at most raw_cache (512.0 MiB; set it in .zipnn.yaml, 0 keeps none), and "
                       "`git zipnn du` shows what they take") != std::string::npos);
  CHECK(repo.Sh("git zipnn du").out.find("raw cache                72.0 MiB in      1 file ") != std::string::npos);
  const Run second = repo.Sh(make + "other.safetensors && git add other.safetensors");
  REQUIRE(second.code == 0);
  CHECK(second.err.find("note: a copy of") == std::string::npos);
}

// Ctrl-C (or SIGTERM) in the middle of a clean: the process removes the
// scratch copy it was spooling as it dies, and dies of the signal. The
// clean reads from a pipe kept open, so it is caught in the middle
// whatever the machine's speed.
TEST_CASE("a clean stopped by SIGINT or SIGTERM removes its own scratch file as it dies") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors'").code == 0);
  const std::string data = repo.Data("cnn-fp32/step-000040.safetensors");
  for (const char* signal : {"INT", "TERM"}) {
    CAPTURE(signal);
    // Job control on: a background command of a plain script would start
    // with SIGINT ignored.
    const Run stopped = repo.Sh(
        "set -m; rm -f ../in && mkfifo ../in && "
        "{ git-zipnn clean m.safetensors < ../in > ../clean.out 2> ../clean.err & echo $! > ../pid; } && "
        "exec 3> ../in && "
        "head -c 300000 '" +
        data +
        "' >&3 && "
        "for i in $(seq 400); do "
        "  s=$(find .git/zipnn/tmp -name 'clean-*' -size +250k | wc -l); [ \"$s\" = 1 ] && break; sleep 0.05; "
        "done && "
        "find .git/zipnn/tmp -name 'clean-*' | wc -l && kill -" +
        std::string(signal) +
        " $(cat ../pid); "
        "wait $(cat ../pid); echo \"exit $?\"; find .git/zipnn/tmp -name 'clean-*' | wc -l");
    // There while it ran; gone once it was stopped, which it was by the
    // signal (128 + its number).
    const std::string expected = std::string("1\nexit ") + (signal[0] == 'I' ? "130" : "143") + "\n0\n";
    CHECK_MESSAGE(stopped.out == expected, stopped.err);
    // It says what was stopped: git would say only that its filter failed.
    // (../out and ../err are the harness's own: each Sh writes them.)
    CHECK(repo.Sh("cat ../clean.err").out ==
          "git-zipnn: stopped while storing m.safetensors; no half-written file is left (git add stores it again)\n");
  }
  // Nothing left for the next add to sweep.
  const Run add = repo.Sh("cp '" + data + "' m.safetensors && git add m.safetensors");
  REQUIRE(add.code == 0);
  CHECK(add.err.find("scratch files that a stopped command left") == std::string::npos);
  CHECK(repo.Sh("git commit -qm m && git zipnn fsck --all").code == 0);
}

}  // namespace
}  // namespace zipnn
