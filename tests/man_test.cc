// The man pages made from docs/commands (//docs:man): one for every
// command of the command table, each rendered by man, and found by git:
// `git zipnn --help` and `git help zipnn` run `man git-zipnn`, while
// git-zipnn's own --help still prints the built-in option summary.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "tests/git_repo.h"

namespace zipnn {
namespace {

using testing::Repo;
using testing::Run;

// man writes plain ASCII at a fixed width, through no pager.
const char kPlainMan[] = "export LC_ALL=C MANWIDTH=80 MANPAGER=cat PAGER=cat GIT_PAGER=cat; ";

// The names of the command table, as git-zipnn lists them.
std::vector<std::string> CommandNames(Repo& repo) {
  Run listed = repo.Sh("git-zipnn --list-commands");
  REQUIRE(listed.code == 0);
  std::vector<std::string> names;
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);) {
    const size_t tab = line.find('\t');
    REQUIRE(tab != std::string::npos);
    REQUIRE(tab + 1 < line.size());  // a summary follows
    names.push_back(line.substr(0, tab));
  }
  return names;
}

TEST_CASE("a man page is made for every command in the command table, and man renders each") {
  Repo repo;
  const std::string man = repo.Runfile("docs/man");
  const std::vector<std::string> names = CommandNames(repo);
  REQUIRE(names.size() >= 20);
  // The table --help prints is the one the pages were made from.
  const std::string help = repo.Sh("git-zipnn --help").out;
  for (const std::string& name : names) CHECK(help.find("  " + name + " ") != std::string::npos);

  const Run overview = repo.Sh(kPlainMan + std::string("cd '") + man + "' && man -l man1/git-zipnn.1");
  REQUIRE(overview.code == 0);
  CHECK(overview.out.find("git-zipnn - version control for model checkpoints") != std::string::npos);
  for (const std::string& name : names) {
    CAPTURE(name);
    const std::string page = "man1/git-zipnn-" + name + ".1";
    REQUIRE(FileExists(man + "/" + page));
    // Pages covering several commands are linked (.so) by the others' names,
    // which man resolves from the top of the man folder.
    const Run shown = repo.Sh(kPlainMan + std::string("cd '") + man + "' && man -l " + page);
    CHECK(shown.code == 0);
    CHECK(shown.err.empty());
    CHECK(shown.out.find("\nNAME\n") != std::string::npos);
    CHECK(shown.out.find("git-zipnn-" + name) != std::string::npos);
    CHECK(shown.out.find("git zipnn " + name) != std::string::npos);            // its synopsis or usage
    CHECK(overview.out.find("git zipnn " + name + "\n") != std::string::npos);  // listed in git-zipnn(1)
  }
}

TEST_CASE("git zipnn --help and git help zipnn show git-zipnn(1); git-zipnn --help prints the built-in help") {
  Repo repo;
  const std::string env = kPlainMan + std::string("export MANPATH='") + repo.Runfile("docs/man") + "'; ";
  for (const char* asked : {"git zipnn --help", "git help zipnn"}) {
    CAPTURE(asked);
    const Run page = repo.Sh(env + asked);
    CHECK(page.code == 0);
    CHECK(page.err.find("No manual entry") == std::string::npos);
    CHECK(page.out.rfind("GIT-ZIPNN(1)", 0) == 0);
    CHECK(page.out.find("\nCOMMANDS\n") != std::string::npos);
    CHECK(page.out.find("git zipnn log\n") != std::string::npos);
  }
  const Run log_page = repo.Sh(env + "man git-zipnn-log");
  CHECK(log_page.code == 0);
  CHECK(log_page.out.find("git zipnn log [--json] [--series] [<path>...]") != std::string::npos);

  const Run direct = repo.Sh(env + "git-zipnn --help");
  CHECK(direct.code == 0);
  CHECK(direct.out.rfind("git-zipnn: version control for model checkpoints\nUsage: git-zipnn", 0) == 0);
  const Run command = repo.Sh(env + "git zipnn log --help");
  CHECK(command.code == 0);
  CHECK(command.out.find("Usage: git-zipnn log") != std::string::npos);
}

}  // namespace
}  // namespace zipnn
