// git's cache of textconv output, filled ahead of time.
//
// `git log -p` and `git show` diff the textconv listings of the two sides
// of a checkpoint (docs/commands/diff.md). To make a listing, git first
// smudges the pointer into a temporary file: a whole restore per version,
// the checkpoint held in git's memory while it writes it. With
// diff.<driver>.cachetextconv set, git looks in its cache before it
// smudges: notes on the ref refs/notes/textconv/<driver>, one per blob,
// holding the textconv output for that blob, valid while the notes
// commit's subject equals the textconv command. A listing git finds there
// costs it nothing but reading the note.
//
// Clean has the checkpoint's bytes at hand and knows the pointer blob git
// will store, so it makes the listing then and puts it where git will
// look: the note of that pointer blob, written as git writes it (a
// parentless commit whose subject is the textconv command). The ref is
// replaced only if nobody changed it meanwhile (git writes it too, after
// each listing it makes); a lost race loses cache entries, never data,
// and git makes a missing listing itself as before.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/git/git.h"

struct git_repository;  // libgit2's, opened in textconv_cache.cc

namespace zipnn::git {

// What textconv prints instead of a listing for a checkpoint it cannot
// read (its object missing here and on the remote), and whether a text
// git cached is such a line rather than a listing.
std::string ListingFailure(const std::string& why);
bool IsListingFailure(const std::string& text);

class TextconvCache {
 public:
  // The cache git reads for the diff driver `driver` in the repository
  // around the current folder, or nullopt when git would read none
  // (diff.<driver>.cachetextconv is not true, or diff.<driver>.textconv
  // is unset, in `config`).
  static std::optional<TextconvCache> Open(const std::string& driver, const ConfigSnapshot& config);

  // The note the cache holds for a blob whose bytes are `pointer_text`
  // (the notes are listed once, when first asked, then kept with what Add
  // adds); nullopt when there is none. Clean need not list a file git
  // cleans again, unless its note is an error textconv printed.
  std::optional<std::string> Note(const std::string& pointer_text);

  // The same for the blob of id `blob` (40 hex digits); also the id of
  // the note's own blob when `note_blob` is given (empty for a listing
  // added and not written yet).
  std::optional<std::string> NoteOfBlob(const std::string& blob, std::string* note_blob = nullptr);

  // Calls `take` with the pointer blob and the text of each note the cache
  // holds (with those added and not written yet) that `wanted` asks for,
  // reading only those; a note that cannot be read is passed over.
  void ReadNotes(const std::function<bool(const std::string& blob)>& wanted,
                 const std::function<void(const std::string& blob, const std::string& text)>& take);

  // `listing` is what textconv prints for a blob whose bytes are
  // `pointer_text`. Kept in memory until Write.
  void Add(const std::string& pointer_text, std::string listing);
  // The same for the blob of id `blob`.
  void AddForBlob(const std::string& blob, std::string listing);
  size_t pending() const { return pending_.size(); }

  // Puts every listing added since the last Write into the cache, in one
  // commit; a note that already holds the same listing is left as it is,
  // one that differs (an error git cached while an object was missing) is
  // replaced. Nothing is written when nothing was added.
  Status Write();

 private:
  TextconvCache(std::string start, std::string ref, std::string validity)
      : start_(std::move(start)), ref_(std::move(ref)), validity_(std::move(validity)) {}
  struct Entry {
    std::string blob;  // the pointer blob's id
    std::string listing;
  };
  std::string start_;
  std::string ref_;       // refs/notes/textconv/<driver>
  std::string validity_;  // the textconv command: the notes commit's subject
  std::vector<Entry> pending_;
  // Blob id -> the id of its note's blob, or of the listing Add was given
  // (in pending_, by its index), once read.
  struct Held {
    std::string note;  // hex id of the note's blob; empty for one in pending_
    size_t pending = 0;
  };
  std::optional<std::map<std::string, Held>> held_;
  // Lists the notes into held_, once.
  Status LoadHeld(git_repository* repo);
  std::optional<std::string> ReadHeld(git_repository* repo, const Held& held) const;
};

// The id (hex) of the blob git stores for a pointer's text: the key of
// its note.
Result<std::string> PointerBlob(const std::string& pointer_text);

}  // namespace zipnn::git
