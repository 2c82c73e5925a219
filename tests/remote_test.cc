// Sharing through a remote object store, with the real git binary: push
// (by hand and by the pre-push hook), clone with on-demand smudge, fetch,
// pull after GIT_ZIPNN_SKIP_SMUDGE, a push cut short and retried, and a
// missing remote object named in the error; for a folder, over ssh
// (Debian's OpenSSH server) and in S3 (s3rver from npm), both servers
// started on loopback by the test.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/git_repo.h"
#include "tests/s3rver.h"
#include "tests/sshd.h"

namespace zipnn {
namespace {

using testing::IdAt;
using testing::kSteps;
using testing::Repo;
using testing::Run;

std::string Step(const char* step) { return std::string("cnn-bf16/step-") + step + ".safetensors"; }

// The cnn-bf16 trajectory (5 versions, bases at 40 and 160) committed in
// repo/, with a bare hub.git beside it as origin and the filter installed
// for every repository under this HOME (clones included).
void CommitWithHub(Repo& repo) {
  testing::CommitTrajectory(repo);
  REQUIRE(repo.Sh("git zipnn install >/dev/null && git init -q --bare ../hub.git && git remote add origin ../hub.git")
              .code == 0);
}

// CommitWithHub, with origin the hub reached over ssh at `sshd`; its URL.
std::string CommitWithSshHub(Repo& repo, const testing::Sshd& sshd) {
  CommitWithHub(repo);
  const std::string url = "ssh://127.0.0.1:" + sshd.port() + repo.root() + "/hub.git";
  REQUIRE(repo.Sh("git remote set-url origin " + url).code == 0);
  return url;
}

int ObjectsIn(Repo& repo, const std::string& store) {
  return std::stoi(
      repo.Sh("find '" + store +
              "' -type f -regextype posix-extended -regex '.*/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{32}' | wc -l")
          .out);
}

// The clone at ../<clone> checked out HEAD exactly, restores each version
// of the trajectory bit-exact (HEAD~<above> is step 200), is clean, and
// passes fsck --all.
void CheckClone(Repo& repo, const std::string& clone, int above) {
  const std::string in = "cd ../" + clone + " && ";
  CHECK(repo.Sh(in + "git status --porcelain").out.empty());
  for (int back = 0; back < 5; ++back) {
    CAPTURE(back);
    const std::string rev = "HEAD~" + std::to_string(back + above);
    REQUIRE(repo.Sh(in + "rm -f ../v && git zipnn restore model.safetensors --rev " + rev + " -o ../v").code == 0);
    CHECK(repo.Sh("cmp ../v '" + repo.Data(Step(kSteps[4 - back])) + "'").code == 0);
  }
  CHECK(repo.Sh(in + "git zipnn fsck --all").code == 0);
}

TEST_CASE("a twin and a fine-tune stored against versions of other series push, clone and restore bit-exact") {
  Repo repo;
  // Lightning's two names for one save: the zip's folder name differs
  // ("step-000020/" as saved, "last-ckpt-0/" under the other name).
  const std::string epoch = repo.Data("pt-gpt/step-000020.pt");
  REQUIRE(repo.Sh("git zipnn install >/dev/null && git zipnn track '*.ckpt' '*.safetensors' >/dev/null && "
                  "git add .gitattributes && git commit -qm setup && git init -q --bare ../hub.git && "
                  "git remote add origin ../hub.git && mkdir ckpts out && cp '" +
                  epoch + "' 'ckpts/epoch=0-step=20.ckpt' && perl -0777 -pe 's{step-000020/}{last-ckpt-0/}g' '" +
                  epoch + "' > ckpts/last.ckpt && cp ckpts/last.ckpt ../last.ckpt && git add ckpts && "
                  "git commit -qm epoch0")
              .code == 0);
  Run log = repo.Sh("git zipnn log ckpts/last.ckpt");
  REQUIRE(log.code == 0);
  CHECK(log.out.find("[a delta of ckpts/epoch=0-step=20.ckpt (a twin: the same tensors, all or nearly all values equal)]") !=
        std::string::npos);
  // A fine-tune's first save, by the .zipnn.yaml key: step 80 of the
  // trajectory started from out/model.safetensors (step 40).
  REQUIRE(repo.Sh("cp '" + repo.Data(Step("000040")) + "' out/model.safetensors && git add out && git commit -qm base && "
                  "printf 'parents:\n  \"ft/**\": out\n' > .zipnn.yaml && mkdir -p ft/checkpoint-10 && cp '" +
                  repo.Data(Step("000080")) + "' ft/checkpoint-10/model.safetensors && git add .zipnn.yaml ft && "
                  "git commit -qm ft")
              .code == 0);
  Run show = repo.Sh("git zipnn show HEAD:ft/checkpoint-10/model.safetensors");
  REQUIRE(show.code == 0);
  CHECK(show.out.find("(a delta of out/model.safetensors (named as its parent))") != std::string::npos);

  REQUIRE(repo.Sh("git push -q origin HEAD:main").code == 0);
  REQUIRE(repo.Sh("cd .. && git clone -q -b main hub.git clone").code == 0);
  CHECK(repo.Sh("cmp ../clone/ckpts/last.ckpt ../last.ckpt").code == 0);
  CHECK(repo.Sh("cmp ../clone/ckpts/epoch=0-step=20.ckpt '" + epoch + "'").code == 0);
  CHECK(repo.Sh("cmp ../clone/ft/checkpoint-10/model.safetensors '" + repo.Data(Step("000080")) + "'").code == 0);
  CHECK(repo.Sh("cd ../clone && git status --porcelain").out.empty());
  CHECK(repo.Sh("cd ../clone && git zipnn fsck --all").code == 0);
  // The clone says the same of where each came from.
  CHECK(repo.Sh("cd ../clone && git zipnn log ckpts/last.ckpt").out.find("(a twin: the same tensors, all or nearly all values equal)") !=
        std::string::npos);

  // A twin of a version that is no longer the newest of its series: the
  // best save copied out at the end of a run, in a teammate's clone. The
  // clone finds it by the tensor listings that came with the branch.
  const std::string later = repo.Data("pt-gpt/step-000040.pt");
  REQUIRE(repo.Sh("cp '" + later + "' 'ckpts/epoch=1-step=40.ckpt' && perl -0777 -pe 's{step-000040/}{last-ckpt-1/}g' '" +
                  later + "' > ckpts/last.ckpt && git add ckpts && git commit -qm epoch1 && git push -q origin HEAD:main")
              .code == 0);
  REQUIRE(repo.Sh("cd .. && git clone -q -b main hub.git teammate").code == 0);
  CHECK(repo.Sh("cd ../teammate && ls .git/zipnn/cache/twins").code != 0);  // nothing listed yet
  Run added = repo.Sh("cd ../teammate && git config user.email b@example.com && git config user.name B && mkdir best && perl -0777 -pe 's{step-000020/}{best-ckpt-0/}g' '" + epoch +
                       "' > best/model.ckpt && cp best/model.ckpt ../best.ckpt && git add best && git commit -qm best");
  REQUIRE_MESSAGE(added.code == 0, added.err);
  Run best = repo.Sh("cd ../teammate && git zipnn log --json best/model.ckpt");
  REQUIRE(best.code == 0);
  CAPTURE(best.out);
  const nlohmann::json version = nlohmann::json::parse(best.out).at(0);
  CHECK(version.at("parent") == "a delta of ckpts/epoch=0-step=20.ckpt (a twin: the same tensors, all or nearly all values equal)");
  CHECK(version.at("stored_bytes").get<uint64_t>() * 50 <= version.at("raw_bytes").get<uint64_t>());  // ≤ 2% of raw
  REQUIRE(repo.Sh("cd ../teammate && git push -q origin HEAD:main && cd .. && git clone -q -b main hub.git third").code ==
          0);
  CHECK(repo.Sh("cmp ../third/best/model.ckpt ../best.ckpt").code == 0);
  CHECK(repo.Sh("cd ../third && git zipnn fetch --all -q && git zipnn fsck --all").code == 0);
}

TEST_CASE("git push sends the objects first; a clone checks out and restores every version bit-exact") {
  Repo repo;
  CommitWithHub(repo);
  Run push = repo.Sh("git push -q origin HEAD:main");
  REQUIRE(push.code == 0);
  CHECK(push.err.find("git-zipnn: pushed 5 objects") != std::string::npos);
  CHECK(ObjectsIn(repo, "../hub.git/zipnn/objects") == 5);
  // On one file system the objects are linked, not copied.
  CHECK(repo.Sh("find ../hub.git/zipnn/objects -type f -links 2 | wc -l").out == "5\n");
  // Nothing new: the hook sends nothing and says so.
  CHECK(repo.Sh("git push -q origin HEAD:main").err.find("pushed") == std::string::npos);

  // The clone gets only HEAD's object on checkout (step 200, the newest,
  // stored whole), the rest on demand.
  REQUIRE(repo.Sh("cd .. && git clone -q -b main hub.git clone").code == 0);
  CHECK(repo.Sh("cmp ../clone/model.safetensors '" + repo.Data(Step("000200")) + "'").code == 0);
  CHECK(ObjectsIn(repo, "../clone/.git/zipnn/objects") == 1);
  CheckClone(repo, "clone", 0);
}

TEST_CASE("after set-url to an empty remote, git push sends what the branch needs, not only what is new") {
  Repo repo;
  CommitWithHub(repo);
  REQUIRE(repo.Sh("git push -q origin HEAD:main && git fetch -q origin").code == 0);
  REQUIRE(repo.Sh("git rev-parse --verify -q refs/remotes/origin/main").code == 0);
  // An ordinary push of a new commit over what the remote holds asks the
  // remote nothing more than git does.
  REQUIRE(repo.Sh("cp '" + repo.Data(Step("000040")) + "' model.safetensors && printf a >> model.safetensors && " +
                  "git commit -qam more")
              .code == 0);
  Run more = repo.Sh("GIT_TRACE=1 git push -q origin HEAD:main");
  REQUIRE(more.code == 0);
  CHECK(more.err.find("git-zipnn: pushed 1 object") != std::string::npos);
  CHECK(more.err.find("ls-remote") == std::string::npos);

  // The remote's tracking refs still name main; the new hub holds none of
  // it. A new branch pushed there brings all six versions.
  REQUIRE(repo.Sh("git checkout -qb feature && printf b >> model.safetensors && git commit -qam feature && "
                  "git init -q --bare ../hub2.git && git remote set-url origin ../hub2.git")
              .code == 0);
  Run moved = repo.Sh("git push -q origin feature");
  REQUIRE(moved.code == 0);
  CHECK(moved.err.find("git-zipnn: pushed 7 objects") != std::string::npos);
  CHECK(ObjectsIn(repo, "../hub2.git/zipnn/objects") == 7);
  REQUIRE(repo.Sh("cd .. && git clone -q -b feature hub2.git clone2").code == 0);
  CheckClone(repo, "clone2", 2);
}

// The trajectory repacked under base_interval 2 (40 first, 120 due, 200
// the newest) and pushed through `origin`; a clone of `hub` (with `-c`
// options before it) fetches step 120 alone, and its log says why each base
// is one as the author's store decided, though the clone's policy has
// changed since and it holds none of the versions around 120. Without the
// notes that came with the objects, it could only guess.
void CheckBaseNotesTravel(Repo& repo, const std::string& hub) {
  REQUIRE(repo.Sh("printf 'base_interval: 2\\n' > .zipnn.yaml && git commit -qam 'bases every 2' && "
                  "git zipnn repack model.safetensors >/dev/null && git push -q origin HEAD:main")
              .code == 0);
  const std::string author = repo.Sh("git zipnn log model.safetensors").out;
  CAPTURE(author);
  CHECK(author.find("step 000120  [due every 2]") != std::string::npos);
  REQUIRE(repo.Sh("cd .. && git clone -q -b main " + hub + " notes-clone").code == 0);
  const std::string in = "cd ../notes-clone && ";
  REQUIRE(repo.Sh(in + "git zipnn fetch origin $(git rev-parse ':/step 000120')").code == 0);
  REQUIRE(repo.Sh(in + "printf 'base_interval: 10\\n' > .zipnn.yaml").code == 0);
  auto row_of = [&](const std::string& subject) {
    return repo.Sh(in + "git zipnn log model.safetensors | grep '" + subject + "'").out;
  };
  CHECK(row_of("step 000120").find("base  depth 0") != std::string::npos);
  CHECK(row_of("step 000120").find("[due every 2]") != std::string::npos);
  CHECK(row_of("step 000200").find("[newest of its series when stored]") != std::string::npos);
  // The notes of the two bases fetched, and not of the first, which was not.
  auto noted = [&](const std::string& subject) {
    const std::string commit = repo.Sh("git rev-parse ':/" + subject + "'").out.substr(0, 40);
    const std::string id = IdAt(repo, commit + ":model.safetensors");
    REQUIRE(id.size() == 32);
    return repo.Sh(in + "test -f .git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id + ".base")
               .code == 0;
  };
  CHECK(noted("step 000120"));
  CHECK(noted("step 000200"));
  CHECK(!noted("step 000040"));
  REQUIRE(repo.Sh(in + "find .git/zipnn/objects -name '*.base' -delete").code == 0);
  CHECK(row_of("step 000120").find("[due every 2]") == std::string::npos);
}

TEST_CASE("base notes go with the objects to a folder remote and come back to a clone's fetch") {
  Repo repo;
  CommitWithHub(repo);
  CheckBaseNotesTravel(repo, "hub.git");
}

TEST_CASE("over ssh: base notes go with the objects to a served store and come back to a clone's fetch") {
  Repo repo;
  testing::Sshd sshd(repo);
  const std::string url = CommitWithSshHub(repo, sshd);
  CheckBaseNotesTravel(repo, url);
}

// `over_ssh`: the hub reached by an ssh:// URL, its store served by
// serve-store (which proves each re-stored delta by decoding it) instead
// of written as a folder.
void CheckPushEachSave(bool over_ssh) {
  Repo repo;
  std::unique_ptr<testing::Sshd> sshd;
  if (over_ssh) sshd = std::make_unique<testing::Sshd>(repo);
  const std::string url = over_ssh ? "ssh://127.0.0.1:" + sshd->port() + repo.root() + "/hub.git" : "../hub.git";
  REQUIRE(repo.Sh("git zipnn install >/dev/null && git zipnn track '*.safetensors' && git add .gitattributes && "
                  "git commit -qm setup && git init -q --bare ../hub.git && git remote add origin " +
                  url)
              .code == 0);
  std::vector<std::string> ids;
  for (const char* step : kSteps) {
    REQUIRE(repo.Sh("cp '" + repo.Data(Step(step)) + "' model.safetensors && git add model.safetensors && " +
                    "git commit -qm " + step)
                .code == 0);
    const Run push = repo.Sh("git push -q origin HEAD:main");
    REQUIRE(push.code == 0);
    CHECK(push.err.find("warning") == std::string::npos);
    ids.push_back(IdAt(repo, "HEAD:model.safetensors"));
    // From the third save on, the one two back became a delta here when
    // the one before it came, and is re-stored so on the remote.
    if (ids.size() >= 3) {
      CHECK(push.err.find("git-zipnn: re-stored 1 older version there as a delta of a newer one, saving ") !=
            std::string::npos);
    }
  }
  // The remote holds what the local store holds, object for object.
  for (const std::string& id : ids) {
    CAPTURE(id);
    const std::string at = "/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id;
    CHECK(repo.Sh("cmp .git/zipnn/objects" + at + " ../hub.git/zipnn/objects" + at).code == 0);
  }
  CHECK(repo.Sh("git zipnn inspect ../hub.git/zipnn/objects/" + ids[2].substr(0, 2) + "/" + ids[2].substr(2, 2) + "/" +
                ids[2])
            .out.find("kind         delta against " + ids[1]) != std::string::npos);
  // A clone fetches the newest alone, and every version restores exactly.
  REQUIRE(repo.Sh("cd .. && git clone -q -b main " + (over_ssh ? url : "hub.git") + " clone").code == 0);
  CHECK(ObjectsIn(repo, "../clone/.git/zipnn/objects") == 1);
  CheckClone(repo, "clone", 0);
  CHECK(repo.Sh("git zipnn fsck --remote").code == 0);
}

TEST_CASE("a push after each save re-stores on the remote what the newest made a delta, and nothing loops") {
  CheckPushEachSave(/*over_ssh=*/false);
}

TEST_CASE("over ssh: a push after each save re-stores on the served store what the newest made a delta") {
  CheckPushEachSave(/*over_ssh=*/true);
}

TEST_CASE("a clone gets the pre-push hook from the filter, so a plain git push sends its checkpoints") {
  Repo repo;
  CommitWithHub(repo);
  REQUIRE(repo.Sh("git push -q origin HEAD:main").code == 0);
  // install ran once, globally, before the clone existed.
  const Run clone = repo.Sh("cd .. && git clone -q -b main hub.git clone");
  REQUIRE(clone.code == 0);
  CHECK(clone.err.find("git-zipnn: installed the pre-push, post-checkout, post-merge and pre-commit hooks in ") !=
        std::string::npos);
  // Three reasons read as a list, not one run-on sentence.
  CHECK_MESSAGE(clone.err.find("/.git/hooks, so that git push sends checkpoints, checkpoints too large for git's "
                               "filter are written after checkouts and merges, and git commit stops a checkpoint "
                               "staged whole\n") != std::string::npos,
                clone.err);
  CHECK(repo.Sh("test -x ../clone/.git/hooks/pre-push").code == 0);
  const Run push = repo.Sh("cd ../clone && git config user.email c@example.com && git config user.name C && cp '" +
                           repo.Data("cnn-fp32/step-000040.safetensors") +
                           "' new.safetensors && git add new.safetensors && git commit -qm new && git push -q");
  REQUIRE_MESSAGE(push.code == 0, push.err);
  CHECK(push.err.find("git-zipnn: pushed 1 object") != std::string::npos);
  REQUIRE(repo.Sh("cd .. && git clone -q -b main hub.git again").code == 0);
  CHECK(repo.Sh("cmp ../again/new.safetensors '" + repo.Data("cnn-fp32/step-000040.safetensors") + "'").code == 0);
  // Another program's hook stays as it is, with a warning that says how
  // to run both.
  const Run foreign = repo.Sh(
      "cd .. && git init -q other && cd other && printf '#!/bin/sh\\n' > .git/hooks/pre-push && "
      "chmod +x .git/hooks/pre-push && git zipnn track '*.safetensors' >/dev/null && cp '" +
      repo.Data("cnn-fp32/step-000040.safetensors") + "' m.safetensors && git add .");
  REQUIRE(foreign.code == 0);
  CHECK(foreign.err.find("/other/.git/hooks/pre-push is another program's pre-push hook, so `git push` will not "
                         "send checkpoint objects; run `git zipnn install --local` to run both") != std::string::npos);
  CHECK(repo.Sh("cat ../other/.git/hooks/pre-push").out == "#!/bin/sh\n");
}

// What `git log -p` prints for model.safetensors in `dir`, and whether it
// started git-zipnn at all (a smudge or textconv: a version restored).
struct LogP {
  std::string out;
  bool started = false;
};
LogP LogPatches(Repo& repo, const std::string& dir, const std::string& revs = "") {
  const Run log = repo.Sh("cd " + dir + " && GIT_TRACE=1 git log -p --format=%s " + revs + " -- model.safetensors");
  REQUIRE_MESSAGE(log.code == 0, log.err);
  return LogP{log.out, log.err.find("git-zipnn") != std::string::npos};
}

TEST_CASE("the tensor listings go with a push: git log -p in a clone restores nothing and prints the same") {
  Repo repo;
  CommitWithHub(repo);
  REQUIRE(repo.Sh("git push -q origin HEAD:main").code == 0);
  // One file per pointer blob on the hub, each holding its note.
  CHECK(repo.Sh("git -C ../hub.git ls-tree -r --name-only refs/zipnn/listings | wc -l").out == "5\n");
  const std::string head_blob = repo.Sh("git rev-parse HEAD:model.safetensors").out.substr(0, 40);
  CHECK(repo.Sh("git -C ../hub.git show refs/zipnn/listings:" + head_blob.substr(0, 2) + "/" + head_blob).out ==
        repo.Sh("git notes --ref=textconv/zipnn show " + head_blob).out);
  const LogP here = LogPatches(repo, ".");
  CHECK_FALSE(here.started);

  // The clone's checkout fetched HEAD's object and the listings with it:
  // git log -p reads them, and no older version is fetched or restored.
  REQUIRE(repo.Sh("cd .. && git clone -q -b main hub.git clone").code == 0);
  CHECK(repo.Sh("cd ../clone && git notes --ref=textconv/zipnn list | wc -l").out == "5\n");
  const LogP there = LogPatches(repo, "../clone");
  CHECK_FALSE(there.started);
  CHECK(there.out == here.out);
  CHECK(ObjectsIn(repo, "../clone/.git/zipnn/objects") == 1);

  // A clone that skipped the smudge fetched no object, and took the
  // listings all the same; `git zipnn fetch` takes them too.
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main hub.git lazy").code == 0);
  CHECK(ObjectsIn(repo, "../lazy/.git/zipnn/objects") == 0);
  CHECK(repo.Sh("cd ../lazy && git notes --ref=textconv/zipnn list | wc -l").out == "5\n");
  CHECK_FALSE(LogPatches(repo, "../lazy").started);
  REQUIRE(repo.Sh("cd ../lazy && git update-ref -d refs/notes/textconv/zipnn && git zipnn fetch -q").code == 0);
  CHECK(repo.Sh("cd ../lazy && git notes --ref=textconv/zipnn list | wc -l").out == "5\n");
  // The first push wrote no empty tree for git fsck to call dangling.
  CHECK(repo.Sh("git fsck 2>&1").out.find("dangling tree") == std::string::npos);

  // A listing on the hub that does not fit its pointer (another checkpoint
  // named, as a forger would) is not taken: git lists that version itself.
  const std::string older_blob = repo.Sh("git rev-parse HEAD~1:model.safetensors").out.substr(0, 40);
  const Run forged = repo.Sh(
      "cd ../clone && export GIT_INDEX_FILE=../forged-index GIT_COMMITTER_NAME=F GIT_COMMITTER_EMAIL=f@example.com "
      "GIT_AUTHOR_NAME=F GIT_AUTHOR_EMAIL=f@example.com && git read-tree refs/zipnn/remotes/origin/listings && "
      "l=$(git notes --ref=textconv/zipnn show " + head_blob + " | git hash-object -w --stdin) && "
      "git update-index --cacheinfo 100644,$l," + older_blob.substr(0, 2) + "/" + older_blob + " && "
      "c=$(git commit-tree $(git write-tree) -p refs/zipnn/remotes/origin/listings -m forged) && "
      "git push -q --no-verify origin $c:refs/zipnn/listings");
  REQUIRE_MESSAGE(forged.code == 0, forged.err);
  // (git writes what it lists to its cache as a commit: it needs a name.)
  REQUIRE(repo.Sh("cd .. && git clone -q -b main hub.git third && cd third && git config user.email t@example.com && "
                  "git config user.name T")
              .code == 0);
  CHECK(repo.Sh("cd ../third && git notes --ref=textconv/zipnn list | wc -l").out == "4\n");
  CHECK(repo.Sh("cd ../third && git notes --ref=textconv/zipnn show " + older_blob + " 2>&1").code != 0);
  const LogP third = LogPatches(repo, "../third");
  CHECK(third.started);  // the forged one was listed from the checkpoint
  CHECK(third.out == here.out);
}

TEST_CASE("two clones pushing listings at once lose none: the hub's ref is merged by union") {
  Repo repo;
  CommitWithHub(repo);
  REQUIRE(repo.Sh("git push -q origin HEAD:main").code == 0);
  for (const char* who : {"one", "two"}) {
    REQUIRE(repo.Sh(std::string("cd .. && git clone -q -b main hub.git ") + who + " && cd " + who +
                    " && git config user.email c@example.com && git config user.name C && git switch -qc " + who)
                .code == 0);
  }
  REQUIRE(repo.Sh("cd ../one && cp '" + repo.Data("cnn-fp32/step-000040.safetensors") +
                  "' model.safetensors && git commit -qam one")
              .code == 0);
  REQUIRE(repo.Sh("cd ../two && cp '" + repo.Data("cnn-fp16/step-000040.safetensors") +
                  "' model.safetensors && git commit -qam two")
              .code == 0);
  // Both pushes at once, each to its own branch: one listings push lands
  // first, the other is refused, merges and pushes again.
  const Run both = repo.Sh(
      "{ { cd ../one && git push -q origin one > ../one.log 2>&1; echo $? > ../one.rc; } & "
      "{ cd ../two && git push -q origin two > ../two.log 2>&1; echo $? > ../two.rc; } & wait; "
      "cat ../one.rc ../two.rc ../one.log ../two.log; }");
  REQUIRE_MESSAGE(both.code == 0, (both.out + both.err));
  CHECK(both.out.rfind("0\n0\n", 0) == 0);
  CHECK(both.out.find("warning") == std::string::npos);
  CHECK(repo.Sh("git -C ../hub.git ls-tree -r --name-only refs/zipnn/listings | wc -l").out == "7\n");
  // One commit holds them all: no history of pushes for git log --all to
  // show, in the hub or in a clone that pushed.
  CHECK(repo.Sh("git -C ../hub.git rev-list --count refs/zipnn/listings").out == "1\n");
  CHECK(repo.Sh("cd ../two && git log --all --oneline | grep -c 'tensor listings'").out == "1\n");
  // A third clone lists every version of both branches without restoring one.
  REQUIRE(repo.Sh("cd .. && git clone -q -b main hub.git three && cd three && git fetch -q origin").code == 0);
  const LogP three = LogPatches(repo, "../three", "origin/one origin/two");
  CHECK_FALSE(three.started);
  CHECK(three.out.find("checkpoint " + IdAt(repo, "HEAD:model.safetensors")) != std::string::npos);
  CHECK(three.out.find(repo.Sh("cd ../one && git zipnn textconv model.safetensors | head -1").out) !=
        std::string::npos);
  CHECK(three.out.find(repo.Sh("cd ../two && git zipnn textconv model.safetensors | head -1").out) !=
        std::string::npos);
}

TEST_CASE("fetch gets what revisions need; pull restores what GIT_ZIPNN_SKIP_SMUDGE left as pointers") {
  Repo repo;
  CommitWithHub(repo);
  REQUIRE(repo.Sh("git zipnn push -q origin && git push -q origin HEAD:main").code == 0);
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main hub.git lazy").code == 0);
  CHECK(repo.Sh("head -1 ../lazy/model.safetensors").out.rfind("git-zipnn pointer 2 ", 0) == 0);
  CHECK(ObjectsIn(repo, "../lazy/.git/zipnn/objects") == 0);

  // A revision given where the remote goes is a revision, of the
  // default remote, as Git LFS takes it.
  Run fetch = repo.Sh("cd ../lazy && git zipnn fetch HEAD~3");  // step 80: a delta on 40
  REQUIRE_MESSAGE(fetch.code == 0, fetch.err);
  CHECK(fetch.err.find("fetched 2 objects") != std::string::npos);
  CHECK(repo.Sh("cd ../lazy && git zipnn fetch origin HEAD~3").err.find("fetched 0 objects") != std::string::npos);
  // log totals what is here, and says so: the three versions not fetched
  // have no stored size to set against their raw one.
  const Run log = repo.Sh("cd ../lazy && git zipnn log model.safetensors");
  CHECK(log.out.find(" raw in 2 of its 5 versions (those in this store) -> ") != std::string::npos);
  CHECK(log.out.find("3 versions not in this store or not readable (a clone fetches what it checks out: `git zipnn "
                     "fetch --all` gets the rest; the totals above count only what is here)") != std::string::npos);
  // fsck counts what is on the remote and not fetched here apart from
  // problems: a clone that fetched what it needs is sound.
  Run fsck = repo.Sh("cd ../lazy && git zipnn fsck --all");
  CHECK_MESSAGE(fsck.code == 0, fsck.err);
  CHECK(fsck.out.find(" pointers to 5 checkpoints in every ref, reflog, stash and the index: the 2 fetched into "
                      "this clone restore exactly\n") != std::string::npos);
  // HEAD's own checkpoint is not fetched: nothing of HEAD was checked,
  // and the summary says so (it said "every one fetched restores exactly").
  CHECK(repo.Sh("cd ../lazy && git zipnn fsck")
            .out.find("1 pointer to 1 checkpoint in HEAD: none is fetched into this clone to check\n") !=
        std::string::npos);
  CHECK(fsck.out.find(" are not fetched into this clone; origin has them (`git zipnn fetch --all` gets them; "
                      "`git zipnn fsck --remote origin` checks origin)\n") != std::string::npos);
  // A file where the remote goes, or a remote that does not exist, is a
  // mistake: pull says so and writes nothing (it used to pull everything
  // from origin after the error, and exit 0).
  const Run file_named = repo.Sh("cd ../lazy && git zipnn pull model.safetensors");
  CHECK(file_named.code != 0);
  CHECK_MESSAGE(file_named.err.find("'model.safetensors' is a file, not a remote or a revision; to take only some "
                                    "files, name them with -I: -I 'model.safetensors'") != std::string::npos,
                file_named.err);
  const Run typo = repo.Sh("cd ../lazy && git zipnn pull orign");
  CHECK(typo.code != 0);
  CHECK_MESSAGE(typo.err.find("there is no remote named 'orign'") != std::string::npos, typo.err);
  // So is a pattern that matches no file: `-I ./model.safetensors` is
  // how a shell names it, not how .gitattributes does (it used to take
  // nothing and exit 0).
  const Run dotted = repo.Sh("cd ../lazy && git zipnn pull -I ./model.safetensors");
  CHECK(dotted.code != 0);
  CHECK_MESSAGE(dotted.err.find("-I './model.safetensors' matches none of the 1 checkpoint path here; patterns are "
                                "read as in .gitattributes, from the top of the work tree; for the file at the top, "
                                "-I '/model.safetensors'") != std::string::npos,
                dotted.err);
  const Run slip = repo.Sh("cd ../lazy && git zipnn fetch -I model.safetensor");
  CHECK(slip.code != 0);
  CHECK_MESSAGE(slip.err.find("(did you mean 'model.safetensors'?)") != std::string::npos, slip.err);
  CHECK(repo.Sh("head -1 ../lazy/model.safetensors").out.rfind("git-zipnn pointer 2 ", 0) == 0);
  // An --exclude that takes every file chosen is what was asked.
  CHECK(repo.Sh("cd ../lazy && git zipnn pull -I /model.safetensors -X '*.safetensors'").code == 0);
  CHECK(repo.Sh("head -1 ../lazy/model.safetensors").out.rfind("git-zipnn pointer 2 ", 0) == 0);
  Run pull = repo.Sh("cd ../lazy && git zipnn pull -I /model.safetensors");
  REQUIRE(pull.code == 0);
  CHECK(pull.out.find("model.safetensors: restored " + IdAt(repo, "HEAD:model.safetensors")) != std::string::npos);
  CHECK(repo.Sh("cmp ../lazy/model.safetensors '" + repo.Data(Step("000200")) + "'").code == 0);
  CHECK(repo.Sh("cd ../lazy && git status --porcelain").out.empty());
  REQUIRE(repo.Sh("cd ../lazy && git zipnn fetch --all").code == 0);
  CHECK(ObjectsIn(repo, "../lazy/.git/zipnn/objects") == 5);
}

TEST_CASE("cat of a tensor fetches the chain it needs from the remote, and only that") {
  Repo repo;
  CommitWithHub(repo);
  REQUIRE(repo.Sh("git zipnn push -q origin && git push -q origin HEAD:main").code == 0);
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main hub.git lazy").code == 0);
  // Step 80 (HEAD~3) is a delta on 40: two objects.
  REQUIRE(repo.Sh("cd ../lazy && git zipnn cat HEAD~3:model.safetensors -t fc1.weight -o fc1.raw && "
                  "git zipnn cat HEAD~3:model.safetensors -o whole && cd ../repo && "
                  "git zipnn cat HEAD~3:model.safetensors -t fc1.weight -o fc1.raw")
              .code == 0);
  CHECK(repo.Sh("cmp ../lazy/fc1.raw fc1.raw && cmp ../lazy/whole '" + repo.Data(Step("000080")) + "'").code == 0);
  CHECK(ObjectsIn(repo, "../lazy/.git/zipnn/objects") == 2);
  // A clone made with --no-checkout has an empty index: log and ls-files
  // read HEAD, and say how to get what is missing.
  REQUIRE(repo.Sh("cd .. && git clone -q --no-checkout -b main hub.git bare-tree").code == 0);
  const Run log = repo.Sh("cd ../bare-tree && git zipnn log model.safetensors");
  REQUIRE(log.code == 0);
  CHECK(log.out.rfind("model.safetensors\n", 0) == 0);
  CHECK(log.out.find(" missing depth -   ") != std::string::npos);
  CHECK(log.out.find(" ->          -        -  ") != std::string::npos);  // no stored size
  CHECK(log.out.find("`git zipnn fetch --all` gets the rest") != std::string::npos);
  CHECK(repo.Sh("cd ../bare-tree && git zipnn ls-files").out.find("`git zipnn fetch` gets missing ones") !=
        std::string::npos);
}

TEST_CASE("diff, git diff and analyze fetch what they read from the remote, as cat does, and print the same") {
  Repo repo;
  CommitWithHub(repo);
  REQUIRE(repo.Sh("git zipnn push -q origin && git push -q origin HEAD:main").code == 0);
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main hub.git lazy").code == 0);
  REQUIRE(ObjectsIn(repo, "../lazy/.git/zipnn/objects") == 0);
  // Runs `command` here and in the lazy clone; both succeed and print the
  // same. Returns what it printed.
  auto same_in_both = [&](const std::string& command) {
    const Run here = repo.Sh(command);
    REQUIRE_MESSAGE(here.code == 0, here.err);
    const Run there = repo.Sh("cd ../lazy && " + command);
    REQUIRE_MESSAGE(there.code == 0, there.err);
    CHECK(there.out == here.out);
    return there.out;
  };
  // Steps 40 and 80 (HEAD~4, HEAD~3): a base and a delta on it.
  same_in_both("git zipnn diff HEAD~4:model.safetensors HEAD~3:model.safetensors");
  CHECK(ObjectsIn(repo, "../lazy/.git/zipnn/objects") == 2);
  // git's own diff runs the diff driver on both sides.
  CHECK(same_in_both("git -c color.ui=never diff HEAD~2 HEAD~1 -- model.safetensors").find("tensor") !=
        std::string::npos);
  // analyze reads every version of the history.
  same_in_both("git zipnn analyze model.safetensors");
  CHECK(ObjectsIn(repo, "../lazy/.git/zipnn/objects") == 5);
}

TEST_CASE("one missing object costs only its file: pull restores the rest, skipSmudgeErrors lets a clone finish") {
  Repo repo;
  CommitWithHub(repo);
  const std::string other = repo.Data("cnn-fp32/step-000040.safetensors");
  REQUIRE(repo.Sh("cp '" + other +
                  "' other.safetensors && git add other.safetensors && git commit -qm other && "
                  "git push -q origin HEAD:main")
              .code == 0);
  // HEAD's model object is lost from the hub.
  const std::string id = IdAt(repo, "HEAD:model.safetensors");
  const std::string lost = "../hub.git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id;
  REQUIRE(repo.Sh("mv " + lost + " ../lost").code == 0);

  // pull restores what it can and names the rest, with a non-zero exit.
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main hub.git lazy").code == 0);
  const Run pull = repo.Sh("cd ../lazy && git zipnn pull");
  CHECK(pull.code != 0);
  CHECK(pull.out == "other.safetensors: restored " + IdAt(repo, "HEAD:other.safetensors") + "\n");
  CHECK(pull.err.find("error: model.safetensors: object " + id + " is not on the remote store ") != std::string::npos);
  CHECK(pull.err.find("1 checkpoint could not be restored (see above); restored 1") != std::string::npos);
  CHECK(repo.Sh("cmp ../lazy/other.safetensors '" + other + "'").code == 0);
  CHECK(repo.Sh("head -1 ../lazy/model.safetensors").out.rfind("git-zipnn pointer 2 ", 0) == 0);

  // A plain clone fails on that file; with zipnn.skipSmudgeErrors it
  // finishes, the file left as its pointer with a warning.
  CHECK(repo.Sh("cd .. && git clone -q -b main hub.git strict").code != 0);
  const Run clone = repo.Sh("cd .. && git clone -q -c zipnn.skipSmudgeErrors=true -b main hub.git lenient");
  REQUIRE_MESSAGE(clone.code == 0, clone.err);
  CHECK(clone.err.find("git-zipnn: warning: ") != std::string::npos);
  CHECK(clone.err.find("model.safetensors is left as its pointer (`git zipnn pull` restores it)") != std::string::npos);
  CHECK(repo.Sh("cmp ../lenient/other.safetensors '" + other + "'").code == 0);
  CHECK(repo.Sh("head -1 ../lenient/model.safetensors").out.rfind("git-zipnn pointer 2 ", 0) == 0);
  CHECK(repo.Sh("cd ../lenient && git status --porcelain").out.empty());

  // Once the object is back, pull restores it.
  REQUIRE(repo.Sh("mv ../lost " + lost).code == 0);
  const Run again = repo.Sh("cd ../lenient && git zipnn pull -q && git status --porcelain");
  CHECK_MESSAGE(again.code == 0, again.err);
  CHECK(again.out.empty());
  CHECK(repo.Sh("cmp ../lenient/model.safetensors '" + repo.Data(Step("000200")) + "'").code == 0);
}

TEST_CASE("a push cut short is retried and sends only what is missing") {
  Repo repo;
  CommitWithHub(repo);
  // A file where the folder of HEAD's object must go: that object cannot
  // land, the others do.
  const std::string id = IdAt(repo, "HEAD:model.safetensors");
  REQUIRE(repo.Sh("mkdir -p ../hub.git/zipnn/objects && : > ../hub.git/zipnn/objects/" + id.substr(0, 2)).code == 0);
  Run cut = repo.Sh("git zipnn push origin");
  CHECK(cut.code != 0);
  CHECK(cut.err.find("cannot send object " + id) != std::string::npos);
  const int landed = ObjectsIn(repo, "../hub.git/zipnn/objects");
  CHECK(landed < 5);
  CHECK(repo.Sh("find ../hub.git/zipnn -name '*.tmp-*'").out.empty());  // no partial object

  REQUIRE(repo.Sh("rm ../hub.git/zipnn/objects/" + id.substr(0, 2)).code == 0);
  Run again = repo.Sh("git zipnn push origin");
  REQUIRE(again.code == 0);
  CHECK(again.err.find("pushed " + std::to_string(5 - landed) + " objects") != std::string::npos);
  CHECK(again.err.find(std::to_string(landed) + " of 5 were there already") != std::string::npos);
  CHECK(ObjectsIn(repo, "../hub.git/zipnn/objects") == 5);
}

TEST_CASE("an object missing from the remote is named, by checkout and by fetch") {
  Repo repo;
  CommitWithHub(repo);
  REQUIRE(repo.Sh("git push -q origin HEAD:main").code == 0);
  const std::string id = IdAt(repo, "HEAD:model.safetensors");
  REQUIRE(repo.Sh("rm ../hub.git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id).code == 0);
  Run clone = repo.Sh("cd .. && git clone -q -b main hub.git broken");
  CHECK(clone.err.find("object " + id + " is not on the remote store") != std::string::npos);
  CHECK(repo.Sh("test -s ../broken/model.safetensors && cmp -s ../broken/model.safetensors '" +
                repo.Data(Step("000200")) + "'")
            .code != 0);  // nothing wrong in the work tree
  Run fetch = repo.Sh("cd ../broken && git zipnn fetch");
  CHECK(fetch.code == 1);
  CHECK(fetch.err.find("object " + id + " is not on the remote store") != std::string::npos);
  // Missing here and there: fsck calls it a problem.
  Run fsck = repo.Sh("cd ../broken && git zipnn fsck");
  CHECK(fsck.code == 1);
  CHECK(fsck.out.find("checkpoint " + id + ": ") != std::string::npos);
  CHECK(fsck.out.find("not fetched") == std::string::npos);
}

TEST_CASE("the hook runs the pre-push hook that was there, and stops a push whose objects are missing") {
  Repo repo;
  REQUIRE(repo.Sh("printf '#!/bin/sh\\ncat > ../earlier-hook-input\\n' > .git/hooks/pre-push && "
                  "chmod +x .git/hooks/pre-push")
              .code == 0);
  CommitWithHub(repo);
  CHECK(repo.Sh("test -x .git/hooks/pre-push.before-zipnn").code == 0);
  REQUIRE(repo.Sh("git push -q origin HEAD:main").code == 0);
  CHECK(repo.Sh("cat ../earlier-hook-input").out.find("refs/heads/main") != std::string::npos);

  // A version the remote holds needs nothing here: step 40 again, its
  // object lost here, pushes.
  REQUIRE(repo.Sh("cp '" + repo.Data(Step("000040")) + "' model.safetensors && git commit -qam again").code == 0);
  const std::string again = IdAt(repo, "HEAD:model.safetensors");
  REQUIRE(repo.Sh("git zipnn install --local >/dev/null && find .git/zipnn/objects -name " + again + " -delete").code ==
          0);
  CHECK(repo.Sh("git push -q origin HEAD:main").code == 0);
  // A new version whose object is lost before the push.
  REQUIRE(repo.Sh("cp '" + repo.Data(Step("000080")) + "' model.safetensors && printf new >> model.safetensors && " +
                  "git commit -qam new")
              .code == 0);
  const std::string id = IdAt(repo, "HEAD:model.safetensors");
  REQUIRE(repo.Sh("find .git/zipnn/objects -name " + id + " -delete").code == 0);
  const std::string before = repo.Sh("git ls-remote ../hub.git refs/heads/main").out;
  Run refused = repo.Sh("git push -q origin HEAD:main");
  CHECK(refused.code != 0);
  CHECK(refused.err.find("git push stopped") != std::string::npos);
  CHECK(repo.Sh("git ls-remote ../hub.git refs/heads/main").out == before);

  // Uninstall puts the earlier hook back.
  REQUIRE(repo.Sh("git zipnn uninstall --local").code == 0);
  CHECK(repo.Sh("grep -c earlier-hook-input .git/hooks/pre-push").out == "1\n");
}

TEST_CASE("remote.<name>.zipnnurl names a shared folder; zipnn.hardlinks false copies into it") {
  Repo repo;
  testing::CommitTrajectory(repo);
  REQUIRE(repo.Sh("git remote add team ../team.git && git config remote.team.zipnnurl ../shared-store").code == 0);
  REQUIRE(repo.Sh("git zipnn push team").code == 0);
  CHECK(ObjectsIn(repo, "../shared-store") == 5);
  // zipnn.hardlinks false: copies, which share nothing with this store.
  REQUIRE(repo.Sh("git config zipnn.hardlinks false && git config remote.team.zipnnurl ../copies && "
                  "git zipnn push team")
              .code == 0);
  CHECK(ObjectsIn(repo, "../copies") == 5);
  CHECK(repo.Sh("find ../copies -type f -links 1 ! -name '*.base' | wc -l").out == "5\n");
}

// Over ssh, against the test's own sshd on loopback: the store beside a
// repository reached by an ssh:// URL (its port in the URL) or git's
// host:path form, served by git-zipnn serve-store on the far side.
TEST_CASE("over ssh: git push sends the objects first; a clone checks out and restores every version bit-exact") {
  Repo repo;
  testing::Sshd sshd(repo);
  const std::string url = CommitWithSshHub(repo, sshd);
  Run push = repo.Sh("git push -q origin HEAD:main");
  REQUIRE(push.code == 0);
  CHECK(push.err.find("git-zipnn: pushed 5 objects") != std::string::npos);
  CHECK(push.err.find("to " + url) != std::string::npos);
  CHECK(ObjectsIn(repo, "../hub.git/zipnn/objects") == 5);

  REQUIRE(repo.Sh("cd .. && git clone -q -b main " + url + " clone").code == 0);
  CHECK(repo.Sh("cmp ../clone/model.safetensors '" + repo.Data(Step("000200")) + "'").code == 0);
  CHECK(ObjectsIn(repo, "../clone/.git/zipnn/objects") == 1);  // the newest, whole
  CheckClone(repo, "clone", 0);
}

TEST_CASE("over ssh: a push cut short is retried, a missing object is named, and a path is never run by a shell") {
  Repo repo;
  testing::Sshd sshd(repo);
  CommitWithHub(repo);
  const std::string url = "zipnn-test:" + repo.root() + "/hub.git";
  REQUIRE(repo.Sh("git remote set-url origin " + url).code == 0);

  // A file where the folder of HEAD's object must go: the server refuses
  // that object, the others land whole.
  const std::string id = IdAt(repo, "HEAD:model.safetensors");
  REQUIRE(repo.Sh("mkdir -p ../hub.git/zipnn/objects && : > ../hub.git/zipnn/objects/" + id.substr(0, 2)).code == 0);
  Run cut = repo.Sh("git zipnn push origin");
  CHECK(cut.code != 0);
  CHECK(cut.err.find("cannot send object " + id + " to " + url + ": the server refused it: ") != std::string::npos);
  const int landed = ObjectsIn(repo, "../hub.git/zipnn/objects");
  CHECK(landed < 5);
  CHECK(repo.Sh("find ../hub.git/zipnn -name '*.tmp-*'").out.empty());
  REQUIRE(repo.Sh("rm ../hub.git/zipnn/objects/" + id.substr(0, 2)).code == 0);
  Run again = repo.Sh("git zipnn push origin");
  REQUIRE(again.code == 0);
  CHECK(again.err.find("pushed " + std::to_string(5 - landed) + " objects") != std::string::npos);
  CHECK(ObjectsIn(repo, "../hub.git/zipnn/objects") == 5);

  // An object gone from the far store is named by fetch.
  REQUIRE(repo.Sh("git push -q origin HEAD:main && rm ../hub.git/zipnn/objects/" + id.substr(0, 2) + "/" +
                  id.substr(2, 2) + "/" + id)
              .code == 0);
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main " + url + " lazy").code == 0);
  Run fetch = repo.Sh("cd ../lazy && git zipnn fetch");
  CHECK(fetch.code == 1);
  CHECK(fetch.err.find("object " + id + " is not on the remote store " + url) != std::string::npos);

  // zipnnurl: a folder on the host, from the home folder there, whose name
  // a shell would run; zipnnserve: the program to serve it.
  const std::string folder = "it's $(touch pwned); a store";
  REQUIRE(repo.Sh("git remote add team ../team.git && "
                  "git config remote.team.zipnnurl $'ssh://zipnn-test/~/it\\'s $(touch pwned); a store' && "
                  "git config remote.team.zipnnserve \"$(command -v git-zipnn)\"")
              .code == 0);
  REQUIRE(repo.Sh("git config remote.team.zipnnurl").out == "ssh://zipnn-test/~/" + folder + "\n");
  REQUIRE(repo.Sh("git zipnn push -q team").code == 0);
  CHECK(repo.Sh("ls ../home").out.find(folder + "\n") != std::string::npos);
  CHECK(ObjectsIn(repo, "../home") == 5);
  CHECK(repo.Sh("find .. -name pwned").out.empty());

  REQUIRE(repo.Sh("git config remote.team.zipnnserve /nowhere/git-zipnn").code == 0);
  Run unserved = repo.Sh("git zipnn push team");
  CHECK(unserved.code == 1);
  CHECK(unserved.err.find("the store server did not answer (if ssh connected, is git-zipnn on the PATH there? "
                          "remote.team.zipnnserve names the program to run)") != std::string::npos);
  REQUIRE(repo.Sh("git remote add nothing zipnn-test:" + repo.root() + "/nothing.git").code == 0);
  CHECK(repo.Sh("git zipnn push nothing").err.find(repo.root() + "/nothing.git is not a git repository") !=
        std::string::npos);
}

TEST_CASE("over ssh: a push and a fetch whose connections drop resume, moving each object about once") {
  Repo repo;
  testing::Sshd sshd(repo);
  const std::string url = CommitWithSshHub(repo, sshd);
  // The trajectory pushed and fetched into two clones first, so that only
  // the object below moves through the link.
  REQUIRE(repo.Sh("git push -q origin HEAD:main && cd .. && for c in lazy later; do "
                  "GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main " + url + " $c && git -C $c zipnn fetch -q || exit 1; "
                  "done")
              .code == 0);
  // A 6 MB file no coder shrinks: its object is about as big.
  REQUIRE(repo.Sh("head -c 6000000 /dev/urandom > noise.bin && git zipnn track '*.bin' >/dev/null && "
                  "git add .gitattributes noise.bin && git commit -qm noise")
              .code == 0);
  const std::string id = IdAt(repo, "HEAD:noise.bin");
  const long long object = std::stoll(
      repo.Sh("stat -c %s .git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id).out);
  // ssh through a link that counts the bytes each way and, with CUT set,
  // drops a connection once CUT bytes went one way.
  const std::string through = "OUT_COUNT=" + repo.root() + "/sent IN_COUNT=" + repo.root() +
                              "/received GIT_SSH_COMMAND=\"/usr/bin/python3 '" + repo.Runfile("tests/dropping_link.py") +
                              "' ssh -F '" + sshd.config() + "'\" ";
  auto counted = [&](const std::string& way) {
    const std::string lines = repo.Sh("cat ../" + way).out;
    CAPTURE(lines);
    REQUIRE(repo.Sh("rm -f ../" + way).code == 0);
    return std::stoll(repo.Sh("printf '%s' '" + lines + "' | awk '{ n += $1 } END { print n + 0 }'").out);
  };

  // Each connection drops after 2.5 MB: the object needs three of them,
  // the push's three tries, each going on where the last stopped.
  Run push = repo.Sh("CUT=2500000 " + through + "git zipnn push origin");
  CHECK_MESSAGE(push.code == 0, push.err);
  // What its own earlier tries sent is not told as held before.
  CHECK_MESSAGE(push.err.find("the remote held") == std::string::npos, push.err);
  CHECK(ObjectsIn(repo, "../hub.git/zipnn/objects") == 6);
  CHECK(repo.Sh("find ../hub.git/zipnn -name '*.tmp-*'").out.empty());
  const long long sent = counted("sent");
  CHECK(sent > object);
  CHECK(sent < object + object / 20);  // requests, lines and git's own, not the object again

  // The same for a fetch.
  REQUIRE(repo.Sh("git push -q origin HEAD:main && cd ../lazy && GIT_ZIPNN_SKIP_SMUDGE=1 git pull -q && "
                  "cd ../later && GIT_ZIPNN_SKIP_SMUDGE=1 git pull -q && rm -f ../sent ../received")
              .code == 0);
  Run fetch = repo.Sh("cd ../lazy && CUT=2500000 " + through + "git zipnn fetch");
  CHECK_MESSAGE(fetch.code == 0, fetch.err);
  const long long received = counted("received");
  CHECK(received > object);
  CHECK(received < object + object / 20);
  CHECK(repo.Sh("ls ../lazy/.git/zipnn/tmp/store-partial").out.empty());  // nothing kept once in
  Run pull = repo.Sh("cd ../lazy && git zipnn pull -q && cmp noise.bin ../repo/noise.bin && git zipnn fsck");
  CHECK_MESSAGE(pull.code == 0, pull.err);

  // Dropped sooner, a fetch gives up, keeping what came; the next one
  // fetches only the rest.
  Run cut = repo.Sh("cd ../later && CUT=1000000 " + through + "git zipnn fetch");
  CHECK(cut.code != 0);
  CHECK(cut.err.find("cannot fetch object " + id) != std::string::npos);
  CHECK(!repo.Sh("ls ../later/.git/zipnn/tmp/store-partial").out.empty());
  REQUIRE(repo.Sh("rm -f ../received").code == 0);
  Run rest = repo.Sh("cd ../later && " + through + "git zipnn fetch && git zipnn pull -q && "
                     "cmp noise.bin ../repo/noise.bin");
  CHECK_MESSAGE(rest.code == 0, rest.err);
  // The fetch says what the try before had kept, and what it fetched.
  CHECK_MESSAGE(rest.err.find(" of it kept here by an earlier try, ") != std::string::npos, rest.err);
  const long long more = counted("received");
  CHECK(more > 0);
  CHECK(more < object - 2000000);
}

// In an S3 bucket, against the test's own s3rver: objects under
// <prefix>/<2 hex>/<2 hex>/<id>, credentials from ~/.aws/credentials or
// the environment.
int S3ObjectsIn(Repo& repo, const std::string& folder) {
  return std::stoi(repo.Sh("find '" + folder +
                           "' -type f -regextype posix-extended -regex "
                           "'.*/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{32}\\._S3rver_object' | wc -l")
                       .out);
}

// The trajectory and a 12 MB file of noise (stored raw, so uploaded in 3
// parts of 5 MiB), pushed to s3://zipnn/team/models at `s3`.
std::string CommitWithBucket(Repo& repo, const testing::S3rver& s3) {
  CommitWithHub(repo);
  REQUIRE(repo.Sh("mkdir -p ../home/.aws && printf '[default]\\naws_access_key_id = S3RVER\\n"
                  "aws_secret_access_key = S3RVER\\n' > ../home/.aws/credentials")
              .code == 0);
  REQUIRE(repo.Sh("head -c 12000000 /dev/urandom > noise.bin && git zipnn track '*.bin' >/dev/null && "
                  "git add .gitattributes noise.bin && git commit -qm noise")
              .code == 0);
  const std::string config =
      "-c remote.origin.zipnnurl=s3://zipnn/team/models -c remote.origin.zipnnendpoint=" + s3.endpoint() +
      " -c remote.origin.zipnnpartsize=5m";
  REQUIRE(
      repo.Sh("git config remote.origin.zipnnurl s3://zipnn/team/models && git config remote.origin.zipnnendpoint " +
              s3.endpoint() + " && git config remote.origin.zipnnpartsize 5m")
          .code == 0);
  return config;
}

TEST_CASE("S3: git push sends the objects first, a big one in parts; a clone restores every version bit-exact") {
  Repo repo;
  testing::S3rver s3(repo);
  const std::string config = CommitWithBucket(repo, s3);
  REQUIRE(repo.Sh("git config remote.origin.zipnnendpoint " + s3.Proxy("none", 0)).code == 0);  // to see requests
  Run push = repo.Sh("git push -q origin HEAD:main");
  REQUIRE(push.code == 0);
  CHECK(push.err.find("git-zipnn: pushed 6 objects") != std::string::npos);
  CHECK(push.err.find("to s3://zipnn/team/models") != std::string::npos);
  CHECK(S3ObjectsIn(repo, s3.data() + "/team/models") == 6);
  const std::string noise = IdAt(repo, "HEAD:noise.bin");
  const std::string requests = s3.ProxyRequests();
  CAPTURE(requests);
  CHECK(requests.find("POST /zipnn/team/models/" + noise.substr(0, 2) + "/" + noise.substr(2, 2) + "/" + noise +
                      "?uploads=\n") != std::string::npos);
  CHECK(std::stoi(repo.Sh("grep -c 'PUT .*" + noise + "?partNumber=' '" + repo.root() + "'/s3/proxy*.log").out) == 3);

  REQUIRE(repo.Sh("cd .. && git clone -q " + config + " -b main hub.git clone").code == 0);
  CHECK(repo.Sh("cmp ../clone/noise.bin noise.bin").code == 0);
  CHECK(repo.Sh("cmp ../clone/model.safetensors '" + repo.Data(Step("000200")) + "'").code == 0);
  CheckClone(repo, "clone", 1);
}

TEST_CASE("S3: a set object limit is the most one request carries: larger objects go up in parts of at most it") {
  Repo repo;
  testing::S3rver s3(repo);
  const std::string config = CommitWithBucket(repo, s3);
  // Without the part size the 12 MB object would go in one request; a
  // limit of 6m (a server that takes no larger request) cuts it in two.
  REQUIRE(repo.Sh("git config --unset remote.origin.zipnnpartsize && git config remote.origin.zipnnMaxObjectSize 6m && "
                  "git config remote.origin.zipnnendpoint " +
                  s3.Proxy("none", 0))
              .code == 0);
  const Run push = repo.Sh("git push -q origin HEAD:main");
  REQUIRE_MESSAGE(push.code == 0, push.err);
  const std::string noise = IdAt(repo, "HEAD:noise.bin");
  CHECK(std::stoi(repo.Sh("grep -c 'PUT .*" + noise + "?partNumber=' '" + repo.root() + "'/s3/proxy*.log").out) == 2);
  REQUIRE(repo.Sh("cd .. && git clone -q " + config + " -b main hub.git clone && cmp clone/noise.bin repo/noise.bin")
              .code == 0);
  // Under S3's smallest part, the limit is refused, naming it.
  const Run small = repo.Sh("git -c remote.origin.zipnnMaxObjectSize=1m zipnn push origin");
  CHECK(small.code != 0);
  CHECK_MESSAGE(small.err.find("an S3 server takes parts of at least 5m") != std::string::npos, small.err);
}

TEST_CASE("S3: base notes go with the objects to a bucket and come back to a clone's fetch") {
  Repo repo;
  testing::S3rver s3(repo);
  const std::string config = CommitWithBucket(repo, s3);
  CheckBaseNotesTravel(repo, config + " hub.git");
}

TEST_CASE("S3: a push cut short is retried, a missing object is named, and so are bad or absent credentials") {
  Repo repo;
  testing::S3rver s3(repo);
  const std::string config = CommitWithBucket(repo, s3);
  // A server that throttles the upload of HEAD~1's object every time:
  // tried three times, it fails; the others land.
  const std::string id = IdAt(repo, "HEAD~1:model.safetensors");
  const std::string models = s3.data() + "/team/models";
  const std::string set_endpoint = "git config remote.origin.zipnnendpoint ";
  REQUIRE(repo.Sh(set_endpoint + s3.Proxy(id, -1)).code == 0);
  Run cut = repo.Sh("git zipnn push origin");
  CHECK(cut.code != 0);
  CHECK(cut.err.find("cannot send object " + id +
                     " to s3://zipnn/team/models: upload refused: HTTP 503 SlowDown "
                     "(Please reduce your request rate.)") != std::string::npos);
  const int landed = S3ObjectsIn(repo, models);
  CHECK(landed < 6);
  // Throttled once this time: the retry passes, and only the rest moves.
  REQUIRE(repo.Sh(set_endpoint + s3.Proxy(id, 1)).code == 0);
  Run again = repo.Sh("git zipnn push origin");
  REQUIRE(again.code == 0);
  CHECK(again.err.find("pushed " + std::to_string(6 - landed) + " objects") != std::string::npos);
  CHECK(again.err.find(std::to_string(landed) + " of 6 were there already") != std::string::npos);
  CHECK(S3ObjectsIn(repo, models) == 6);
  REQUIRE(repo.Sh(set_endpoint + s3.endpoint()).code == 0);

  // Gone from the bucket: fetch names it.
  REQUIRE(repo.Sh("git push -q origin HEAD:main && rm '" + models + "/" + id.substr(0, 2) + "/" + id.substr(2, 2) +
                  "/" + id + "._S3rver_object'")
              .code == 0);
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q " + config + " -b main hub.git lazy").code == 0);
  Run fetch = repo.Sh("cd ../lazy && git zipnn fetch --all");
  CHECK(fetch.code == 1);
  CHECK(fetch.err.find("object " + id + " is not on the remote store s3://zipnn/team/models") != std::string::npos);

  // The environment wins over the credentials file.
  Run stranger = repo.Sh("cd ../lazy && AWS_ACCESS_KEY_ID=nobody AWS_SECRET_ACCESS_KEY=x git zipnn fetch --all");
  CHECK(stranger.code == 1);
  CHECK(stranger.err.find("HTTP 403 InvalidAccessKeyId") != std::string::npos);
  Run none = repo.Sh("rm -r ../home/.aws && git zipnn push origin");
  CHECK(none.code == 1);
  CHECK(none.err.find("no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give profile "
                      "\"default\" aws_access_key_id and aws_secret_access_key in " +
                      repo.root() + "/home/.aws/credentials") != std::string::npos);
}

// Remotes that lie (docs/reliability.md): a store with its objects pushed
// honestly to ../store, and a clone in ../lazy without them whose origin
// is set by `configure` to reach that store.
struct LyingCase {
  std::string fault;
  std::string setup;     // run in repo/ before the fetch (empty: nothing)
  std::string expected;  // in the fetch's error
};

// `git zipnn fetch <args>` in ../lazy with a 1 s timeout: it fails
// within a few seconds naming `expected`, and leaves no partial file.
void CheckFetchRefused(Repo& repo, const std::string& args, const std::string& expected) {
  const auto start = std::chrono::steady_clock::now();
  Run fetch = repo.Sh("cd ../lazy && GIT_ZIPNN_TIMEOUT=1 timeout 30 git zipnn fetch " + args);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(fetch.code == 1);
  CHECK(seconds < 6);
  CHECK_MESSAGE(fetch.err.find(expected) != std::string::npos, fetch.err);
  CHECK(repo.Sh("find ../lazy/.git/zipnn -name 'fetch-*' -o -name '*.tmp-*'").out.empty());
}

// Each case: `git zipnn fetch` in ../lazy, with a 1 s timeout, fails
// within a few seconds, names what went wrong, and leaves no object and
// no partial file in the clone's store.
void CheckLies(Repo& repo, const std::string& configure, const std::vector<LyingCase>& cases) {
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main hub.git lazy").code == 0);
  for (const LyingCase& c : cases) {
    CAPTURE(c.fault);
    REQUIRE(repo.Sh(configure).code == 0);
    if (!c.setup.empty()) REQUIRE(repo.Sh(c.setup).code == 0);
    CheckFetchRefused(repo, "", c.expected);
    CHECK(ObjectsIn(repo, "../lazy/.git/zipnn/objects") == 0);
  }
  // Honest again: the real objects come, and restore.
  REQUIRE(repo.Sh(configure).code == 0);
  REQUIRE(repo.Sh("cd ../lazy && git zipnn pull -q").code == 0);
  CHECK(repo.Sh("cmp ../lazy/model.safetensors '" + repo.Data(Step("000200")) + "'").code == 0);
}

// HEAD's object (step 200, a delta) in ../store, and the base at step 40
// forged to claim to be it.
struct Lies {
  std::string id;
  std::string object;  // its place in ../store
  std::string forged;  // a file holding the forgery
};
Lies PushToStore(Repo& repo) {
  CommitWithHub(repo);
  REQUIRE(repo.Sh("git config remote.origin.zipnnurl ../store && git zipnn push -q origin && "
                  "git config --unset remote.origin.zipnnurl && git push -q origin HEAD:main")
              .code == 0);
  Lies l;
  l.id = IdAt(repo, "HEAD:model.safetensors");
  const std::string base = IdAt(repo, "HEAD~4:model.safetensors");
  l.object = repo.root() + "/store/" + l.id.substr(0, 2) + "/" + l.id.substr(2, 2) + "/" + l.id;
  l.forged = repo.root() + "/forged";
  REQUIRE(repo.Sh("'" + repo.Runfile("tests/forge_object") + "' ../store/" + base.substr(0, 2) + "/" +
                  base.substr(2, 2) + "/" + base + " " + l.id + " > " + l.forged)
              .code == 0);
  REQUIRE(repo.Sh("cp " + l.object + " ../real").code == 0);
  return l;
}

TEST_CASE("a folder remote that lies: a forged, oversized, cut or blocking object is refused, nothing kept") {
  Repo repo;
  const Lies l = PushToStore(repo);
  CheckLies(
      repo,
      "rm -f " + l.object + " && cp ../real " + l.object + " && git -C ../lazy config remote.origin.zipnnurl ../store",
      {{"forged", "cp " + l.forged + " " + l.object, "was refused"},
       {"oversized", "truncate -s 10G " + l.object, "more than the"},
       {"cut short", "truncate -s 1000 " + l.object, "cannot fetch object " + l.id},
       {"a FIFO", "rm " + l.object + " && mkfifo " + l.object, "is not a plain file"},
       {"missing", "rm " + l.object, "is not on the remote store"}});
}

TEST_CASE("over ssh, a store server that lies or stalls: every fetch ends within its timeout, nothing kept") {
  Repo repo;
  testing::Sshd sshd(repo);
  const Lies l = PushToStore(repo);
  const std::string url = "ssh://zipnn-test" + repo.root() + "/store";
  auto serve = [&](const std::string& mode) {
    return "rm -f " + l.object + " && cp ../real " + l.object + " && git -C ../lazy config remote.origin.zipnnurl " +
           url + " && git -C ../lazy config remote.origin.zipnnserve \"python3 '" +
           repo.Runfile("tests/hostile_store.py") + "' " + mode + "\"";
  };
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main hub.git lazy").code == 0);
  for (const std::string mode : {"mute", "stall", "huge", "extra", "short", "drop", "longline"}) {
    CAPTURE(mode);
    REQUIRE(repo.Sh(serve(mode)).code == 0);
    CheckFetchRefused(repo, "", "cannot fetch object " + l.id + " from " + url);
    CHECK(ObjectsIn(repo, "../lazy/.git/zipnn/objects") == 0);
  }
  REQUIRE(repo.Sh("rm -rf ../lazy").code == 0);
  // The real server, with a forged object in its store.
  CheckLies(
      repo,
      "rm -f " + l.object + " && cp ../real " + l.object + " && git -C ../lazy config remote.origin.zipnnurl " + url,
      {{"forged", "cp " + l.forged + " " + l.object, "was refused"}});
}

TEST_CASE("fsck --remote finds forged and misfiled objects in a folder or served store; push mends them") {
  Repo repo;
  testing::Sshd sshd(repo);
  const Lies l = PushToStore(repo);
  const std::string leftover = l.object + ".tmp-00000001";  // what a killed push left
  const std::string other =
      "$(find ../store -type f -regextype posix-extended -regex '.*/[0-9a-f]{32}' ! -name " + l.id + " | head -1)";
  for (const std::string url : {std::string("../store"), "ssh://zipnn-test" + repo.root() + "/store"}) {
    CAPTURE(url);
    const bool folder = url[0] == '.';
    REQUIRE(repo.Sh("git config remote.origin.zipnnurl " + url).code == 0);
    Run clean = repo.Sh("git zipnn fsck --remote --all");
    CHECK(clean.code == 0);
    CHECK(clean.out.find("5 checkpoints, 5 objects decode to their ids\n") != std::string::npos);
    // Damaged (a flipped byte), misfiled (another object's file under its
    // name) and forged (only a decode tells) copies of HEAD's object, each
    // a new file: the folder's first copy is linked to this store's.
    const std::string cp = "cp --remove-destination ";
    const std::string damage = cp + "../real " + l.object + " && printf '\\377' | dd of=" + l.object +
                               " bs=1 seek=70 conv=notrunc status=none";
    for (const std::string lie : {damage, cp + other + " " + l.object, cp + l.forged + " " + l.object}) {
      CAPTURE(lie);
      REQUIRE(repo.Sh(lie + " && touch -d '2 days ago' " + leftover).code == 0);
      Run found = repo.Sh("git zipnn fsck --remote origin");
      CHECK(found.code == 1);
      CHECK(found.out.find("model.safetensors at ") != std::string::npos);
      CHECK(found.out.find("object " + l.id) != std::string::npos);
      CHECK((found.out.find("with problems; 1 old temporary file removed\n") != std::string::npos) == folder);
      CHECK(found.err.find("1 checkpoint cannot be fetched whole from origin") != std::string::npos);
      // A damaged or misfiled copy does not count as there: push sends the
      // real one (and a server clears the leftover in the folder it
      // writes). A forgery passes every check short of a decode, so it is
      // removed by hand (docs/commands/fsck.md).
      if (lie.find(l.forged) != std::string::npos) REQUIRE(repo.Sh("rm " + l.object).code == 0);
      Run push = repo.Sh("git zipnn push origin");
      REQUIRE(push.code == 0);
      CHECK(push.err.find("pushed 1 object (") != std::string::npos);
      CHECK(repo.Sh("cmp ../real " + l.object).code == 0);
      CHECK(repo.Sh("test -e " + leftover).code != 0);
      CHECK(repo.Sh("git zipnn fsck --remote").code == 0);
    }
  }
}

TEST_CASE("S3: an upload in parts cut short goes on where it stopped: no part is sent twice") {
  Repo repo;
  testing::S3rver s3(repo);
  const std::string config = CommitWithBucket(repo, s3);
  // The 12 MB object goes up in three parts of 5 MiB; the first part
  // request is throttled (503), the others land and are noted, and the
  // push's retry sends that one part and completes the same upload.
  const std::string id = IdAt(repo, "HEAD:noise.bin");
  REQUIRE(repo.Sh("git config remote.origin.zipnnendpoint " + s3.Proxy(id, 1)).code == 0);
  Run push = repo.Sh("git zipnn push origin");
  CHECK_MESSAGE(push.code == 0, push.err);
  const std::string log = s3.ProxyRequests();
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("PUT /zipnn/team/models/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id + "?partNumber=") ==
        4);                                   // three parts, one of them twice
  CHECK(count(id + "?uploads") == 1);         // one upload
  CHECK(repo.Sh("ls .git/zipnn/s3-uploads").out.empty());
  // The parts its own first try sent are not told as held before.
  CHECK_MESSAGE(push.err.find("the remote held") == std::string::npos, push.err);
  REQUIRE(repo.Sh("git config remote.origin.zipnnendpoint " + s3.endpoint() + " && git push -q origin HEAD:main && "
                  "cd .. && git clone -q " + config + " -b main hub.git clone && cd clone && "
                  "cmp noise.bin ../repo/noise.bin && git zipnn fsck")
              .code == 0);
}

TEST_CASE("S3: a fetch cut short keeps what came, and the next asks for the rest only") {
  Repo repo;
  testing::S3rver s3(repo);
  CommitWithBucket(repo, s3);
  REQUIRE(repo.Sh("git push -q origin HEAD:main").code == 0);
  const std::string id = IdAt(repo, "HEAD:noise.bin");
  const long long object = std::stoll(
      repo.Sh("stat -c %s .git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id).out);
  // Every download of it cut at half, three times: the fetch's three tries
  // each get half of what was left, and it gives up with 7/8 kept.
  // On one connection, so that the object comes whole, resuming by byte
  // (in ranges on several: s3_test).
  REQUIRE(
      repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main hub.git lazy && cd lazy && "
              "git config remote.origin.zipnnurl s3://zipnn/team/models && git config zipnn.concurrentTransfers 1 && "
              "git config remote.origin.zipnnendpoint " +
              s3.Proxy(id, 3, "cut"))
          .code == 0);
  Run cut = repo.Sh("cd ../lazy && git zipnn fetch");
  CHECK(cut.code != 0);
  CHECK(cut.err.find("cannot fetch object " + id) != std::string::npos);
  // (the objects that came whole wait there too, to take their names
  // from their files in the next fetch)
  const std::string kept = "../lazy/.git/zipnn/tmp/s3-partial/" + id + "-*";
  REQUIRE(repo.Sh("ls " + kept).code == 0);
  const long long have = std::stoll(repo.Sh("stat -c %s " + kept).out);
  CHECK(have >= object * 7 / 8 - 2);

  // The proxy passes the next one through: it asks for the rest only.
  Run rest = repo.Sh("cd ../lazy && git zipnn fetch && git zipnn pull -q && cmp noise.bin ../repo/noise.bin && "
                     "git zipnn fsck");
  CHECK_MESSAGE(rest.code == 0, rest.err);
  const std::string log = s3.ProxyRequests();
  CHECK(log.find(id + " bytes=" + std::to_string(have) + "-\n") != std::string::npos);
  CHECK(repo.Sh("ls ../lazy/.git/zipnn/tmp/s3-partial/").out.empty());
}

TEST_CASE("S3 that lies or stalls: every fetch ends within its timeout, nothing kept") {
  Repo repo;
  testing::S3rver s3(repo);
  CommitWithBucket(repo, s3);
  REQUIRE(repo.Sh("git push -q origin HEAD:main").code == 0);
  const std::string id = IdAt(repo, "HEAD~1:model.safetensors");
  const std::string base = IdAt(repo, "HEAD~5:model.safetensors");
  const std::string forged = repo.root() + "/forged";
  REQUIRE(repo.Sh("'" + repo.Runfile("tests/forge_object") + "' .git/zipnn/objects/" + base.substr(0, 2) + "/" +
                  base.substr(2, 2) + "/" + base + " " + id + " > " + forged)
              .code == 0);
  REQUIRE(repo.Sh("cd .. && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main hub.git lazy && cd lazy && "
                  "git config remote.origin.zipnnurl s3://zipnn/team/models")
              .code == 0);
  struct Fault {
    std::string mode;
    std::string expected;
  };
  for (const Fault& f :
       {Fault{"forge", "was refused"}, Fault{"huge", "more than the"}, Fault{"endless", "says it holds 0 bytes"},
        Fault{"stall", "timeout"}, Fault{"short", "cannot fetch object"}}) {
    CAPTURE(f.mode);
    REQUIRE(repo.Sh("git -C ../lazy config remote.origin.zipnnendpoint " + s3.Proxy(id, -1, f.mode, forged)).code == 0);
    CheckFetchRefused(repo, "origin HEAD~1", f.expected);
    CHECK(repo.Sh("find ../lazy/.git/zipnn -name '" + id + "'").out.empty());
  }
  REQUIRE(repo.Sh("git -C ../lazy config remote.origin.zipnnendpoint " + s3.endpoint()).code == 0);
  REQUIRE(repo.Sh("cd ../lazy && git zipnn fetch -q origin HEAD~1").code == 0);
  CHECK(repo.Sh("find ../lazy/.git/zipnn -name '" + id + "'").out.find(id) != std::string::npos);
}

}  // namespace
}  // namespace zipnn
