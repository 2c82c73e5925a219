#include "lib/base/closest.h"

#include <doctest/doctest.h>

namespace zipnn {
namespace {

using Words = std::vector<std::string>;

TEST_CASE("edit distance counts a swap of neighbouring letters as one edit") {
  CHECK(EditDistance("lgo", "log") == 1);
  CHECK(EditDistance("log", "log") == 0);
  CHECK(EditDistance("", "gc") == 2);
  CHECK(EditDistance("instal", "install") == 1);
  CHECK(EditDistance("fecth", "fetch") == 1);
  CHECK(EditDistance("abc", "cab") == 2);
}

TEST_CASE("alternatives read as a sentence, quoted, cut after the most wanted") {
  CHECK(Alternatives({}) == "");
  CHECK(Alternatives({"log"}) == "log");
  CHECK(Alternatives({"a", "b"}, "'") == "'a' or 'b'");
  CHECK(Alternatives({"a", "b", "c"}) == "a, b or c");
  CHECK(Alternatives({"a", "b", "c", "d", "e"}, "", 3) == "a, b, c or 2 more");
  CHECK(Alternatives({"a", "b", "c"}, "", 3) == "a, b or c");
}

TEST_CASE("closest words: slips of the fingers, ties in list order, prefixes, nothing when far") {
  const Words commands = {"install", "log", "ls-files", "push", "pull", "restore", "repack", "analyze"};
  CHECK(ClosestWords("lgo", commands) == Words{"log"});
  CHECK(ClosestWords("pus", commands) == Words{"push"});
  CHECK(ClosestWords("pul", commands) == Words{"pull"});
  CHECK(ClosestWords("puhs", commands) == Words{"push"});
  CHECK(ClosestWords("pu", commands) == Words{"push", "pull"});  // prefix of both
  CHECK(ClosestWords("analise", commands) == Words{"analyze"});  // two edits in seven letters
  CHECK(ClosestWords("rest", commands) == Words{"restore"});
  CHECK(ClosestWords("commit", commands).empty());
  CHECK(ClosestWords("x", commands).empty());
}

}  // namespace
}  // namespace zipnn
