// Which fetched tensor listings are taken, and how two clones' listings
// of one pointer blob merge (listings.h).
#include "lib/git/listings.h"

#include <doctest/doctest.h>

#include <string>

#include "lib/base/content_id.h"
#include "lib/git/textconv_cache.h"
#include "lib/store/pointer.h"

namespace zipnn::git {
namespace {

const std::string kContent = "the checkpoint's bytes";

std::string PointerText() {
  return store::FormatPointer(store::Pointer{HashBytes(kContent.data(), kContent.size()), kContent.size(), "raw"});
}
// The first line textconv prints for the checkpoint.
std::string Head() {
  return "checkpoint " + HashBytes(kContent.data(), kContent.size()).Hex() + ": " + std::to_string(kContent.size()) +
         " bytes";
}

TEST_CASE("a listing fits a pointer when its first line names the pointer's checkpoint and size") {
  CHECK(ListingFitsPointer(PointerText(), Head() + ", raw\n  tensor a: F32 [2]\n"));
}

TEST_CASE("a listing of another checkpoint, or of another size, does not fit") {
  const std::string other = "checkpoint " + HashBytes("x", 1).Hex() + ": " + std::to_string(kContent.size()) + " bytes";
  CHECK(!ListingFitsPointer(PointerText(), other + ", raw\n"));
  const std::string sized = "checkpoint " + HashBytes(kContent.data(), kContent.size()).Hex() + ": 1 bytes";
  CHECK(!ListingFitsPointer(PointerText(), sized + ", raw\n"));
  // The size must end where the listing says so, not run on ("22 bytes" is
  // no prefix of "220 bytes").
  CHECK(!ListingFitsPointer(PointerText(), Head()));
  CHECK(!ListingFitsPointer(PointerText(), Head() + "0, raw\n"));
}

TEST_CASE("no listing fits what is not a pointer, or a damaged one") {
  CHECK(!ListingFitsPointer("plain text\n", Head() + ", raw\n"));
  CHECK(!ListingFitsPointer("git-zipnn pointer 2 nonsense\n", Head() + ", raw\n"));
}

TEST_CASE("two clones' listings of one blob merge into the listing, a failure giving way to it") {
  const std::string listing = Head() + ", raw\n";
  const std::string failure = ListingFailure("object missing");
  CHECK(kListings.merge(listing, failure) == listing);
  CHECK(kListings.merge(failure, listing) == listing);
  CHECK(kListings.merge(failure, ListingFailure("other")) == failure);
  CHECK(kListings.merge(listing, Head() + ", raw (other)\n") == listing);
}

TEST_CASE("the listings travel on their own union ref") {
  CHECK(std::string(kListings.ref) == "refs/zipnn/listings");
  CHECK(std::string(kListings.name) == "listings");
}

}  // namespace
}  // namespace zipnn::git
