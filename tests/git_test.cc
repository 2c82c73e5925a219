// git-zipnn driven through the real git binary, in temporary repositories
// with their own HOME and GIT_CONFIG_NOSYSTEM=1: install and track, add and
// commit a real trajectory, stored kinds by the policy, git status clean
// after every step, every old commit checked out bit-exact, pointers
// re-added unchanged, and a missing object reported by id and path.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "tests/test_util.h"

namespace zipnn {
namespace {

using testing::Run;
using testing::Slurp;


class Repo {
 public:
  Repo() {
    const char* t = std::getenv("TEST_TMPDIR");
    root_ = std::string(t != nullptr ? t : "/tmp") + "/git-XXXXXX";
    REQUIRE(mkdtemp(root_.data()) != nullptr);
    char cwd[4096];
    REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
    runfiles_ = cwd;
    REQUIRE(Sh("mkdir home && git init -q repo && cd repo && git config user.email t@example.com && "
               "git config user.name T && git config commit.gpgsign false").code == 0);
  }
  // Runs a shell line in the repository (our own literals only).
  Run Sh(const std::string& line) {
    const std::string out = root_ + "/out", err = root_ + "/err";
    const std::string env = "export HOME='" + root_ + "/home' GIT_CONFIG_NOSYSTEM=1 PATH='" + runfiles_ +
                            "/cmd':\"$PATH\"; cd '" + root_ + "' && { [ -d repo ] && cd repo || true; } && ";
    const std::string cmd = "bash -c \"" + Escape(env + line) + "\" >'" + out + "' 2>'" + err + "'";
    const int status = std::system(cmd.c_str());
    return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out), Slurp(err)};
  }
  std::string Data(const std::string& rel) const { return runfiles_ + "/tests/data/" + rel; }
  std::string File(const std::string& rel) const { return root_ + "/repo/" + rel; }

 private:
  static std::string Escape(const std::string& s) {
    std::string r;
    for (char c : s) {
      if (c == '"' || c == '\\' || c == '$' || c == '`') r += '\\';
      r += c;
    }
    return r;
  }
  std::string root_;
  std::string runfiles_;
};

const char* kSteps[] = {"000040", "000080", "000120", "000160", "000200"};

TEST_CASE("a trajectory committed to one path: policy kinds, clean status, exact checkouts") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && "
                  "printf 'base_interval: 3\\n' > .zipnn.yaml && git add .gitattributes .zipnn.yaml && "
                  "git commit -qm setup").code == 0);
  CHECK(repo.Sh("git config filter.zipnn.process").out == "git-zipnn filter-process\n");
  CHECK(repo.Sh("git zipnn track").out == "Tracked patterns:\n    *.safetensors (.gitattributes)\n");
  // Installing again changes nothing.
  REQUIRE(repo.Sh("git zipnn install --local").code == 0);
  CHECK(repo.Sh("git config --get-all filter.zipnn.process | wc -l").out == "1\n");

  for (const char* step : kSteps) {
    CAPTURE(step);
    REQUIRE(repo.Sh("cp '" + repo.Data(std::string("cnn-bf16/step-") + step + ".safetensors") +
                    "' model.safetensors && git add model.safetensors").code == 0);
    const std::string staged = repo.Sh("git status --porcelain").out;
    CHECK((staged == "M  model.safetensors\n" || staged == "A  model.safetensors\n"));
    REQUIRE(repo.Sh(std::string("git commit -qm 'step ") + step + "'").code == 0);
    CHECK(repo.Sh("git status --porcelain").out.empty());
  }
  // git holds pointers, the store holds the objects.
  const Run pointer = repo.Sh("git show HEAD:model.safetensors");
  CHECK(pointer.out.rfind("git-zipnn pointer 1\nid xxh3-128:", 0) == 0);
  CHECK(pointer.out.size() < 200);
  // With base_interval 3: base, delta, delta, base, delta.
  Run kinds = repo.Sh("for c in $(git rev-list --reverse HEAD~5..HEAD); do "
                      "id=$(git show $c:model.safetensors | sed -n 's/^id xxh3-128://p'); "
                      "git zipnn inspect .git/zipnn/objects/${id:0:2}/${id:2:2}/$id | sed -n 's/^kind *//p' | cut -c1-5; "
                      "done");
  CHECK(kinds.out == "base \ndelta\ndelta\nbase \ndelta\n");
  // Every commit checks out to the exact bytes.
  for (int back = 4; back >= 0; --back) {
    CAPTURE(back);
    REQUIRE(repo.Sh("git checkout -q HEAD~" + std::to_string(back) + " -- model.safetensors").code == 0);
    CHECK(Slurp(repo.File("model.safetensors")) ==
          Slurp(repo.Data(std::string("cnn-bf16/step-") + kSteps[4 - back] + ".safetensors")));
  }
  REQUIRE(repo.Sh("git checkout -q HEAD -- model.safetensors").code == 0);
  CHECK(repo.Sh("git status --porcelain").out.empty());
  // A fresh checkout of the whole tree (smudge from scratch) is exact too.
  REQUIRE(repo.Sh("rm model.safetensors && git checkout -q -- . && git status --porcelain").out.empty());
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data("cnn-bf16/step-000200.safetensors")));
}

TEST_CASE("pointers pass clean unchanged; a missing object is named in the error") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.pt' && git add .gitattributes && "
                  "cp '" + repo.Data("pt-cnn/step-000040.pt") + "' a.pt && git add a.pt && git commit -qm one")
              .code == 0);
  const std::string pointer = repo.Sh("git show HEAD:a.pt").out;
  REQUIRE(pointer.find("format pytorch\n") != std::string::npos);
  // A pointer in the work tree cleans to itself.
  REQUIRE(repo.Sh("git show HEAD:a.pt > b.pt && git add b.pt && git commit -qm two").code == 0);
  CHECK(repo.Sh("git show HEAD:b.pt").out == pointer);

  const std::string id = pointer.substr(pointer.find("xxh3-128:") + 9, 32);
  REQUIRE(repo.Sh("rm -f .git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id).code == 0);
  const Run missing = repo.Sh("rm a.pt && git checkout -- a.pt");
  CHECK(missing.code != 0);
  CHECK(missing.err.find("object " + id + " for a.pt is not in the store") != std::string::npos);
}

}  // namespace
}  // namespace zipnn
