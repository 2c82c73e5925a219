// Checkpoints larger than zipnn.checkoutOutsideAbove are not handed to
// git by smudge (git holds each file a filter hands it whole in memory):
// smudge checks out their pointers and names them, and git-zipnn's
// post-checkout and post-merge hooks write them once git is done, the
// index left as git leaves it after a checkout. Through the real git
// binary: clone, checkout, pull (a merge), reset, a hook of another
// program, install and uninstall.
#include <doctest/doctest.h>

#include <string>

#include "tests/git_repo.h"

namespace zipnn::testing {
namespace {

// The trajectory committed and pushed to ../hub.git (a repository on a
// path: its store is the remote's), with install run globally.
void CommitToHub(Repo& repo) {
  CommitTrajectory(repo);
  REQUIRE(repo.Sh("git zipnn install >/dev/null && git init -q --bare ../hub.git && git remote add origin ../hub.git "
                  "&& git push -q origin HEAD:main")
              .code == 0);
}

std::string Step(Repo& repo, const char* step) { return repo.Data(std::string("cnn-bf16/step-") + step + ".safetensors"); }

// That the work tree of ../<clone> holds `step`'s checkpoint and git sees
// nothing changed without looking at content: the index records the
// file as it is (diff-files compares what the index recorded of it).
void CheckWritten(Repo& repo, const std::string& clone, const char* step) {
  CHECK(repo.Sh("cmp ../" + clone + "/model.safetensors '" + Step(repo, step) + "'").code == 0);
  CHECK(repo.Sh("cd ../" + clone + " && git diff-files --quiet").code == 0);
  CHECK(repo.Sh("cd ../" + clone + " && git status --porcelain").out.empty());
}

TEST_CASE("a checkpoint over checkoutOutsideAbove is written after git's clone, checkout and merge, the index as git's") {
  Repo repo;
  CommitToHub(repo);
  // A clone: the filter writes the hooks into the new repository as it
  // starts, and git runs post-checkout once its checkout is done.
  const Run cloned = repo.Sh("cd .. && git -c zipnn.checkoutOutsideAbove=50k clone -q -b main hub.git clone");
  REQUIRE_MESSAGE(cloned.code == 0, cloned.err);
  CHECK(cloned.err.find("git-zipnn: checkpoints over 50.0 KiB are written once git is done, so that git never "
                        "holds one in memory; if one stays a pointer, `git zipnn pull` writes it\n") !=
        std::string::npos);
  CHECK(cloned.err.find("git-zipnn: wrote model.safetensors\n") != std::string::npos);
  CheckWritten(repo, "clone", "000200");
  CHECK(repo.Sh("cd ../clone && git ls-files -s model.safetensors").out ==
        repo.Sh("git ls-files -s model.safetensors").out);
  CHECK(repo.Sh("test -e \"$(cd ../clone && git rev-parse --git-path zipnn/checkout-outside)\"").code != 0);

  // An older commit, then back.
  REQUIRE(repo.Sh("cd ../clone && git config zipnn.checkoutOutsideAbove 50k").code == 0);
  Run checkout = repo.Sh("cd ../clone && git checkout -q HEAD~3");
  REQUIRE_MESSAGE(checkout.code == 0, checkout.err);
  CHECK(checkout.err.find("git-zipnn: wrote model.safetensors\n") != std::string::npos);
  CheckWritten(repo, "clone", "000080");
  REQUIRE(repo.Sh("cd ../clone && git checkout -q main").code == 0);
  CheckWritten(repo, "clone", "000200");

  // A pull that merges a teammate's save: post-merge writes it.
  REQUIRE(repo.Sh("cp '" + Step(repo, "000040") + "' model.safetensors && git add model.safetensors && "
                  "git commit -qm again && git push -q origin HEAD:main")
              .code == 0);
  const Run pulled = repo.Sh("cd ../clone && git pull -q --no-rebase origin main");
  REQUIRE_MESSAGE(pulled.code == 0, pulled.err);
  CHECK(pulled.err.find("git-zipnn: wrote model.safetensors\n") != std::string::npos);
  CheckWritten(repo, "clone", "000040");

  // A reset runs no hook: the pointer stays, said so, and pull writes it.
  const Run reset = repo.Sh("cd ../clone && git reset -q --hard HEAD~1");
  REQUIRE(reset.code == 0);
  CHECK(reset.err.find("`git zipnn pull`") != std::string::npos);
  CHECK(repo.Sh("head -c 18 ../clone/model.safetensors").out == "git-zipnn pointer ");
  CHECK(repo.Sh("cd ../clone && git zipnn status").out.find(
            "Checkpoints the work tree holds as their pointers (git zipnn pull writes them):\n"
            "        model.safetensors\n") != std::string::npos);
  REQUIRE(repo.Sh("cd ../clone && git zipnn pull -q").code == 0);
  CHECK(repo.Sh("cd ../clone && git zipnn status").out.find("as their pointers") == std::string::npos);
  CheckWritten(repo, "clone", "000200");

  // Below the size (the default is 1 GiB), smudge writes through git as
  // before, and nothing is left for the hooks.
  const Run plain = repo.Sh("cd .. && git clone -q -b main hub.git plain");
  REQUIRE(plain.code == 0);
  CHECK(plain.err.find("wrote model.safetensors") == std::string::npos);
  CHECK(plain.err.find("checkoutOutsideAbove") == std::string::npos);
  CheckWritten(repo, "plain", "000040");
  // Nor with the setting 0, nor when git is told to leave pointers.
  Run off = repo.Sh("cd ../plain && git -c zipnn.checkoutOutsideAbove=0 checkout -q HEAD~1");
  CHECK(off.err.find("checkoutOutsideAbove") == std::string::npos);
  CheckWritten(repo, "plain", "000200");
  off = repo.Sh("cd ../plain && GIT_ZIPNN_SKIP_SMUDGE=1 git -c zipnn.checkoutOutsideAbove=50k checkout -q main");
  CHECK(off.err.find("wrote") == std::string::npos);
  CHECK(repo.Sh("head -c 18 ../plain/model.safetensors").out == "git-zipnn pointer ");

  // git-zipnn uninstalled and gone from PATH, the hooks the filter wrote
  // stand aside: a checkout goes on as plain git's, saying nothing.
  REQUIRE(repo.Sh("cd / && git zipnn uninstall --global >/dev/null").code == 0);
  const Run bare_git = repo.Sh("cd ../clone && PATH=/usr/bin:/bin git checkout -q -b elsewhere");
  CHECK_MESSAGE(bare_git.code == 0, bare_git.err);
  CHECK_MESSAGE(bare_git.err.empty(), bare_git.err);
}

TEST_CASE("with another program's post-checkout hook, large checkpoints go through git; install chains both") {
  Repo repo;
  CommitToHub(repo);
  REQUIRE(repo.Sh("cd .. && git clone -q -b main hub.git clone && cd clone && git config zipnn.checkoutOutsideAbove "
                  "50k && printf '#!/bin/sh\\necho theirs >> \"$(git rev-parse --git-dir)/ran\"\\n' > "
                  ".git/hooks/post-checkout && chmod +x .git/hooks/post-checkout")
              .code == 0);
  // Ours is not there to write them: smudge writes them through git.
  Run checkout = repo.Sh("cd ../clone && git checkout -q HEAD~3");
  REQUIRE_MESSAGE(checkout.code == 0, checkout.err);
  CHECK(checkout.err.find("checkoutOutsideAbove") == std::string::npos);
  CheckWritten(repo, "clone", "000080");
  CHECK(repo.Sh("cat ../clone/.git/ran").out == "theirs\n");
  // install keeps theirs beside ours and runs it after; uninstall puts it
  // back.
  const Run installed = repo.Sh("cd ../clone && git zipnn install --local");
  REQUIRE_MESSAGE(installed.code == 0, installed.err);
  CHECK(installed.out.find("kept the post-checkout hook that was there as ") != std::string::npos);
  checkout = repo.Sh("cd ../clone && git checkout -q main");
  REQUIRE_MESSAGE(checkout.code == 0, checkout.err);
  CHECK(checkout.err.find("git-zipnn: wrote model.safetensors\n") != std::string::npos);
  CheckWritten(repo, "clone", "000200");
  CHECK(repo.Sh("cat ../clone/.git/ran").out == "theirs\ntheirs\n");
  const Run removed = repo.Sh("cd ../clone && git zipnn uninstall --local");
  REQUIRE_MESSAGE(removed.code == 0, removed.err);
  CHECK(removed.out.find("pre-push, post-checkout, post-merge and pre-commit hooks removed from ") !=
        std::string::npos);
  CHECK(repo.Sh("grep -q theirs ../clone/.git/hooks/post-checkout").code == 0);
}

}  // namespace
}  // namespace zipnn::testing
