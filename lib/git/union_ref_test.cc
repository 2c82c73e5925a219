// Which remotes a union ref keeps a copy for (union_ref.h): only those
// whose name can be part of refs/zipnn/remotes/<remote>/, never a URL or
// a path that `git push <url>` may be given.
#include "lib/git/union_ref.h"

#include <doctest/doctest.h>

namespace zipnn::git {
namespace {

TEST_CASE("a configured remote's name can hold a copy") {
  CHECK(CanTrack("origin"));
  CHECK(CanTrack("team-store"));
  CHECK(CanTrack("upstream.mirror"));
}

TEST_CASE("a URL, a path or a name git refuses in a ref cannot") {
  CHECK(!CanTrack(""));
  CHECK(!CanTrack("https://example.com/repo.git"));
  CHECK(!CanTrack("git@example.com:repo.git"));
  CHECK(!CanTrack("../other"));
  CHECK(!CanTrack("name with space"));
  CHECK(!CanTrack("a..b"));
  CHECK(!CanTrack("x~1"));
}

}  // namespace
}  // namespace zipnn::git
