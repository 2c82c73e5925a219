// Repository and FindPointers against repositories the real git binary
// makes, with their own HOME and GIT_CONFIG_NOSYSTEM=1.
#include <doctest/doctest.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lib/base/thread_pool.h"
#include "lib/git/discover.h"
#include "lib/git/pointers.h"
#include "lib/git/repository.h"
#include "lib/git/series_versions.h"
#include "lib/series/series.h"
#include "lib/store/pointer.h"

namespace zipnn::git {
namespace {

// A scratch folder holding home/ and a git repository repo/ (branch main),
// driven through a shell. Every commit gets its own time, a minute after
// the one before, so that time order is history order.
class Sandbox {
 public:
  Sandbox() {
    const char* tmp = std::getenv("TEST_TMPDIR");
    root_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/git-XXXXXX";
    REQUIRE(mkdtemp(root_.data()) != nullptr);
    char real[PATH_MAX];
    REQUIRE(realpath(root_.c_str(), real) != nullptr);
    root_ = real;
    Sh("mkdir home && git init -q -b main repo && cd repo && git config user.email t@example.com && "
       "git config user.name T");
  }
  // Runs `line` in repo/ (our own literals only); its standard output.
  std::string Sh(const std::string& line) {
    const std::string out = root_ + "/out";
    const std::string script = "export HOME='" + root_ + "/home' GIT_CONFIG_NOSYSTEM=1; cd '" + root_ +
                               "' && { [ -d repo ] && cd repo || true; } && " + line;
    std::ofstream(root_ + "/script") << script;
    const int status = std::system(("bash '" + root_ + "/script' >'" + out + "' 2>'" + root_ + "/err'").c_str());
    std::stringstream text;
    text << std::ifstream(out).rdbuf();
    std::stringstream err;
    err << std::ifstream(root_ + "/err").rdbuf();
    INFO(line, "\n", err.str());
    REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    std::string s = text.str();
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }
  // Writes `text` to repo/<path>.
  void Write(const std::string& path, const std::string& text) {
    Sh("mkdir -p \"$(dirname '" + path + "')\"");
    std::ofstream(repo() + "/" + path, std::ios::binary) << text;
  }
  // Commits everything in the work tree; the new commit's id.
  std::string Commit(const std::string& message) {
    ++clock_;
    const std::string date = std::to_string(1700000000 + 60 * clock_) + " +0000";
    return Sh("git add -A && GIT_COMMITTER_DATE='" + date + "' GIT_AUTHOR_DATE='" + date +
              "' git commit -q --allow-empty -m '" + message + "' && git rev-parse HEAD");
  }
  std::string repo() const { return root_ + "/repo"; }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
  int clock_ = 0;
};

Repository Open(const std::string& where) {
  auto repo = Repository::Discover(where);
  INFO(repo.status().ToString());
  REQUIRE(repo.ok());
  return std::move(repo).value();
}

Oid Resolve(const Repository& repo, const std::string& rev) {
  auto id = repo.ResolveCommit(rev);
  REQUIRE(id.ok());
  REQUIRE(id->has_value());
  return **id;
}

// The commits `revs` reach, as full ids, newest first.
std::vector<std::string> Ids(const Repository& repo, const std::vector<std::string>& revs) {
  auto commits = repo.Commits(revs);
  INFO(commits.status().ToString());
  REQUIRE(commits.ok());
  std::vector<std::string> ids;
  for (const CommitInfo& c : *commits) ids.push_back(c.id.Hex());
  return ids;
}

bool Contains(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

store::Pointer PointerOf(const std::string& content) {
  return store::Pointer{HashBytes(content.data(), content.size()), content.size(), "raw"};
}

TEST_CASE("discovers the repository from a subfolder and from a linked worktree") {
  Sandbox box;
  box.Write("a/b/f.txt", "x\n");
  box.Commit("one");
  box.Sh("git worktree add -q ../wt");
  const Repository inner = Open(box.repo() + "/a/b");
  CHECK(inner.work_dir() == box.repo());
  CHECK(inner.common_dir() == box.repo() + "/.git");
  const Repository linked = Open(box.root() + "/wt");
  CHECK(linked.work_dir() == box.root() + "/wt");
  CHECK(linked.common_dir() == box.repo() + "/.git");
  CHECK(Resolve(linked, "HEAD") == Resolve(inner, "main"));
  const auto outside = Repository::Discover(box.root() + "/home");
  // (Unless the scratch folder itself is inside a repository.)
  if (!outside.ok()) CHECK(outside.status().code() == StatusCode::kNotFound);
}

TEST_CASE("reads the index file as it is on disk now, stage 0 files only") {
  Sandbox box;
  const Repository repo = Open(box.repo());
  auto empty = repo.IndexFiles();
  REQUIRE(empty.ok());
  CHECK(empty->empty());
  box.Write("f.txt", "one\n");
  box.Write("d/run.sh", "#!/bin/sh\n");
  box.Sh("chmod +x d/run.sh && ln -s f.txt link && git add f.txt d/run.sh link");
  auto staged = repo.IndexFiles();
  REQUIRE(staged.ok());
  REQUIRE(staged->size() == 2);  // the link is left out
  CHECK((*staged)[0].path == "d/run.sh");
  CHECK((*staged)[1].path == "f.txt");
  CHECK((*staged)[1].blob.Hex() == box.Sh("git hash-object f.txt"));
  // Changed and staged again after the first read: the new blob.
  box.Write("f.txt", "two\n");
  box.Sh("git add f.txt");
  auto restaged = repo.IndexFiles();
  REQUIRE(restaged.ok());
  CHECK((*restaged)[1].blob.Hex() == box.Sh("git hash-object f.txt"));
}

TEST_CASE("an unborn HEAD or an unknown name resolves to nothing") {
  Sandbox box;
  const Repository repo = Open(box.repo());
  auto head = repo.ResolveCommit("HEAD");
  REQUIRE(head.ok());
  CHECK(!head->has_value());
  box.Commit("one");
  for (const char* name : {"nosuchbranch", "HEAD~5", "abc"}) {
    auto none = repo.ResolveCommit(name);
    REQUIRE(none.ok());
    CHECK(!none->has_value());
  }
  auto unknown = repo.Commits({"HEAD", "^nosuchbranch"});
  REQUIRE(!unknown.ok());
  CHECK(unknown.status().message().find("'nosuchbranch'") != std::string::npos);
  box.Sh("git tag blobtag $(git hash-object -w --stdin </dev/null)");
  auto blob = repo.ResolveCommit("blobtag");
  REQUIRE(!blob.ok());
  CHECK(blob.status().code() == StatusCode::kGit);
  CHECK(blob.status().message().find("blobtag") != std::string::npos);
}

TEST_CASE("lists the files of nested folders and finds one by path") {
  Sandbox box;
  box.Write("top.txt", "t\n");
  box.Write("a/one.txt", "1\n");
  box.Write("a/b/c/deep.txt", "d\n");
  const Repository repo = Open(box.repo());
  const Oid commit = Resolve(repo, box.Commit("tree"));
  auto files = repo.TreeFiles(commit);
  REQUIRE(files.ok());
  std::vector<std::string> paths;
  for (const FileEntry& f : *files) paths.push_back(f.path);
  CHECK(paths == std::vector<std::string>{"a/b/c/deep.txt", "a/one.txt", "top.txt"});
  CHECK((*files)[0].blob.Hex() == box.Sh("git rev-parse HEAD:a/b/c/deep.txt"));
  auto deep = repo.FileAt(commit, "a/b/c/deep.txt");
  REQUIRE(deep.ok());
  REQUIRE(deep->has_value());
  CHECK(**deep == (*files)[0].blob);
  for (const char* absent : {"a/b/none.txt", "nowhere/x", "a/b"}) {  // a folder is not a file
    auto none = repo.FileAt(commit, absent);
    REQUIRE(none.ok());
    CHECK(!none->has_value());
  }
}

TEST_CASE("reads a small blob, and of a big one only its size") {
  Sandbox box;
  box.Write("small.txt", "hello\n");
  box.Write("big.bin", std::string(5000, 'z'));
  const Repository repo = Open(box.repo());
  const Oid commit = Resolve(repo, box.Commit("blobs"));
  const Oid small = **repo.FileAt(commit, "small.txt");
  const Oid big = **repo.FileAt(commit, "big.bin");
  auto text = repo.SmallBlob(small, 200);
  REQUIRE(text.ok());
  CHECK(*text == std::optional<std::string>("hello\n"));
  auto size = repo.BlobSize(big);
  REQUIRE(size.ok());
  CHECK(*size == 5000);
  auto skipped = repo.SmallBlob(big, 200);
  REQUIRE(skipped.ok());
  CHECK(!skipped->has_value());
  // After git gc, the same from a pack.
  box.Sh("git gc -q");
  CHECK(*repo.BlobSize(big) == 5000);
  CHECK(*repo.SmallBlob(small, 6) == std::optional<std::string>("hello\n"));
}

TEST_CASE("walks history newest first with ^rev, --not, --all and --remotes=") {
  Sandbox box;
  box.Write("f", "1");
  const std::string c1 = box.Commit("c1");
  box.Sh("git checkout -qb side");
  box.Write("s", "1");
  const std::string s1 = box.Commit("s1");
  box.Sh("git checkout -q main");
  box.Write("f", "2");
  const std::string c2 = box.Commit("c2");
  box.Write("f", "3");
  const std::string c3 = box.Commit("c3");
  box.Sh("git update-ref refs/remotes/origin/main " + c2 + " && git update-ref refs/remotes/other/side " + s1 +
         " && git tag blobtag $(git hash-object -w f)");
  const Repository repo = Open(box.repo());
  using V = std::vector<std::string>;
  CHECK(Ids(repo, {"main"}) == V{c3, c2, c1});
  CHECK(Ids(repo, {"main", "^" + c2}) == V{c3});
  CHECK(Ids(repo, {c2 + "..main"}) == V{c3});
  CHECK(Ids(repo, {"main", "--not", "side"}) == V{c3, c2});
  CHECK(Ids(repo, {"--not", "side", "--not", "main"}) == V{c3, c2});
  CHECK(Ids(repo, {"--all"}) == V{c3, c2, s1, c1});  // the tag of a blob is no commit
  CHECK(Ids(repo, {"main", "--not", "--remotes=origin"}) == V{c3});
  CHECK(Ids(repo, {"--remotes=other"}) == V{s1, c1});
  CHECK(Ids(repo, {"main", "--not", "--all"}).empty());
  auto commits = repo.Commits({"HEAD~1"});
  REQUIRE(commits.ok());
  REQUIRE(commits->size() == 2);
  CHECK((*commits)[0].subject == "c2");
  CHECK((*commits)[0].parents == std::vector<Oid>{Resolve(repo, c1)});
  CHECK((*commits)[0].time == 1700000000 + 3 * 60);
  CHECK((*commits)[1].parents.empty());
}

TEST_CASE("gives author dates and subjects as git log's %aI and %s") {
  Sandbox box;
  box.Sh(
      "git commit -q --allow-empty -m 'first line' -m 'body' && "
      "GIT_AUTHOR_DATE='2020-01-02T03:04:05-0530' git commit -q --allow-empty -m 'two"
      "\n"
      "lines'");
  const Repository repo = Open(box.repo());
  auto commits = repo.Commits({"HEAD"});
  REQUIRE(commits.ok());
  REQUIRE(commits->size() == 2);
  const std::vector<std::string> expected = {box.Sh("git log -1 --format='%aI|%s' HEAD"),
                                             box.Sh("git log -1 --format='%aI|%s' HEAD~1")};
  CHECK((*commits)[0].author_date + "|" + (*commits)[0].subject == expected[0]);
  CHECK((*commits)[0].author_date == "2020-01-02T03:04:05-05:30");
  CHECK((*commits)[1].author_date + "|" + (*commits)[1].subject == expected[1]);
}

TEST_CASE("all commits include a stash, a commit only a reflog has, and skip a pruned reflog entry") {
  Sandbox box;
  box.Write("f", "1");
  const std::string c1 = box.Commit("c1");
  box.Write("f", "2");
  const std::string dropped = box.Commit("c2");
  box.Sh("git reset -q --hard HEAD~1");
  box.Write("f", "stashed");
  box.Sh("git stash -q");
  const std::string stash = box.Sh("git rev-parse stash");
  // A reflog entry naming a commit that is gone.
  box.Sh("printf '%s %s T <t@example.com> 1700000000 +0000\\tcommit: gone\\n' " + c1 +
         " 1111111111111111111111111111111111111111 >> .git/logs/refs/heads/main");
  const Repository repo = Open(box.repo());
  auto all = repo.AllCommits();
  INFO(all.status().ToString());
  REQUIRE(all.ok());
  std::vector<std::string> ids;
  for (const CommitInfo& c : *all) ids.push_back(c.id.Hex());
  CHECK(Contains(ids, c1));
  CHECK(Contains(ids, dropped));
  CHECK(Contains(ids, stash));
  CHECK(Contains(ids, box.Sh("git rev-parse stash^2")));  // the stash's index commit
  CHECK(ids.size() == 4);
}

TEST_CASE("all commits include what only a linked worktree's detached HEAD reaches") {
  Sandbox box;
  box.Write("f", "1");
  box.Commit("c1");
  box.Sh("git worktree add -q --detach ../wt");
  std::ofstream(box.root() + "/wt/g") << "only there";
  const std::string detached = box.Sh("cd ../wt && git add g && git commit -qm wt && git rev-parse HEAD");
  for (const std::string& from : {box.repo(), box.root() + "/wt"}) {
    CAPTURE(from);
    const Repository repo = Open(from);
    auto all = repo.AllCommits();
    REQUIRE(all.ok());
    std::vector<std::string> ids;
    for (const CommitInfo& c : *all) ids.push_back(c.id.Hex());
    CHECK(Contains(ids, detached));
    CHECK(Contains(Ids(repo, {"--all"}), detached));
  }
}

TEST_CASE("walks a shallow clone, whose oldest commit's parents are not there") {
  Sandbox box;
  for (int i = 0; i < 3; ++i) {
    box.Write("f", std::to_string(i));
    box.Commit("c" + std::to_string(i));
  }
  box.Sh("git clone -q --depth 1 \"file://$PWD\" ../shallow");
  const Repository repo = Open(box.root() + "/shallow");
  CHECK(Ids(repo, {"HEAD"}).size() == 1);
  auto all = repo.AllCommits();
  REQUIRE(all.ok());
  CHECK(all->size() == 1);
  CHECK(FindPointers(repo, /*all=*/true).ok());
  CHECK(FindPointersIn(repo, {"HEAD"}).ok());
}

TEST_CASE("history files: each path and blob once, at the newest commit, again where a folder moved") {
  Sandbox box;
  box.Write("d/a", "a1");
  box.Write("d/b", "b1");
  box.Write("top", "t1");
  const std::string c1 = box.Commit("c1");
  box.Write("d/a", "a2");
  const std::string c2 = box.Commit("c2");
  box.Sh("git mv d e");  // the same subtree under another name
  const std::string c3 = box.Commit("c3");
  const Repository repo = Open(box.repo());
  auto commits = repo.Commits({"HEAD"});
  REQUIRE(commits.ok());
  std::vector<std::string> seen;
  REQUIRE(repo.VisitHistoryFiles(*commits,
                                 [&](size_t i, const FileEntry& f) {
                                   CHECK(f.blob == **repo.FileAt((*commits)[i].id, f.path));
                                   seen.push_back((*commits)[i].id.Hex() + " " + f.path);
                                 })
              .ok());
  CHECK(seen == std::vector<std::string>{c3 + " e/a", c3 + " e/b", c3 + " top", c2 + " d/a", c2 + " d/b", c1 + " d/a"});
}

TEST_CASE("finds pointers in HEAD, in all history and the index, and damaged ones") {
  Sandbox box;
  const store::Pointer p1 = PointerOf("one"), p2 = PointerOf("two"), p3 = PointerOf("three");
  box.Write("m.bin", store::FormatPointer(p1));
  box.Write("big.bin", std::string(1000, 'b'));
  const std::string c1 = box.Commit("c1");
  box.Write("m.bin", store::FormatPointer(p2));
  box.Write("copy/m.bin", store::FormatPointer(p2));  // the same blob twice: one entry
  box.Write("bad.bin", std::string("git-zipnn pointer 1\ngarbage\n"));
  const std::string c2 = box.Commit("c2");
  box.Write("new.bin", store::FormatPointer(p3));
  box.Sh("git add new.bin");
  const Repository repo = Open(box.repo());

  auto head = FindPointers(repo, /*all=*/false);
  REQUIRE(head.ok());
  REQUIRE(head->pointers.size() == 1);
  CHECK(head->pointers[0].first == p2);
  CHECK(head->pointers[0].second.rev == "HEAD");
  CHECK(head->pointers[0].second.path == "copy/m.bin");  // the first path of the tree
  REQUIRE(head->damaged.size() == 1);
  CHECK(head->damaged[0].first.path == "bad.bin");
  CHECK(head->damaged[0].second.find("damaged pointer") == 0);

  auto all = FindPointers(repo, /*all=*/true);
  REQUIRE(all.ok());
  std::vector<std::string> found;
  for (const auto& [pointer, place] : all->pointers) {
    found.push_back(pointer.id.Hex() + " " + place.rev + " " + place.path);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> expected = {p1.id.Hex() + " " + c1 + " m.bin", p2.id.Hex() + " " + c2 + " copy/m.bin",
                                       p3.id.Hex() + " index new.bin"};
  std::sort(expected.begin(), expected.end());
  CHECK(found == expected);
  CHECK(all->damaged.size() == 1);

  // What c2 brought in: not what its parent already had.
  auto in = FindPointersIn(repo, {"HEAD", "^HEAD~1"});
  REQUIRE(in.ok());
  REQUIRE(in->pointers.size() == 1);
  CHECK(in->pointers[0].first == p2);
  CHECK(in->pointers[0].second.rev == c2);
  auto old = FindPointersInTrees(repo, {"HEAD~1"});
  REQUIRE(old.ok());
  REQUIRE(old->pointers.size() == 1);
  CHECK(old->pointers[0].first == p1);
  CHECK(old->pointers[0].second.rev == "HEAD~1");
  CHECK(old->damaged.empty());
  CHECK(!FindPointersInTrees(repo, {"nosuchbranch"}).ok());
}

TEST_CASE("a path's history lists each commit that changed its pointer, newest first, once per blob read") {
  Sandbox box;
  const store::Pointer p1 = PointerOf("one"), p2 = PointerOf("two");
  box.Write("m.bin", store::FormatPointer(p1));
  const std::string c1 = box.Commit("c1");
  box.Write("other.txt", "unrelated\n");
  box.Commit("c2: m.bin unchanged");
  box.Write("m.bin", "plain text, not a pointer\n");
  box.Commit("c3: not a pointer");
  box.Write("m.bin", store::FormatPointer(p2));
  const std::string c4 = box.Commit("c4");
  box.Sh("git rm -q m.bin");
  box.Commit("c5: deleted");
  box.Sh(
      "git checkout -q -b side HEAD~1 && echo x > s.txt && git add s.txt && git commit -q -m side && "
      "git checkout -q main && git merge -q --no-edit side");  // m.bin as c4 had it: no new version
  const Repository repo = Open(box.repo());
  auto history = PathHistory::Of(repo);
  REQUIRE(history.ok());
  auto versions = history->Versions("m.bin");
  REQUIRE(versions.ok());
  REQUIRE(versions->size() == 2);
  CHECK((*versions)[0].commit->id.Hex() == c4);
  CHECK((*versions)[0].pointer == p2);
  CHECK((*versions)[0].commit->subject == "c4");
  CHECK((*versions)[1].commit->id.Hex() == c1);
  CHECK((*versions)[1].pointer == p1);
  auto none = history->Versions("no/such/file");
  REQUIRE(none.ok());
  CHECK(none->empty());
}

TEST_CASE("the index: which tracked files are pointers, and which git holds whole") {
  Sandbox box;
  const store::Pointer p1 = PointerOf("one");
  box.Write(".gitattributes", "*.bin filter=zipnn diff=zipnn -text\n");
  box.Write("ptr.bin", store::FormatPointer(p1));
  box.Write("whole.bin", "the checkpoint itself, added before the filter was installed\n");
  box.Write("bad.bin", std::string("git-zipnn pointer 1\ngarbage\n"));
  box.Write("notes.txt", store::FormatPointer(p1));  // a pointer, but not tracked
  box.Sh("git add -A");                              // no filter configured: git stores each file as it is
  const Repository repo = Open(box.repo());
  auto whole = HeldWhole(repo);
  REQUIRE(whole.ok());
  CHECK(*whole == std::vector<std::string>{"whole.bin"});
  auto staged = StagedPointers(repo);
  REQUIRE(staged.ok());
  CHECK(staged->size() == 2);
  CHECK(staged->at("ptr.bin") == p1.id);
  CHECK(staged->at("notes.txt") == p1.id);
}

TEST_CASE("the files of a series in a tree come in step order, not name order") {
  Sandbox box;
  for (const char* step : {"100", "20", "3"})
    box.Write(std::string("out/checkpoint-") + step + "/model.safetensors", step);
  box.Write("out/checkpoint-20/optimizer.pt", "o");
  box.Write("notes.txt", "n");
  box.Commit("saves");
  auto files = SeriesFilesAt(series::Rules(), "HEAD", "out/checkpoint-20/model.safetensors", box.repo());
  REQUIRE(files.ok());
  std::vector<std::string> order;
  for (const SeriesFile& f : *files) order.push_back(f.step + " " + f.path);
  CHECK(order == std::vector<std::string>{"3 out/checkpoint-3/model.safetensors",
                                          "20 out/checkpoint-20/model.safetensors",
                                          "100 out/checkpoint-100/model.safetensors"});
  CHECK(!SeriesFilesAt(series::Rules(), "nosuchrev", "x", box.repo()).ok());
}

// Runs `ask` in `folder` with the sandbox's HOME (and GIT_CONFIG_PARAMETERS
// set to `params` when given, as `git -c` sets it), then puts the process
// back as it was.
template <typename Ask>
auto AskIn(Sandbox& box, const std::string& folder, Ask ask, const char* params = nullptr) {
  char here[PATH_MAX];
  REQUIRE(getcwd(here, sizeof here) != nullptr);
  const char* home = std::getenv("HOME");
  const std::string old_home = home != nullptr ? home : "";
  REQUIRE(setenv("HOME", (box.root() + "/home").c_str(), 1) == 0);
  REQUIRE(setenv("GIT_CONFIG_NOSYSTEM", "1", 1) == 0);
  if (params != nullptr) REQUIRE(setenv("GIT_CONFIG_PARAMETERS", params, 1) == 0);
  REQUIRE(chdir(folder.c_str()) == 0);
  auto answer = ask();
  REQUIRE(chdir(here) == 0);
  REQUIRE(setenv("HOME", old_home.c_str(), 1) == 0);
  REQUIRE(unsetenv("GIT_CONFIG_PARAMETERS") == 0);
  return answer;
}

TEST_CASE("a committed policy gets at most the machine's cores as threads") {
  // .zipnn.yaml is written by whoever wrote the repository: threads: 4096
  // (a value the file may hold) on a small machine only costs memory.
  Sandbox box;
  box.Write(".zipnn.yaml", "threads: 4096\n");
  auto opened = AskIn(box, box.repo(), [] { return OpenStore(); });
  REQUIRE_MESSAGE(opened.ok(), opened.status().ToString());
  CHECK(opened->warnings.empty());
  CHECK(opened->store.policy.threads >= 1);
  CHECK(opened->store.policy.threads <= ThreadPool::DefaultThreads());
}

TEST_CASE("the folders a filter starts from come from one git run, with or without a work tree") {
  Sandbox box;
  box.Write("f.txt", "x\n");
  box.Commit("one");
  box.Sh("git worktree add -q ../wt && mkdir -p ../wt/sub");
  auto linked = AskIn(box, box.root() + "/wt/sub", [] { return RepositoryFolders(); });
  REQUIRE_MESSAGE(linked.ok(), linked.status().ToString());
  CHECK(linked->git_dir == box.repo() + "/.git");
  CHECK(linked->hooks == box.repo() + "/.git/hooks");
  CHECK(linked->top == box.root() + "/wt");
  // Inside the git folder there is no work tree, but there are folders.
  auto inside = AskIn(box, box.repo() + "/.git", [] { return RepositoryFolders(); });
  REQUIRE_MESSAGE(inside.ok(), inside.status().ToString());
  CHECK(inside->git_dir == box.repo() + "/.git");
  CHECK(!inside->top);
  box.Sh("git config core.hooksPath " + box.root() + "/myhooks");
  auto hooked = AskIn(box, box.repo(), [] { return RepositoryFolders(); });
  REQUIRE(hooked.ok());
  CHECK(hooked->hooks == box.root() + "/myhooks");
  CHECK(hooked->top == box.repo());
  auto outside = AskIn(box, box.root() + "/home", [] { return RepositoryFolders(); });
  // (Unless the scratch folder itself is inside a repository.)
  if (!outside.ok()) {
    CHECK(outside.status().code() == StatusCode::kNotFound);
    CHECK(outside.status().message().find("not inside a git repository") != std::string::npos);
  }
}

TEST_CASE("a config snapshot answers as git config --get would, git -c included") {
  Sandbox box;
  box.Sh(
      "git config zipnn.storePath ../store && git config zipnn.multi a && git config --add zipnn.multi b && "
      "git config diff.zipnn.cachetextconv yes && git config diff.zipnn.textconv 'git-zipnn textconv' && "
      "git config diff.other.textconv cat && printf '[zipnn]\\n\\tbare\\n' >> .git/config");
  auto snapshot = AskIn(
      box, box.repo(), [] { return ConfigSnapshot::Read(kStartKeys); }, "'zipnn.skipsmudgeerrors'='On'");
  REQUIRE_MESSAGE(snapshot.ok(), snapshot.status().ToString());
  for (const char* key : {"zipnn.storepath", "zipnn.multi", "diff.zipnn.textconv", "diff.zipnn.cachetextconv"}) {
    auto one = AskIn(box, box.repo(), [&] { return ConfigGet(key); });
    REQUIRE(one.ok());
    CHECK_MESSAGE(snapshot->Get(key) == *one, key);
  }
  CHECK(snapshot->Get("zipnn.storepath") == "../store");
  CHECK(snapshot->Get("zipnn.multi") == "b");
  CHECK(snapshot->Get("diff.zipnn.textconv") == "git-zipnn textconv");
  CHECK(!snapshot->Get("diff.other.textconv"));  // not asked for
  CHECK(!snapshot->Get("zipnn.unset"));
  CHECK(snapshot->Flag("diff.zipnn.cachetextconv"));
  CHECK(snapshot->Flag("zipnn.skipsmudgeerrors"));  // from git -c
  CHECK(snapshot->Flag("zipnn.bare"));              // a key with no value is true
  CHECK(!snapshot->Flag("zipnn.multi", true));      // set to something else: false
  CHECK(snapshot->Flag("zipnn.unset", true));
  CHECK(!snapshot->Flag("zipnn.unset"));
  // Nothing set: an empty snapshot, no error.
  Sandbox empty;
  auto none = AskIn(empty, empty.repo(), [] { return ConfigSnapshot::Read(kStartKeys); });
  REQUIRE(none.ok());
  CHECK(!none->Get("zipnn.storepath"));
}

}  // namespace
}  // namespace zipnn::git
