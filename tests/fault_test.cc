// Faults injected inside the process (lib/base/fs_ops.h), through the
// real git binary: each write, fsync, folder fsync, rename and link that
// git-zipnn makes during add, checkout and restore, push, fetch, gc,
// repack and retain is made to fail in turn, one run per point. After
// each run nothing committed is lost (fsck --all), every object in every
// store decodes to its content id, a command that failed says why, and
// the same command run again without the fault completes with the exact
// bytes.
#include <doctest/doctest.h>

#include <cstdio>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "lib/base/file.h"
#include "tests/git_repo.h"
#include "tests/store_check.h"
#include "tests/test_util.h"

namespace zipnn::testing {
namespace {

constexpr const char* kOps[] = {"write", "fsync", "dirsync", "rename", "link"};

std::string Bytes(Repo& repo, int step) {
  return Slurp(repo.Data(std::string("cnn-bf16/step-") + kSteps[step] + ".safetensors"));
}

// A store of five versions (depths 0 1 2 1 0), a folder remote `origin`
// at ../hub.git, and the state each command starts from kept in ../snap.
class Bench {
 public:
  Bench() {
    CommitTrajectory(repo_);
    REQUIRE(repo_.Sh("git init -q --bare ../hub.git && git remote add origin ../hub.git").code == 0);
  }
  Repo& repo() { return repo_; }

  // Keeps the present state (repo/, hub.git/ and lazy/) as the one each
  // run starts from.
  void Snapshot() {
    REQUIRE(repo_
                .Sh("cd .. && rm -rf snap && mkdir snap && for d in repo hub.git lazy; do "
                    "[ -e $d ] && cp -a $d snap/; done; true")
                .code == 0);
  }

  // The calls of each operation to fail in turn, by their count in a
  // process, from one run of `command` from the snapshot: every rename,
  // link and folder fsync; of the writes and fsyncs of one file, the first
  // and the last (the calls between take the same error path as those).
  std::map<std::string, std::set<int>> Points(const std::string& command) {
    const Run r = repo_.Sh(Reset() + Logged(command));
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CheckDurable();
    struct Call {
      std::string pid, op, name;
      int n;
    };
    std::vector<Call> calls;
    std::istringstream lines(Slurp(Log()));
    for (Call c; lines >> c.pid >> c.op >> c.n >> c.name;) calls.push_back(c);
    // Whether each call is on another file than the same operation's call
    // before (then after) it in the same process.
    std::vector<bool> first(calls.size(), true), last(calls.size(), true);
    std::map<std::pair<std::string, std::string>, size_t> before;  // (pid, op) -> index of its latest call
    for (size_t i = 0; i < calls.size(); ++i) {
      const auto it = before.find({calls[i].pid, calls[i].op});
      if (it != before.end() && calls[it->second].name == calls[i].name) first[i] = last[it->second] = false;
      before[{calls[i].pid, calls[i].op}] = i;
    }
    std::map<std::string, std::set<int>> points;
    for (size_t i = 0; i < calls.size(); ++i) {
      const bool per_file = calls[i].op == "write" || calls[i].op == "fsync";
      if (!per_file || first[i] || last[i]) points[calls[i].op].insert(calls[i].n);
    }
    return points;
  }

  // Every object the last run renamed or linked into a store had its
  // folder fsynced after, by the same process and with success: its name
  // survives a power loss. A command that says it succeeded must have
  // made sure of that.
  void CheckDurable() {
    std::map<std::pair<std::string, std::string>, std::string> unsynced;  // (pid, folder) -> an object named there
    const std::regex object(".*/objects/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{32}");
    std::istringstream lines(Slurp(Log()));
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::string pid, op, n, name, failed;
      words >> pid >> op >> n >> name >> failed;
      const std::string folder = name.substr(0, name.rfind('/'));
      if ((op == "rename" || op == "link") && failed.empty() && std::regex_match(name, object)) {
        unsynced[{pid, folder}] = name;
      }
      if (op == "dirsync" && failed.empty()) unsynced.erase({pid, name});
    }
    for (const auto& [where, name] : unsynced)
      CHECK_MESSAGE(false, name << " was named without an fsync of its folder");
  }

  // Runs `command` from the snapshot once for each of its Points, that
  // call failing, and calls `check` with what the run printed.
  struct Runs {
    int points = 0;
    int failed = 0;  // the command exited non-zero; the others went on without what failed
    std::string by_op;
  };
  Runs FailEach(const std::string& command, const std::function<void(const Run&)>& check) {
    const auto points = Points(command);
    Runs runs;
    for (const char* op : kOps) {
      const auto it = points.find(op);
      if (it == points.end()) continue;
      runs.by_op += " " + std::string(op) + " " + std::to_string(it->second.size());
      for (const int n : it->second) {
        const std::string fault = std::string(op) + ":" + std::to_string(n);
        CAPTURE(fault);
        const Run r = repo_.Sh(Reset() + "export GIT_ZIPNN_TEST_FAULT=" + fault + " && " + Logged(command));
        if (r.code == 0) CheckDurable();
        if (r.code != 0) {
          ++runs.failed;
          // A command that failed says why.
          const std::string printed = r.out + r.err;
          const bool says = printed.find("No space left on device") != std::string::npos ||
                            printed.find("Input/output error") != std::string::npos;
          CHECK_MESSAGE(says, printed);
        }
        check(r);
        ++runs.points;
      }
    }
    return runs;
  }

 private:
  std::string Reset() { return "cd .. && rm -rf repo hub.git lazy && cp -a snap/. . && cd repo && "; }
  std::string Log() { return repo_.root() + "/fault.log"; }
  // `command` with each file operation of git-zipnn logged afresh.
  std::string Logged(const std::string& command) {
    return "rm -f '" + Log() + "' && export GIT_ZIPNN_TEST_FAULT_LOG='" + Log() + "' && " + command;
  }
  Repo repo_;
};

// What every run leaves: the objects of each store decode to their ids,
// and every version any commit, index, stash or reflog names restores.
void CheckSound(Repo& repo, const std::vector<std::string>& stores) {
  CHECK(BrokenObjects(repo).empty());
  for (const std::string& dir : stores) {
    const std::string at = repo.root() + "/" + dir;
    if (FileExists(at + "/objects")) CHECK(BrokenIn(at + "/objects", repo.root() + "/scratch").empty());
  }
  const Run fsck = repo.Sh("git zipnn fsck --all");
  CHECK_MESSAGE(fsck.code == 0, (fsck.out + fsck.err));
}

// Says how many points a command was failed at; there must be some.
void Report(const char* command, const Bench::Runs& runs) {
  std::printf("%s: %d fault points run (%s), %d of them stopped the command\n", command, runs.points,
              runs.by_op.c_str() + 1, runs.failed);
  CHECK(runs.points > 0);
}

TEST_CASE("git add: each fault leaves the store sound and the add runs again") {
  Bench bench;
  Repo& repo = bench.repo();
  // A sixth version in the work tree, new to the store.
  const std::string sixth = Slurp(repo.Data("cnn12-bf16/step-000120.safetensors"));
  REQUIRE(repo.Sh("cp '" + repo.Data("cnn12-bf16/step-000120.safetensors") + "' model.safetensors").code == 0);
  bench.Snapshot();
  Report("add", bench.FailEach("git add model.safetensors", [&](const Run& r) {
    // Stored, or refused: never committed whole into git.
    if (r.code == 0) CHECK(PointerFormat(repo.Sh("git show :model.safetensors").out) != "");
    CheckSound(repo, {});
    const Run again = repo.Sh("git add model.safetensors && git commit -qm sixth && git zipnn fsck --all");
    REQUIRE_MESSAGE(again.code == 0, (again.out + again.err));
    CHECK(repo.Sh("git zipnn restore model.safetensors -o ../out -f").code == 0);
    CHECK(Slurp(repo.root() + "/out") == sixth);
  }));
}

TEST_CASE("checkout and restore: each fault leaves the work tree exact or as it was") {
  Bench bench;
  Repo& repo = bench.repo();
  // A clone that holds only the newest version: checking out an old one
  // fetches its chain from origin into the store.
  REQUIRE(repo.Sh("git zipnn push -q origin --all && git push -q origin HEAD:main && cd .. && "
                  "git clone -q -b main hub.git lazy && cd lazy && git zipnn install --local >/dev/null && "
                  "git zipnn pull -q")
              .code == 0);
  bench.Snapshot();
  Report("checkout", bench.FailEach("cd ../lazy && git checkout -q HEAD~4 -- model.safetensors", [&](const Run& r) {
    const std::string now = Slurp(repo.root() + "/lazy/model.safetensors");
    if (r.code == 0) CHECK(now == Bytes(repo, 0));
    CheckSound(repo, {"lazy/.git/zipnn"});
    const Run again = repo.Sh("cd ../lazy && rm -f .git/index.lock && git checkout -q -f HEAD~4 -- model.safetensors");
    REQUIRE_MESSAGE(again.code == 0, again.err);
    CHECK(Slurp(repo.root() + "/lazy/model.safetensors") == Bytes(repo, 0));
  }));
  Report("restore", bench.FailEach("git zipnn restore model.safetensors --rev HEAD~3", [&](const Run& r) {
    // The work-tree file is the version it was, or the one restored
    // (whole, its folder's fsync failed after it took its name); never a
    // part of either.
    const std::string now = Slurp(repo.File("model.safetensors"));
    CHECK((now == Bytes(repo, 4) || now == Bytes(repo, 1)));
    if (r.code == 0) CHECK(now == Bytes(repo, 1));
    CHECK(repo.Sh("git status --porcelain --untracked-files=all | grep -v '^ M model.safetensors$'").out.empty());
    CheckSound(repo, {});
    REQUIRE(repo.Sh("git zipnn restore model.safetensors --rev HEAD~3 -f").code == 0);
    CHECK(Slurp(repo.File("model.safetensors")) == Bytes(repo, 1));
  }));
}

TEST_CASE("push to a folder remote: each fault leaves both stores sound, and the push then completes") {
  Bench bench;
  Repo& repo = bench.repo();
  bench.Snapshot();
  Report("push", bench.FailEach("git zipnn push -q origin --all", [&](const Run& r) {
    CheckSound(repo, {"hub.git/zipnn"});
    // What a push said it sent is there: a clone gets every version
    // without another push. After a push that failed, the push again
    // completes.
    const std::string again = r.code == 0 ? "" : "git zipnn push -q origin --all && ";
    const Run clone = repo.Sh(
        again + "git push -q origin HEAD:main && cd .. && rm -rf pushed && git clone -q -b main hub.git pushed && "
                "cd pushed && git zipnn install --local >/dev/null && git zipnn pull -q && git zipnn fetch -q --all && "
                "git zipnn fsck --all");
    REQUIRE_MESSAGE(clone.code == 0, (clone.out + clone.err));
    CHECK(Slurp(repo.root() + "/pushed/model.safetensors") == Bytes(repo, 4));
  }));
}

TEST_CASE("fetch: each fault leaves the store sound, and the fetch then completes") {
  Bench bench;
  Repo& repo = bench.repo();
  REQUIRE(repo.Sh("git zipnn push -q origin --all && git push -q origin HEAD:main && cd .. && "
                  "GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main hub.git lazy && cd lazy && "
                  "git zipnn install --local >/dev/null")
              .code == 0);
  bench.Snapshot();
  Report("fetch", bench.FailEach("cd ../lazy && git zipnn fetch -q --all", [&](const Run& r) {
    CheckSound(repo, {"lazy/.git/zipnn"});
    if (r.code == 0) {
      // A fetch that said it got everything did.
      const Run all = repo.Sh(
          "cd ../lazy && mv ../hub.git ../hub.away && git zipnn fsck --all; s=$?; "
          "mv ../hub.away ../hub.git; exit $s");
      CHECK_MESSAGE(all.code == 0, (all.out + all.err));
    }
    const Run pulled = repo.Sh(
        "cd ../lazy && git zipnn fetch -q --all && git zipnn pull -q && git zipnn fsck --all >/dev/null && "
        "git status --porcelain");
    REQUIRE_MESSAGE(pulled.code == 0, pulled.err);
    CHECK(pulled.out.empty());
    CHECK(Slurp(repo.root() + "/lazy/model.safetensors") == Bytes(repo, 4));
  }));
}

TEST_CASE("gc: each fault loses nothing needed, and the next gc finishes") {
  Bench bench;
  Repo& repo = bench.repo();
  REQUIRE(repo.Sh(GcLitter(repo)).code == 0);
  bench.Snapshot();
  Report("gc", bench.FailEach("git zipnn gc --keep-recent 0", [&](const Run&) {
    CheckSound(repo, {});
    REQUIRE(repo.Sh("git zipnn gc --keep-recent 0").code == 0);
    CHECK(repo.Sh("find .git/zipnn/objects -name '*.gc'").out.empty());
    CheckSound(repo, {});
  }));
}

TEST_CASE("repack: each fault leaves every version restorable, and the repack then completes") {
  Bench bench;
  Repo& repo = bench.repo();
  bench.Snapshot();
  Report("repack", bench.FailEach("git zipnn repack --base-interval 2", [&](const Run&) {
    CheckSound(repo, {});
    REQUIRE(repo.Sh("git zipnn repack --base-interval 2").code == 0);
    CheckSound(repo, {});
    for (int back = 0; back < 5; ++back) {
      CHECK(repo.Sh("git zipnn restore model.safetensors --rev HEAD~" + std::to_string(back) + " -o ../out -f").code ==
            0);
      CHECK(Slurp(repo.root() + "/out") == Bytes(repo, 4 - back));
    }
  }));
}

TEST_CASE("retain: each fault loses nothing kept, and the next retain finishes") {
  Bench bench;
  Repo& repo = bench.repo();
  REQUIRE(repo.Sh("printf 'base_interval: 5\\nretention:\\n  - checkpoints: \"*.safetensors\"\\n"
                  "    keep_newest: 2\\n    rest: thin\\n    precision: relative 4\\n' > .zipnn.yaml && "
                  "git commit -qam retention")
              .code == 0);
  bench.Snapshot();
  const auto kept = [&] {
    for (int back = 0; back < 2; ++back) {
      CHECK(repo.Sh("git zipnn restore model.safetensors --rev HEAD~" + std::to_string(back + 1) + " -o ../out -f")
                .code == 0);
      CHECK(Slurp(repo.root() + "/out") == Bytes(repo, 4 - back));
    }
  };
  Report("retain", bench.FailEach("git zipnn retain", [&](const Run&) {
    CHECK(BrokenObjects(repo).empty());
    kept();
    const Run again = repo.Sh("git zipnn retain && git zipnn fsck --all");
    REQUIRE_MESSAGE(again.code == 0, (again.out + again.err));
    CHECK(again.out.find("3 thinned") != std::string::npos);
    kept();
  }));
}

// On a file system whose locks hold nothing (flock succeeds and locks
// nothing: GIT_ZIPNN_TEST_FAULT=flock:1+), a live command's scratch files
// look like a dead one's. Those who clean up after dead processes then go
// by age alone: gc --now takes only leftovers over an hour old and says
// why, the next git add leaves a stopped add's spool to gc, and pull
// leaves another pull's unfinished work-tree file.
TEST_CASE("where locks hold nothing, gc --now, add and pull remove no file a running command may hold") {
  Bench bench;
  Repo& repo = bench.repo();
  REQUIRE(repo.Sh("mkdir -p .git/zipnn/tmp && cd .git/zipnn/tmp && head -c 1000 /dev/urandom > clean-0badf00d && "
                  "touch -d '1 minute ago' clean-0badf00d && head -c 2000 /dev/urandom > clean-0ld00000 && "
                  "touch -d '2 hours ago' clean-0ld00000 && head -c 3000 /dev/urandom > checkout-m.tmp-1234abcd && "
                  "touch -d '1 minute ago' checkout-m.tmp-1234abcd")
              .code == 0);
  const std::string unlocked = "export GIT_ZIPNN_TEST_FAULT=flock:1+ && ";
  const Run add = repo.Sh(unlocked + "cp '" + repo.Data("cnn12-bf16/step-000120.safetensors") +
                          "' model.safetensors && git add model.safetensors && git commit -qm sixth");
  REQUIRE_MESSAGE(add.code == 0, add.err);
  CHECK(add.err.find("scratch files that a stopped command left") == std::string::npos);
  const Run pull = repo.Sh(unlocked + "git zipnn pull -q");
  REQUIRE_MESSAGE(pull.code == 0, pull.err);
  CHECK(repo.Sh("find .git/zipnn/tmp -maxdepth 1 -type f -printf '%f\\n' | sort").out ==
        "checkout-m.tmp-1234abcd\nclean-0badf00d\nclean-0ld00000\n");

  const Run gc = repo.Sh(unlocked + "git zipnn gc --now");
  REQUIRE_MESSAGE(gc.code == 0, gc.err);
  CHECK_MESSAGE(gc.out.find("note: file locks hold nothing on the file system of ") != std::string::npos, gc.out);
  CHECK_MESSAGE(gc.out.find("--now removed only leftovers over an hour old, and kept 2 files younger (3.9 KiB)") !=
                    std::string::npos,
                gc.out);
  CHECK(repo.Sh("find .git/zipnn/tmp -maxdepth 1 -type f -printf '%f\\n' | sort").out ==
        "checkout-m.tmp-1234abcd\nclean-0badf00d\n");
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);

  // Where locks work, the same gc --now takes them at once.
  const Run locked = repo.Sh("git zipnn gc --now");
  CHECK(locked.out.find("note: file locks") == std::string::npos);
  CHECK(repo.Sh("find .git/zipnn/tmp -maxdepth 1 -type f -printf '%f\\n' | sort").out == "");
}

}  // namespace
}  // namespace zipnn::testing
