// Safety with the real git binary: no string a user or a repository gives
// is ever read as an option, by git or by git-zipnn (a revision such as
// "--output=F..HEAD", a path such as "--html=/home/me/notes.txt"); gc
// removes from a store folder only the files git-zipnn itself writes
// there, warning about any others; and a remote that trickles is given
// up under the low-speed limit git config sets.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>
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
  CHECK(repo.Sh("git zipnn analyze --rev=nope..HEAD model.safetensors")
            .err.find("--rev no revision 'nope' in this repository (in the range 'nope..HEAD')") != std::string::npos);
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
                  "git commit -qm setup && mkdir -- --all && cp -- '" +
                  repo.Data("cnn-bf16/step-000040.safetensors") +
                  "' --all/model.safetensors && git add -- --all && git commit -qm one")
              .code == 0);
  // Every command that takes paths takes them after "--".
  CHECK(repo.Sh("git zipnn log -- --all/model.safetensors").out.find("--all/model.safetensors") != std::string::npos);
  CHECK(repo.Sh("git zipnn cat --list -- --all/model.safetensors").out.find("c1.weight") != std::string::npos);
  CHECK(repo.Sh("git zipnn show -- --all/model.safetensors").code == 0);
  CHECK(repo.Sh("git zipnn restore -o out.safetensors -- --all/model.safetensors && "
                "cmp -- out.safetensors --all/model.safetensors")
            .code == 0);
  // git runs the diff driver with the path first: read as a path, not as
  // diff's --all.
  REQUIRE(repo.Sh("cp -- '" + repo.Data("cnn-bf16/step-000080.safetensors") + "' --all/model.safetensors").code == 0);
  const Run diff = repo.Sh("git diff");
  CHECK(diff.code == 0);
  CHECK(diff.out.find("--- a/--all/model.safetensors") != std::string::npos);
  CHECK(diff.out.find("c1.weight") != std::string::npos);
}

// ---- gc and files it did not write ----

TEST_CASE("gc in a store folder that holds other files removes only its own leftovers, and names what it left") {
  Repo repo;
  const std::string team = repo.root() + "/team";
  // A team folder named as the store, with the team's files in it.
  REQUIRE(repo.Sh("mkdir -p ../team/reports && echo 'read me' > ../team/README && echo q3 > ../team/reports/q3.txt && "
                  "cp '" +
                  repo.Data("cnn-bf16/step-000040.safetensors") +
                  "' ../team/model.safetensors && "
                  "echo draft > ../team/draft && echo older > ../team/draft.gc && "
                  "git config zipnn.storepath '" +
                  team + "'")
              .code == 0);
  CommitTrajectory(repo);
  // A writer that died left a temporary object; a file of someone's in an
  // object folder only looks like one.
  const std::string leftover = team + "/ab/cd/abcd" + std::string(28, '0') + ".tmp-0123abcd";
  const std::string look_alike = team + "/ab/cd/notes.tmp-0123abcd";
  REQUIRE(repo.Sh("mkdir -p ../team/ab/cd && echo unfinished > '" + leftover + "' && echo mine > '" + look_alike +
                  "' && touch -d '2 hours ago' ../team/README ../team/reports/q3.txt ../team/reports "
                  "../team/model.safetensors ../team/draft ../team/draft.gc '" +
                  leftover + "' '" + look_alike + "'")
              .code == 0);
  const std::string warning = "warning: the store folder " + team +
                              " also holds 6 files or folders that git-zipnn "
                              "did not write (README, ab/cd/notes.tmp-0123abcd, draft, draft.gc, model.safetensors "
                              "and 1 more); gc left them as they are. Keep the store in a folder of its own";
  const Run dry = repo.Sh("git zipnn gc --dry-run");
  CHECK(dry.code == 0);
  CHECK(dry.out.find("would remove leftover " + leftover + "\n") != std::string::npos);
  CHECK(dry.out.find("would remove leftover", dry.out.find("would remove leftover") + 1) == std::string::npos);
  CHECK(dry.err.find(warning) != std::string::npos);
  const Run gc = repo.Sh("git zipnn gc");
  CHECK(gc.code == 0);
  CHECK(gc.out.find("and 1 leftover file") != std::string::npos);
  CHECK(gc.err.find(warning) != std::string::npos);
  CHECK(Slurp(team + "/README") == "read me\n");
  CHECK(Slurp(team + "/reports/q3.txt") == "q3\n");
  CHECK(Slurp(team + "/draft") == "draft\n");
  CHECK(Slurp(team + "/draft.gc") == "older\n");
  CHECK(Slurp(look_alike) == "mine\n");
  CHECK(repo.Sh("cmp ../team/model.safetensors '" + repo.Data("cnn-bf16/step-000040.safetensors") + "'").code == 0);
  CHECK(repo.Sh("test -e '" + leftover + "'").code != 0);
  // The checkpoints are whole, and du counts only git-zipnn's files.
  CHECK(repo.Sh("git zipnn fsck --all").code == 0);
  CHECK(repo.Sh("git zipnn du").out.find("and 6 files or folders that git-zipnn did not write") != std::string::npos);
}

// ---- Remotes that trickle ----

// An executable script at `path`.
void WriteScript(const std::string& path, const std::string& text) {
  {
    std::ofstream out(path);
    out << text;
  }
  REQUIRE(::chmod(path.c_str(), 0755) == 0);
}

TEST_CASE("a store server that trickles is given up under the low-speed limit git config sets, naming the remote") {
  Repo repo;
  CommitTrajectory(repo);
  // ssh that runs the remote command here, and a store server that
  // greets, then sends a byte every 50 ms (20 bytes a second).
  const std::string home = repo.root() + "/home";
  WriteScript(home + "/fake-ssh", "#!/bin/sh\nexec sh -c \"$2\"\n");
  WriteScript(home + "/trickle",
              "#!/bin/bash\nprintf 'git-zipnn-store 1\\n'\nread -r line\n"
              "while printf o 2>/dev/null; do sleep 0.05; done\n");
  REQUIRE(repo.Sh("git remote add origin trickler:/srv/store && git config remote.origin.zipnnserve '" + home +
                  "/trickle' && git config zipnn.lowSpeedLimit 1k && git config zipnn.lowSpeedTime 1 && "
                  "rm -r .git/zipnn/objects/[0-9a-f][0-9a-f]")
              .code == 0);
  // Bounded here too, so that a client that waits for ever fails the
  // test instead of hanging it.
  const Run fetch = repo.Sh("GIT_SSH='" + home + "/fake-ssh' timeout 30 git zipnn fetch");
  CHECK(fetch.code == 1);
  CHECK(fetch.err.find("from trickler:/srv/store: the store server is too slow: ") != std::string::npos);
  CHECK(fetch.err.find("less than the 1024 bytes a second it must keep up over 1 s (the limit: git config "
                       "zipnn.lowSpeedLimit and zipnn.lowSpeedTime; 0 turns it off)") != std::string::npos);
  // A setting git cannot read as a number is named.
  REQUIRE(repo.Sh("git config zipnn.lowSpeedTime soon").code == 0);
  CHECK(repo.Sh("GIT_SSH='" + home + "/fake-ssh' timeout 30 git zipnn fetch")
            .err.find("zipnn.lowSpeedTime \"soon\" is not a number of seconds") != std::string::npos);
}

}  // namespace
}  // namespace zipnn::testing
