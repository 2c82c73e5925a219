// The one road from a pointer to the bytes of the version it names, for
// every reader: smudge, restore, pull, cat, show, diff, analyze and the
// Python module (through cat). A version is read
//   1. from a verified copy, where the reader allows one (Copies): a file
//      the caller knows of (smudge: what it checked out a moment ago), a
//      work-tree file the index holds for that version, or a kept raw
//      copy; a copy is used only if its bytes hash to the id, and every
//      later read of it is checked again (ReadFile::OpenHolding);
//   2. else from the local store, its chain decoded down to the first
//      version a copy stands in for (store::Restore);
//   3. else, when an object of the chain is missing, after fetching what
//      is missing from the default remote (remote::FetchChain), each
//      object proved to decode to its id before it takes its name.
// Every path ends in bytes checked against the content id, or, read by
// parts, against each chunk's raw checksum.
//
// Thread-compatible: one Versions per thread.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "lib/base/content_id.h"
#include "lib/base/file.h"
#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/formats/checkpoint.h"
#include "lib/store/pointer.h"
#include "lib/store/restore.h"
#include "lib/store/retention.h"
#include "lib/store/store.h"

namespace zipnn::access {

// Which versions a reader takes from a verified copy instead of decoding
// its objects.
enum class Copies {
  // None: restore, cat, show and pull read the objects, and so prove them.
  kNone,
  // The bases a chain stands on, never the version itself: smudge, whose
  // checkout in step order then decodes each delta once.
  kBases,
  // The version and its bases: diff and analyze, which then decode
  // nothing while the saves they compare are in the work tree.
  kAll,
};

struct Options {
  // Fetch what the local store lacks from the default remote.
  bool fetch = true;
  Copies copies = Copies::kNone;
  // A version retention thinned (lib/store/retention.h) is read as its
  // approximate version, checked against that version's own id, when no
  // exact copy is at hand; without it such a version is kRemoved, as a
  // dropped one always is.
  bool approximate = false;
};

// A version opened for reading by parts: through its chain (the objects
// the local store lacks read where they lie on the remote, where it
// serves parts), or, for an object older than format 5 (no raw
// checksums), restored whole into a scratch file, checked.
struct Parts {
  std::unique_ptr<ByteSource> chain;
  std::optional<formats::Checkpoint> whole;
  const ByteSource& source() const { return chain ? *chain : static_cast<const ByteSource&>(whole->file()); }
};

class Versions {
 public:
  explicit Versions(const store::Store& store, Options options = {});
  Versions(const store::Store& store, Copies copies) : Versions(store, Options{true, copies}) {}

  // A verified copy of `id` (step 1 above), whatever the Copies: `also`
  // first, when given, then the index's work-tree files, then the raw
  // cache.
  std::optional<ReadFile> FindCopy(const ContentId& id, const store::FindCopy& also = nullptr) const;

  // Writes the exact bytes `pointer` names to `out`, verified. `name` is
  // what messages call the version (a path, a "<rev>:<path>"). A missing
  // object fails before anything is written, naming the object, `name`
  // and the store; a failed fetch says what the remote did, after
  // "<name>: ": kNotFound when the remote lacks an object, kUnavailable
  // when it could not give one (unreachable, refusing, failing, or what it
  // sent failed its check).
  Status Write(const store::Pointer& pointer, const std::string& name, ByteSink& out,
               const store::FindCopy& also = nullptr) const;

  // The version as a file to read: a verified copy where it lies, else
  // restored (Write) into a scratch file in the store's temp_dir. Its
  // layout is not read yet.
  Result<formats::Checkpoint> Open(const store::Pointer& pointer, const std::string& name) const;

  // The version for reading by parts, decoding only what is read (no copy
  // is looked for: hashing one reads the whole file). Objects the local
  // store lacks are read by parts where they lie on the default remote
  // when it serves parts (remote::OpenRemoteVersion), else fetched whole.
  Result<Parts> OpenParts(const store::Pointer& pointer, const std::string& name) const;

  // What git holds at <rev>:<path> (git::PointerAt's spelling): the
  // version its pointer names (Open), or the file itself when git holds
  // it unfiltered (committed before it was tracked). `rev` is checked
  // (git::CheckRevision) before git reads it.
  Result<formats::Checkpoint> OpenAt(const std::string& rev, const std::string& path) const;

  // The checkpoint in `file`: the version it names when it holds a
  // git-zipnn pointer (as the files git hands to diff drivers may), else
  // the file itself.
  Result<formats::Checkpoint> OpenFile(const std::string& file) const;

  const store::Store& store() const { return store_; }

  // What retention made of `id`, when this store holds no exact object of
  // it: its record, or nothing (not retained, or held exactly).
  Result<std::optional<store::Retained>> Retention(const ContentId& id) const;

 private:
  // Write for a version whose object is missing here: nothing when
  // retention did not take it; else its approximate bytes (when asked
  // for), the exact ones from the default remote, or kRemoved.
  // `ask_remote`: false once the remote was asked already.
  std::optional<Status> WriteRetained(const store::Pointer& pointer, const std::string& name, ByteSink& out,
                                      const store::FindCopy& find_copy, bool ask_remote = true) const;
  // Whether the default remote holds a retention record of `id` (now
  // kept in the local store too: remote::FetchRecord).
  bool FetchRecord(const ContentId& id) const;
  // Fetches what `pointer` needs from the default remote; true when the
  // fetch wrote the checkpoint to `deliver` on the way.
  Result<bool> Fetch(const store::Pointer& pointer, const store::FindCopy& find_copy, ByteSink* deliver) const;
  // FindCopy; with `size`, a work-tree file of another size is passed
  // over without hashing it.
  std::optional<ReadFile> FindCopyOfSize(const ContentId& id, std::optional<uint64_t> size,
                                         const store::FindCopy& also = nullptr) const;
  const std::map<ContentId, std::string>& InIndex() const;

  const store::Store& store_;
  Options options_;
  mutable std::optional<std::map<ContentId, std::string>> in_index_;  // a version -> a path holding it
};

// When the work-tree file `file` (at `path` in the repository) holds a
// pointer, writes the checkpoint it names in its place, verified and
// atomically (Versions::Write), its temporary file out of git's sight
// (AtomicFile::CreateInWorkTree, in the store's temp_dir); the id
// written, or nothing when the file holds something else. On an error
// the file is left as it was.
Result<std::optional<ContentId>> RestorePointerFile(const Versions& versions, const std::string& path,
                                                    const std::string& file);

}  // namespace zipnn::access
