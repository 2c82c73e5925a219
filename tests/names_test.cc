// Checkpoints whose names git quotes in its listings (core.quotePath:
// bytes outside ASCII, double quotes), through every command that lists
// or resolves paths, with the real git binary. A quoted listing names no
// file, so a command that read one skipped the checkpoint without a word.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/git_repo.h"

namespace zipnn {
namespace {

using testing::Repo;
using testing::Run;

const std::string kQuoted = "mod\xc3\xa8le/ckpt \"1\".safetensors";          // modèle/ckpt "1".safetensors
const std::string kJapanese = "\xe6\x97\xa5\xe6\x9c\xac/model.safetensors";  // 日本/model.safetensors

std::string Q(const std::string& s) { return "'" + s + "'"; }  // our names hold no single quote

std::string Step(const char* step) { return std::string("cnn-bf16/step-") + step + ".safetensors"; }

// Three versions of kQuoted (steps 40, 80, 120) and one of kJapanese
// (step 200), committed with core.quotePath on, as git ships it.
void CommitNames(Repo& repo) {
  REQUIRE(repo.Sh("git config core.quotePath true && git zipnn install --local && "
                  "git zipnn track '*.safetensors' && git add .gitattributes && git commit -qm setup && "
                  "mkdir -p \"$(dirname " +
                  Q(kQuoted) + ")\" \"$(dirname " + Q(kJapanese) + ")\"")
              .code == 0);
  for (const char* step : {"000040", "000080", "000120"}) {
    REQUIRE(repo.Sh("cp '" + repo.Data(Step(step)) + "' " + Q(kQuoted) + " && git add " + Q(kQuoted) +
                    " && git commit -qm 'step " + step + "'")
                .code == 0);
  }
  REQUIRE(repo.Sh("cp '" + repo.Data(Step("000200")) + "' " + Q(kJapanese) + " && git add " + Q(kJapanese) +
                  " && git commit -qm japanese")
              .code == 0);
  // git itself quotes both in its plain listings.
  const std::string listed = repo.Sh("git ls-files").out;
  REQUIRE(listed.find("\"mod\\303\\250le/ckpt \\\"1\\\".safetensors\"\n") != std::string::npos);
  REQUIRE(listed.find("\"\\346\\227\\245\\346\\234\\254/model.safetensors\"\n") != std::string::npos);
}

TEST_CASE("log, show, analyze, repack, restore, ls-files and fsck see checkpoints whose names git quotes") {
  Repo repo;
  CommitNames(repo);

  Run ls = repo.Sh("git zipnn ls-files");
  REQUIRE(ls.code == 0);
  CHECK(ls.out.find("  " + kQuoted + "\n") != std::string::npos);
  CHECK(ls.out.find("  " + kJapanese + "\n") != std::string::npos);
  CHECK(ls.out.find("2 checkpoints at HEAD") != std::string::npos);

  // Every tracked path, then one named on the command line.
  Run json = repo.Sh("git zipnn log --json");
  REQUIRE(json.code == 0);
  int quoted = 0, japanese = 0;
  for (const nlohmann::json& v : nlohmann::json::parse(json.out)) {
    quoted += v["path"] == kQuoted;
    japanese += v["path"] == kJapanese;
  }
  CHECK(quoted == 3);
  CHECK(japanese == 1);
  Run log = repo.Sh("git zipnn log " + Q(kQuoted));
  REQUIRE(log.code == 0);
  CHECK(log.out.rfind(kQuoted + "\n", 0) == 0);
  CHECK(log.out.find(" in 3 versions ") != std::string::npos);
  Run from_folder = repo.Sh("cd \"$(dirname " + Q(kJapanese) + ")\" && git zipnn log model.safetensors");
  REQUIRE(from_folder.code == 0);
  CHECK(from_folder.out.rfind(kJapanese + "\n", 0) == 0);
  // One version: its row, and no total line. A later save of the same
  // run under another name, it is a delta of the newest of kQuoted.
  CHECK(from_folder.out.find(" delta depth 1 ") != std::string::npos);
  CHECK(from_folder.out.find("[a delta of " + kQuoted + " (the same tensor names, dtypes and shapes)]") !=
        std::string::npos);
  CHECK(from_folder.out.find("total: ") == std::string::npos);

  // show names why the first version is a base, from its place in its series.
  Run show = repo.Sh("git zipnn show " + Q("HEAD~3:./" + kQuoted));
  REQUIRE(show.code == 0);
  CHECK(show.out.find("(first of its series)") != std::string::npos);

  Run analyze = repo.Sh("git zipnn analyze " + Q(kQuoted));
  INFO(analyze.err);
  CHECK(analyze.code == 0);
  CHECK(analyze.out.find("3 checkpoints") != std::string::npos);

  Run repack = repo.Sh("git zipnn repack --base-interval 1 " + Q(kQuoted));
  INFO(repack.err);
  REQUIRE(repack.code == 0);
  CHECK(repack.out.find(": 3 versions\n") != std::string::npos);
  CHECK(repack.out.find("rewrote 1; now 3 bases") != std::string::npos);  // the newest was whole

  // Every version restores exactly, after the repack too.
  const char* steps[] = {"000120", "000080", "000040"};
  for (int back = 0; back < 3; ++back) {
    CAPTURE(back);
    REQUIRE(
        repo.Sh("git zipnn restore " + Q(kQuoted) + " --rev HEAD~" + std::to_string(back + 1) + " -f -o ../v").code ==
        0);
    CHECK(repo.Sh("cmp ../v '" + repo.Data(Step(steps[back])) + "'").code == 0);
  }
  Run fsck = repo.Sh("git zipnn fsck --all");
  CHECK(fsck.code == 0);
  CHECK(fsck.out.find("4 checkpoints") != std::string::npos);
}

TEST_CASE("pull restores checkpoints whose names git quotes, into a clone whose own folder git would quote") {
  Repo repo;
  CommitNames(repo);
  REQUIRE(repo.Sh("git init -q --bare ../hub.git && git remote add origin ../hub.git && git zipnn push -q origin && "
                  "git push -q origin HEAD:main")
              .code == 0);
  const std::string clone = "../clo\xcc\x82ne \"x\"";  // clône "x", the accent combining
  REQUIRE(repo.Sh("git zipnn install >/dev/null && GIT_ZIPNN_SKIP_SMUDGE=1 git clone -q -b main ../hub.git " + Q(clone))
              .code == 0);
  const std::string in = "cd " + Q(clone) + " && ";
  CHECK(repo.Sh(in + "head -1 " + Q(kJapanese)).out.rfind("git-zipnn pointer 2 ", 0) == 0);
  Run pull = repo.Sh(in + "git zipnn pull");
  INFO(pull.err);
  REQUIRE(pull.code == 0);
  CHECK(pull.out.find(kQuoted + ": restored ") != std::string::npos);
  CHECK(pull.out.find(kJapanese + ": restored ") != std::string::npos);
  CHECK(repo.Sh(in + "cmp " + Q(kQuoted) + " '" + repo.Data(Step("000120")) + "'").code == 0);
  CHECK(repo.Sh(in + "cmp " + Q(kJapanese) + " '" + repo.Data(Step("000200")) + "'").code == 0);
  CHECK(repo.Sh(in + "git status --porcelain").out.empty());
}

}  // namespace
}  // namespace zipnn
