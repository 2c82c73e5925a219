// `git zipnn retain --remote` with the real git binary, on a folder, over
// ssh (Debian's OpenSSH server, serve-store at the far end) and in S3
// (s3rver), the servers started by the test: a plan first, then the
// remote's exact objects of thinned or dropped versions removed, and a
// fresh clone that restores every kept version bit-exact, leaves the
// others as pointers and reads a thinned one only with --approximate.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/git_repo.h"
#include "tests/s3rver.h"
#include "tests/sshd.h"

namespace zipnn {
namespace {

using testing::Repo;
using testing::Run;

enum class Kind { kFolder, kSsh, kS3 };

std::string Step(int s) {
  char name[64];
  std::snprintf(name, sizeof name, "cnn12-bf16/step-%06d.safetensors", s);
  return name;
}

// Bytes of the objects and retention records under `folder` (a store's
// files, or s3rver's files of a bucket's keys), folders and s3rver's own
// files left out.
uint64_t BytesIn(Repo& repo, const std::string& folder) {
  return std::stoull(repo.Sh("find '" + folder +
                             "' -type f -regextype posix-extended -regex "
                             "'.*/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{32}(\\.retained)?(\\._S3rver_object)?' "
                             "-printf '%s\\n' | awk '{ n += $1 } END { print n + 0 }'")
                         .out);
}

// The object files under a folder remote's store, by name (records left out).
std::vector<std::string> ObjectsIn(Repo& repo, const std::string& folder) {
  std::vector<std::string> names;
  std::istringstream listed(
      repo.Sh("find '" + folder + "' -type f -regextype posix-extended -regex '.*/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{32}' "
              "-printf '%f\n' | sort")
          .out);
  for (std::string name; std::getline(listed, name);) names.push_back(name);
  return names;
}

// The content id a commit's pointer names.
std::string IdAt(Repo& repo, int step) {
  const std::string pointer = repo.Sh("git show refs/steps/s" + std::to_string(step) + ":model.safetensors").out;
  const size_t at = pointer.find("xxh3-128:");
  REQUIRE(at != std::string::npos);
  return pointer.substr(at + 9, 32);
}

// A repository whose rule keeps the newest 3 and makes `rest` of the
// others, and a bare hub beside it, origin at `url`.
void SetUp(Repo& repo, const std::string& rest, const std::string& url) {
  {
    std::ofstream yaml(repo.File(".zipnn.yaml"));
    yaml << "retention:\n  - checkpoints: '*.safetensors'\n    keep_newest: 3\n    rest: " << rest
         << (rest == "thin" ? "\n    precision: relative 4\n" : "\n");
  }
  REQUIRE(repo.Sh("git zipnn install >/dev/null && git zipnn track '*.safetensors' && git add .gitattributes "
                  ".zipnn.yaml && git commit -qm setup && git init -q --bare ../hub.git && git remote add origin " +
                  url)
              .code == 0);
}

// Twelve saves of model.safetensors, a commit each (refs/steps/s<step>),
// pushed to origin.
void CommitSavesAndPush(Repo& repo) {
  for (int s = 10; s <= 120; s += 10) {
    REQUIRE(repo.Sh("cp '" + repo.Data(Step(s)) + "' model.safetensors && git add model.safetensors && " +
                    "git commit -qm 'step " + std::to_string(s) + "' && git update-ref refs/steps/s" +
                    std::to_string(s) + " HEAD")
                .code == 0);
  }
  REQUIRE(repo.Sh("git push -q origin HEAD:main 'refs/steps/*:refs/steps/*'").code == 0);
}

// The twelve saves pushed to a folder remote.
void CommitAndPush(Repo& repo, const std::string& rest) {
  SetUp(repo, rest, "../hub.git");
  CommitSavesAndPush(repo);
}

// A fresh clone of the hub restores the newest three saves bit-exact.
void CloneRestoresKept(Repo& repo) {
  REQUIRE(repo.Sh("rm -rf ../clone && cd .. && git clone -q -b main hub.git clone").code == 0);
  const std::string in = "cd ../clone && git fetch -q origin 'refs/steps/*:refs/steps/*' && ";
  for (int s : {100, 110, 120}) {
    CAPTURE(s);
    CHECK(repo.Sh(in + "git zipnn restore model.safetensors --rev refs/steps/s" + std::to_string(s) + " -o ../v -f")
              .code == 0);
    CHECK(repo.Sh("cmp ../v '" + repo.Data(Step(s)) + "'").code == 0);
  }
}

// The twelve saves pushed to a folder, ssh or S3 remote; `rest` is what the
// rule makes of all but the newest 3.
void CheckRetainOnRemote(Kind kind, const std::string& rest) {
  Repo repo;
  std::unique_ptr<testing::Sshd> sshd;
  std::unique_ptr<testing::S3rver> s3;
  std::string url = "../hub.git", objects = repo.root() + "/hub.git/zipnn/objects", clone_config;
  if (kind == Kind::kSsh) {
    sshd = std::make_unique<testing::Sshd>(repo);
    url = "ssh://127.0.0.1:" + sshd->port() + repo.root() + "/hub.git";
  }
  SetUp(repo, rest, url);
  if (kind == Kind::kS3) {
    s3 = std::make_unique<testing::S3rver>(repo);
    REQUIRE(repo.Sh("mkdir -p ../home/.aws && printf '[default]\\naws_access_key_id = S3RVER\\n"
                    "aws_secret_access_key = S3RVER\\n' > ../home/.aws/credentials && "
                    "git config remote.origin.zipnnurl s3://zipnn/team && git config remote.origin.zipnnendpoint " +
                    s3->endpoint())
                .code == 0);
    objects = s3->data() + "/team";
    clone_config = "-c remote.origin.zipnnurl=s3://zipnn/team -c remote.origin.zipnnendpoint=" + s3->endpoint() + " ";
  }
  CommitSavesAndPush(repo);
  const uint64_t before = BytesIn(repo, objects);
  REQUIRE(before > 30000);  // the twelve saves are there (about 48 KB)

  // A plan, and nothing changed.
  const Run plan = repo.Sh("git zipnn retain --remote origin");
  REQUIRE_MESSAGE(plan.code == 0, plan.err);
  CHECK(plan.out.find("would remove 9 exact objects") != std::string::npos);
  CHECK(plan.out.find("run `git zipnn retain --remote origin --yes` to apply it to both") != std::string::npos);
  CHECK(BytesIn(repo, objects) == before);
  CHECK(repo.Sh("git zipnn fsck --all").out.find("retention") == std::string::npos);

  if (kind == Kind::kS3) {
    // S3 has no lock a push respects: removing needs the word that no
    // one pushes meanwhile.
    CHECK(plan.out.find("origin has no lock that pushes respect: applying it needs --pushes-stopped") !=
          std::string::npos);
    const Run refused = repo.Sh("git zipnn retain --remote origin --yes");
    CHECK(refused.code == 1);
    CHECK_MESSAGE(refused.err == "error: remote origin (s3://zipnn/team) has no lock that pushes respect: a "
                                 "teammate's push while retain removes objects there could lose a version that rests "
                                 "on one of them. Make sure no one pushes to it until retain ends, then run `git zipnn "
                                 "retain --remote origin --yes --pushes-stopped`; nothing was changed\n",
                  refused.err);
    CHECK(BytesIn(repo, objects) == before);
    CHECK(repo.Sh("git zipnn fsck --all").out.find("retention") == std::string::npos);
  }
  const Run done =
      repo.Sh(std::string("git zipnn retain --remote origin --yes") + (kind == Kind::kS3 ? " --pushes-stopped" : ""));
  REQUIRE_MESSAGE(done.code == 0, (done.out + done.err));
  CHECK(done.out.find("9 exact objects removed (") != std::string::npos);
  CHECK(done.out.find("9 retention records") != std::string::npos);
  const uint64_t after = BytesIn(repo, objects);
  CAPTURE(before);
  CAPTURE(after);
  // Dropped: at least 30% of the remote's bytes gone. (Thinning these
  // small saves saves less than their records take: they list every
  // tensor's error.)
  if (rest == "drop") CHECK(after * 10 <= before * 7);

  // A fresh clone: the newest three exact; the rest left as pointers with
  // what became of them; a thinned one read with --approximate.
  const std::string remote_url = kind == Kind::kSsh ? url : "hub.git";
  const Run cloned = repo.Sh("cd .. && git clone -q " + clone_config + "-b main " + remote_url + " clone");
  REQUIRE_MESSAGE(cloned.code == 0, cloned.err);
  const std::string in = "cd ../clone && git config user.email c@example.com && git config user.name C && ";
  CHECK(repo.Sh("cmp ../clone/model.safetensors '" + repo.Data(Step(120)) + "'").code == 0);
  REQUIRE(repo.Sh(in + "git fetch -q origin 'refs/steps/*:refs/steps/*'").code == 0);
  for (int s : {100, 110, 120}) {
    CAPTURE(s);
    CHECK(repo.Sh(in + "git zipnn restore model.safetensors --rev refs/steps/s" + std::to_string(s) + " -o ../v -f")
              .code == 0);
    CHECK(repo.Sh("cmp ../v '" + repo.Data(Step(s)) + "'").code == 0);
  }
  const Run old = repo.Sh(in + "git checkout -q refs/steps/s30");
  CHECK(old.code == 0);
  CHECK(old.err.find("by retention on") != std::string::npos);
  CHECK(old.err.find("left as its pointer") != std::string::npos);
  CHECK(repo.Sh(in + "git status --porcelain").out.empty());
  const Run approx = repo.Sh(in + "git zipnn restore --approximate model.safetensors -o ../a");
  if (rest == "thin") {
    CHECK_MESSAGE(approx.code == 0, approx.err);
    // The same approximate bytes as in the repository that thinned it.
    CHECK(repo.Sh("git zipnn restore --approximate model.safetensors --rev refs/steps/s30 -o ../b && cmp ../a ../b")
              .code == 0);
  } else {
    CHECK(approx.code == 1);
    CHECK(approx.err.find("was dropped by retention on") != std::string::npos);
  }
  // Before fetching: what retention took there is no problem, and fsck
  // keeps its records.
  const Run unfetched = repo.Sh(in + "git zipnn fsck --all");
  CHECK_MESSAGE(unfetched.code == 0, (unfetched.out + unfetched.err));
  // (The checkout of step 30 above fetched its record already.)
  CHECK_MESSAGE(unfetched.out.find("8 checkpoints were thinned or dropped by retention on origin (their records are "
                                   "kept here now; fsck again counts them)") != std::string::npos,
                unfetched.out);
  const Run fsck = repo.Sh(in + "git zipnn fetch --all && git zipnn fsck --all");
  CHECK_MESSAGE(fsck.code == 0, (fsck.out + fsck.err));
  CHECK(fsck.out.find(rest == "thin" ? "9 thinned" : "9 dropped") != std::string::npos);
}

TEST_CASE("a folder remote: keep the newest 3, drop the rest, removes at least 30% and a clone restores the kept") {
  CheckRetainOnRemote(Kind::kFolder, "drop");
}

TEST_CASE("a folder remote: thinned versions reach a clone as approximate versions only when asked") {
  CheckRetainOnRemote(Kind::kFolder, "thin");
}

TEST_CASE("a folder remote: versions thinned there and dropped later leave no approximate object behind") {
  Repo repo;
  CommitAndPush(repo, "thin");
  const std::string hub = repo.root() + "/hub.git/zipnn/objects";
  const Run thinned = repo.Sh("git zipnn retain --remote origin --yes");
  REQUIRE_MESSAGE(thinned.code == 0, (thinned.out + thinned.err));
  CHECK(thinned.out.find("9 approximate objects sent") != std::string::npos);
  REQUIRE(ObjectsIn(repo, hub).size() == 12);  // the three kept, the nine approximate

  REQUIRE(repo.Sh("sed -i 's/rest: thin/rest: drop/' .zipnn.yaml && git commit -qam 'drop the rest'").code == 0);
  const Run plan = repo.Sh("git zipnn retain --remote origin");
  REQUIRE_MESSAGE(plan.code == 0, plan.err);
  CHECK(plan.out.find("would remove 0 exact and 9 approximate objects") != std::string::npos);
  // The rule thins nothing now: the plan offers no approximate versions.
  CHECK(plan.out.find("approximate versions") == std::string::npos);
  CHECK(ObjectsIn(repo, hub).size() == 12);
  const Run dropped = repo.Sh("git zipnn retain --remote origin --yes");
  REQUIRE_MESSAGE(dropped.code == 0, (dropped.out + dropped.err));
  CHECK(dropped.out.find("store: ") != std::string::npos);
  CHECK(dropped.out.find("; 0 exact and 9 approximate objects removed\n") != std::string::npos);  // here
  CHECK(dropped.out.find("; 0 exact and 9 approximate objects removed (") != std::string::npos);   // there
  // What is left there is the kept versions' own objects, and the records.
  std::vector<std::string> kept = {IdAt(repo, 100), IdAt(repo, 110), IdAt(repo, 120)};
  std::sort(kept.begin(), kept.end());
  CHECK(ObjectsIn(repo, hub) == kept);
  CHECK(repo.Sh("find '" + hub + "' -name '*.retained' | wc -l").out == "9\n");
  // The local store too: nothing approximate left.
  CHECK(ObjectsIn(repo, repo.File(".git/zipnn/objects")) == kept);
  CloneRestoresKept(repo);
  const Run again = repo.Sh("git zipnn retain --remote origin --yes");
  CHECK_MESSAGE(again.code == 0, again.err);
  CHECK(again.out.find("0 exact objects removed") != std::string::npos);
  // A remote name mistyped is said as one, not read as a path.
  const Run typo = repo.Sh("git zipnn retain --remote orign");
  CHECK(typo.code == 1);
  CHECK(typo.err == "error: there is no remote named 'orign' (did you mean origin?)\n");
  CHECK(repo.Sh("git zipnn retain --remote nosuch").err ==
        "error: there is no remote named 'nosuch' (the remotes are origin)\n");
}

// A retain on the remote killed at the moments its steps begin (the
// first approximate object there, the first record, the first removal)
// and at times spread over a run, each time from the state before it
// (retained here already): every kept version still restores from a
// fresh clone and the remote's store checks clean; the next retain
// finishes the work.
TEST_CASE("a folder remote: a retain killed at any point loses nothing kept there, and the next one finishes") {
  Repo repo;
  CommitAndPush(repo, "thin");
  const std::string hub = repo.root() + "/hub.git/zipnn/objects";
  REQUIRE(repo.Sh("git zipnn retain >/dev/null && cp -a ../repo ../repo-before && cp -a ../hub.git ../hub-before")
              .code == 0);
  const std::string reset = "cd .. && rm -rf repo hub.git && cp -a repo-before repo && cp -a hub-before hub.git";
  const std::string objects = "$(find '" + hub +
                              "' -type f -regextype posix-extended -regex '.*/[0-9a-f]{2}/[0-9a-f]{2}/[0-9a-f]{32}' | "
                              "wc -l)";
  const std::string records = "compgen -G '" + hub + "/*/*/*.retained' >/dev/null";
  // Until the condition holds or the retain has ended.
  auto until = [](const std::string& condition) {
    return "until " + condition + " || ! kill -0 $pid 2>/dev/null; do :; done";
  };
  std::vector<std::string> waits = {until("test " + objects + " -gt 12"), until(records),
                                    until("{ " + records + " && test " + objects + " -lt 21; }")};
  for (const char* seconds : {"0.02", "0.05", "0.08", "0.11", "0.14", "0.17"}) waits.push_back("sleep " + std::string(seconds));
  int killed = 0;
  for (const std::string& wait : waits) {
    CAPTURE(wait);
    REQUIRE(repo.Sh(reset).code == 0);
    const Run kill = repo.Sh("{ setsid git zipnn retain --remote origin --yes >/dev/null 2>&1 & } ; pid=$!; " + wait +
                             "; if kill -9 -- -$pid 2>/dev/null; then echo killed; fi; wait $pid 2>/dev/null; true");
    killed += kill.out == "killed\n" ? 1 : 0;
    const Run fsck = repo.Sh("git zipnn fsck --remote origin");
    CHECK_MESSAGE(fsck.code == 0, (fsck.out + fsck.err));
    CloneRestoresKept(repo);
    const Run done = repo.Sh("git zipnn retain --remote origin --yes");
    REQUIRE_MESSAGE(done.code == 0, (done.out + done.err));
    CHECK(ObjectsIn(repo, hub).size() == 12);  // the three kept, the nine approximate
    CHECK(repo.Sh("find '" + hub + "' -name '*.retained' | wc -l").out == "9\n");
    CloneRestoresKept(repo);
    // A thinned version reaches the clone as the same approximate bytes.
    const Run approx =
        repo.Sh("cd ../clone && git zipnn restore --approximate model.safetensors --rev refs/steps/s30 -o ../a -f");
    CHECK_MESSAGE(approx.code == 0, approx.err);
    CHECK(repo.Sh("git zipnn restore --approximate model.safetensors --rev refs/steps/s30 -o ../b -f && cmp ../a ../b")
              .code == 0);
  }
  MESSAGE(waits.size() << " kill points, " << killed << " killed while running");
  CHECK(killed >= 3);
}

TEST_CASE("over ssh: retain removes on the served store, and a clone restores the kept exactly") {
  CheckRetainOnRemote(Kind::kSsh, "thin");
}

TEST_CASE("S3: retain removes from the bucket, and a clone restores the kept exactly") {
  CheckRetainOnRemote(Kind::kS3, "thin");
}

// Issue 53: the plan reads the git remote's refs, not only this clone's.
TEST_CASE("a folder remote: a teammate's tag pushed since the last fetch keeps its version there") {
  Repo repo;
  CommitAndPush(repo, "drop");
  const std::string hub = repo.root() + "/hub.git/zipnn/objects";
  const std::string step20 = IdAt(repo, 20);
  // A teammate tags step 20's commit, and pushes the tag only.
  REQUIRE(repo.Sh("cd .. && git clone -q --no-checkout hub.git mate && cd mate && "
                  "git fetch -q origin 'refs/steps/*:refs/steps/*' && git tag v1.0 refs/steps/s20 && "
                  "git push -q origin v1.0")
              .code == 0);
  const Run plan = repo.Sh("git zipnn retain --remote origin");
  REQUIRE_MESSAGE(plan.code == 0, plan.err);
  CHECK_MESSAGE(plan.out.find("(tagged v1.0 on origin)") != std::string::npos, plan.out);
  const Run done = repo.Sh("git zipnn retain --remote origin --yes");
  REQUIRE_MESSAGE(done.code == 0, (done.out + done.err));
  CHECK(done.out.find("8 exact objects removed (") != std::string::npos);
  const std::vector<std::string> left = ObjectsIn(repo, hub);
  CHECK(std::find(left.begin(), left.end(), step20) != left.end());
  const Run tagged = repo.Sh("cd ../mate && git zipnn restore model.safetensors --rev v1.0 -o ../v20");
  CHECK_MESSAGE(tagged.code == 0, tagged.err);
  CHECK(repo.Sh("cmp ../v20 '" + repo.Data(Step(20)) + "'").code == 0);

  // A branch whose commit this clone lacks: what it holds is unknown here,
  // so nothing changes until it is fetched.
  REQUIRE(repo.Sh("cd ../mate && git config user.email m@example.com && git config user.name M && "
                  "c=$(git commit-tree -p refs/steps/s120 -m exp 'refs/steps/s120^{tree}') && "
                  "git push -q origin $c:refs/heads/exp")
              .code == 0);
  const std::string exp = repo.Sh("git ls-remote origin refs/heads/exp | cut -c1-12").out;
  const Run refused = repo.Sh("git zipnn retain --remote origin --yes");
  CHECK(refused.code == 1);
  CHECK_MESSAGE(refused.err == "error: remote origin has a ref this clone has not fetched: refs/heads/exp (" +
                                   exp.substr(0, 12) +
                                   "); the versions it holds must stay there, and retain cannot see them: run `git "
                                   "fetch --tags origin` and retain again; nothing was changed\n",
                refused.err);
  // git-zipnn's own refs there (a teammate's tensor listings), which
  // `git fetch` does not bring, hold no checkout: they stop nothing.
  REQUIRE(repo.Sh("cd ../mate && c=$(git commit-tree -m listings 'refs/steps/s120^{tree}') && "
                  "git push -q origin $c:refs/zipnn/mate-listings")
              .code == 0);
  REQUIRE(repo.Sh("git fetch -q --tags origin").code == 0);
  const Run again = repo.Sh("git zipnn retain --remote origin --yes");
  CHECK_MESSAGE(again.code == 0, (again.out + again.err));
}

// Dropped here first, then tagged by a teammate: the rule keeps it now,
// and the remote, which still holds its exact bytes, keeps them.
TEST_CASE("a folder remote: a version dropped here before a teammate tagged it stays there exactly") {
  Repo repo;
  CommitAndPush(repo, "drop");
  const std::string hub = repo.root() + "/hub.git/zipnn/objects";
  const std::string step20 = IdAt(repo, 20);
  REQUIRE(repo.Sh("git zipnn retain </dev/null").code == 0);  // here only
  REQUIRE(repo.Sh("cd .. && git clone -q --no-checkout hub.git mate && cd mate && "
                  "git fetch -q origin 'refs/steps/*:refs/steps/*' && git tag v1.0 refs/steps/s20 && "
                  "git push -q origin v1.0")
              .code == 0);
  REQUIRE(repo.Sh("git fetch -q --tags origin").code == 0);
  const Run done = repo.Sh("git zipnn retain --remote origin --yes");
  REQUIRE_MESSAGE(done.code == 0, (done.out + done.err));
  // Named as the plan and log name it: the commit that brought it in.
  const std::string commit20 = repo.Sh("git log -1 --format='%H %ad %s' --date=short refs/steps/s20 | tr -d '\\n'").out;
  REQUIRE(commit20.size() > 40);
  CHECK_MESSAGE(done.out.find("kept model.safetensors  " + commit20.substr(0, 10) + commit20.substr(40) +
                              " stays on origin: the rules keep it now, though an earlier retain took it here") !=
                    std::string::npos,
                done.out);
  const std::vector<std::string> left = ObjectsIn(repo, hub);
  CHECK(std::find(left.begin(), left.end(), step20) != left.end());
  const Run tagged = repo.Sh("cd ../mate && git zipnn restore model.safetensors --rev v1.0 -o ../v20");
  CHECK_MESSAGE(tagged.code == 0, tagged.err);
  CHECK(repo.Sh("cmp ../v20 '" + repo.Data(Step(20)) + "'").code == 0);
}

}  // namespace
}  // namespace zipnn
