// The commands library without a git repository: the command table, the
// command line's answers to mistakes, and reading checkpoints from files.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/file.h"

namespace zipnn::cmd {
namespace {

int Run(std::vector<std::string> words) {
  words.insert(words.begin(), "git-zipnn");
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  return Main(static_cast<int>(argv.size()), argv.data());
}

TEST_CASE("every command has one name, a summary, and a --help that parses") {
  std::set<std::string> names;
  for (const CommandSpec& spec : Commands()) {
    CAPTURE(spec.name);
    CHECK(names.insert(spec.name).second);
    CHECK(std::string(spec.summary).size() > 10);
    CHECK(Run({spec.name, "--help"}) == 0);
  }
  CHECK(names.count("install") == 1);
  CHECK(names.count("filter-process") == 1);
}

TEST_CASE("a mistyped command is named with the commands it was probably meant to be") {
  CHECK(UnknownCommand("lgo") == "git-zipnn: 'lgo' is not a git-zipnn command. Did you mean log?");
  CHECK(UnknownCommand("worktree") == "git-zipnn: 'worktree' is not a git-zipnn command. See 'git zipnn --help'.");
  CHECK(!UnknownCommand("log"));
  CHECK(Run({"lgo"}) == 1);
  // Git LFS's word for gc.
  CHECK(UnknownCommand("prune") ==
        "git-zipnn: 'prune' is not a git-zipnn command. 'git zipnn gc' removes the objects no version needs (Git "
        "LFS's prune).");
}

TEST_CASE("--version is the version command, as for git and Git LFS") {
  CHECK(Run({"--version"}) == 0);
  CHECK(Run({"version"}) == 0);
  CHECK(Run({"--version", "extra"}) == 2);
}

TEST_CASE("usage errors exit 2 before any command runs") {
  CHECK(Run({}) == 2);
  CHECK(Run({"--nosuchoption"}) == 2);
  CHECK(Run({"restore", "--nosuchoption", "x"}) == 2);
}

TEST_CASE("a checkpoint file is read as it is, without a repository") {
  ops::Context context;
  auto checkpoint = ops::WithLayout(ops::CheckpointInFile(context, "tests/data/cnn12-bf16/step-000010.safetensors"));
  REQUIRE(checkpoint.ok());
  CHECK(checkpoint->layout().format == formats::Format::kSafetensors);
  CHECK(!checkpoint->layout().tensors.empty());
  CHECK(checkpoint->file().size() > 1000);
}

TEST_CASE("a file that starts like a pointer and is not one is refused, not read as a checkpoint") {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/damaged-pointer";
  {
    auto out = AtomicFile::Create(path, /*overwrite=*/true);
    REQUIRE(out.ok());
    const std::string text = "git-zipnn pointer 1\nid sha256:xyz\n";
    REQUIRE(out->Append(text.data(), text.size()).ok());
    REQUIRE(out->Commit().ok());
  }
  ops::Context context;
  auto checkpoint = ops::CheckpointInFile(context, path);
  REQUIRE(!checkpoint.ok());
  CHECK(checkpoint.status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace zipnn::cmd
