// The filter process and pull where they used to lose a checkout or hang,
// with the real git binary: two spellings of one step in a clone, and a
// plain file under a tracked pattern larger than a pipe holds (checkout,
// clone and clean under a timeout, so a deadlock fails instead of
// hanging).
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
  REQUIRE(repo.Sh("git zipnn install && git zipnn track '*.safetensors' && git add . && git commit -qm setup").code == 0);
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
  REQUIRE(repo.Sh(std::string("git zipnn install && head -c ") + kPlainBytes + " /dev/urandom > ../plain && "
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
  CHECK(repo.Sh("git show :weights.bin").out.rfind("git-zipnn pointer 1\n", 0) == 0);
  REQUIRE(repo.Sh("git commit -qm renormalized && rm weights.bin && timeout 60 git checkout -- weights.bin").code == 0);
  CHECK(repo.Sh("cmp weights.bin ../plain").code == 0);
  CHECK(repo.Sh("git status --porcelain").out.empty());
}

}  // namespace
}  // namespace zipnn
