// What the store guarantees when things go wrong, through the real git
// binary: repack rewrites objects and never their content; `git add` and
// `repack` killed (SIGKILL, the whole process group) at many points leave
// a store in which every object restores exactly, fsck passes and the
// next add works; two adders of one series at once, and gc running
// beside adds, leave a consistent store.
#include <doctest/doctest.h>
#include <stdint.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/io.h"
#include "lib/store/chain.h"
#include "lib/store/restore.h"
#include "tests/git_repo.h"
#include "tests/store_check.h"
#include "tests/test_util.h"

namespace zipnn {
namespace {

using testing::BrokenIn;
using testing::BrokenObjects;
using testing::IdAt;
using testing::kSteps;
using testing::Repo;
using testing::Run;
using testing::Slurp;
using testing::Step12;

// Files under .git/zipnn other than objects and the raw cache's copies:
// what a dead process left behind.
std::string Leftovers(Repo& repo) {
  return repo
      .Sh("cd .git/zipnn && find . -type f | grep -Ev '^\\./objects/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{32}$' | "
          "grep -Ev '^\\./cache/raw/[0-9a-f]{32}\\.[0-9a-f]{32}$' | grep -Ev '^\\./objects/repositories/[0-9a-f]{32}$' "
          "| grep -Ev '^\\./cache/(fingerprints|children|twins|tensors)$' "
          "| grep -Ev '^\\./objects/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{32}\\.base$' "
          "| sort; "
          // A base note stays only beside its object.
          "for n in objects/*/*/*.base; do test -e \"$n\" && ! test -e \"${n%.base}\" && echo \"./$n\"; done")
      .out;
}

// A bigger checkpoint made of real weights: the tensors of a fixture
// `copies` times over, renamed ("c7.conv1.weight"), in one safetensors file.
void Enlarge(const std::string& from, const std::string& to, int copies) {
  const std::string in = Slurp(from);
  REQUIRE(in.size() > 8);
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = header_size << 8 | static_cast<uint8_t>(in[i]);
  const nlohmann::json header = nlohmann::json::parse(in.substr(8, header_size));
  const std::string data = in.substr(8 + header_size);
  nlohmann::json out = nlohmann::json::object();
  for (int c = 0; c < copies; ++c) {
    for (const auto& [name, tensor] : header.items()) {
      if (name == "__metadata__") continue;
      nlohmann::json t = tensor;
      const uint64_t shift = static_cast<uint64_t>(c) * data.size();
      t["data_offsets"] = {t["data_offsets"][0].get<uint64_t>() + shift, t["data_offsets"][1].get<uint64_t>() + shift};
      out["c" + std::to_string(c) + "." + name] = t;
    }
  }
  std::string text = out.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::ofstream f(to, std::ios::binary);
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>(static_cast<uint64_t>(text.size()) >> (8 * i)));
  f << text;
  for (int c = 0; c < copies; ++c) f << data;
  REQUIRE(f.good());
}

double Seconds(const std::chrono::steady_clock::time_point& since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// The fastest of three runs of `command`, each followed by `reset`
// (untimed), which puts back what the command changed. The first run is
// often the slowest (cold caches), and kill points placed over it would
// fall after later runs ended.
double FastestRun(Repo& repo, const std::string& command, const std::string& reset) {
  double fastest = 1e9;
  for (int run = 0; run < 3; ++run) {
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(repo.Sh(command).code == 0);
    fastest = std::min(fastest, Seconds(start));
    REQUIRE(repo.Sh(reset).code == 0);
  }
  return fastest;
}

// Runs `command` in the repository in a process group of its own and
// kills the whole group (git and its filter process) once `wait` (shell
// code, run beside it; $pid is the command's) returns, unless it ended
// first. Returns whether it was still running.
bool KillWhen(Repo& repo, const std::string& command, const std::string& wait) {
  const Run r = repo.Sh("{ setsid " + command + " >/dev/null 2>&1 & } ; pid=$!; " + wait +
                        "; if kill -9 -- -$pid 2>/dev/null; then echo killed; fi; wait $pid 2>/dev/null; true");
  return r.out == "killed\n";
}

std::string Sleep(double seconds) {
  char line[64];
  std::snprintf(line, sizeof line, "sleep %.3f", seconds);
  return line;
}

// Waits until the shell test `condition` holds or the command ended.
std::string Until(const std::string& condition) {
  return "until " + condition + " || ! kill -0 $pid 2>/dev/null; do :; done";
}

std::string ObjectPath(const std::string& id) {
  return ".git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id;
}

// The stored form of every version: "base" or "delta <depth>", by path.
std::map<std::string, std::string> Forms(Repo& repo) {
  const Run log = repo.Sh("git zipnn log --json");
  REQUIRE(log.code == 0);
  std::map<std::string, std::string> forms;
  for (const auto& v : nlohmann::json::parse(log.out)) {
    forms[v["path"].get<std::string>()] =
        v["kind"].get<std::string>() + (v["kind"] == "delta" ? " " + std::to_string(v["depth"].get<int>()) : "");
  }
  return forms;
}

TEST_CASE("repack rewrites a series to another base interval and back, object for object") {
  Repo repo;
  std::string copy;
  for (int i = 0; i < 12; ++i) copy += "cp '" + repo.Data("cnn12-bf16/" + Step12(i)) + "' run/ && ";
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && mkdir run && " + copy +
                  "git add . && git commit -qm trajectory")
              .code == 0);
  const std::string objects = "cd .git/zipnn/objects && find . -type f | sort | xargs sha256sum";
  const std::string original = repo.Sh(objects).out;
  const std::string index = repo.Sh("git ls-files -s").out;
  // The default k=7, the newest whole: steps 10 and 80 are bases, the
  // three after step 10 chain down to it, the three before step 80 up to
  // it, steps 90 to 110 down to step 80, and step 120, the newest, is
  // whole.
  std::map<std::string, std::string> forms = Forms(repo);
  REQUIRE(forms.size() == 12);
  CHECK(forms["run/" + Step12(0)] == "base");
  CHECK(forms["run/" + Step12(3)] == "delta 3");
  CHECK(forms["run/" + Step12(4)] == "delta 3");
  CHECK(forms["run/" + Step12(6)] == "delta 1");
  CHECK(forms["run/" + Step12(7)] == "base");
  CHECK(forms["run/" + Step12(10)] == "delta 3");
  CHECK(forms["run/" + Step12(11)] == "base");

  const Run repack = repo.Sh("git zipnn repack --base-interval 3");
  REQUIRE(repack.code == 0);
  CHECK(repack.out.find("repacking 1 series: base every 3, the newest whole, deltas of the next version toward a "
                        "base, chains of at most 1\nrun/step-#.safetensors: 12 versions\n") == 0);
  CHECK(repack.out.find("note: later adds follow base_interval 7 (.zipnn.yaml, or the default); set `base_interval: 3` "
                        "in .zipnn.yaml to keep this layout\n") != std::string::npos);
  // The chain the versions were in before (steps 40 and 50, 3 deltas
  // deep), not the one they reach through versions already rewritten.
  CHECK(repack.out.find(", longest chain 1 (was 3);") != std::string::npos);
  forms = Forms(repo);
  for (int i = 0; i < 12; ++i) {
    CAPTURE(i);
    const std::string form = forms["run/" + Step12(i)];
    // Every third a base, and the newest; each other one a delta of a
    // neighbour unless it did not pay (then a base).
    if (i % 3 == 0 || i == 11) CHECK(form == "base");
    if (i % 3 != 0 && i != 11) CHECK((form == "delta 1" || form == "base"));
  }
  // Nothing git sees changed, and every version restores exactly.
  CHECK(repo.Sh("git ls-files -s").out == index);
  CHECK(repo.Sh("git status --porcelain").out.empty());
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);
  CHECK(BrokenObjects(repo).empty());
  REQUIRE(repo.Sh("rm run/* && git checkout -- run && git status --porcelain").out.empty());
  for (int i = 0; i < 12; ++i)
    CHECK(Slurp(repo.File("run/" + Step12(i))) == Slurp(repo.Data("cnn12-bf16/" + Step12(i))));
  // Repacking by the same policy again rewrites nothing; by the policy
  // the versions were added with gives back the very same objects.
  CHECK(repo.Sh("git zipnn repack --base-interval 3 run/" + Step12(0)).out.find("  rewrote 0;") != std::string::npos);
  const Run back = repo.Sh("git zipnn repack");
  REQUIRE(back.code == 0);
  CHECK(back.out.find(", longest chain 3 (was 1);") != std::string::npos);
  CHECK(repo.Sh(objects).out == original);
  // Asking for a path git does not track is an error naming it.
  const Run unknown = repo.Sh("git zipnn repack nosuch.safetensors");
  CHECK(unknown.code != 0);
  CHECK(unknown.err ==
        "error: nosuch.safetensors is not a checkpoint git holds here (`git zipnn ls-files` lists them)\n");
}

TEST_CASE("git add killed at many points leaves a sound store; the next add works; gc clears the rest") {
  Repo repo;
  // Two real fp32 checkpoints, enlarged to about 24 MB so that a clean
  // takes long enough to be cut at many points; the second is stored as a
  // delta on the first.
  Enlarge(repo.Data("cnn-fp32/step-000040.safetensors"), repo.root() + "/v1.safetensors", 100);
  Enlarge(repo.Data("cnn-fp32/step-000080.safetensors"), repo.root() + "/v2.safetensors", 100);
  REQUIRE(
      repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && cp ../v1.safetensors m.safetensors && "
              "git add . && git commit -qm v1 && cp -a .git/zipnn/cache ../cache")
          .code == 0);
  // How long an add of v2 takes, then undone: the index, the object and
  // the raw cache as they were. The faster of two: the first may pay for
  // a cold cache or a busy machine, and kill points spread over too long
  // a time mostly land after the add.
  const std::string undo = "git reset -q && rm -rf .git/zipnn/cache && cp -a ../cache .git/zipnn/cache && rm -f ";
  REQUIRE(repo.Sh("cp ../v2.safetensors m.safetensors").code == 0);
  double full = 0;
  std::string v2;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(repo.Sh("git add m.safetensors").code == 0);
    const double took = Seconds(start);
    full = attempt == 0 ? took : std::min(full, took);
    v2 = IdAt(repo, ":m.safetensors");
    REQUIRE(v2.size() == 32);
    REQUIRE(repo.Sh("git zipnn show " + v2).out.find("delta") != std::string::npos);
    REQUIRE(repo.Sh(undo + ObjectPath(v2)).code == 0);
  }

  // Points from the start to past the end of an add (some land after it),
  // and the moments a delta candidate, the object and git's new index
  // appear.
  std::vector<std::string> waits;
  for (int i = 1; i <= 30; ++i) waits.push_back(Sleep(1.5 * full * i / 31));
  waits.push_back(Until("compgen -G '.git/zipnn/tmp/candidates/object-*' >/dev/null"));
  waits.push_back(Until("test -e " + ObjectPath(v2)));
  waits.push_back(Until("test -e .git/index.lock"));
  const int kPoints = static_cast<int>(waits.size());
  int killed = 0, recorded = 0, stored_only = 0;
  for (const std::string& wait : waits) {
    CAPTURE(wait);
    if (KillWhen(repo, "git add m.safetensors", wait)) ++killed;
    // The index was written, or the object stored and not yet recorded.
    if (IdAt(repo, ":m.safetensors") == v2) {
      ++recorded;
    } else if (repo.Sh("test -e " + ObjectPath(v2)).code == 0) {
      ++stored_only;
    }
    CHECK(BrokenObjects(repo).empty());
    CHECK(repo.Sh("git zipnn fsck --all --fast").code == 0);
    // git tells the user to remove the lock of an index it was writing.
    const Run next = repo.Sh("rm -f .git/index.lock && git add m.safetensors");
    CHECK(next.code == 0);
    CHECK(IdAt(repo, ":m.safetensors") == v2);
    CHECK(repo.Sh("git zipnn fsck --all").code == 0);
    REQUIRE(repo.Sh(undo + ObjectPath(v2)).code == 0);
  }
  MESSAGE(kPoints << " kill points over " << full << " s: " << killed << " killed while running, " << recorded
                  << " after the index was written, " << stored_only << " with the object stored but not recorded");
  CHECK(killed >= kPoints / 3);
  // What the killed processes left, once it is old, goes with the next gc.
  REQUIRE(repo.Sh("find .git/zipnn -type f -exec touch -d '2 hours ago' {} +").code == 0);
  REQUIRE(repo.Sh("git zipnn gc").code == 0);
  { const std::string left = Leftovers(repo); CHECK_MESSAGE(left.empty(), left); }
  REQUIRE(repo.Sh("cp ../v2.safetensors m.safetensors && git add m.safetensors && git commit -qm v2 && "
                  "rm m.safetensors && git checkout -- m.safetensors")
              .code == 0);
  CHECK(Slurp(repo.File("m.safetensors")) == Slurp(repo.root() + "/v2.safetensors"));
}

// A series of five enlarged real fp32 checkpoints (about 10 MB each)
// committed in `repo`, with a bare hub.git beside it as origin.
void CommitEnlarged(Repo& repo) {
  std::string add;
  for (const char* s : kSteps) {
    Enlarge(repo.Data(std::string("cnn-fp32/step-") + s + ".safetensors"), repo.root() + "/step-" + s + ".safetensors",
            40);
    add += std::string("cp ../step-") + s + ".safetensors m.safetensors && git add m.safetensors && git commit -qm " +
           s + " && ";
  }
  REQUIRE(
      repo.Sh("git zipnn install --local >/dev/null && git zipnn track '*.safetensors' && git add .gitattributes && " +
              add + "git init -q --bare ../hub.git && git remote add origin ../hub.git")
          .code == 0);
}

TEST_CASE("repack killed at many points leaves every object readable") {
  Repo repo;
  CommitEnlarged(repo);
  // All deltas to all bases and back, cut short at points over each run.
  // Each direction is timed on its own, the faster of two runs, so that
  // the points fall inside it on a busy machine too.
  const char* const kRepacks[2] = {"git zipnn repack --base-interval 1", "git zipnn repack"};
  double took[2] = {1e9, 1e9};
  for (int round = 0; round < 2; ++round) {
    for (int r = 0; r < 2; ++r) {
      const auto start = std::chrono::steady_clock::now();
      REQUIRE(repo.Sh(kRepacks[r]).code == 0);
      took[r] = std::min(took[r], Seconds(start));
    }
  }
  const double full = (took[0] + took[1]) / 2;
  constexpr int kPoints = 12;
  int killed = 0;
  for (int i = 0; i < kPoints; ++i) {
    const double delay = took[i % 2] * (i / 2 + 1) / (kPoints / 2 + 1);
    CAPTURE(delay);
    // Each cut run starts where the timed runs did, the other direction
    // done whole: after a cut run part of the work is done already, and
    // the next run, shorter, would end before most points.
    REQUIRE(repo.Sh(kRepacks[1 - i % 2]).code == 0);
    killed += KillWhen(repo, kRepacks[i % 2], Sleep(delay));
    CHECK(BrokenObjects(repo).empty());
    CHECK(repo.Sh("git zipnn fsck --all --fast").code == 0);
  }
  MESSAGE(kPoints << " kill points over " << full << " s: " << killed << " killed while running");
  CHECK(killed >= kPoints / 2);
  REQUIRE(repo.Sh("git zipnn repack").code == 0);
  for (int back = 0; back < 5; ++back) {
    REQUIRE(repo.Sh("git checkout -q HEAD~" + std::to_string(back) + " -- m.safetensors").code == 0);
    CHECK(Slurp(repo.File("m.safetensors")) == Slurp(repo.root() + "/step-" + kSteps[4 - back] + ".safetensors"));
  }
}

// Kills `command` at `points` moments spread over 1.5 times its usual
// run, and at each moment `extra` adds, calling `check` after each kill.
// Returns how many kills found it running.
int KillAcross(Repo& repo, const std::string& command, double full, int points, std::vector<std::string> extra,
               const std::function<void()>& check) {
  std::vector<std::string> waits = std::move(extra);
  for (int i = 1; i <= points; ++i) waits.push_back(Sleep(1.5 * full * i / (points + 1)));
  int killed = 0;
  for (const std::string& wait : waits) {
    CAPTURE(wait);
    killed += KillWhen(repo, command, wait) ? 1 : 0;
    check();
  }
  MESSAGE(command << ": " << waits.size() << " kill points over " << full << " s, " << killed
                  << " killed while running");
  return killed;
}

TEST_CASE("checkout, gc, push and fetch killed at many points lose nothing; each runs whole again") {
  Repo repo;
  CommitEnlarged(repo);
  const std::string newest = Slurp(repo.root() + "/step-000200.safetensors");
  const std::string oldest = Slurp(repo.root() + "/step-000040.safetensors");

  SUBCASE("checkout") {
    const std::string back = "git checkout -q HEAD~4 -- m.safetensors";
    const double full = FastestRun(repo, back, "git checkout -q HEAD -- m.safetensors");
    const int killed = KillAcross(repo, back, full, 14, {Until("test -e .git/index.lock")}, [&] {
      CHECK(BrokenObjects(repo).empty());
      // Whatever git left in the work tree, checking out again is exact.
      REQUIRE(repo.Sh("rm -f .git/index.lock && git checkout -q -f HEAD -- m.safetensors").code == 0);
      CHECK(Slurp(repo.File("m.safetensors")) == newest);
      CHECK(repo.Sh("git status --porcelain").out.empty());
    });
    CHECK(killed >= 2);  // a checkout takes tens of milliseconds
    REQUIRE(repo.Sh(back).code == 0);
    CHECK(Slurp(repo.File("m.safetensors")) == oldest);
  }

  SUBCASE("gc") {
    const std::string litter = testing::GcLitter(repo);
    REQUIRE(repo.Sh(litter).code == 0);
    REQUIRE(repo.Sh("git zipnn gc --keep-recent 0").out.find("removed 5 objects") == 0);
    REQUIRE(repo.Sh(litter).code == 0);
    const double full = FastestRun(repo, "git zipnn gc --keep-recent 0", litter);
    const int killed = KillAcross(repo, "git zipnn gc --keep-recent 0", full, 14,
                                  {Until("compgen -G '.git/zipnn/objects/*/*/*.gc' >/dev/null")}, [&] {
                                    CHECK(BrokenObjects(repo).empty());
                                    CHECK(repo.Sh("git zipnn fsck --all --fast").code == 0);
                                    // The next gc puts back what one cut short set aside, and
                                    // finishes the work.
                                    REQUIRE(repo.Sh("git zipnn gc --keep-recent 0").code == 0);
                                    CHECK(repo.Sh("find .git/zipnn/objects -name '*.gc'").out.empty());
                                    CHECK(repo.Sh("git zipnn fsck --all").code == 0);
                                    REQUIRE(repo.Sh(litter).code == 0);
                                  });
    CHECK(killed >= 4);
    for (int back = 0; back < 5; ++back) {
      REQUIRE(repo.Sh("git checkout -q HEAD~" + std::to_string(back) + " -- m.safetensors").code == 0);
      CHECK(Slurp(repo.File("m.safetensors")) == Slurp(repo.root() + "/step-" + kSteps[4 - back] + ".safetensors"));
    }
  }

  SUBCASE("push") {
    const std::string hub = repo.root() + "/hub.git/zipnn";
    const double full = FastestRun(repo, "git zipnn push -q origin --all", "rm -rf ../hub.git/zipnn");
    const int killed = KillAcross(repo, "git zipnn push -q origin --all", full, 14, {}, [&] {
      // Every object on the remote is whole; a push then sends the rest.
      CHECK(BrokenIn(hub + "/objects", repo.root() + "/scratch").empty());
    });
    CHECK(killed >= 4);
    REQUIRE(repo.Sh("git zipnn push -q origin --all && git push -q origin HEAD:main").code == 0);
    REQUIRE(
        repo.Sh("cd .. && git clone -q -b main hub.git pushed && cd pushed && git zipnn install --local >/dev/null && "
                "git zipnn pull -q && git zipnn fetch -q --all && git zipnn fsck --all")
            .code == 0);
    CHECK(Slurp(repo.File("../pushed/m.safetensors")) == newest);
  }

  SUBCASE("fetch") {
    REQUIRE(repo.Sh("git zipnn push -q origin --all && git push -q origin HEAD:main && cd .. && "
                    "GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main hub.git lazy")
                .code == 0);
    const std::string lazy = repo.root() + "/lazy/.git/zipnn";
    const double full = FastestRun(repo, "cd ../lazy && git zipnn fetch -q --all", "rm -rf ../lazy/.git/zipnn/objects");
    const int killed = KillAcross(repo, "sh -c 'cd ../lazy && exec git zipnn fetch -q --all'", full, 14, {},
                                  [&] { CHECK(BrokenIn(lazy + "/objects", lazy).empty()); });
    CHECK(killed >= 4);
    const Run pulled = repo.Sh(
        "cd ../lazy && git zipnn install --local >/dev/null && git zipnn pull -q && "
        "git zipnn fsck --all >/dev/null && git status --porcelain");
    REQUIRE(pulled.code == 0);
    CHECK(pulled.out.empty());
    CHECK(Slurp(repo.File("../lazy/m.safetensors")) == newest);
  }
}

TEST_CASE("a worktree and its repository add one series at once") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && git add . && "
                  "git commit -qm setup && git worktree add -q ../wt && mkdir run ../wt/run")
              .code == 0);
  // Rounds of two adds at once into run/: this side the even steps, the
  // worktree the odd ones; one series index and store for both.
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    const std::string mine = Step12(4 * round), mine2 = Step12(4 * round + 2);
    const std::string theirs = Step12(4 * round + 1), theirs2 = Step12(4 * round + 3);
    REQUIRE(repo.Sh("cp '" + repo.Data("cnn12-bf16/" + mine) + "' '" + repo.Data("cnn12-bf16/" + mine2) +
                    "' run/ && "
                    "cp '" +
                    repo.Data("cnn12-bf16/" + theirs) + "' '" + repo.Data("cnn12-bf16/" + theirs2) +
                    "' ../wt/run/ && { git add run & (cd ../wt && git add run) & wait; } && git commit -qm mine && "
                    "cd ../wt && git commit -qm theirs")
                .code == 0);
  }
  CHECK(BrokenObjects(repo).empty());
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);
  CHECK(repo.Sh("cd ../wt && git zipnn fsck --all").code == 0);
  // Both sides stored every version in the one store, and the later
  // versions of each side are deltas.
  const std::string git = repo.root() + "/repo/.git/zipnn";
  const store::ObjectStore objects(git + "/objects");
  auto listed = objects.List();
  REQUIRE(listed.ok());
  CHECK(std::count_if(listed->begin(), listed->end(), [](const auto& e) { return e.id.has_value(); }) == 12);
  CHECK(repo.Sh("git zipnn log --json | grep -c '\"kind\":\"delta\"'").out.find_first_of("123456789") == 0);
  // Fresh checkouts on both sides are exact.
  REQUIRE(repo.Sh("rm run/* && git checkout -- run && cd ../wt && rm run/* && git checkout -- run").code == 0);
  for (int i = 0; i < 12; ++i) {
    CAPTURE(i);
    const std::string where = (i % 4) % 2 == 0 ? "run/" : "../wt/run/";
    CHECK(Slurp(repo.File(where + Step12(i))) == Slurp(repo.Data("cnn12-bf16/" + Step12(i))));
  }
}

TEST_CASE("gc running over and over beside adds keeps everything the adds need") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && "
                  "printf 'base_interval: 4\\n' > .zipnn.yaml && git add . && git commit -qm setup")
              .code == 0);
  // gc with no grace period in a loop, while each step is added; every
  // other one is then unstaged, so that nothing points at it while the
  // next step is stored as a delta on it. The loop stops whatever happens.
  REQUIRE(repo.Sh("{ (while [ ! -e ../stop ]; do git zipnn gc --keep-recent 0 >>../gc.out 2>>../gc.err; done) & } ; "
                  "gc=$!; ok=1; for i in $(seq 0 11); do "
                  "  f=$(printf '%s/step-%06d.safetensors' '" +
                  repo.Data("cnn12-bf16") +
                  "' $((10 * (i + 1)))); "
                  "  cp $f m.safetensors && git add m.safetensors || { ok=0; break; }; "
                  "  if [ $((i % 2)) -eq 1 ]; then git commit -qm $i || { ok=0; break; }; else git reset -q; fi; "
                  "done; touch ../stop; wait $gc; [ $ok -eq 1 ]")
              .code == 0);
  const Run gcs = repo.Sh("grep -c '^removed' ../gc.out");
  MESSAGE("gc ran " << gcs.out << " times beside the adds");
  CHECK(std::stoi(gcs.out) >= 2);
  CHECK(repo.Sh("cat ../gc.err").out.find("error") == std::string::npos);
  CHECK(BrokenObjects(repo).empty());
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);
  for (int back = 0; back < 6; ++back) {
    CAPTURE(back);
    REQUIRE(repo.Sh("git checkout -q HEAD~" + std::to_string(back) + " -- m.safetensors").code == 0);
    CHECK(Slurp(repo.File("m.safetensors")) == Slurp(repo.Data("cnn12-bf16/" + Step12(11 - 2 * back))));
  }
}

}  // namespace
}  // namespace zipnn
