// What gc, fsck --all, log and add read from git, driven through the real
// git binary: a linked work tree whose folder is gone or locked away still
// needs what its index, HEAD, reflog and own refs name; a tag may name a
// tree or a blob as well as a commit; and repositories whose index or
// objects libgit2 cannot read (a split index, a sparse index, a partial
// clone) are read through git instead, so that nothing is lost and no
// add quietly stores a base.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/git_repo.h"
#include "tests/test_util.h"

namespace zipnn {
namespace {

using testing::IdAt;
using testing::Repo;
using testing::Run;
using testing::Slurp;
using testing::Step12;

const char kObjects[] = "find .git/zipnn/objects -type f -path '*/?\?/?\?/*' ! -name '*.base' | wc -l";

// Makes every stored object look long unused, so that `gc --keep-recent
// 0` keeps only what something needs (without sleeping past the second
// the objects were written in).
const char kAgeObjects[] = "find .git/zipnn/objects -type f -path '*/?\?/?\?/*' -exec touch -d '2000-01-01' {} +";

// Copies step `i` of the cnn12-bf16 fixture to `to`.
std::string Put(Repo& repo, int i, const std::string& to) {
  return "cp '" + repo.Data("cnn12-bf16/" + Step12(i)) + "' '" + to + "'";
}

// Whether the pointer at `rev_path` (as git show names it) restores to
// step `i` of the cnn12-bf16 fixture, through git-zipnn's smudge.
bool Restores(Repo& repo, const std::string& rev_path, int i) {
  const Run r = repo.Sh("git cat-file blob '" + rev_path +
                        "' | git zipnn smudge m.safetensors > ../restored && "
                        "cmp -s ../restored '" +
                        repo.Data("cnn12-bf16/" + Step12(i)) + "'");
  return r.code == 0;
}

TEST_CASE("gc keeps what a linked work tree needs while its folder is gone or locked away") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && git add . && "
                  "git commit -qm setup && " +
                  Put(repo, 0, "m.safetensors") +
                  " && git add m.safetensors && "
                  "git commit -qm 10")
              .code == 0);
  // In a linked work tree, on a detached HEAD: step 20 is HEAD, step 30
  // only its refs/bisect/bad, step 40 only its refs/worktree/keep, step 50
  // only its HEAD's reflog, and step 60 is staged.
  const Run wt = repo.Sh("git worktree add -q --detach ../wt && cd ../wt && " + Put(repo, 1, "m.safetensors") +
                         " && git commit -qam 20 && " + Put(repo, 2, "m.safetensors") +
                         " && git commit -qam 30 && "
                         "git update-ref refs/bisect/bad HEAD && " +
                         Put(repo, 3, "m.safetensors") +
                         " && git commit -qam 40 && "
                         "git update-ref refs/worktree/keep HEAD && " +
                         Put(repo, 4, "m.safetensors") +
                         " && git commit -qam 50 && "
                         "git reset -q --hard HEAD~3 && " +
                         Put(repo, 5, "n.safetensors") + " && git add n.safetensors");
  REQUIRE_MESSAGE(wt.code == 0, wt.err);
  // A second, locked work tree stages step 70 of a series of its own.
  REQUIRE(repo.Sh("git worktree add -q --detach ../locked && git worktree lock ../locked && cd ../locked && " +
                  Put(repo, 6, "o.safetensors") + " && git add o.safetensors")
              .code == 0);
  const std::string commits = repo.Sh("cd ../wt && git rev-parse HEAD refs/bisect/bad refs/worktree/keep HEAD@{1}").out;
  REQUIRE(commits.size() == 4 * 41);
  const std::string locked = repo.Sh("cd ../locked && git rev-parse :o.safetensors").out.substr(0, 40);
  REQUIRE(repo.Sh(kObjects).out == "7\n");
  // Both folders go away (moved; a disk that is not mounted).
  REQUIRE(repo.Sh("mv ../wt ../wt-away && mv ../locked ../locked-away && " + std::string(kAgeObjects)).code == 0);
  CHECK(repo.Sh("git worktree list --porcelain").out.find("prunable") != std::string::npos);

  const Run gc = repo.Sh("git zipnn gc --keep-recent 0");
  CHECK_MESSAGE(gc.code == 0, gc.err);
  CHECK(gc.out.find("removed 0 objects") == 0);
  CHECK(repo.Sh(kObjects).out == "7\n");
  const Run fsck = repo.Sh("git zipnn fsck --all");
  CHECK(fsck.out ==
        "7 pointers to 7 checkpoints in every ref, reflog, stash and the index: every one restores exactly\n");
  // fsck decoded each; two restore from the main work tree too: the
  // commit only the reflog has, and the version staged in the locked one.
  CHECK(repo.Sh("git zipnn restore m.safetensors --rev " + commits.substr(3 * 41, 40) +
                " -o ../step50 && cmp ../step50 '" + repo.Data("cnn12-bf16/" + Step12(4)) + "'")
            .code == 0);
  CHECK(Restores(repo, locked, 6));

  // Admin data it cannot read stops gc, naming the work tree, before
  // anything is removed.
  REQUIRE(repo.Sh("printf 'not an index' > .git/worktrees/wt/index").code == 0);
  const Run broken = repo.Sh("git zipnn gc --keep-recent 0");
  CHECK(broken.code != 0);
  CHECK(broken.err.find("linked work tree wt") != std::string::npos);
  CHECK(broken.err.find("nothing was removed") != std::string::npos);
  CHECK(repo.Sh(kObjects).out == "7\n");
}

TEST_CASE("gc and fsck --all count tags of a tree or of a pointer blob, lightweight or annotated") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && git add . && "
                  "git commit -qm setup && git checkout -qb old")
              .code == 0);
  // Steps 10 to 40 on a branch, each tagged another way: a tree
  // (lightweight, then annotated), the pointer blob (lightweight), and an
  // annotated tag of an annotated tag of the blob.
  const Run tags =
      repo.Sh(Put(repo, 0, "m.safetensors") +
              " && git add m.safetensors && git commit -qm 10 && git tag tree-10 'HEAD^{tree}' && " +
              Put(repo, 1, "m.safetensors") + " && git commit -qam 20 && git tag -a -m t tree-20 'HEAD^{tree}' && " +
              Put(repo, 2, "m.safetensors") + " && git commit -qam 30 && git tag blob-30 HEAD:m.safetensors && " +
              Put(repo, 3, "m.safetensors") +
              " && git commit -qam 40 && git tag -a -m i inner HEAD:m.safetensors && "
              "git tag -a -m o blob-40 inner && git tag -d inner >/dev/null");
  REQUIRE_MESSAGE(tags.code == 0, tags.err);
  // The branch moves on and the commits are forgotten: only the tags
  // lead to steps 10 to 40.
  REQUIRE(repo.Sh("git checkout -q - && git branch -qD old && " + Put(repo, 4, "m.safetensors") +
                  " && git add m.safetensors && git commit -qm 50 && git reflog expire --expire=now --all && " +
                  kAgeObjects)
              .code == 0);
  REQUIRE(repo.Sh(kObjects).out == "5\n");

  const Run gc = repo.Sh("git zipnn gc --keep-recent 0");
  CHECK_MESSAGE(gc.code == 0, gc.err);
  CHECK(gc.out.find("removed 0 objects") == 0);
  CHECK(repo.Sh(kObjects).out == "5\n");
  const Run fsck = repo.Sh("git zipnn fsck --all");
  CHECK(fsck.out ==
        "5 pointers to 5 checkpoints in every ref, reflog, stash and the index: every one restores exactly\n");
  CHECK(Restores(repo, "blob-40", 3));
  // A missing object under a tag is named by the tag.
  const std::string id = IdAt(repo, "tree-20:m.safetensors");
  REQUIRE(repo.Sh("rm .git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id).code == 0);
  const Run missing = repo.Sh("git zipnn fsck --all");
  CHECK(missing.code != 0);
  CHECK(missing.out.find("m.safetensors at tree-20: checkpoint " + id) == 0);
}

// Commits steps 10 and 20 of a series to models/m.safetensors, with
// base_interval 5 so that each later step is a delta.
void CommitTwoSteps(Repo& repo) {
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && "
                  "printf 'base_interval: 5\\n' > .zipnn.yaml && mkdir models other && echo a > other/notes.txt && "
                  "git add . && git commit -qm setup && " +
                  Put(repo, 0, "models/m.safetensors") + " && git add models && git commit -qm 10 && " +
                  Put(repo, 1, "models/m.safetensors") + " && git commit -qam 20")
              .code == 0);
}

// The next step of the series is added (whole, the newest) and the one
// before it becomes a delta, so git's versions were read; nothing says
// it stored a version standalone for want of them. Then log reads every
// version of the series, fsck --all finds `pointers` pointers and every
// one restores, and gc keeps everything.
void CheckNextStepIsDelta(Repo& repo, int step, size_t versions, size_t pointers) {
  const Run add = repo.Sh(Put(repo, step, "models/m.safetensors") +
                          " && git add models/m.safetensors && "
                          "git commit -qm next");
  CHECK_MESSAGE(add.code == 0, add.err);
  CHECK(add.err.find("standalone") == std::string::npos);
  const Run log = repo.Sh("git zipnn log --json models/m.safetensors");
  REQUIRE_MESSAGE(log.code == 0, log.err);
  const nlohmann::json listed = nlohmann::json::parse(log.out);
  REQUIRE(listed.size() == versions);
  CHECK(listed[0]["kind"] == "base");
  CHECK(listed[0]["subject"] == "next");
  CHECK(listed[1]["kind"] == "delta");
  const Run fsck = repo.Sh("git zipnn fsck --all");
  CHECK_MESSAGE(fsck.code == 0, (fsck.out + fsck.err));
  CHECK(fsck.out == std::to_string(pointers) + " pointers to " + std::to_string(pointers) +
                        " checkpoints in every ref, reflog, stash and the index: every one restores exactly\n");
  const Run gc = repo.Sh(std::string(kAgeObjects) + " && git zipnn gc --keep-recent 0");
  CHECK_MESSAGE(gc.code == 0, gc.err);
  CHECK(gc.out.find("removed 0 objects") == 0);
}

TEST_CASE("a split index is read through git: add makes deltas; log, fsck --all and gc work") {
  Repo repo;
  CommitTwoSteps(repo);
  REQUIRE(repo.Sh("git config core.splitIndex true && git update-index --split-index && "
                  "ls .git/sharedindex.*")
              .code == 0);
  CheckNextStepIsDelta(repo, 2, 3, 3);
  CHECK(repo.Sh("ls .git/sharedindex.*").code == 0);  // still split
}

TEST_CASE("a sparse index is read through git: add makes deltas; log, fsck --all and gc work") {
  Repo repo;
  CommitTwoSteps(repo);
  // other/ holds a checkpoint outside the cone, staged only.
  REQUIRE(repo.Sh(Put(repo, 7, "other/o.safetensors") +
                  " && git add other && "
                  "git sparse-checkout init --cone --sparse-index && git sparse-checkout set models && "
                  "test ! -e other/notes.txt && git ls-files --sparse | grep -qx other/")
              .code == 0);
  CheckNextStepIsDelta(repo, 2, 3, 4);
  CHECK(repo.Sh(kObjects).out == "4\n");
}

TEST_CASE("a partial clone fetches the pointers it lacks: log, fsck --all and gc work; add makes deltas") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --global").code == 0);
  CommitTwoSteps(repo);
  REQUIRE(repo.Sh(Put(repo, 2, "models/m.safetensors") + " && git commit -qam 30 && "
                                                         "git config uploadpack.allowFilter true")
              .code == 0);
  // A fresh clone for each command, each lacking the pointers of steps
  // 10 and 20 (its checkout fetched step 30's object from origin: the
  // newest, stored whole).
  int clones = 0;
  auto partial = [&](const std::string& line) {
    const std::string name = "../partial" + std::to_string(++clones);
    const Run made = repo.Sh("git clone -q --filter=blob:none \"file://$PWD\" " + name + " && cd " + name +
                             " && git config user.email c@example.com && git config user.name C && "
                             "git rev-list --objects --all --missing=print | grep -c '^?'");
    REQUIRE_MESSAGE(made.out == "2\n", made.err);
    return repo.Sh("cd " + name + " && " + line);
  };
  const Run log = partial("git zipnn log --json models/m.safetensors");
  REQUIRE_MESSAGE(log.code == 0, log.err);
  CHECK(nlohmann::json::parse(log.out).size() == 3);
  // gc first, then fsck --all, which reads what gc fetched.
  const Run gc = partial(std::string(kAgeObjects) + " && git zipnn gc --keep-recent 0 && " + kObjects);
  CHECK_MESSAGE(gc.code == 0, gc.err);
  CHECK(gc.out.find("removed 0 objects") == 0);
  CHECK(gc.out.find("\n1\n") != std::string::npos);
  // The older versions' objects come with a fetch of all history.
  const Run fsck = repo.Sh("cd ../partial2 && git zipnn fetch --all >/dev/null && git zipnn fsck --all");
  CHECK_MESSAGE(fsck.code == 0, (fsck.out + fsck.err));
  CHECK(fsck.out.find("3 pointers to 3 checkpoints") == 0);
  // Step 30, the only version this store holds, begins a stretch: step
  // 40 stays whole while it is the newest, and becomes a delta of step
  // 30 when step 50 comes.
  const Run add =
      partial(Put(repo, 3, "models/m.safetensors") + " && git add models/m.safetensors && git commit -qm next && " +
              Put(repo, 4, "models/m.safetensors") +
              " && git add models/m.safetensors && git commit -qm after && "
              "git zipnn log --json models/m.safetensors");
  CHECK_MESSAGE(add.code == 0, add.err);
  CHECK(add.err.find("standalone") == std::string::npos);
  const nlohmann::json listed = nlohmann::json::parse(add.out);
  REQUIRE(listed.size() == 5);
  CHECK(listed[0]["kind"] == "base");
  CHECK(listed[1]["kind"] == "delta");
  CHECK(listed[1]["base"] == listed[2]["id"]);
}

}  // namespace
}  // namespace zipnn
