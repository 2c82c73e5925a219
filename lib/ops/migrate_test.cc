// Tests of migrate's use case before anything is read from git
// (migrate.h): which revisions and patterns a request comes to, the hint
// for a pattern that matches nothing, and the branches a rewrite leaves
// to a remote-tracking ref. The rewriting itself runs the real git in
// tests/migrate_test.cc.
#include "lib/ops/migrate.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace zipnn::ops {
namespace {

using Strings = std::vector<std::string>;

Result<std::optional<std::string>> OnMain() { return std::optional<std::string>("refs/heads/main"); }
Result<std::optional<std::string>> Detached() { return std::optional<std::string>(); }
Result<std::optional<std::string>> NotAsked() {
  FAIL("HEAD's branch was read although revisions were given");
  return std::optional<std::string>();
}

TEST_CASE("with no revision given, the branch checked out here is rewritten, and a detached HEAD is refused") {
  auto r = RevisionsFor(MigrateRequest{}, {}, OnMain);
  REQUIRE(r.ok());
  CHECK(r->revs == Strings{"refs/heads/main"});
  auto detached = RevisionsFor(MigrateRequest{}, {}, Detached);
  REQUIRE_FALSE(detached.ok());
  CHECK(detached.status().message() ==
        "HEAD is detached: name the branches to rewrite (git zipnn migrate import main), or --everything");
}

TEST_CASE("revisions given are rewritten as given, without asking for HEAD's branch") {
  MigrateRequest request;
  request.refs = {"v1..main", "^origin/main"};
  auto r = RevisionsFor(request, {}, NotAsked);
  REQUIRE(r.ok());
  CHECK(r->revs == request.refs);
  CHECK(r->left_out.empty());
}

TEST_CASE("--everything leaves out the branches other worktrees have checked out, and takes no revisions") {
  MigrateRequest request;
  request.everything = true;
  const std::vector<git::CheckedOut> elsewhere = {{"refs/heads/feature", "/w/feature"}, {"HEAD", "/w/detached"}};
  auto r = RevisionsFor(request, elsewhere, NotAsked);
  REQUIRE(r.ok());
  CHECK(r->revs == Strings{"--exclude=feature", "--branches", "--tags"});
  REQUIRE(r->left_out.size() == 1);
  CHECK(r->left_out[0].worktree == "/w/feature");
  request.refs = {"main"};
  auto both = RevisionsFor(request, elsewhere, NotAsked);
  REQUIRE_FALSE(both.ok());
  CHECK(both.status().message() == "--everything rewrites every branch and tag; give no revisions with it");
}

TEST_CASE("without --include, an import takes Git LFS's patterns and git-zipnn's, an export git-zipnn's") {
  auto import = DefaultPatterns(git::Driver::kZipnn, {"*.safetensors"}, {"*.bin"});
  REQUIRE(import.ok());
  CHECK(*import == Strings{"*.bin", "*.safetensors"});
  auto export_ = DefaultPatterns(git::Driver::kLfs, {"*.safetensors"}, {"*.bin"});
  REQUIRE(export_.ok());
  CHECK(*export_ == Strings{"*.safetensors"});
  auto none = DefaultPatterns(git::Driver::kLfs, {}, {"*.bin"});
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message() ==
        "say which files to migrate: --include '*.safetensors' (or a list, '*.pt,*.bin'); .gitattributes gives no "
        "pattern to git-zipnn");
  CHECK(DefaultPatterns(git::Driver::kZipnn, {}, {}).status().message().find("no pattern to git-zipnn or Git LFS") !=
        std::string::npos);
}

TEST_CASE("a pattern that matches nothing gets the close patterns .gitattributes has, and their file names") {
  CHECK(PatternHint({"*.safetensor"}, {"*.safetensors", "*.bin"}) == " (did you mean '*.safetensors'?)");
  CHECK(PatternHint({"*.pth"}, {"runs/*.pt"}) == " (did you mean '*.pt'?)");
  CHECK(PatternHint({"*.onnx"}, {"*.safetensors"}).empty());
}

TEST_CASE("branches only a remote-tracking ref names are listed once; local ones are not") {
  const Strings refs = {"refs/heads/main", "refs/remotes/origin/main", "refs/remotes/origin/exp",
                        "refs/remotes/backup/exp", "refs/tags/v1"};
  CHECK(RemoteOnly(refs) == Strings{"exp"});
  CHECK(RemoteOnly({"refs/heads/main"}).empty());
}

}  // namespace
}  // namespace zipnn::ops
