// The body of git's clean filter: a checkpoint in, its pointer out. The
// checkpoint is spooled beside the store while it is hashed (or, larger
// than the raw cache keeps, only compared with the work-tree file git
// read it from, which the store then reads in place), placed in
// its series among the versions git holds (lib/git), stored by the
// policy (store::CheckIn), and listed for git's textconv cache; content
// that is already a pointer comes back as the same pointer. The filter
// process (filters/) speaks git's protocol around it.
//
// A Cleaner holds the store's lock shared from its first object until it
// goes away, so that a gc waits until git has recorded the pointers of
// what was stored (git writes its index before it stops the filter).
//
// One instance serves one process; not thread-safe.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/git/series_versions.h"
#include "lib/git/textconv_cache.h"
#include "lib/store/checkin.h"
#include "lib/store/parents.h"
#include "lib/store/pointer.h"
#include "lib/store/store.h"

namespace zipnn::ops {

class Cleaner {
 public:
  // `series` (borrowed; outlives the Cleaner) finds the earlier versions
  // of what is stored; null (no repository around): every version is
  // placed on its own.
  Cleaner(store::Store store, git::SeriesVersions* series);

  // Also lists each checkpoint stored for git's textconv cache
  // (lib/git/textconv_cache.h), unless the cache holds a listing of its
  // pointer already; Finish writes what was listed.
  void KeepListings(git::TextconvCache cache) { listings_ = std::move(cache); }
  // The parent every checkpoint stored is to be a delta of
  // (store::ParentCandidate): a file or folder, from the top of the work
  // tree (GIT_ZIPNN_PARENT); it comes before the rules of .zipnn.yaml
  // `parents`.
  void NameParent(std::string path) { named_parent_ = std::move(path); }
  // Writes the listings kept (a cache: failing to write them loses git no
  // data, so the caller only warns).
  Status Finish();

  // Stores the checkpoint git streams for `path` (`content`) and writes
  // its pointer to `out`; a pointer comes back as it is (checked).
  Status Clean(const std::string& path, ByteReader& content, ByteSink& out);

 private:
  // Clean of a checkpoint stored ahead of git (added.h) under `pointer`:
  // the rest of `content` (after `head`) is hashed, and the pointer is
  // answered only when the bytes are the ones it names.
  Status CleanNoted(const std::string& path, const std::string& head, ByteReader& content, store::Pointer pointer,
                    ByteSink& out);
  // The version to spell `pointer` in for `path`: the one of the pointer
  // the index holds there when it names the same checkpoint (a file
  // cleaned again must give git the same blob), else the current one.
  int PointerVersionFor(const std::string& path, const store::Pointer& pointer);
  // The versions a new checkpoint at `path` (of series `name`) may be a
  // delta of: the one named for it (NameParent, then .zipnn.yaml), then
  // the recent versions of other series. `version` is the new checkpoint.
  std::vector<store::ParentCandidate> ParentCandidates(const std::string& path, const std::string& name,
                                                       const store::NewVersion& version);
  // The earlier versions whose tensors hash as those of `version` do, by
  // the listings git holds (store::TwinIndex).
  std::vector<store::ParentCandidate> ListedTwins(const store::NewVersion& version);
  // The earlier versions of other series than `name` holding a tenth or
  // more of `version`'s tensor bytes under any names, by the listings git
  // holds (store::TensorIndex, brought up to date by ListedTwins), those
  // holding most first.
  std::vector<store::ParentCandidate> SharedHolders(const std::string& name, const store::NewVersion& version);
  // Notes in the store's cache of children the ones git holds (git/children.h),
  // once a process.
  void TakeChildrenFromGit();
  // The first time a large checkpoint's raw copy is kept (store/raw_cache.h)
  // in this repository, says what it costs and how to change that.
  void NoteRawCopy(const std::string& path, const ContentId& id, uint64_t size);
  // A version retention removed here whose exact bytes git cleans again
  // (a checkout of an old commit writes them from the remote, and git
  // cleans the file it wrote when its time stamp cannot tell it is
  // unchanged): the pointer the index holds for `path`, when it names
  // this version and the default remote holds it, so that it is not
  // stored here again (remote::FetchRetained; zipnn.keepRefetched stores
  // it). nullopt otherwise, and on any doubt: then it is stored.
  std::optional<store::Pointer> HeldElsewhere(const std::string& path, const ContentId& id);
  // The textconv listing of `version`, made once for the version being
  // stored; null when it cannot be read as a checkpoint.
  const std::string* ListingOf(const store::NewVersion& version);
  // Lists the checkpoint `version` (stored under `pointer_text`) for the
  // textconv cache; a file that cannot be listed is left to git.
  void KeepListing(const store::NewVersion& version, const std::string& pointer_text);
  // Puts the twin key and the tensors of `listing` (of version `id`, under
  // `pointer_text`) in the twin and tensor indexes.
  void KeepIndexed(const std::string& pointer_text, const std::string& listing, const ContentId& id);

  store::Store store_;
  git::SeriesVersions* series_;
  std::optional<store::Adding> lock_;
  // The index's blobs by path, read once, when first needed.
  std::optional<std::map<std::string, git::Oid>> staged_;
  bool warned_ = false;         // that git's series could not be read
  bool swept_scratch_ = false;  // what stopped commands left in the scratch folder is gone
  bool took_children_ = false;  // git's children of versions in other series are in the store's cache
  std::optional<git::TextconvCache> listings_;
  std::string named_parent_;
  store::Fingerprints fingerprints_;
  store::TwinIndex twins_;
  store::TensorIndex tensors_;
  std::optional<std::pair<ContentId, std::string>> listing_;  // ListingOf's, for the version being stored
  std::set<std::string> unknown_parents_;                     // named parents warned about
};

}  // namespace zipnn::ops
