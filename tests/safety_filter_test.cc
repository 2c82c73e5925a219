// The filter process and pull where they used to lose a checkout or hang,
// with the real git binary: two spellings of one step in a clone.
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

}  // namespace
}  // namespace zipnn
