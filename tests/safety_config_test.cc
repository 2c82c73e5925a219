// What a path in git config or a committed .zipnn.yaml can do, with the
// real git binary: a relative or "~" zipnn.storepath names one store from
// any folder and for every repository that reads it (gc above all), and a
// hostile series pattern costs a warning, never a git command.
#include <doctest/doctest.h>

#include <string>

#include "tests/git_repo.h"

namespace zipnn::testing {
namespace {

const char kObjects[] = "find \"$HOME/../store\" -type f -path '*/[0-9a-f][0-9a-f]/[0-9a-f][0-9a-f]/*' ! -name '*.base' | wc -l";

// Makes the objects of the store at `store` (a shell word) old enough for
// `gc --keep-recent 0` to weigh them.
std::string Age(const std::string& store) {
  return "find " + store + " -type f -path '*/[0-9a-f][0-9a-f]/[0-9a-f][0-9a-f]/*' -exec touch -d '2 days ago' {} +";
}

TEST_CASE("two repositories sharing a store through relative paths: gc in one keeps what the other needs") {
  Repo repo;
  // repo/ and deep/b/ name one folder, $HOME/../store, each from its own
  // top: gc in repo/ must read b's "../../store" from b, not from repo/.
  const Run setup = repo.Sh(
      "git config zipnn.storepath ../store && git zipnn install --local && git zipnn track '*.safetensors' && "
      "cp '" +
      repo.Data("cnn12-bf16/" + Step12(0)) +
      "' m.safetensors && git add . && git commit -qm a && "
      "git init -q ../deep/b && cd ../deep/b && git config user.email b@example.com && git config user.name B && "
      "git config zipnn.storepath ../../store && git zipnn install --local && git zipnn track '*.safetensors' && "
      "cp '" +
      repo.Data("cnn-fp32/step-000040.safetensors") + "' x.safetensors && git add . && git commit -qm b");
  REQUIRE_MESSAGE(setup.code == 0, setup.err);
  REQUIRE(repo.Sh(kObjects).out == "2\n");
  CHECK(repo.Sh("test -e .git/zipnn/objects || test -e ../deep/b/.git/zipnn/objects").code != 0);
  // The registry names each repository by its absolute git folder.
  const Run registry = repo.Sh("cat \"$HOME\"/../store/repositories/*");
  CHECK(registry.out.find("/repo/.git\n") != std::string::npos);
  CHECK(registry.out.find("/deep/b/.git\n") != std::string::npos);
  CHECK(repo.Sh("grep -hv '^/' \"$HOME\"/../store/repositories/*").out.empty());
  REQUIRE(repo.Sh(Age("\"$HOME/../store\"")).code == 0);
  const Run gc = repo.Sh("git zipnn gc --keep-recent 0");
  CHECK_MESSAGE(gc.code == 0, gc.err);
  CHECK(gc.out.find("the store is shared: keeping what ") == 0);
  CHECK(gc.out.find("removed 0 objects (0 B) and 0 leftover files; kept 2 (needed by 2 pointers,") !=
        std::string::npos);
  CHECK(repo.Sh(kObjects).out == "2\n");
  CHECK(repo.Sh("cat \"$HOME\"/../store/repositories/*").out == registry.out);
  const Run fsck = repo.Sh("cd ../deep/b && git zipnn fsck");
  CHECK_MESSAGE(fsck.code == 0, fsck.err);
  REQUIRE(repo.Sh("cd ../deep/b && rm x.safetensors && git checkout -q -- x.safetensors").code == 0);
  CHECK(Slurp(repo.File("../deep/b/x.safetensors")) == Slurp(repo.Data("cnn-fp32/step-000040.safetensors")));
  // A clone of b, which sets no store path, fetches its checkout from b's
  // store, read as b reads it.
  const Run clone = repo.Sh(
      "git zipnn install --global >/dev/null && cd .. && git clone -q deep/b c && cd c && "
      "git status --porcelain");
  CHECK_MESSAGE(clone.code == 0, clone.err);
  CHECK(clone.out.empty());
  CHECK(Slurp(repo.File("../c/x.safetensors")) == Slurp(repo.Data("cnn-fp32/step-000040.safetensors")));
}

TEST_CASE("commands run from a subfolder use the repository's store") {
  Repo repo;
  const Run setup = repo.Sh(
      "git config zipnn.storepath ../store && git zipnn install --local && git zipnn track '*.safetensors' && "
      "mkdir -p sub/deeper && cp '" +
      repo.Data("cnn12-bf16/" + Step12(0)) +
      "' sub/deeper/m.safetensors && "
      "cd sub/deeper && git add . ../../.gitattributes && git commit -qm a");
  REQUIRE_MESSAGE(setup.code == 0, setup.err);
  REQUIRE(repo.Sh(kObjects).out == "1\n");
  const Run fsck = repo.Sh("cd sub/deeper && git zipnn fsck");
  CHECK_MESSAGE(fsck.code == 0, fsck.err);
  const Run restore = repo.Sh("cd sub && git zipnn restore deeper/m.safetensors -o ../out.safetensors");
  CHECK_MESSAGE(restore.code == 0, restore.err);
  CHECK(Slurp(repo.File("out.safetensors")) == Slurp(repo.Data("cnn12-bf16/" + Step12(0))));
  // A second version added from the subfolder goes to the same store.
  REQUIRE(repo.Sh("cd sub/deeper && cp '" + repo.Data("cnn12-bf16/" + Step12(1)) +
                  "' m.safetensors && git add m.safetensors && git commit -qm b")
              .code == 0);
  CHECK(repo.Sh(kObjects).out == "2\n");
  // No store was made relative to a subfolder.
  CHECK(repo.Sh("find .. -name repositories -type d | wc -l").out == "1\n");
  REQUIRE(repo.Sh(Age("\"$HOME/../store\"")).code == 0);
  const Run gc = repo.Sh("cd sub/deeper && git zipnn gc --keep-recent 0");
  CHECK_MESSAGE(gc.code == 0, gc.err);
  CHECK(repo.Sh(kObjects).out == "2\n");
  CHECK(repo.Sh("rm sub/deeper/m.safetensors && git checkout -q -- sub && git zipnn fsck").code == 0);
}

TEST_CASE("a '~/' store path is in the home folder, never a '~' folder in the work tree") {
  Repo repo;
  const Run setup = repo.Sh(
      "git config zipnn.storepath '~/zstore' && git zipnn install --local && git zipnn track '*.safetensors' && "
      "cp '" +
      repo.Data("cnn12-bf16/" + Step12(0)) + "' m.safetensors && git add . && git commit -qm a");
  REQUIRE_MESSAGE(setup.code == 0, setup.err);
  CHECK(repo.Sh("find \"$HOME/zstore\" -type f -path '*/[0-9a-f][0-9a-f]/[0-9a-f][0-9a-f]/*' ! -name '*.base' | wc -l").out == "1\n");
  CHECK(repo.Sh("test -e '~'").code != 0);
  // git clean -fdx takes nothing of the store.
  REQUIRE(repo.Sh("git clean -qfdx && rm m.safetensors && git checkout -q -- m.safetensors").code == 0);
  CHECK(Slurp(repo.File("m.safetensors")) == Slurp(repo.Data("cnn12-bf16/" + Step12(0))));
  // A '~' folder an older git-zipnn made in the work tree is pointed out.
  const Run old = repo.Sh("mkdir -p '~/zstore' && git zipnn fsck");
  CHECK_MESSAGE(old.code == 0, old.err);
  CHECK(old.err.find("git-zipnn: warning: zipnn.storepath '~/zstore' is the folder /") != std::string::npos);
  CHECK(old.err.find("/home/zstore; older versions of git-zipnn took it for /") != std::string::npos);
  CHECK(old.err.find("/repo/~/zstore, which still exists: move what it holds into the store") != std::string::npos);
}

TEST_CASE("a committed series pattern of a million stars costs a warning, never a git command") {
  Repo repo;
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && "
                  "{ printf \"series: ['\"; head -c 1000000 /dev/zero | tr '\\0' '*'; printf \"{step}']\\n\"; } "
                  "> .zipnn.yaml && git add .zipnn.yaml .gitattributes && git commit -qm setup")
              .code == 0);
  REQUIRE(repo.Sh("wc -c < .zipnn.yaml").out == "1000019\n");
  const Run add = repo.Sh("cp '" + repo.Data("cnn12-bf16/" + Step12(0)) + "' '" + repo.Data("cnn12-bf16/" + Step12(1)) +
                          "' . && git add . && git commit -qm a");
  CHECK_MESSAGE(add.code == 0, add.err);
  CHECK(add.err.find("/repo/.zipnn.yaml: series pattern '" + std::string(40, '*') +
                     "...' is 1000006 characters long; at most 1000 are allowed") != std::string::npos);
  CHECK(add.err.size() < 2000);  // the pattern is not repeated whole
  const Run status = repo.Sh("rm *.safetensors && git checkout -q -- . && git status --porcelain");
  CHECK_MESSAGE(status.code == 0, status.err);
  CHECK(status.out.empty());
  CHECK(Slurp(repo.File(Step12(1))) == Slurp(repo.Data("cnn12-bf16/" + Step12(1))));
  const Run log = repo.Sh("git zipnn log " + Step12(1));
  CHECK_MESSAGE(log.code == 0, log.err);
}

}  // namespace
}  // namespace zipnn::testing
