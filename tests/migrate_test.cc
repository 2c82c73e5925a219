// git zipnn migrate with the real git and Debian's git-lfs: histories of
// plain blobs and of Git LFS pointers brought in, every version restoring
// bit-exact and every other byte of every commit kept; a history taken
// back to Git LFS; and the refusals that leave a repository as it was.
#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/git_repo.h"

namespace zipnn::testing {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Old commit -> new commit, from migrate's standard output.
std::map<std::string, std::string> CommitMap(const std::string& out) {
  std::map<std::string, std::string> map;
  for (const std::string& line : Lines(out)) {
    REQUIRE_MESSAGE(line.size() == 81, line);
    map[line.substr(0, 40)] = line.substr(41);
  }
  return map;
}

// Every ref with the commit it names (tags peeled), one per line.
std::string Refs(Repo& repo) {
  return repo.Sh("git for-each-ref --format='%(refname) %(objectname) %(*objectname)'").out;
}

// A commit as git holds it, without the ids that a rewrite changes: its
// author, committer, dates and message, byte for byte.
std::string Described(Repo& repo, const std::string& commit) {
  return repo.Sh("git cat-file commit " + commit + " | sed -n '/^author /,$p'").out;
}

// The files of `commit` whose paths do not match `pattern`, with modes and
// blobs, and without .gitattributes.
std::string OtherFiles(Repo& repo, const std::string& commit, const std::string& pattern) {
  return repo.Sh("git ls-tree -r -z " + commit + " | tr '\\0' '\\n' | grep -v -e '" + pattern +
                 "' -e '^100644 blob [0-9a-f]*.\\.gitattributes$' || true")
      .out;
}

const char* const kSteps[] = {"000040", "000080", "000120", "000160", "000200"};

// A history of plain blobs: three steps of model.safetensors and of a
// file whose name git quotes, on main with a README that changes too; a
// branch of two more steps from the second commit; a lightweight and an
// annotated tag.
void PlainHistory(Repo& repo) {
  auto step = [&](int i) { return repo.Data(std::string("cnn-bf16/step-") + kSteps[i] + ".safetensors"); };
  REQUIRE(repo.Sh("git symbolic-ref HEAD refs/heads/main").code == 0);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(repo.Sh("mkdir -p runs && cp '" + step(i) + "' model.safetensors && cp '" + step(i) +
                    "' 'runs/caf\xc3\xa9 \"1\".safetensors' && echo 'notes " + std::to_string(i) +
                    "' > README && git add -A && git commit -qm 'step " + kSteps[i] + "\n\nbody line'")
                .code == 0);
  }
  REQUIRE(repo.Sh("git tag v1 HEAD~1 && git tag -a v2 -m 'release two' HEAD && git checkout -q -b exp HEAD~1").code ==
          0);
  for (int i = 3; i < 5; ++i) {
    REQUIRE(repo.Sh("cp '" + step(i) + "' model.safetensors && git commit -qam 'exp " + kSteps[i] + "'").code == 0);
  }
  REQUIRE(repo.Sh("git checkout -q main").code == 0);
}

// Each new commit holds exactly what its old one held: the same message,
// author and dates, the same other files, and each checkpoint restoring
// (through git's own smudge) to the old blob's bytes.
// `old_bytes` is the shell command that prints the old version's bytes
// from "<commit>:<path>" (git's smudge, or Git LFS's).
void CheckSameContent(Repo& repo, const std::map<std::string, std::string>& map, const std::string& pattern,
                      const std::string& old_bytes = "git cat-file --filters") {
  for (const auto& [old_id, new_id] : map) {
    CHECK(Described(repo, old_id) == Described(repo, new_id));
    CHECK(OtherFiles(repo, old_id, pattern) == OtherFiles(repo, new_id, pattern));
    Run paths = repo.Sh("git ls-tree -r --name-only -z " + old_id + " | tr '\\0' '\\n' | grep -e '" + pattern + "'");
    for (const std::string& path : Lines(paths.out)) {
      Run same = repo.Sh("cmp <(git cat-file --filters '" + new_id + ":" + path + "') <(" + old_bytes + " '" +
                         old_id + ":" + path + "')");
      CHECK_MESSAGE(same.code == 0, std::string(new_id + ":" + path + " " + same.out + same.err));
    }
  }
}

TEST_CASE("migrate import stores every branch and tag's checkpoints, restoring each bit-exact, other bytes kept") {
  Repo repo;
  PlainHistory(repo);
  const std::string before = Refs(repo);
  REQUIRE(repo.Sh("git zipnn install --local").code == 0);

  Run dry = repo.Sh("git zipnn migrate import --include '*.safetensors' --everything --dry-run");
  REQUIRE(dry.code == 0);
  // Each path with its versions and their size as checkpoints.
  CHECK(dry.out.find("model.safetensors: 5 versions, 575.0 KiB\n") != std::string::npos);
  CHECK(dry.out.find("runs/caf\xc3\xa9 \"1\".safetensors: 3 versions, 345.0 KiB\n") != std::string::npos);
  CHECK(dry.out.find("would store 5 distinct checkpoints (8 versions at 2 paths) in git-zipnn and write 5 commits "
                     "of every branch and tag again") != std::string::npos);
  CHECK(Refs(repo) == before);

  Run run = repo.Sh("git zipnn migrate import --include '*.safetensors' --everything");
  REQUIRE_MESSAGE(run.code == 0, run.err);
  const std::map<std::string, std::string> map = CommitMap(run.out);
  CHECK(map.size() == 5);
  CHECK(run.err.find("stored 5 distinct checkpoints (8 versions at 2 paths) in git-zipnn and wrote 5 commits "
                     "again") != std::string::npos);
  CHECK(run.err.find("refs moved: refs/heads/exp, refs/heads/main, refs/tags/v1, refs/tags/v2") != std::string::npos);
  CheckSameContent(repo, map, ".safetensors$");

  // Every checkpoint in the new history is a pointer, every parent the
  // new one of the old, every ref moved to the new commit of its old one.
  for (const auto& [old_id, new_id] : map) {
    Run blobs = repo.Sh("git ls-tree -r " + new_id + " | grep .safetensors | awk '{print $3}' | "
                        "while read b; do git cat-file -p $b | head -c 18; echo; done");
    for (const std::string& head : Lines(blobs.out)) CHECK(head == "git-zipnn pointer ");
    std::string parents;
    for (const std::string& p : Lines(repo.Sh("git rev-list --parents -1 " + old_id + " | cut -d' ' -f2- | tr ' ' '\\n'").out)) {
      if (!p.empty()) parents += map.at(p) + "\n";
    }
    CHECK(repo.Sh("git rev-list --parents -1 " + new_id + " | cut -d' ' -f2- | tr ' ' '\\n' | grep . || true").out ==
          parents);
    CHECK(repo.Sh("git cat-file -p " + new_id + ":.gitattributes").out ==
          "*.safetensors filter=zipnn diff=zipnn -text\n");
  }
  for (const std::string& line : Lines(before)) {
    std::istringstream fields(line);
    std::string ref, old_commit, peeled;
    fields >> ref >> old_commit >> peeled;
    if (!peeled.empty()) old_commit = peeled;  // an annotated tag: its commit
    CHECK_MESSAGE(repo.Sh("git rev-parse " + ref + "^{commit}").out == map.at(old_commit) + "\n", ref);
  }
  CHECK(repo.Sh("git cat-file -p v2 | tail -1").out == "release two\n");

  // The work tree is the new HEAD's, with the real bytes; the versions of
  // the series chain as deltas, and the store restores them all.
  CHECK(repo.Sh("git status --porcelain").out == "");
  CHECK(repo.Sh("cmp model.safetensors '" + repo.Data("cnn-bf16/step-000120.safetensors") + "'").code == 0);
  CHECK(repo.Sh("git zipnn log model.safetensors | grep -c delta").out != "0\n");
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);

  // Migrating again finds the pointers and changes no commit, and says so;
  // spaces around a comma are no part of a pattern.
  Run again = repo.Sh("git zipnn migrate import --include '*.safetensors, *.safetensors' --everything");
  REQUIRE(again.code == 0);
  for (const auto& [old_id, new_id] : CommitMap(again.out)) CHECK(old_id == new_id);
  CHECK(again.err == "git-zipnn: nothing changed: every commit is as it was (every file chosen is in git-zipnn "
                     "already)\n");
}

TEST_CASE("migrate import of a range keeps the commits before it, and --exclude leaves files as they are") {
  Repo repo;
  PlainHistory(repo);
  const std::string first = repo.Sh("git rev-parse main~2").out.substr(0, 40);
  REQUIRE(repo.Sh("git zipnn install --local").code == 0);
  Run run = repo.Sh("git zipnn migrate import -I '*.safetensors' -X 'runs/*' main~2..main");
  REQUIRE_MESSAGE(run.code == 0, run.err);
  const std::map<std::string, std::string> map = CommitMap(run.out);
  CHECK(map.size() == 2);
  CHECK(map.count(first) == 0);
  CHECK(repo.Sh("git rev-parse main~2").out == first + "\n");
  CheckSameContent(repo, map, ".safetensors$");
  // The excluded file is the same blob as before; the other is a pointer.
  for (const auto& [old_id, new_id] : map) {
    CHECK(repo.Sh("git rev-parse '" + old_id + ":runs/caf\xc3\xa9 \"1\".safetensors'").out ==
          repo.Sh("git rev-parse '" + new_id + ":runs/caf\xc3\xa9 \"1\".safetensors'").out);
    CHECK(repo.Sh("git cat-file -p " + new_id + ":model.safetensors | head -c 18").out == "git-zipnn pointer ");
  }
  // The branch not named is where it was.
  CHECK(repo.Sh("git log --format=%s -1 exp").out == "exp 000200\n");
  CHECK(repo.Sh("git cat-file -p exp:model.safetensors | head -c 18").out != "git-zipnn pointer ");
}

// A history on Git LFS: three steps of a checkpoint, plus a text file.
void LfsHistory(Repo& repo) {
  REQUIRE_MESSAGE(repo.Sh("command -v git-lfs").code == 0, "git-lfs is not installed: run bash .ci/deps");
  REQUIRE(repo.Sh("git lfs install >/dev/null && git lfs track '*.safetensors' >/dev/null").code == 0);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(repo.Sh("cp '" + repo.Data(std::string("cnn-bf16/step-") + kSteps[i] + ".safetensors") +
                    "' model.safetensors && echo " + std::to_string(i) + " > log.txt && git add -A && " +
                    "git commit -qm 'step " + kSteps[i] + "'")
                .code == 0);
  }
}

TEST_CASE("migrate import takes a Git LFS history, and export gives back the very same commits") {
  Repo repo;
  LfsHistory(repo);
  const std::string lfs_head = repo.Sh("git rev-parse HEAD").out;
  const std::string lfs_log = repo.Sh("git log --format=%H").out;
  REQUIRE(repo.Sh("git zipnn install --local").code == 0);

  // No --include: .gitattributes names the files on Git LFS.
  Run run = repo.Sh("git zipnn migrate import");
  REQUIRE_MESSAGE(run.code == 0, run.err);
  CHECK(run.err.find("The history is new: push it with --force, and teammates clone again") != std::string::npos);
  const std::map<std::string, std::string> map = CommitMap(run.out);
  CHECK(map.size() == 3);
  REQUIRE(repo.Sh("printf '#!/bin/sh\\ngit cat-file blob \"$1\" | git lfs smudge\\n' > ../lfs-bytes && "
                  "chmod +x ../lfs-bytes").code == 0);
  CheckSameContent(repo, map, "model.safetensors$", "../lfs-bytes");
  CHECK(repo.Sh("cat .gitattributes").out == "*.safetensors filter=zipnn diff=zipnn -text\n");
  CHECK(repo.Sh("git lfs ls-files --all").out == "");
  CHECK(repo.Sh("git status --porcelain").out == "");
  CHECK(repo.Sh("cmp model.safetensors '" + repo.Data("cnn-bf16/step-000120.safetensors") + "'").code == 0);

  // Back to Git LFS: the pointers are the same text, .gitattributes the
  // same line, so every commit is the one Git LFS had, and had pushed (a
  // remote-tracking branch names it).
  REQUIRE(repo.Sh("git remote add origin ../nowhere && git update-ref refs/remotes/origin/main " + lfs_head).code == 0);
  REQUIRE(repo.Sh("git branch -m main").code == 0);
  Run back = repo.Sh("git zipnn migrate export");
  REQUIRE_MESSAGE(back.code == 0, back.err);
  // Which is what origin has: nothing to force.
  CHECK(back.err.find("The history is again the one the remote has (the commits origin/main names): nothing needs "
                      "--force, and teammates' clones stay as they are") != std::string::npos);
  CHECK(back.err.find("--force, and teammates clone again") == std::string::npos);
  for (const auto& [zipnn_id, lfs_id] : CommitMap(back.out)) {
    CHECK(lfs_log.find(lfs_id) != std::string::npos);
    CHECK(map.count(lfs_id) == 1);
  }
  CHECK(repo.Sh("git rev-parse HEAD").out == lfs_head);
  CHECK(repo.Sh("git lfs fsck").code == 0);
  CHECK(repo.Sh("git status --porcelain").out == "");
  CHECK(repo.Sh("cmp model.safetensors '" + repo.Data("cnn-bf16/step-000120.safetensors") + "'").code == 0);
}

// The common start: `track` first, its .gitattributes committed, then
// migrate. git now sees the plainly committed checkpoint as changed (the
// filter applies to it), though its bytes are the index's: that is no
// work to lose, and migrate goes on; a real change still stops it.
TEST_CASE("migrate import after track was committed takes files changed only by the filter, not a real change") {
  Repo repo;
  PlainHistory(repo);
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' >/dev/null && "
                  "git add .gitattributes && git commit -qm track")
              .code == 0);
  REQUIRE(repo.Sh("git status --porcelain --untracked-files=no").out.find(" M model.safetensors") !=
          std::string::npos);
  const std::string before = Slurp(repo.File("model.safetensors"));
  REQUIRE(repo.Sh("echo changed > README").code == 0);
  const Run dirty = repo.Sh("git zipnn migrate import");
  CHECK(dirty.code == 1);
  CHECK(dirty.err ==
        "error: the work tree has changes git has not committed; commit or stash them first, since migrate rewrites "
        "the commits they are on:\n     M README\n");
  REQUIRE(repo.Sh("git checkout -q README").code == 0);
  const Run done = repo.Sh("git zipnn migrate import");
  REQUIRE_MESSAGE(done.code == 0, done.err);
  CHECK(PointerFormat(repo.Sh("git show HEAD:model.safetensors").out) != "");
  CHECK(Slurp(repo.File("model.safetensors")) == before);
  CHECK(repo.Sh("git status --porcelain --untracked-files=no").out.empty());
  CHECK(repo.Sh("git zipnn fsck").code == 0);
}

TEST_CASE("migrate refuses a dirty tree, a missing or damaged Git LFS object, and a detached HEAD, changing nothing") {
  Repo repo;
  LfsHistory(repo);
  REQUIRE(repo.Sh("git zipnn install --local").code == 0);
  const std::string refs = Refs(repo);

  REQUIRE(repo.Sh("echo changed > log.txt").code == 0);
  Run dirty = repo.Sh("git zipnn migrate import");
  CHECK(dirty.code == 1);
  CHECK(dirty.err ==
        "error: the work tree has changes git has not committed; commit or stash them first, since migrate rewrites "
        "the commits they are on:\n     M log.txt\n");
  REQUIRE(repo.Sh("git checkout -q log.txt").code == 0);

  // One object damaged in place (same size): refused as it is read.
  const std::string oid = repo.Sh("git cat-file -p HEAD~1:model.safetensors | sed -n 's/^oid sha256://p'").out.substr(0, 64);
  const std::string object = ".git/lfs/objects/" + oid.substr(0, 2) + "/" + oid.substr(2, 2) + "/" + oid;
  REQUIRE(repo.Sh("cp " + object + " ../saved && chmod u+w " + object +
                  " && printf 'X' | dd of=" + object + " bs=1 seek=5000 conv=notrunc 2>/dev/null")
              .code == 0);
  Run damaged = repo.Sh("git zipnn migrate import");
  CHECK(damaged.code == 1);
  CHECK(damaged.err.find("does not hold what its pointer names") != std::string::npos);
  CHECK(Refs(repo) == refs);

  // One object missing: named before anything is stored, by a dry run too.
  REQUIRE(repo.Sh("rm " + object).code == 0);
  Run dry_missing = repo.Sh("git zipnn migrate import --dry-run");
  CHECK(dry_missing.code == 1);
  CHECK(dry_missing.err.find("1 Git LFS object of this history is not in ") != std::string::npos);
  Run missing = repo.Sh("git zipnn migrate import");
  CHECK(missing.code == 1);
  CHECK(missing.err.find("1 Git LFS object of this history is not in ") != std::string::npos);
  CHECK(missing.err.find("Fetch them first: `git lfs fetch --all`") != std::string::npos);
  CHECK(missing.err.find("model.safetensors (" + oid.substr(0, 12) + ")") != std::string::npos);
  CHECK(Refs(repo) == refs);
  REQUIRE(repo.Sh("cp ../saved " + object).code == 0);

  // A pattern that matches nothing: said, with the pattern meant.
  for (const char* dry : {"", " --dry-run"}) {
    Run typo = repo.Sh(std::string("git zipnn migrate import -I '*.safetensor'") + dry);
    CHECK(typo.code == 1);
    CHECK(typo.err ==
          "error: nothing to migrate: no file of 3 commits matches '*.safetensor' (did you mean '*.safetensors'?)\n");
  }
  CHECK(Refs(repo) == refs);

  REQUIRE(repo.Sh("git checkout -q --detach").code == 0);
  Run detached = repo.Sh("git zipnn migrate import");
  CHECK(detached.code == 1);
  CHECK(detached.err.find("HEAD is detached") != std::string::npos);
  CHECK(Refs(repo) == refs);

  // Without patterns, in a repository that tracks nothing.
  Repo plain;
  REQUIRE(plain.Sh("echo x > a.bin && git add a.bin && git commit -qm a && git zipnn install --local").code == 0);
  Run none = plain.Sh("git zipnn migrate import");
  CHECK(none.code == 1);
  CHECK(none.err.find("say which files to migrate: --include") != std::string::npos);
}

TEST_CASE("migrate leaves out, or refuses, a branch checked out in another worktree, whose next commit would undo it") {
  Repo repo;
  PlainHistory(repo);
  REQUIRE(repo.Sh("git zipnn install --local && git worktree add -q ../wt-exp exp").code == 0);
  const std::string wt = repo.Sh("cd ../wt-exp && pwd -P").out.substr(0, repo.Sh("cd ../wt-exp && pwd -P").out.size() - 1);
  const std::string exp_before = repo.Sh("git rev-parse exp").out;
  const std::string refs = Refs(repo);
  const std::string why = "refs/heads/exp: it is checked out in the worktree " + wt +
                          ", whose index would keep the old files and commit them back over the new history";

  // Named: refused before anything is stored, saying where and what to do.
  Run named = repo.Sh("git zipnn migrate import -I '*.safetensors' main exp");
  CHECK(named.code == 1);
  CHECK(named.err == "error: will not rewrite " + why + ". Switch that worktree to another branch first (git -C " + wt +
                         " switch --detach), or migrate refs/heads/exp from there; nothing was changed\n");
  CHECK(Refs(repo) == refs);

  // --everything: left out, said; the rest is rewritten.
  Run all = repo.Sh("git zipnn migrate import -I '*.safetensors' --everything");
  REQUIRE_MESSAGE(all.code == 0, all.err);
  CHECK(all.err.find("git-zipnn: left out " + why + "; migrate it from there (cd " + wt +
                     " && git zipnn migrate ...), or switch that worktree to another branch and run this again\n") !=
        std::string::npos);
  CHECK(all.err.find("refs moved: refs/heads/main, refs/tags/v1, refs/tags/v2\n") != std::string::npos);
  CHECK(repo.Sh("git rev-parse exp").out == exp_before);
  // The other worktree is as it was: nothing staged, and its next commit
  // holds what it held.
  CHECK(repo.Sh("cd ../wt-exp && git status --porcelain").out == "");
  REQUIRE(repo.Sh("cd ../wt-exp && echo more > notes.txt && git add notes.txt && git commit -qm more").code == 0);
  CHECK(repo.Sh("git rev-parse exp:model.safetensors").out == repo.Sh("git rev-parse exp~1:model.safetensors").out);

  // Migrated from its own worktree, the branch joins the new history: the
  // commits it shares with main come out as main's new ones, id for id.
  Run there = repo.Sh("cd ../wt-exp && git zipnn migrate import -I '*.safetensors'");
  REQUIRE_MESSAGE(there.code == 0, there.err);
  CHECK(repo.Sh("git merge-base main exp").out == repo.Sh("git rev-parse main~1").out);
  CHECK(repo.Sh("cd ../wt-exp && git status --porcelain").out == "");
  CHECK(repo.Sh("cd ../wt-exp && git cat-file -p HEAD:model.safetensors | head -c 18").out == "git-zipnn pointer ");
  CHECK(repo.Sh("cmp ../wt-exp/model.safetensors '" + repo.Data("cnn-bf16/step-000200.safetensors") + "'").code == 0);
  CHECK(repo.Sh("git status --porcelain").out == "");

  // export keeps the same rule.
  const std::string refs_now = Refs(repo);
  REQUIRE(repo.Sh("git lfs install --skip-repo >/dev/null").code == 0);
  Run back = repo.Sh("git zipnn migrate export -I '*.safetensors' exp");
  CHECK(back.code == 1);
  CHECK(back.err.find("error: will not rewrite " + why) == 0);
  CHECK(Refs(repo) == refs_now);
}

TEST_CASE("migrate copies the git notes of every notes ref to the new commits and tags, once") {
  Repo repo;
  PlainHistory(repo);
  REQUIRE(repo.Sh("git zipnn install --local && git notes add -m 'loss 0.31' main~1 && "
                  "git notes add -m 'loss 0.12' exp && git notes --ref=review add -m 'ok by A' main && "
                  "git notes add -m 'shipped' v2")
              .code == 0);
  const std::string old_main = repo.Sh("git rev-parse main").out;
  Run run = repo.Sh("git zipnn migrate import -I '*.safetensors' --everything");
  REQUIRE_MESSAGE(run.code == 0, run.err);
  CHECK(run.err.find("git-zipnn: copied 4 git notes of refs/notes/commits, refs/notes/review to the new commits and "
                     "tags (the old ones keep theirs)\n") != std::string::npos);
  CHECK(repo.Sh("git rev-parse main").out != old_main);
  CHECK(repo.Sh("git notes show main~1").out == "loss 0.31\n");
  CHECK(repo.Sh("git notes show exp").out == "loss 0.12\n");
  CHECK(repo.Sh("git notes --ref=review show main").out == "ok by A\n");
  CHECK(repo.Sh("git notes show v2").out == "shipped\n");  // the annotated tag, written again
  CHECK(repo.Sh("git log -1 --format=%N main~1").out == "loss 0.31\n\n");
  CHECK(repo.Sh("git notes --ref=review show " + old_main).out == "ok by A\n");
  // Nothing to copy a second time: no new notes commit.
  const std::string notes = repo.Sh("git rev-parse refs/notes/commits refs/notes/review").out;
  Run again = repo.Sh("git zipnn migrate import -I '*.safetensors' --everything");
  REQUIRE(again.code == 0);
  CHECK(again.err.find("copied") == std::string::npos);
  CHECK(repo.Sh("git rev-parse refs/notes/commits refs/notes/review").out == notes);
}

// A `git` first on PATH for git-zipnn alone (git puts its own folder first
// for the commands it starts, so `git-zipnn` is run by its name): it logs
// each call to $KILL_COUNT.log, and at the call $KILL_AT kills the whole
// run (its process group, which setsid started) before git runs. With
// KILL_CUT=<n>, that call (fast-import) instead reads the stream cut
// before its n-th commit, and git-zipnn alone is killed, as if it died
// while writing to a fast-import that goes on; KILL_LINES=<n> does the
// same with the first n lines of the call's input. With CALL_HOOK=<shell>,
// that call runs the shell line first and nothing is killed.
void InstallKiller(Repo& repo) {
  std::string git = repo.Sh("command -v git").out;
  git.pop_back();
  REQUIRE(repo.Sh("mkdir -p ../killer && cat > ../killer/git <<'EOF'\n"
                  "#!/bin/bash\n"
                  "n=$(( $(cat \"$KILL_COUNT\" 2>/dev/null || echo 0) + 1 )); echo $n > \"$KILL_COUNT\"\n"
                  "echo \"$n $*\" >> \"$KILL_COUNT.log\"\n"
                  "if [ \"$n\" = \"$KILL_AT\" ]; then\n"
                  "  if [ -n \"$CALL_HOOK\" ]; then eval \"$CALL_HOOK\"; exec " + git + " \"$@\"; fi\n"
                  "  if [ -n \"$KILL_LINES\" ]; then\n"
                  "    head -n \"$KILL_LINES\" > \"$KILL_COUNT.part\"\n"
                  "    " + git + " \"$@\" < \"$KILL_COUNT.part\"\n"
                  "    kill -9 $PPID; exit 1\n"
                  "  fi\n"
                  "  if [ -n \"$KILL_CUT\" ]; then\n"
                  "    LC_ALL=C awk -v n=\"$KILL_CUT\" '/^commit /{c++; if (c==n) exit} {print}' > \"$KILL_COUNT.part\"\n"
                  "    " + git + " \"$@\" < \"$KILL_COUNT.part\"\n"
                  "    kill -9 $PPID; exit 1\n"
                  "  fi\n"
                  "  kill -9 0\n"
                  "fi\n"
                  "exec " + git + " \"$@\"\n"
                  "EOF\n"
                  "chmod +x ../killer/git").code == 0);
}

// The state a migrate leaves: every branch and tag with its object, each
// note with what it annotates (a notes commit's own id holds the time it
// was made), the work tree's status and HEAD.
std::string State(Repo& repo, const std::string& dir) {
  return repo.Sh("cd " + dir + " && git for-each-ref --format='%(refname) %(objectname)' refs/heads refs/tags && "
                 "git notes list && git status --porcelain && git rev-parse HEAD && git symbolic-ref HEAD")
      .out;
}

// Runs `command` (a git-zipnn migrate) in copies of repo/ killed at each
// of its git calls in turn, then runs it again, and checks each ends as
// `dir_done` (the same command run once) does: the same refs, commits and
// notes, a clean work tree of the right bytes, git's fsck and git-zipnn's
// (every checkpoint of history decoding exactly) passing, and `check` (a
// shell line) too. The number of kill points.
int KillAtEveryStep(Repo& repo, const std::string& command, const std::string& dir_done,
                    const std::string& checkpoint, const std::string& check = "true") {
  const std::string want = State(repo, dir_done);
  int points = 0;
  for (int at = 1; at < 200; ++at) {
    REQUIRE(repo.Sh("rm -rf ../k && cp -a . ../k && rm -f ../count*").code == 0);
    Run killed = repo.Sh("cd ../k && KILL_COUNT=$PWD/../count KILL_AT=" + std::to_string(at) +
                         " PATH=$PWD/../killer:$PATH setsid -w " + command);
    if (std::stoi(repo.Sh("cat ../count").out) < at) {  // ended before that call: every point was tried
      CHECK_MESSAGE(killed.code == 0, killed.err);
      break;
    }
    ++points;
    Run again = repo.Sh("cd ../k && " + command);
    CHECK_MESSAGE(again.code == 0, "killed at git call " << at << ": " << again.err);
    CHECK_MESSAGE(State(repo, "../k") == want, "killed at git call " << at);
    CHECK_MESSAGE(repo.Sh("cd ../k && git fsck --no-dangling 2>&1 && git zipnn fsck --all 2>&1 && " + check).code == 0,
                  "killed at git call " << at);
    CHECK_MESSAGE(repo.Sh("cmp ../k/model.safetensors '" + checkpoint + "'").code == 0, "killed at git call " << at);
  }
  return points;
}

// A history of plain blobs with a note, git-zipnn installed, the killer
// ready, and ../once: a copy migrated by `command` in one run.
void KillFixture(Repo& repo, const std::string& command) {
  PlainHistory(repo);
  REQUIRE(repo.Sh("git zipnn install --local && git notes add -m 'loss 0.31' main~1").code == 0);
  InstallKiller(repo);
  REQUIRE(repo.Sh("rm -rf ../once && cp -a . ../once && cd ../once && " + command).code == 0);
}

// The number of the git call of migrate whose arguments hold `word`
// (" fast-import "), in a run of `command` on a copy; "" when none does.
std::string CallOf(Repo& repo, const std::string& command, const std::string& word) {
  REQUIRE(repo.Sh("rm -rf ../k && cp -a . ../k && rm -f ../count*").code == 0);
  REQUIRE(repo.Sh("cd ../k && KILL_COUNT=$PWD/../count PATH=$PWD/../killer:$PATH " + command).code == 0);
  std::string at = repo.Sh("grep '" + word + "' ../count.log | cut -d' ' -f1").out;
  if (!at.empty()) at.pop_back();
  return at;
}

const char kImportAll[] = "git-zipnn migrate import -I '*.safetensors' --everything";

TEST_CASE("migrate import killed at any point, then run again, ends as one run does") {
  Repo repo;
  KillFixture(repo, kImportAll);
  const std::string checkpoint = repo.Data("cnn-bf16/step-000120.safetensors");
  const int points = KillAtEveryStep(repo, kImportAll, "../once", checkpoint);
  CHECK(points >= 10);
  MESSAGE("migrate import killed at " << points << " points");

  const std::string want = State(repo, "../once");
  const std::string update_ref = CallOf(repo, kImportAll, " update-ref ");
  REQUIRE(!update_ref.empty());
  // git-zipnn killed while it gives git update-ref the refs to move: no
  // ref moves (the input ends before its commit).
  for (int lines = 1; lines <= 5; ++lines) {
    REQUIRE(repo.Sh("rm -rf ../k && cp -a . ../k && rm -f ../count*").code == 0);
    CHECK(repo.Sh("cd ../k && KILL_COUNT=$PWD/../count KILL_AT=" + update_ref + " KILL_LINES=" +
                  std::to_string(lines) + " PATH=$PWD/../killer:$PATH " + kImportAll).code != 0);
    CHECK_MESSAGE(repo.Sh("cd ../k && git for-each-ref --format='%(refname) %(objectname) %(*objectname)' "
                          "refs/heads refs/tags").out ==
                      repo.Sh("git for-each-ref --format='%(refname) %(objectname) %(*objectname)' "
                              "refs/heads refs/tags").out,
                  lines << " lines");
    Run again = repo.Sh(std::string("cd ../k && ") + kImportAll);
    CHECK_MESSAGE(again.code == 0, again.err);
    CHECK_MESSAGE(State(repo, "../k") == want, lines << " lines");
  }

  // Killed twice: before the ref transaction (the refs written aside, the
  // note of the checkout made), or before the checkout (the refs moved),
  // and the next run killed too, at each third of its calls; a third run
  // ends as one run does.
  const std::string reset = CallOf(repo, kImportAll, " reset --hard");
  REQUIRE(!reset.empty());
  int twice = 0;
  for (const std::string& first : {update_ref, reset}) {
    for (int second = 1; second < 200; second += 3) {
      REQUIRE(repo.Sh("rm -rf ../k && cp -a . ../k && rm -f ../count*").code == 0);
      CHECK(repo.Sh("cd ../k && KILL_COUNT=$PWD/../count KILL_AT=" + first + " PATH=$PWD/../killer:$PATH setsid -w " +
                    kImportAll).code != 0);
      REQUIRE(repo.Sh("rm -f ../count*").code == 0);
      repo.Sh("cd ../k && KILL_COUNT=$PWD/../count KILL_AT=" + std::to_string(second) +
              " PATH=$PWD/../killer:$PATH setsid -w " + kImportAll);
      if (std::stoi(repo.Sh("cat ../count").out) < second) break;
      ++twice;
      Run third = repo.Sh(std::string("cd ../k && ") + kImportAll);
      CHECK_MESSAGE(third.code == 0, "killed at " << first << ", then " << second << ": " << third.err);
      CHECK_MESSAGE(State(repo, "../k") == want, "killed at " << first << ", then " << second);
      CHECK(repo.Sh("cmp ../k/model.safetensors '" + repo.Data("cnn-bf16/step-000120.safetensors") + "'").code == 0);
    }
  }
  CHECK(twice >= 10);
  MESSAGE("migrate import killed twice in " << twice << " ways");

  // Stopped before its ref transaction, which then moved some refs only
  // (git renames ref files one at a time): run again, the others follow
  // to the same commits.
  for (const char* moved : {"refs/heads/exp refs/tags/v1", "refs/heads/main", "refs/heads/main refs/tags/v2"}) {
    REQUIRE(repo.Sh("rm -rf ../k && cp -a . ../k && rm -f ../count*").code == 0);
    CHECK(repo.Sh("cd ../k && KILL_COUNT=$PWD/../count KILL_AT=" + update_ref + " PATH=$PWD/../killer:$PATH "
                  "setsid -w " + kImportAll).code != 0);
    REQUIRE(repo.Sh(std::string("cd ../k && for r in ") + moved + "; do git update-ref $r $(GIT_OBJECT_DIRECTORY=$PWD/"
                    ".git/objects git --git-dir=.git/zipnn/migrate-refs rev-parse $r) || exit 1; done").code == 0);
    Run again = repo.Sh(std::string("cd ../k && ") + kImportAll);
    CHECK_MESSAGE(again.code == 0, again.err);
    CHECK_MESSAGE(State(repo, "../k") == want, moved);
    CHECK(repo.Sh("cd ../k && git zipnn fsck --all").code == 0);
  }
}

TEST_CASE("migrate stopped while it checks the branch out again finishes that first when run again") {
  Repo repo;
  LfsHistory(repo);
  REQUIRE(repo.Sh("git zipnn install --local").code == 0);
  InstallKiller(repo);
  const std::string command = "git-zipnn migrate import";
  REQUIRE(repo.Sh("rm -rf ../once && cp -a . ../once && cd ../once && " + command).code == 0);
  const std::string want = State(repo, "../once");
  const std::string reset = CallOf(repo, command, " reset --hard");
  REQUIRE(!reset.empty());
  // Killed before the checkout, then .gitattributes written as the new
  // commit has it (as a checkout stopped half-way leaves it).
  REQUIRE(repo.Sh("rm -rf ../k && cp -a . ../k && rm -f ../count*").code == 0);
  CHECK(repo.Sh("cd ../k && KILL_COUNT=$PWD/../count KILL_AT=" + reset + " PATH=$PWD/../killer:$PATH setsid -w " +
                command).code != 0);
  REQUIRE(repo.Sh("cd ../k && git show HEAD:.gitattributes > .gitattributes").code == 0);
  CHECK(repo.Sh("cd ../k && git status --porcelain").out.find("MM .gitattributes\n") != std::string::npos);
  Run again = repo.Sh("cd ../k && " + command);
  CHECK_MESSAGE(again.code == 0, again.err);
  CHECK(again.err.find("git-zipnn: checked out the files of refs/heads/master, which a migrate that was stopped had "
                       "moved; going on\n") == 0);
  CHECK(State(repo, "../k") == want);
  CHECK(repo.Sh("cmp ../k/model.safetensors '" + repo.Data("cnn-bf16/step-000120.safetensors") + "'").code == 0);

  // A file changed by hand meanwhile: nothing is touched, and the way
  // out is said.
  REQUIRE(repo.Sh("rm -rf ../k && cp -a . ../k && rm -f ../count*").code == 0);
  CHECK(repo.Sh("cd ../k && KILL_COUNT=$PWD/../count KILL_AT=" + reset + " PATH=$PWD/../killer:$PATH setsid -w " +
                command).code != 0);
  REQUIRE(repo.Sh("cd ../k && echo mine >> log.txt").code == 0);
  Run refused = repo.Sh("cd ../k && " + command);
  CHECK(refused.code == 1);
  CHECK(refused.err.find("and was stopped before it checked out its files again; this worktree's index and files have "
                         "changed since") != std::string::npos);
  CHECK(refused.err.find("then `git reset --hard` checks out the new files") != std::string::npos);
  CHECK(repo.Sh("cd ../k && tail -1 log.txt").out == "mine\n");
}

TEST_CASE("migrate killed while fast-import reads its stream moves no ref, and run again ends as one run does") {
  Repo repo;
  KillFixture(repo, kImportAll);
  const std::string want = State(repo, "../once");
  const std::string refs = Refs(repo);
  const std::string fast_import = CallOf(repo, kImportAll, " fast-import ");
  REQUIRE(!fast_import.empty());
  // git-zipnn killed, fast-import left running: its stream ends early,
  // before each of its five commits and its tags.
  for (int cut = 1; cut <= 6; ++cut) {
    REQUIRE(repo.Sh("rm -rf ../k && cp -a . ../k && rm -f ../count*").code == 0);
    Run killed = repo.Sh("cd ../k && KILL_COUNT=$PWD/../count KILL_AT=" + fast_import + " KILL_CUT=" +
                         std::to_string(cut) + " PATH=$PWD/../killer:$PATH " + kImportAll);
    CHECK(killed.code != 0);
    CHECK_MESSAGE(repo.Sh("cd ../k && git for-each-ref --format='%(refname) %(objectname) %(*objectname)'").out ==
                      refs, "cut before commit " << cut);
    Run again = repo.Sh(std::string("cd ../k && ") + kImportAll);
    CHECK_MESSAGE(again.code == 0, "cut before commit " << cut << ": " << again.err);
    CHECK_MESSAGE(State(repo, "../k") == want, "cut before commit " << cut);
    CHECK(repo.Sh("cmp ../k/model.safetensors '" + repo.Data("cnn-bf16/step-000120.safetensors") + "'").code == 0);
  }
}

TEST_CASE("a commit made while migrate runs is never lost: no ref moves unless it still names what was read") {
  Repo repo;
  KillFixture(repo, kImportAll);
  const std::string fast_import = CallOf(repo, kImportAll, " fast-import ");
  REQUIRE(!fast_import.empty());
  REQUIRE(repo.Sh("rm -rf ../k && cp -a . ../k && rm -f ../count*").code == 0);
  const std::string refs = repo.Sh("cd ../k && git for-each-ref --format='%(refname) %(objectname)' refs/heads/main "
                                   "refs/tags").out;
  // A teammate's commit on exp (in another worktree, or a fetch into it)
  // lands while fast-import writes.
  Run run = repo.Sh("cd ../k && KILL_COUNT=$PWD/../count KILL_AT=" + fast_import +
                    " CALL_HOOK='git update-ref refs/heads/exp $(git commit-tree -p exp -m late exp^{tree})' "
                    "PATH=$PWD/../killer:$PATH " + kImportAll);
  CHECK(run.code == 1);
  CHECK(run.err.find("error: git update-ref failed (no ref was moved; run migrate again): ") != std::string::npos);
  CHECK(repo.Sh("cd ../k && git log -1 --format=%s exp").out == "late\n");
  CHECK(repo.Sh("cd ../k && git for-each-ref --format='%(refname) %(objectname)' refs/heads/main refs/tags").out ==
        refs);
  CHECK(repo.Sh("cd ../k && git status --porcelain").out == "");
  // Run again, the late commit is rewritten with the rest.
  Run again = repo.Sh(std::string("cd ../k && ") + kImportAll);
  REQUIRE_MESSAGE(again.code == 0, again.err);
  CHECK(repo.Sh("cd ../k && git log -1 --format=%s exp").out == "late\n");
  CHECK(repo.Sh("cd ../k && git cat-file -p exp:model.safetensors | head -c 18").out == "git-zipnn pointer ");
}

TEST_CASE("migrate export killed at any point, then run again, ends as one run does") {
  Repo repo;
  LfsHistory(repo);
  const std::string lfs_refs = repo.Sh("git for-each-ref --format='%(refname) %(objectname)' refs/heads").out;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn migrate import >/dev/null").code == 0);
  InstallKiller(repo);
  const std::string command = "git-zipnn migrate export";
  Run once = repo.Sh("rm -rf ../once && cp -a . ../once && cd ../once && " + command);
  REQUIRE_MESSAGE(once.code == 0, once.err);
  CHECK(repo.Sh("cd ../once && git for-each-ref --format='%(refname) %(objectname)' refs/heads").out == lfs_refs);
  // Each Git LFS object whole under its SHA-256.
  const int points =
      KillAtEveryStep(repo, command, "../once", repo.Data("cnn-bf16/step-000120.safetensors"), "git lfs fsck");
  CHECK(points >= 5);
  MESSAGE("migrate export killed at " << points << " points");
}

}  // namespace
}  // namespace zipnn::testing
