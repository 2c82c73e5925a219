// Base notes: why a version's object is standalone, as the store decided
// when it wrote the object (git add, or the add of a newer version that
// left it whole: placement.h), kept in a small file beside the object so
// that `git zipnn log` says what was decided rather than guessing it
// again from today's policy and whatever this clone holds. A note travels
// with its object to and from remotes that keep notes (lib/remote).
//
// Only a record for people: nothing is decoded or placed by it. A note
// counts only while it explains the object beside it: a standalone object
// of the size the note names. One left behind by an object re-stored as a
// delta, or re-encoded, is ignored (gc removes those whose object is
// gone). Thread-compatible; notes are written atomically.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/status.h"
#include "lib/config/policy.h"
#include "lib/store/object_store.h"
#include "lib/store/placement.h"

namespace zipnn::store {

struct BaseNote {
  BaseReason reason = BaseReason::kFirst;  // never kNotBase nor kNoGainOrPolicy
  // The policy's figure the reason names, as it was then: base_interval
  // (kDue), max_chain (kChain), min_gain in percent (kNoGain); else 0.
  uint32_t figure = 0;
  uint64_t object_size = 0;  // the standalone object it explains
};

// The note for a version stored standalone for `reason` under `policy`.
BaseNote NoteOf(BaseReason reason, const config::Policy& policy, uint64_t object_size);

// "due every 10", "first of its series", ... (placement.h's words, with
// the figures the note holds; a newest one says "when stored", since a
// newer version may have come since).
std::string DescribeNote(const BaseNote& note);

// The note's text (docs/format.md, "Base notes") and back. ParseBaseNote
// checks that it is `id`'s, and is all it may be: a few known lines, at
// most kMaxBaseNoteBytes.
std::string BaseNoteText(const ContentId& id, const BaseNote& note);
Result<BaseNote> ParseBaseNote(const std::string& text, const ContentId& id);
inline constexpr size_t kMaxBaseNoteBytes = 512;
// The reason as the note writes it, "due 10", "first", and back (what a
// Git LFS server's object map keeps of a note: lib/remote/lfs.h); the
// object size is not in them.
std::string ReasonWords(const BaseNote& note);
std::optional<BaseNote> ParseReasonWords(const std::vector<std::string>& words);
inline constexpr char kBaseNoteSuffix[] = ".base";
std::string BaseNotePath(const ObjectStore& objects, const ContentId& id);

// Writes the note of `id`'s object, which the store holds standalone.
// Best effort: a note that cannot be written costs log its word, never
// the add.
void WriteBaseNote(const ObjectStore& objects, const ContentId& id, BaseReason reason, const config::Policy& policy);
// Removes the note of `id`'s object, re-stored as a delta (best effort:
// one left behind is ignored, and gc removes it with the object).
void RemoveBaseNote(const ObjectStore& objects, const ContentId& id);
// Keeps `text`, a note received for `id`, when it parses and explains
// the object the store holds now; else an error saying why.
Status KeepBaseNote(const ObjectStore& objects, const ContentId& id, const std::string& text);

// The note of `id`'s object: nullopt when there is none, or it does not
// parse, or does not explain the object there now.
std::optional<BaseNote> ReadBaseNote(const ObjectStore& objects, const ContentId& id);
// Its text, as ReadBaseNote would take it (what a store sends a remote).
std::optional<std::string> BaseNoteTextOf(const ObjectStore& objects, const ContentId& id);

}  // namespace zipnn::store
