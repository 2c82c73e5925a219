// The keys of git's textconv cache and the line textconv prints for a
// checkpoint it cannot read (textconv_cache.h).
#include "lib/git/textconv_cache.h"

#include <doctest/doctest.h>

#include <string>

namespace zipnn::git {
namespace {

TEST_CASE("a note's key is the id git gives the pointer's blob") {
  // As `git hash-object` says: the blob ids of "hello\n" and of nothing.
  CHECK(*PointerBlob("hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a");
  CHECK(*PointerBlob("") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
}

TEST_CASE("a failure line is told from a listing, and says why on one line") {
  const std::string failure = ListingFailure("its object is not here or on the remote");
  CHECK(failure == "git-zipnn: cannot show this checkpoint: its object is not here or on the remote\n");
  CHECK(IsListingFailure(failure));
  CHECK(!IsListingFailure("checkpoint 0123: 10 bytes, raw\n"));
  CHECK(!IsListingFailure(""));
}

}  // namespace
}  // namespace zipnn::git
