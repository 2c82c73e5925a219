// How two copies of the Git LFS object map merge (object_map.h): every
// line of both, sorted, each once, whatever order they meet in.
#include "lib/git/object_map.h"

#include <doctest/doctest.h>

#include <string>

namespace zipnn::git {
namespace {

TEST_CASE("two copies of a version's lines merge into every line of both, sorted, each once") {
  CHECK(kObjectMap.merge("b 2\na 1\n", "c 3\na 1\n") == "a 1\nb 2\nc 3\n");
}

TEST_CASE("the merge is the same whichever copy is ours") {
  const std::string ours = "oid x 10\noid y 20\n", theirs = "oid z 5\n";
  CHECK(kObjectMap.merge(ours, theirs) == kObjectMap.merge(theirs, ours));
}

TEST_CASE("empty lines and a missing last newline are read as git holds them: lines") {
  CHECK(kObjectMap.merge("a 1\n\n\nb 2", "") == "a 1\nb 2\n");
  CHECK(kObjectMap.merge("", "") == "");
}

TEST_CASE("the map is the union ref refs/zipnn/objects") {
  CHECK(std::string(kObjectMap.ref) == kObjectMapRef);
  CHECK(std::string(kObjectMapRef) == "refs/zipnn/objects");
  CHECK(std::string(kObjectMap.name) == "objects");
}

}  // namespace
}  // namespace zipnn::git
