// git-zipnn driven through the real git binary, in temporary repositories
// with their own HOME and GIT_CONFIG_NOSYSTEM=1: install and track, add and
// commit a real trajectory, stored kinds by the policy, git status clean
// after every step, every old commit checked out bit-exact, pointers
// re-added unchanged, a missing object reported by id and path, and the
// log and restore commands.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

// Commits the five cnn-bf16 steps to model.safetensors with base_interval 3.
void CommitTrajectory(Repo& repo) {
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && "
                  "printf 'base_interval: 3\\n' > .zipnn.yaml && git add .gitattributes .zipnn.yaml && "
                  "git commit -qm setup").code == 0);
  for (const char* step : kSteps) {
    REQUIRE(repo.Sh("cp '" + repo.Data(std::string("cnn-bf16/step-") + step + ".safetensors") +
                    "' model.safetensors && git add model.safetensors && git commit -qm 'step " + step + "'")
                .code == 0);
  }
}

TEST_CASE("log shows each version's kind, chain depth and sizes, as a table and as JSON") {
  Repo repo;
  CommitTrajectory(repo);
  const Run json = repo.Sh("git zipnn log --json");
  REQUIRE(json.code == 0);
  const nlohmann::json versions = nlohmann::json::parse(json.out);
  REQUIRE(versions.size() == 5);
  // Newest first, as git log lists them.
  const char* kinds[] = {"delta", "base", "delta", "delta", "base"};
  const int depths[] = {1, 0, 2, 1, 0};
  uint64_t stored_total = 0, raw_total = 0;
  for (size_t i = 0; i < versions.size(); ++i) {
    CAPTURE(i);
    const nlohmann::json& v = versions[i];
    CHECK(v["path"] == "model.safetensors");
    CHECK(v["subject"] == std::string("step ") + kSteps[4 - i]);
    CHECK(v["kind"] == kinds[i]);
    CHECK(v["depth"] == depths[i]);
    CHECK(v["raw_bytes"] == Slurp(repo.Data(std::string("cnn-bf16/step-") + kSteps[4 - i] + ".safetensors")).size());
    const std::string id = v["id"];
    const std::string object = repo.File(".git/zipnn/objects/" + id.substr(0, 2) + "/" + id.substr(2, 2) + "/" + id);
    CHECK(v["stored_bytes"] == Slurp(object).size());
    CHECK(v["stored_bytes"] < v["raw_bytes"]);
    stored_total += v["stored_bytes"].get<uint64_t>();
    raw_total += v["raw_bytes"].get<uint64_t>();
    if (v["kind"] == "delta") {
      // A delta's base is the version before it, or the last base.
      CHECK(v["base"] == versions[i + 1]["id"]);
    } else {
      CHECK(v["base"].is_null());
    }
  }
  const Run table = repo.Sh("git zipnn log model.safetensors");
  REQUIRE(table.code == 0);
  CHECK(table.out.rfind("model.safetensors\n", 0) == 0);
  CHECK(table.out.find("delta depth 2") != std::string::npos);
  CHECK(table.out.find("step 000040") != std::string::npos);
  CHECK(table.out.find("in 5 versions") != std::string::npos);
  CHECK(repo.Sh("git zipnn log nothing.safetensors").code != 0);
}

TEST_CASE("restore writes any version bit-exact, to the work tree or elsewhere") {
  Repo repo;
  CommitTrajectory(repo);
  // An old version to another file; the work tree is untouched.
  REQUIRE(repo.Sh("git zipnn restore model.safetensors --rev HEAD~3 -o old.bin").code == 0);
  CHECK(Slurp(repo.File("old.bin")) == Slurp(repo.Data("cnn-bf16/step-000080.safetensors")));
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data("cnn-bf16/step-000200.safetensors")));
  // Into the work tree, from a subfolder; status stays clean.
  REQUIRE(repo.Sh("rm old.bin && mkdir sub && rm model.safetensors && cd sub && "
                  "git zipnn restore ../model.safetensors").code == 0);
  CHECK(Slurp(repo.File("model.safetensors")) == Slurp(repo.Data("cnn-bf16/step-000200.safetensors")));
  CHECK(repo.Sh("git status --porcelain").out.empty());
  // A file git does not hold through git-zipnn is refused.
  const Run refused = repo.Sh("git zipnn restore .zipnn.yaml -o x");
  CHECK(refused.code != 0);
  CHECK(refused.err.find("not stored by git-zipnn") != std::string::npos);
  CHECK(repo.Sh("test -e x").code != 0);
}

}  // namespace
}  // namespace zipnn
