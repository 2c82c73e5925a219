// Tests of base notes (base_note.h): what CheckIn, a demotion and a gc
// leave beside the objects, what a note may hold, and that one that does
// not explain the object beside it counts for nothing. Real checkpoints
// from tests/data.
#include "lib/store/base_note.h"

#include <doctest/doctest.h>

#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/store/gc.h"
#include "lib/store/series_fixture.h"

namespace zipnn::store {
namespace {

using testing::Fixture;
using testing::Small;

std::optional<BaseReason> NotedReason(Fixture& f, size_t i) {
  const std::optional<BaseNote> note = ReadBaseNote(f.store.objects, f.held[i].id);
  if (!note) return std::nullopt;
  return note->reason;
}

ContentId IdOfBytes(const std::vector<uint8_t>& bytes) { return HashBytes(bytes.data(), bytes.size()); }

bool NoteFileThere(Fixture& f, size_t i) {
  return std::ifstream(BaseNotePath(f.store.objects, f.held[i].id)).good();
}

TEST_CASE("each standalone version is noted with why, as the store decided it; a demoted one loses its note") {
  Fixture f;
  f.store.policy.min_gain = 0;
  f.store.policy.base_interval = 3;
  for (size_t i = 0; i < 4; ++i) f.AddBytes(Small(i), std::to_string(i));
  // B f r newest: the first stays whole (it begins the stretch), the
  // second and third were re-stored as deltas, the newest is whole.
  CHECK(NotedReason(f, 0) == BaseReason::kFirst);
  CHECK(!NotedReason(f, 1));
  CHECK(!NoteFileThere(f, 1));  // removed with the demotion, not left behind
  CHECK(!NotedReason(f, 2));
  CHECK(NotedReason(f, 3) == BaseReason::kNewest);
  CHECK(DescribeNote(*ReadBaseNote(f.store.objects, f.held[3].id)) == "newest of its series when stored");
  // The next add leaves it whole as the base that ends its stretch: the
  // note says so now.
  f.AddBytes(Small(4), "4");
  const std::optional<BaseNote> due = ReadBaseNote(f.store.objects, f.held[3].id);
  REQUIRE(due);
  CHECK(due->reason == BaseReason::kDue);
  CHECK(DescribeNote(*due) == "due every 3");
  // A later policy does not rewrite what was decided.
  f.store.policy.base_interval = 10;
  CHECK(DescribeNote(*ReadBaseNote(f.store.objects, f.held[3].id)) == "due every 3");
  CHECK(WhyBase(f.store, SeriesAt(f.held, 3)) == BaseReason::kNoGainOrPolicy);  // what guessing again would say
}

TEST_CASE("a delta that does not pay is noted with the min_gain it missed") {
  Fixture f;
  f.StoreForward();
  f.store.policy.min_gain = 0.95;  // no delta saves 95%
  f.AddBytes(Small(0), "0");
  f.AddBytes(Small(1), "1");
  const std::optional<BaseNote> note = ReadBaseNote(f.store.objects, f.held[1].id);
  REQUIRE(note);
  CHECK(note->reason == BaseReason::kNoGain);
  CHECK(DescribeNote(*note) == "delta did not pay, min_gain 95%");
}

TEST_CASE("a note is read only while it explains the object beside it") {
  Fixture f;
  f.AddBytes(Small(0), "0");
  const ContentId id = f.held[0].id;
  const std::optional<std::string> text = BaseNoteTextOf(f.store.objects, id);
  REQUIRE(text);
  const Result<BaseNote> parsed = ParseBaseNote(*text, id);
  REQUIRE(parsed.ok());
  CHECK(BaseNoteText(id, *parsed) == *text);
  // Another object size: a note of another encoding of the version.
  BaseNote other = *parsed;
  other.object_size += 1;
  CHECK(KeepBaseNote(f.store.objects, id, BaseNoteText(id, other)).message() ==
        "base note of " + id.Hex() + ": it explains no standalone object held here");
  std::ofstream(BaseNotePath(f.store.objects, id), std::ios::trunc) << BaseNoteText(id, other);
  CHECK(!ReadBaseNote(f.store.objects, id));
  // The note of another version, copied beside this one.
  const ContentId stranger = IdOfBytes(Small(9));
  CHECK(!ParseBaseNote(BaseNoteText(stranger, *parsed), id).ok());
  std::ofstream(BaseNotePath(f.store.objects, id), std::ios::trunc) << BaseNoteText(stranger, *parsed);
  CHECK(!ReadBaseNote(f.store.objects, id));
  // The right note is taken again.
  CHECK(KeepBaseNote(f.store.objects, id, *text).ok());
  CHECK(ReadBaseNote(f.store.objects, id)->reason == BaseReason::kFirst);
}

TEST_CASE("a note holds a few known lines and nothing else") {
  const ContentId id = IdOfBytes(Small(1));
  const std::string head = "git-zipnn base 1\nversion " + id.Hex() + "\nobject 100\n";
  CHECK(ParseBaseNote(head + "reason due 10\n", id)->figure == 10);
  CHECK(ParseBaseNote(head + "reason chain 4\n", id)->reason == BaseReason::kChain);
  CHECK(ParseBaseNote(head + "reason damaged-base\n", id)->reason == BaseReason::kDamagedBase);
  const std::string bad[] = {
      "",
      head,                                      // no reason
      head + "reason due\n",                     // no figure
      head + "reason first 3\n",                 // a figure where none goes
      head + "reason due 99999999999999999999\n",  // too large
      head + "reason due -1\n",
      head + "reason delta\n",                   // not a reason a note holds
      head + "reason due 10",                    // no end of line
      head + "reason due 10\nmore\n",
      "git-zipnn base 2\nversion " + id.Hex() + "\nobject 100\nreason first\n",
      "git-zipnn base 1\nversion " + id.Hex() + "\nobject x\nreason first\n",
      head + "reason first\n" + std::string(600, ' '),
  };
  for (const std::string& text : bad) {
    CHECK_MESSAGE(ParseBaseNote(text, id).status().code() == StatusCode::kCorruption, text);
  }
}

TEST_CASE("gc removes the notes of the objects it removes, and keeps the others") {
  Fixture f;
  f.store.policy.base_interval = 3;
  for (size_t i = 0; i < 2; ++i) f.AddBytes(Small(i), std::to_string(i));
  REQUIRE(NoteFileThere(f, 0));
  REQUIRE(NoteFileThere(f, 1));
  Needed needed;
  NeedChain(f.store, f.held[1].id, needed);  // only the newest is still named
  SweepOptions options;
  options.started = std::time(nullptr) + 10;
  options.keep_since = options.started;
  auto swept = Sweep(f.store, *testing::Removal(f.store), needed, options);
  REQUIRE(swept.ok());
  CHECK(!f.store.objects.Has(f.held[0].id));
  CHECK(!NoteFileThere(f, 0));
  CHECK(NoteFileThere(f, 1));
}

}  // namespace
}  // namespace zipnn::store
