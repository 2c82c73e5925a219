// The filter process and pull where they used to lose a checkout or hang,
// with the real git binary: two spellings of one step in a clone, a plain
// file under a tracked pattern larger than a pipe holds (checkout, clone
// and clean under a timeout, so a deadlock fails instead of hanging), and
// a pull killed while it writes a checkpoint.
#include <doctest/doctest.h>

#include <string>

#include "tests/git_repo.h"
#include "tests/test_util.h"

namespace zipnn {
namespace {

using testing::Repo;
using testing::Run;
using testing::Slurp;

std::string Step(const char* step) { return std::string("cnn-bf16/step-") + step + ".safetensors"; }

TEST_CASE("a clone checks out both files of a series whose steps are equal in value but spelled apart") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install && git zipnn track '*.safetensors' && git add . && git commit -qm setup").code ==
          0);
  REQUIRE(repo.Sh("mkdir run && cp '" + repo.Data(Step("000040")) + "' run/step_100.safetensors && cp '" +
                  repo.Data(Step("000080")) + "' run/step_0100.safetensors && git add run && git commit -qm steps")
              .code == 0);
  const Run clone = repo.Sh("cd .. && git clone -q repo clone");
  CHECK_MESSAGE(clone.code == 0, clone.err);
  CHECK(clone.err.find("was not filtered properly") == std::string::npos);
  CHECK(repo.Sh("cmp ../clone/run/step_100.safetensors '" + repo.Data(Step("000040")) + "'").code == 0);
  CHECK(repo.Sh("cmp ../clone/run/step_0100.safetensors '" + repo.Data(Step("000080")) + "'").code == 0);
  CHECK(repo.Sh("cd ../clone && git status --porcelain").out.empty());
}

// 12 MiB: far more than a pipe holds (64 KiB), and more than the filter
// keeps in memory while it reads ahead (it spills to its scratch folder).
constexpr const char* kPlainBytes = "12582912";

TEST_CASE("a plain file committed before its pattern was tracked checks out, clones and cleans without a deadlock") {
  Repo repo;
  REQUIRE(repo.Sh(std::string("git zipnn install && head -c ") + kPlainBytes +
                  " /dev/urandom > ../plain && "
                  "cp ../plain weights.bin && git add weights.bin && git commit -qm plain && "
                  "git zipnn track '*.bin' >/dev/null && git add .gitattributes && git commit -qm track")
              .code == 0);
  REQUIRE(repo.Sh("git cat-file -s HEAD:weights.bin").out == std::string(kPlainBytes) + "\n");  // not a pointer
  // Smudge passes content that is not a pointer through unchanged. Each
  // command runs under a timeout: 124 means git and the filter blocked.
  REQUIRE(repo.Sh("printf x >> weights.bin").code == 0);
  const Run checkout = repo.Sh("timeout 60 git checkout -- weights.bin");
  CHECK_MESSAGE(checkout.code == 0, checkout.err);
  CHECK(repo.Sh("cmp weights.bin ../plain").code == 0);
  const Run clone = repo.Sh("cd .. && timeout 60 git clone -q repo clone");
  CHECK_MESSAGE(clone.code == 0, clone.err);
  CHECK(repo.Sh("cmp ../clone/weights.bin ../plain").code == 0);
  // The fix fsck advises: clean reads it whole, stores it and stages its
  // pointer.
  const Run renormalize = repo.Sh("cp ../plain weights.bin && timeout 60 git add --renormalize weights.bin");
  CHECK_MESSAGE(renormalize.code == 0, renormalize.err);
  CHECK(testing::IdAt(repo, ":weights.bin").size() == 32);  // a pointer now
  REQUIRE(repo.Sh("git commit -qm renormalized && rm weights.bin && timeout 60 git checkout -- weights.bin").code == 0);
  CHECK(repo.Sh("cmp weights.bin ../plain").code == 0);
  CHECK(repo.Sh("git status --porcelain").out.empty());
}

TEST_CASE("a pull killed while it writes a checkpoint leaves no stray file; the next pull restores and restages all") {
  Repo repo;
  // Three files of 24 MiB each, checked out as pointers; pull restores
  // them in path order, so while b.bin or c.bin is written a.bin is done.
  REQUIRE(
      repo.Sh("git zipnn install >/dev/null && git zipnn track '*.bin' >/dev/null && mkdir ../orig && "
              "for f in a b c; do head -c 25165824 /dev/urandom > ../orig/$f.bin && cp ../orig/$f.bin $f.bin; done && "
              "git add . && git commit -qm three && rm ?.bin && GIT_ZIPNN_SKIP_SMUDGE=1 git checkout -- . && "
              "git status --porcelain")
          .out.empty());
  REQUIRE(repo.Sh("head -c 18 b.bin").out == "git-zipnn pointer ");
  // Kill the pull (its whole process group) as soon as the temporary
  // file of b.bin or c.bin exists, wherever pull keeps it.
  const Run killed = repo.Sh(
      "shopt -s nullglob; setsid git zipnn pull >../pull.out 2>&1 & pid=$!; "
      "while kill -0 $pid 2>/dev/null; do "
      "  temps=([bc].bin.tmp-* .git/zipnn/tmp/checkout-[bc].bin.tmp-*); "
      "  if [ ${#temps[@]} -gt 0 ]; then echo \"caught ${temps[0]}\"; break; fi; "
      "done; kill -KILL -- -$pid; wait $pid; echo \"exit $?\"");
  REQUIRE_MESSAGE(killed.out.find("caught") != std::string::npos, "the pull ended before its temporary file was seen");
  REQUIRE_MESSAGE(killed.out.find("exit 137") != std::string::npos, killed.out);
  // Nothing git would pick up: no untracked file at all.
  const Run status = repo.Sh("git status --porcelain --untracked-files=all");
  CHECK_MESSAGE(status.out.find("??") == std::string::npos, status.out);
  // The next pull finishes the job: every file restored, git status clean.
  const Run pull = repo.Sh("git zipnn pull");
  CHECK_MESSAGE(pull.code == 0, pull.err);
  for (const char* f : {"a", "b", "c"}) {
    CHECK(repo.Sh(std::string("cmp ") + f + ".bin ../orig/" + f + ".bin").code == 0);
  }
  CHECK(repo.Sh("git status --porcelain --untracked-files=all").out.empty());
  // Nor does a copy stay behind in git-zipnn's scratch folder.
  const Run scratch = repo.Sh("ls .git/zipnn/tmp");
  CHECK_MESSAGE(scratch.out.find(".tmp-") == std::string::npos, scratch.out);
}

}  // namespace
}  // namespace zipnn
