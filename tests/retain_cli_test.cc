// `git zipnn retain` against a real git repository: the plan, thinning
// and dropping, what checkout, restore, cat and fsck then do, a
// .zipnn.yaml with a mistake, and retains killed at many points (nothing
// kept is ever lost, and a second run finishes the work).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "tests/git_repo.h"
#include "tests/test_util.h"

namespace zipnn::testing {
namespace {

const char kThin[] =
    "retention:\n"
    "  - checkpoints: '*.safetensors'\n"
    "    keep_newest: 3\n"
    "    rest: thin\n"
    "    precision: relative 4\n";

std::string Step(int s) {
  char name[64];
  std::snprintf(name, sizeof name, "cnn12-bf16/step-%06d.safetensors", s);
  return name;
}

// Twelve saves of one overwritten path, a commit each (refs/steps/s<step>);
// `v50` tags step 50.
void CommitSaves(Repo& repo, const std::string& policy) {
  {
    std::ofstream yaml(repo.File(".zipnn.yaml"));
    yaml << policy;
  }
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && "
                  "git add .gitattributes .zipnn.yaml && git commit -qm setup")
              .code == 0);
  for (int s = 10; s <= 120; s += 10) {
    REQUIRE(repo.Sh("cp '" + repo.Data(Step(s)) + "' model.safetensors && git add model.safetensors && " +
                    "git commit -qm 'step " + std::to_string(s) + "' && git update-ref refs/steps/s" + std::to_string(s) +
                    " HEAD" + (s == 50 ? " && git tag v50" : ""))
                .code == 0);
  }
}

// The commit that brought step `s` in (a ref of its own, not a tag:
// tags keep what they hold).
std::string At(int s) { return "refs/steps/s" + std::to_string(s); }

bool RestoresExactly(Repo& repo, int s) {
  const Run r = repo.Sh("git zipnn restore model.safetensors --rev " + At(s) + " -o ../exact.out -f");
  return r.code == 0 && Slurp(repo.root() + "/exact.out") == Slurp(repo.Data(Step(s)));
}

float Bf16(const std::string& bytes, size_t at) {
  uint32_t bits = (static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + 1])) << 24) |
                  (static_cast<uint32_t>(static_cast<uint8_t>(bytes[at])) << 16);
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

TEST_CASE("retain keeps the newest and the tagged exactly, thins the rest, and readers say what became of them") {
  Repo repo;
  CommitSaves(repo, kThin);
  const Run before = repo.Sh("git zipnn du");
  const Run plan = repo.Sh("git zipnn retain --dry-run");
  REQUIRE_MESSAGE(plan.code == 0, plan.err);
  CHECK(plan.out.find("12 versions: keep 4 exactly, thin 8 (relative 4 mantissa bits), drop 0") != std::string::npos);
  CHECK(plan.out.find("(tagged v50)") != std::string::npos);
  CHECK(plan.out.find("dry run: nothing was changed") != std::string::npos);
  CHECK(plan.out.find("what thinning would store: `git zipnn analyze model.safetensors` (its thinning what-if") !=
        std::string::npos);
  CHECK(repo.Sh("git zipnn du").out == before.out);

  const Run done = repo.Sh("git zipnn retain");
  REQUIRE_MESSAGE(done.code == 0, done.err);
  CHECK(done.out.find("; 8 exact objects removed") != std::string::npos);
  for (int s : {50, 100, 110, 120}) CHECK_MESSAGE(RestoresExactly(repo, s), s);

  // What stays is placed as one series: the oldest version kept after
  // the thinned ones, whose exact base went, and the newest thinned one
  // are deltas (of approximate versions, or of the kept ones), not whole.
  const Run depths = repo.Sh(
      "git zipnn log --json model.safetensors | python3 -c 'import json, sys; "
      "print(\" \".join(\"%s:%d\" % (v[\"subject\"].split()[1], v[\"depth\"]) for v in json.load(sys.stdin)))'");
  INFO(depths.out);
  CHECK(depths.out.find(" 100:0 ") == std::string::npos);
  CHECK(depths.out.find(" 90:0 ") == std::string::npos);
  CHECK(depths.out.find("120:0 ") != std::string::npos);  // the newest stays whole

  const Run log = repo.Sh("git zipnn log model.safetensors");
  CHECK(log.code == 0);
  CHECK(log.out.find("  thin  depth ") != std::string::npos);
  CHECK(log.out.find("[thinned by retention on ") != std::string::npos);
  CHECK(log.out.find("missing") == std::string::npos);
  CHECK(repo.Sh("git zipnn du").out.find("retention records") != std::string::npos);
  const Run listed = repo.Sh("git zipnn ls-files " + At(30));
  CHECK(listed.out.find(" thin    safetensors ") != std::string::npos);
  CHECK(listed.out.find("1 version thinned or dropped by retention") != std::string::npos);

  const Run fsck = repo.Sh("git zipnn fsck --all");
  CHECK_MESSAGE(fsck.code == 0, (fsck.out + fsck.err));
  CHECK(fsck.out.find("every exact one restores exactly (retention: 8 thinned, checked as their approximate "
                      "versions; 0 dropped)") != std::string::npos);

  // A checkout of a thinned version leaves its pointer, and git sees no change.
  const Run checkout = repo.Sh("git checkout -q " + At(30));
  REQUIRE_MESSAGE(checkout.code == 0, checkout.err);
  CHECK(checkout.err.find("was thinned by retention on") != std::string::npos);
  CHECK(checkout.err.find("left as its pointer") != std::string::npos);
  CHECK(Slurp(repo.File("model.safetensors")).rfind("git-zipnn pointer", 0) == 0);
  CHECK(repo.Sh("git status --porcelain").out.empty());
  // status says why, and what reads it (pull cannot write it).
  const Run status = repo.Sh("git zipnn status");
  CHECK_MESSAGE(status.out.find("Checkpoints the work tree holds as their pointers because retention took their exact "
                                "bytes (`git zipnn restore --approximate <path> -o <file>` writes a thinned one's "
                                "approximate bytes):\n        model.safetensors  thinned\n") != std::string::npos,
                status.out);
  CHECK(status.out.find("pull writes them") == std::string::npos);

  // Reading it needs the flag, and the approximate bytes never take the committed file's place.
  const Run refused = repo.Sh("git zipnn restore model.safetensors -o ../a.out");
  CHECK(refused.code == 1);
  CHECK(refused.err.find("its exact bytes are no longer kept (--approximate reads the approximate version)") !=
        std::string::npos);
  const Run in_place = repo.Sh("git zipnn restore --approximate model.safetensors");
  CHECK(in_place.code == 1);
  CHECK(in_place.err.find("name another file with -o") != std::string::npos);
  const Run approx = repo.Sh("git zipnn restore --approximate model.safetensors -o ../a.out");
  REQUIRE_MESSAGE(approx.code == 0, approx.err);
  CHECK(approx.err.find("approximate bytes: version") != std::string::npos);
  CHECK(approx.out.find("restored the approximate version of") != std::string::npos);
  const std::string exact = Slurp(repo.Data(Step(30))), thinned = Slurp(repo.root() + "/a.out");
  REQUIRE(exact.size() == thinned.size());
  CHECK(exact != thinned);
  // Every 2-byte word is either untouched (headers, counters) or a bf16
  // value within 2^-5 of the original, relative.
  uint64_t header = 0;
  std::memcpy(&header, exact.data(), 8);
  CHECK(exact.substr(0, 8 + header) == thinned.substr(0, 8 + header));
  for (size_t i = 8 + header; i + 1 < exact.size(); i += 2) {
    if (exact.compare(i, 2, thinned, i, 2) == 0) continue;
    const double x = Bf16(exact, i), y = Bf16(thinned, i);
    REQUIRE(std::fabs(y - x) <= std::ldexp(std::fabs(x), -5));
  }
  // Nor through -o, however the committed file is spelled.
  for (const char* target : {"model.safetensors", "./model.safetensors", "../repo/model.safetensors"}) {
    CAPTURE(target);
    const Run over = repo.Sh(std::string("git zipnn restore --approximate model.safetensors -f -o ") + target);
    CHECK(over.code == 1);
    CHECK(over.err.find("is a file git tracks here: approximate bytes never take a committed file's place") !=
          std::string::npos);
  }
  CHECK(repo.Sh("git zipnn cat --approximate HEAD:model.safetensors -f -o model.safetensors").code == 1);
  CHECK(Slurp(repo.File("model.safetensors")).rfind("git-zipnn pointer", 0) == 0);
  const Run cat = repo.Sh("git zipnn cat HEAD:model.safetensors -o ../c.out");
  CHECK(cat.code == 1);
  const Run cat_approx = repo.Sh("git zipnn cat --approximate HEAD:model.safetensors -o ../c.out");
  CHECK_MESSAGE(cat_approx.code == 0, cat_approx.err);
  CHECK(Slurp(repo.root() + "/c.out") == thinned);
  // Back to the newest: exact bytes again.
  REQUIRE(repo.Sh("git checkout -q master 2>/dev/null || git checkout -q main").code == 0);
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data(Step(120))));

  // Dropping what was thinned: a reader says so, and --approximate cannot help.
  REQUIRE(repo.Sh("sed -i 's/rest: thin/rest: drop/' .zipnn.yaml && git commit -qam drop").code == 0);
  const Run dropped = repo.Sh("git zipnn retain");
  REQUIRE_MESSAGE(dropped.code == 0, dropped.err);
  CHECK(dropped.out.find("; 0 exact and 8 approximate objects removed") != std::string::npos);
  const Run gone = repo.Sh("git zipnn restore --approximate model.safetensors --rev " + At(30) + " -o ../d.out");
  CHECK(gone.code == 1);
  CHECK(gone.err.find("was dropped by retention on") != std::string::npos);
  CHECK(repo.Sh("git zipnn fsck --all").out.find("0 thinned, checked as their approximate versions; 8 dropped") !=
        std::string::npos);
  CHECK(repo.Sh("git zipnn log model.safetensors").out.find("  drop  depth -  ") != std::string::npos);
  // analyze goes on without what retention took, and says which.
  const Run analyzed = repo.Sh("git zipnn analyze model.safetensors --thin none");
  CHECK_MESSAGE(analyzed.code == 0, analyzed.err);
  CHECK_MESSAGE(analyzed.err.find(" left out: version ") != std::string::npos, analyzed.err);
  CHECK(analyzed.err.find("--approximate") == std::string::npos);
  CHECK(analyzed.out.find("Policy what-if: what the store would hold for these 4 checkpoints") != std::string::npos);
  for (int s : {50, 100, 110, 120}) CHECK_MESSAGE(RestoresExactly(repo, s), s);
}

TEST_CASE("retain changes nothing while .zipnn.yaml has a mistake, or names a version to keep that is not there") {
  Repo repo;
  CommitSaves(repo, "retention:\n  - checkpoints: x\n    keep_newset: 3\n    rest: drop\n");
  const Run typo = repo.Sh("git zipnn retain");
  CHECK(typo.code == 1);
  CHECK(typo.err.find("'retention: keep_newset' is not a retention key") != std::string::npos);
  CHECK(typo.err.find("retain changes nothing until .zipnn.yaml is right") != std::string::npos);
  // Said once, as the error it is, not also as a warning that the
  // defaults hold.
  CHECK(typo.err.find("ignored; the defaults hold") == std::string::npos);
  CHECK(typo.err.rfind("error: ", 0) == 0);
  REQUIRE(repo.Sh("printf 'retention:\\n  - checkpoints: \"*.safetensors\"\\n    rest: drop\\n' > .zipnn.yaml")
              .code == 0);
  const Run named = repo.Sh("git zipnn retain --keep v5O:model.safetensors");
  CHECK(named.code == 1);
  CHECK(named.err.find("--keep names 'v5O:model.safetensors' to keep, which is no tracked checkpoint here") !=
        std::string::npos);
  const Run rev_only = repo.Sh("git zipnn retain -n --keep HEAD~1");
  CHECK(rev_only.code == 1);
  CHECK(rev_only.err.find("name a version as <rev>:<path>, such as HEAD~1:<path>") != std::string::npos);
  // --keep takes one version; a path after it is what to retain.
  const Run before_path = repo.Sh("git zipnn retain -n --keep v50:model.safetensors model.safetensors");
  CHECK_MESSAGE(before_path.code == 0, before_path.err);
  CHECK(before_path.out.find("(named)") != std::string::npos);
  for (int s = 10; s <= 120; s += 10) CHECK_MESSAGE(RestoresExactly(repo, s), s);
}

TEST_CASE("a retain killed at any point loses nothing kept, and the next one finishes the work") {
  Repo repo;
  CommitSaves(repo, kThin);
  for (const char* wait : {"sleep 0.05", "sleep 0.15", "sleep 0.3", "sleep 0.5", "sleep 0.8"}) {
    CAPTURE(wait);
    (void)repo.Sh("{ setsid git zipnn retain >/dev/null 2>&1 & } ; pid=$!; " + std::string(wait) +
                  "; kill -9 -- -$pid 2>/dev/null; wait $pid 2>/dev/null; true");
    for (int s : {50, 100, 110, 120}) CHECK_MESSAGE(RestoresExactly(repo, s), s);
  }
  const Run finish = repo.Sh("git zipnn retain");
  REQUIRE_MESSAGE(finish.code == 0, finish.err);
  const Run fsck = repo.Sh("git zipnn fsck --all");
  CHECK_MESSAGE(fsck.code == 0, (fsck.out + fsck.err));
  CHECK(fsck.out.find("8 thinned") != std::string::npos);
  for (int s : {50, 100, 110, 120}) CHECK_MESSAGE(RestoresExactly(repo, s), s);

  // Damaged records: a checkout still leaves the pointers and goes on;
  // fsck names them; what was kept is untouched.
  REQUIRE(repo.Sh("for r in $(find .git/zipnn/objects -name '*.retained'); do "
                  "printf 'X' | dd of=$r bs=1 seek=30 conv=notrunc status=none; done")
              .code == 0);
  const Run checkout = repo.Sh("git checkout -q " + At(30));
  CHECK_MESSAGE(checkout.code == 0, checkout.err);
  CHECK(checkout.err.find("is damaged: its checksum does not match") != std::string::npos);
  CHECK(checkout.err.find("left as its pointer") != std::string::npos);
  CHECK(repo.Sh("git status --porcelain").out.empty());
  const Run damaged = repo.Sh("git zipnn fsck --all");
  CHECK(damaged.code == 1);
  CHECK(damaged.out.find("retention record of") != std::string::npos);
  for (int s : {50, 100, 110, 120}) CHECK_MESSAGE(RestoresExactly(repo, s), s);
}

// Issue 53: the best step copied to a path no rule covers is the same
// content as the step file a rule drops; it stays for the copy's sake.
TEST_CASE("a version another series holds too stays, though a rule drops it from its own series") {
  Repo repo;
  {
    std::ofstream yaml(repo.File(".zipnn.yaml"));
    yaml << "retention:\n  - checkpoints: 'ckpt/**'\n    keep_newest: 1\n    rest: drop\n";
  }
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && mkdir ckpt release && "
                  "git add .gitattributes .zipnn.yaml && git commit -qm setup")
              .code == 0);
  for (int s : {10, 20, 30}) {
    char name[64];
    std::snprintf(name, sizeof name, "ckpt/step-%06d.safetensors", s);
    REQUIRE(repo.Sh("cp '" + repo.Data(Step(s)) + "' " + name + " && git add " + name + " && git commit -qm " +
                    std::to_string(s))
                .code == 0);
  }
  REQUIRE(repo.Sh("cp ckpt/step-000020.safetensors release/model.safetensors && git add release && "
                  "git commit -qm 'release the best step'")
              .code == 0);
  const Run plan = repo.Sh("git zipnn retain --dry-run");
  REQUIRE_MESSAGE(plan.code == 0, plan.err);
  CHECK_MESSAGE(plan.out.find("3 versions: keep 2 exactly, thin 0, drop 1") != std::string::npos, plan.out);
  CHECK(plan.out.find("(also release/model.safetensors, which no rule covers)") != std::string::npos);

  // Step 10 is still in HEAD's tree, but the newest of its series is
  // kept: nothing to ask about, as a trainer's old step files are what
  // such a rule is for.
  const Run done = repo.Sh("git zipnn retain </dev/null");
  REQUIRE_MESSAGE(done.code == 0, (done.out + done.err));
  CHECK(done.out.find("; 1 exact object removed") != std::string::npos);
  const Run release = repo.Sh("git zipnn restore release/model.safetensors -o ../release.out");
  CHECK_MESSAGE(release.code == 0, release.err);
  CHECK(Slurp(repo.root() + "/release.out") == Slurp(repo.Data(Step(20))));
  const Run step10 = repo.Sh("git zipnn restore ckpt/step-000010.safetensors -o ../s10.out");
  CHECK(step10.code == 1);
  CHECK(step10.err.find("was dropped by retention on") != std::string::npos);
  const Run fsck = repo.Sh("git zipnn fsck --all");
  CHECK_MESSAGE(fsck.code == 0, (fsck.out + fsck.err));
}

TEST_CASE("a rule that would drop the version HEAD checks out says so, and drops it only when told") {
  Repo repo;
  CommitSaves(repo, "retention:\n  - checkpoints: '*.safetensors'\n    rest: drop\n");
  // Named as `git zipnn log` names it: the commit that brought it in.
  const std::string head = repo.Sh("git log -1 --format='%H %ad %s' --date=short | tr -d '\\n'").out;
  REQUIRE(head.size() > 52);
  const std::string named = head.substr(0, 10) + head.substr(40);
  const Run refused = repo.Sh("git zipnn retain </dev/null");
  CHECK(refused.code == 1);
  CHECK_MESSAGE(
      refused.err == "error: the rules drop the version HEAD checks out:\n  model.safetensors  " + named +
                         " (rule '*.safetensors')\nrun `git zipnn retain --yes` to drop it anyway, or keep it "
                         "with `--keep HEAD:<path>` (or keep_newest in the rule); nothing was changed\n",
      refused.err);
  for (int s = 10; s <= 120; s += 10) CHECK_MESSAGE(RestoresExactly(repo, s), s);
  const Run plan = repo.Sh("git zipnn retain --dry-run");
  CHECK(plan.code == 0);
  CHECK(plan.out.find("note: this plan drops what HEAD checks out:\n  model.safetensors  " + named) !=
        std::string::npos);
  CHECK(plan.out.find("\n  drop model.safetensors  " + named + "\n") != std::string::npos);
  // Kept by name, HEAD's version stays and the rest go.
  const Run kept = repo.Sh("git zipnn retain --keep HEAD:model.safetensors </dev/null");
  REQUIRE_MESSAGE(kept.code == 0, (kept.out + kept.err));
  CHECK(kept.out.find("; 10 exact objects removed") != std::string::npos);  // v50 is tagged
  CHECK(RestoresExactly(repo, 120));
  // Told to, it goes too.
  const Run told = repo.Sh("git zipnn retain --yes </dev/null");
  REQUIRE_MESSAGE(told.code == 0, (told.out + told.err));
  CHECK(told.out.find("; 1 exact object removed") != std::string::npos);
  CHECK(told.out.find("note: without --remote, --yes only lets this retain drop what HEAD checks out without "
                      "asking; no remote changes") != std::string::npos);
  CHECK(!RestoresExactly(repo, 120));
}

// Two repositories sharing one store, each with its own rule, retain at
// once: each keeps exactly what it or the other still needs.
TEST_CASE("two retains at once on one shared store: each keeps what either still needs") {
  Repo repo;
  REQUIRE(repo.Sh("git config zipnn.storepath \"$PWD/../shared\"").code == 0);
  CommitSaves(repo, "retention:\n  - checkpoints: '*.safetensors'\n    keep_newest: 3\n    keep_tagged: false\n"
                    "    rest: drop\n");
  REQUIRE(repo.Sh("cd .. && git clone -q --no-checkout repo other && cd other && "
                  "git config zipnn.storepath \"$PWD/../shared\" && git config user.email o@example.com && "
                  "git config user.name O && git fetch -q origin 'refs/steps/*:refs/steps/*' && git checkout -q master "
                  "2>/dev/null || git checkout -q main")
              .code == 0);
  REQUIRE(repo.Sh("cd ../other && git zipnn install --local && sed -i 's/keep_newest: 3/keep_newest: 6/' .zipnn.yaml && "
                  "git commit -qam 'keep six'")
              .code == 0);
  const Run both = repo.Sh(
      "{ git zipnn retain --yes >../a.log 2>&1 & a=$!; (cd ../other && git zipnn retain --yes >../b.log 2>&1) & b=$!; "
      "wait $a; ra=$?; wait $b; rb=$?; echo $ra $rb; }");
  CHECK_MESSAGE(both.out == "0 0\n", (both.err + Slurp(repo.root() + "/a.log") + Slurp(repo.root() + "/b.log")));
  for (int s : {100, 110, 120}) CHECK_MESSAGE(RestoresExactly(repo, s), s);
  for (int s : {70, 80, 90, 100, 110, 120}) {
    CAPTURE(s);
    const Run r = repo.Sh("cd ../other && git zipnn restore model.safetensors --rev " + At(s) + " -o ../o.out -f");
    CHECK_MESSAGE(r.code == 0, r.err);
    CHECK(Slurp(repo.root() + "/o.out") == Slurp(repo.Data(Step(s))));
  }
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);
  CHECK(repo.Sh("cd ../other && git zipnn fsck --all").code == 0);
}

}  // namespace
}  // namespace zipnn::testing
