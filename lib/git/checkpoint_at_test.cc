// The pointer git holds at "<rev>:<path>" (checkpoint_at.h), read through
// the port from a repository held in memory (fake_git.h).
#include "lib/git/checkpoint_at.h"

#include <doctest/doctest.h>

#include <string>

#include "lib/base/content_id.h"
#include "lib/git/fake_git.h"
#include "lib/store/pointer.h"

namespace zipnn::git {
namespace {

store::Pointer PointerOf(const std::string& content) {
  return store::Pointer{HashBytes(content.data(), content.size()), content.size(), "raw"};
}

// A work tree at /fake/work with one commit on HEAD and a branch "old".
FakeGit Repo() {
  FakeGit git("/fake/work");
  git.SetRef("refs/heads/old", git.CommitOnHead({{"model.bin", store::FormatPointer(PointerOf("v1"))}}));
  git.CommitOnHead({{"model.bin", store::FormatPointer(PointerOf("v2"))},
                    {"sub/shard.bin", store::FormatPointer(PointerOf("shard"))},
                    {"whole.bin", "the checkpoint, unfiltered"},
                    {"bad.bin", "git-zipnn pointer 2 nonsense\n"}});
  return git;
}

TEST_CASE("reads the pointer at a revision and path from the top of the work tree") {
  FakeGit git = Repo();
  auto head = PointerInProcess(git, "HEAD:model.bin", "/fake/work");
  REQUIRE(head.ok());
  REQUIRE(head->has_value());
  CHECK(**head == PointerOf("v2"));
  auto old = PointerInProcess(git, "old:model.bin", "/fake/work/sub");
  REQUIRE(old.ok());
  CHECK(**old == PointerOf("v1"));
}

TEST_CASE("a path starting with ./ is from the current folder") {
  FakeGit git = Repo();
  auto shard = PointerInProcess(git, "HEAD:./shard.bin", "/fake/work/sub");
  REQUIRE(shard.ok());
  REQUIRE(shard->has_value());
  CHECK(**shard == PointerOf("shard"));
}

TEST_CASE("an unknown revision is NotFound naming it and the file as given") {
  FakeGit git = Repo();
  auto missing = PointerInProcess(git, "nope:./model.bin", "/fake/work");
  REQUIRE(!missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == "no revision 'nope' in this repository (for model.bin)");
}

TEST_CASE("a file not in the revision is NotFound, with the closest files it holds") {
  FakeGit git = Repo();
  auto typo = PointerInProcess(git, "HEAD:model.bn", "/fake/work");
  REQUIRE(!typo.ok());
  CHECK(typo.status().code() == StatusCode::kNotFound);
  CHECK(typo.status().message() == "model.bn is not in HEAD (did you mean model.bin?)");
  auto far = PointerInProcess(git, "old:sub/shard.bin", "/fake/work");
  REQUIRE(!far.ok());
  CHECK(far.status().message() == "sub/shard.bin is not in old");
}

TEST_CASE("a file git holds whole, or a damaged pointer, is InvalidArgument saying so") {
  FakeGit git = Repo();
  auto whole = PointerInProcess(git, "HEAD:whole.bin", "/fake/work");
  REQUIRE(!whole.ok());
  CHECK(whole.status().code() == StatusCode::kInvalidArgument);
  CHECK(whole.status().message() ==
        "HEAD:whole.bin is not stored by git-zipnn: git holds the file itself (it is not tracked, or was committed "
        "before `git zipnn install` and `track`)");
  auto bad = PointerInProcess(git, "HEAD:bad.bin", "/fake/work");
  REQUIRE(!bad.ok());
  CHECK(bad.status().code() == StatusCode::kInvalidArgument);
  CHECK(bad.status().message().rfind("HEAD:bad.bin is not stored by git-zipnn (a damaged pointer: ", 0) == 0);
}

TEST_CASE("what only git reads is left to git: the index, .. in a path, a folder outside, a bare repository") {
  FakeGit git = Repo();
  for (const char* spec : {":model.bin", "model.bin", "HEAD:../model.bin", "HEAD:sub/../model.bin", "HEAD:"}) {
    auto left = PointerInProcess(git, spec, "/fake/work");
    REQUIRE(left.ok());
    CHECK_MESSAGE(!left->has_value(), spec);
  }
  auto outside = PointerInProcess(git, "HEAD:./model.bin", "/elsewhere");
  REQUIRE(outside.ok());
  CHECK(!outside->has_value());
  FakeGit bare("");
  bare.CommitOnHead({{"model.bin", store::FormatPointer(PointerOf("v"))}});
  auto in_bare = PointerInProcess(bare, "HEAD:model.bin", "/");
  REQUIRE(in_bare.ok());
  CHECK(!in_bare->has_value());
}

}  // namespace
}  // namespace zipnn::git
