// Finding pointers in what git holds (pointers.h), on a repository held
// in memory (fake_git.h).
#include "lib/git/pointers.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/git/fake_git.h"
#include "lib/store/pointer.h"

namespace zipnn::git {
namespace {

// The pointer of a checkpoint whose bytes are `content`, and its text.
store::Pointer PointerOf(const std::string& content) {
  return store::Pointer{HashBytes(content.data(), content.size()), content.size(), "raw"};
}
std::string Text(const std::string& content) { return store::FormatPointer(PointerOf(content)); }
ContentId Id(const std::string& content) { return PointerOf(content).id; }

// Which checkpoints `found` names, each with the revision and path it was
// found at, sorted.
std::vector<std::string> Named(const FoundPointers& found, const std::vector<std::string>& contents) {
  std::vector<std::string> named;
  for (const auto& [pointer, place] : found.pointers) {
    std::string which = "?";
    for (const std::string& c : contents) {
      if (Id(c) == pointer.id) which = c;
    }
    named.push_back(which + "@" + place.path);
  }
  std::sort(named.begin(), named.end());
  return named;
}

TEST_CASE("only HEAD's tree, unless all: then history, every work tree's index and tagged blobs") {
  FakeGit git;
  git.CommitOnHead({{"a.bin", Text("a1")}, {"notes.txt", "hello\n"}});
  git.CommitOnHead({{"a.bin", Text("a2")}});
  git.SetIndex({{"a.bin", Text("a2")}, {"b.bin", Text("b")}});
  git.SetLinkedIndex("other", {{"c.bin", Text("c")}});
  git.SetRef("refs/tags/loose", git.Blob(Text("d")));
  const std::vector<std::string> all = {"a1", "a2", "b", "c", "d"};

  auto head = FindPointers(git, /*all=*/false);
  REQUIRE(head.ok());
  CHECK(Named(*head, all) == std::vector<std::string>{"a2@a.bin"});
  CHECK(head->pointers[0].second.rev == "HEAD");
  CHECK(head->pointers[0].second.blob == git.Blob(Text("a2")).Hex());

  auto everything = FindPointers(git, /*all=*/true);
  REQUIRE(everything.ok());
  CHECK(Named(*everything, all) == std::vector<std::string>{"a1@a.bin", "a2@a.bin", "b@b.bin", "c@c.bin", "d@loose"});
  CHECK(everything->damaged.empty());
}

TEST_CASE("an unborn HEAD holds no pointers") {
  FakeGit git;
  git.SetIndex({{"a.bin", Text("a")}});
  auto found = FindPointers(git, /*all=*/false);
  REQUIRE(found.ok());
  CHECK(found->pointers.empty());
}

TEST_CASE("a damaged pointer is reported where it is, and is no pointer") {
  FakeGit git;
  git.CommitOnHead({{"bad.bin", "git-zipnn pointer 2 nonsense\n"}, {"good.bin", Text("g")}});
  auto found = FindPointers(git, /*all=*/false);
  REQUIRE(found.ok());
  CHECK(Named(*found, {"g"}) == std::vector<std::string>{"g@good.bin"});
  REQUIRE(found->damaged.size() == 1);
  CHECK(found->damaged[0].first.path == "bad.bin");
  CHECK(found->damaged[0].first.rev == "HEAD");
  CHECK(found->damaged[0].second.rfind("damaged pointer: ", 0) == 0);
}

TEST_CASE("a blob too big to be a pointer is never read, and each blob is read once") {
  FakeGit git;
  const std::string big(store::kMaxPointerBytes + 1, 'x');
  git.CommitOnHead({{"big.bin", big}, {"one.bin", Text("p")}, {"two.bin", Text("p")}});
  auto found = FindPointers(git, /*all=*/true);
  REQUIRE(found.ok());
  CHECK(found->pointers.size() == 1);  // one per distinct blob
  CHECK(git.reads(git.Blob(big)) == 0);
  CHECK(git.reads(git.Blob(Text("p"))) == 1);
}

TEST_CASE("the blobs a partial clone lacks are fetched in one request before they are read") {
  FakeGit git;
  git.CommitOnHead({{"a.bin", Text("a")}, {"b.bin", Text("b")}});
  git.MakeMissing(git.Blob(Text("a")));
  git.MakeMissing(git.Blob(Text("b")));
  auto found = FindPointers(git, /*all=*/false);
  REQUIRE(found.ok());
  CHECK(found->pointers.size() == 2);
  REQUIRE(git.fetches().size() == 1);
  CHECK(git.fetches()[0].size() == 2);
}

TEST_CASE("the pointers commits brought in leave out what a parent outside them held at the same path") {
  FakeGit git;
  const Oid first = git.CommitOnHead({{"a.bin", Text("a")}});
  const Oid second = git.CommitOnHead({{"a.bin", Text("a")}, {"b.bin", Text("b")}, {"moved/a.bin", Text("a")}});
  auto found = FindPointersIn(git, {first.Hex() + ".." + second.Hex()});
  REQUIRE(found.ok());
  // a.bin came from the parent; the same pointer at a new path is new there.
  CHECK(Named(*found, {"a", "b"}) == std::vector<std::string>{"a@moved/a.bin", "b@b.bin"});
  for (const auto& [pointer, place] : found->pointers) CHECK(place.rev == second.Hex());
}

TEST_CASE("the pointers in the trees of revisions, an unknown revision named") {
  FakeGit git;
  git.CommitOnHead({{"a.bin", Text("a")}});
  git.SetRef("refs/heads/side", git.Commit({{"s.bin", Text("s")}}));
  auto found = FindPointersInTrees(git, {"HEAD", "side"});
  REQUIRE(found.ok());
  CHECK(Named(*found, {"a", "s"}) == std::vector<std::string>{"a@a.bin", "s@s.bin"});
  auto unknown = FindPointersInTrees(git, {"nope"});
  REQUIRE(!unknown.ok());
  CHECK(unknown.status().code() == StatusCode::kNotFound);
  CHECK(unknown.status().message() == "unknown revision 'nope' (not a branch, tag or commit in this repository)");
}

TEST_CASE("staged pointers: each index path whose entry is a valid pointer") {
  FakeGit git;
  git.SetIndex({{"a.bin", Text("a")}, {"plain.txt", "text\n"}, {"bad.bin", "git-zipnn pointer 9\n"}});
  auto staged = StagedPointers(git);
  REQUIRE(staged.ok());
  CHECK(staged->size() == 1);
  CHECK(staged->at("a.bin") == Id("a"));
}

TEST_CASE("a path's history: each commit that changed its pointer, newest first; a merge of one side shows none") {
  FakeGit git;
  const Oid c1 = git.CommitOnHead({{"m.bin", Text("v1")}}, "one");
  const Oid c2 = git.CommitOnHead({{"m.bin", Text("v2")}}, "two");
  const Oid c3 = git.Commit({{"m.bin", Text("v3")}}, {c1}, 0, "side");
  const Oid merge = git.Commit({{"m.bin", Text("v2")}}, {c2, c3}, 0, "merge");  // took c2's side
  git.SetRef("HEAD", merge);
  git.CommitOnHead({{"unrelated.bin", Text("u")}}, "drop m");

  auto history = PathHistory::Of(git);
  REQUIRE(history.ok());
  auto versions = history->Versions("m.bin");
  REQUIRE(versions.ok());
  std::vector<std::string> seen;
  for (const PathVersion& v : *versions) seen.push_back(v.commit->subject);
  CHECK(seen == std::vector<std::string>{"side", "two", "one"});
  CHECK((*versions)[0].pointer == PointerOf("v3"));
  auto none = history->Versions("absent.bin");
  REQUIRE(none.ok());
  CHECK(none->empty());
}

TEST_CASE("committed versions: the earliest commit holding each, what each tag holds, every path") {
  FakeGit git;
  const Oid c1 = git.CommitOnHead({{"a.bin", Text("a")}});
  git.SetRef("refs/tags/v1", c1);
  git.CommitOnHead({{"a.bin", Text("a")}, {"b.bin", Text("b")}, {"copy.bin", Text("a")}});
  git.SetIndex({{"staged.bin", Text("a")}});
  // Only another repository's ref leads here (a remote's tag).
  const Oid theirs = git.Commit({{"t.bin", Text("t")}});

  auto found = FindCommittedVersions(git, {ExtraTip{"v9 on origin", theirs}});
  REQUIRE(found.ok());
  const int64_t first_time = git.Commits({c1.Hex()})->front().time;
  CHECK(found->first_committed.at(Id("a")) == first_time);
  CHECK(found->first_committed.at(Id("b")) > first_time);
  CHECK(found->first_committed.count(Id("t")) == 1);
  // The commit that brought each in, as log names it.
  CHECK(found->first_commit.at(Id("a")).id == c1);
  CHECK(found->first_commit.at(Id("b")).id != c1);
  CHECK(found->first_commit.at(Id("t")).id == theirs);
  CHECK(found->paths.at(Id("a")) == std::set<std::string>{"a.bin", "copy.bin", "staged.bin"});
  REQUIRE(found->tags.size() == 2);
  CHECK(found->tags[0].first == "v1");
  CHECK(found->tags[0].second == std::set<ContentId>{Id("a")});
  CHECK(found->tags[1].first == "v9 on origin");
  CHECK(found->tags[1].second == std::set<ContentId>{Id("t")});
}

}  // namespace
}  // namespace zipnn::git
