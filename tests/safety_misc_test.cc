// Safety with the real git binary: no string a user or a repository gives
// is ever read as an option, by git or by git-zipnn (a revision such as
// "--output=F..HEAD", a path such as "--html=/home/me/notes.txt"); and gc
// removes from a store folder only the files git-zipnn itself writes
// there, warning about any others.
#include <doctest/doctest.h>

#include <string>

#include "tests/git_repo.h"

namespace zipnn::testing {
namespace {

constexpr char kPrecious[] = "someone's work\n";

// Writes kPrecious to `path` (in the repository's folder, or absolute).
void WritePrecious(Repo& repo, const std::string& path) {
  REQUIRE(repo.Sh("printf \"someone's work\\n\" > '" + path + "'").code == 0);
}

// ---- Option injection ----

TEST_CASE("analyze refuses a --rev that git would read as an option, and git writes no file") {
  Repo repo;
  CommitTrajectory(repo);
  // git log --output=victim..HEAD would truncate victim..HEAD and write
  // the log there.
  for (const std::string rev : {"--rev=--output=victim..HEAD", "--rev --output=victim..HEAD"}) {
    CAPTURE(rev);
    WritePrecious(repo, "victim..HEAD");
    const Run run = repo.Sh("git zipnn analyze " + rev + " model.safetensors");
    CHECK(run.code != 0);
    CHECK(run.err.find("--rev '--output=victim..HEAD' is not a revision: a revision never starts with '-', which "
                       "git would read as an option") != std::string::npos);
    CHECK(Slurp(repo.File("victim..HEAD")) == kPrecious);
  }
  // Either end of a range, and an end git does not know, named before
  // git log runs.
  CHECK(repo.Sh("git zipnn analyze --rev=HEAD~2..--output=x model.safetensors").err.find("is not a revision") !=
        std::string::npos);
  CHECK(repo.Sh("git zipnn analyze --rev=nope..HEAD model.safetensors").err.find(
            "--rev no revision 'nope' in this repository (in the range 'nope..HEAD')") != std::string::npos);
  // A real range still works.
  CHECK(repo.Sh("git zipnn analyze --rev=HEAD~2..HEAD model.safetensors").code == 0);
}

TEST_CASE("cat, show and diff refuse a revision that starts with '-'; git show writes no file") {
  Repo repo;
  CommitTrajectory(repo);
  // A path of "..": read by `git show <spec>`, where --output=v would
  // make git write the file "v:..".
  WritePrecious(repo, "v:..");
  const Run cat = repo.Sh("git zipnn cat -- '--output=v:..'");
  CHECK(cat.code != 0);
  CHECK(cat.err.find("'--output=v' is not a revision") != std::string::npos);
  const Run show = repo.Sh("git zipnn show -- '--output=v:..'");
  CHECK(show.code != 0);
  CHECK(show.err.find("'--output=v' is not a revision") != std::string::npos);
  const Run diff = repo.Sh("git zipnn diff -- '--output=v:..' HEAD:model.safetensors");
  CHECK(diff.code != 0);
  CHECK(diff.err.find("'--output=v' is not a revision") != std::string::npos);
  CHECK(Slurp(repo.File("v:..")) == kPrecious);
  CHECK(repo.Sh("git zipnn ls-files -- --all").err.find("'--all' is not a revision") != std::string::npos);
}

TEST_CASE("paths that start with '-' are paths after --, and git's diff driver hands its path so") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && git add .gitattributes && "
                  "git commit -qm setup && mkdir -- --all && cp -- '" + repo.Data("cnn-bf16/step-000040.safetensors") +
                  "' --all/model.safetensors && git add -- --all && git commit -qm one")
              .code == 0);
  // Every command that takes paths takes them after "--".
  CHECK(repo.Sh("git zipnn log -- --all/model.safetensors").out.find("--all/model.safetensors") != std::string::npos);
  CHECK(repo.Sh("git zipnn cat --list -- --all/model.safetensors").out.find("c1.weight") != std::string::npos);
  CHECK(repo.Sh("git zipnn show -- --all/model.safetensors").code == 0);
  CHECK(repo.Sh("git zipnn restore -o out.safetensors -- --all/model.safetensors && "
                "cmp -- out.safetensors --all/model.safetensors").code == 0);
  // git runs the diff driver with the path first: read as a path, not as
  // diff's --all.
  REQUIRE(repo.Sh("cp -- '" + repo.Data("cnn-bf16/step-000080.safetensors") + "' --all/model.safetensors").code == 0);
  const Run diff = repo.Sh("git diff");
  CHECK(diff.code == 0);
  CHECK(diff.out.find("--- a/--all/model.safetensors") != std::string::npos);
  CHECK(diff.out.find("c1.weight") != std::string::npos);
}

}  // namespace
}  // namespace zipnn::testing
