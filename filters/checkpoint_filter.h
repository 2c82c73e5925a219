// The clean and smudge of git-zipnn: clean turns a checkpoint into its
// pointer (storing the object by the repository's policy, as a version of
// its series among the versions git holds), smudge turns a
// pointer back into the exact bytes. Content that is already a pointer
// passes clean unchanged, and content that is not a pointer passes smudge
// unchanged, so a repository is never stuck half-converted.
//
// Clean's body is ops::Cleaner (lib/ops/clean.h), which also holds the
// store's lock while git records what it stored.
//
// One instance serves one process (single- or multi-file); not
// thread-safe.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "filters/filter_process.h"
#include "lib/access/versions.h"
#include "lib/git/series_versions.h"
#include "lib/git/textconv_cache.h"
#include "lib/ops/clean.h"
#include "lib/series/series.h"
#include "lib/store/parents.h"
#include "lib/store/restore.h"
#include "lib/store/store.h"

namespace zipnn::filters {

// How smudge treats a pointer.
struct SmudgeOptions {
  // Check pointers out as they are (GIT_ZIPNN_SKIP_SMUDGE=1), for a later
  // `git zipnn pull`.
  bool leave_pointers = false;
  // Fetch what a restore finds missing from the default remote
  // (access::Options::fetch).
  bool fetch_missing = false;
  // A checkpoint that cannot be restored (its object missing, here and on
  // the remote, or damaged) is checked out as its pointer, with a
  // warning, instead of failing git's whole checkout (zipnn.skipSmudgeErrors,
  // GIT_ZIPNN_SKIP_SMUDGE_ERRORS=1); `git zipnn pull` restores it later.
  bool keep_pointer_on_error = false;
  // Checkpoints of more bytes are checked out as their pointers and named
  // in `outside_list`, for git-zipnn's post-checkout and post-merge hooks
  // to write once git is done: git holds each file a filter hands it
  // whole in memory (ops::FilterStart::checkout_outside_above; 0: none).
  uint64_t outside_above = 0;
  std::function<Result<std::string>()> outside_list;  // its path, asked once
};

class CheckpointFilter : public FilterHandler {
 public:
  // `series` finds the earlier versions of what clean stores; without it
  // (no repository around) every version is placed on its own.
  CheckpointFilter(store::Store store, std::unique_ptr<git::SeriesVersions> series, SmudgeOptions smudge = {})
      : repo_(std::move(store)),
        series_(std::move(series)),
        smudge_(std::move(smudge)),
        versions_(repo_, access::Options{smudge_.fetch_missing, access::Copies::kBases}),
        local_versions_(repo_, access::Options{false, access::Copies::kBases}),
        cleaner_(repo_, series_.get()) {}

  // Clean then also lists each checkpoint it stores for git's textconv
  // cache (lib/git/textconv_cache.h), unless the cache holds a listing of
  // its pointer already; Finish writes what was listed.
  void KeepListings(git::TextconvCache cache) { cleaner_.KeepListings(std::move(cache)); }
  // The parent every checkpoint this process stores is to be a delta of
  // (store::ParentCandidate): a file or folder, from the top of the work
  // tree, named by the caller (GIT_ZIPNN_PARENT); it comes before the
  // rules of .zipnn.yaml `parents`.
  void NameParent(std::string path) { cleaner_.NameParent(std::move(path)); }
  // Ends the process's work: writes the listings kept (a cache: failing to
  // write them loses git no data, so the caller only warns).
  Status Finish();
  // How many pointers smudge checked out as they are (leave_pointers).
  size_t pointers_left() const { return pointers_left_; }
  // How many checkpoints it left for the hooks to write (outside_above).
  size_t left_outside() const { return left_outside_; }
  // How many checkpoints it left as their pointers because the remote
  // could not give their objects (kUnavailable): once one fetch fails so,
  // the remote is not asked again in this process, and every checkpoint
  // the store here cannot restore alone is left as its pointer, so that a
  // checkout with the remote down ends with a usable work tree.
  size_t left_unfetched() const { return left_unfetched_; }

  Status Clean(const std::string& path, ByteReader& content, ByteSink& out) override;
  Status Smudge(const std::string& path, ByteReader& content, ByteSink& out) override;
  // Every pointer is delayed when git allows it, and the delayed files are
  // handed back in series order, each series by step (files of equal
  // steps by path): git's own order is by path (checkpoint-100 before
  // checkpoint-20), and a restore is cheapest right after the version
  // below it was written. Without git's series, the built-in rules place
  // the paths.
  bool Delay(const std::string& path, const std::string& content) override;
  std::optional<std::string> NextDelayed() override;

 private:
  // Adds `path` to the list of what the hooks write after git's checkout.
  Status NoteOutside(const std::string& path);
  // A work-tree file holding version `id` (of `series`), verified, for a
  // restore to start from; access::Versions adds the kept raw copies.
  std::optional<ReadFile> FindCopy(const ContentId& id, const std::string& series);

  store::Store repo_;
  std::unique_ptr<git::SeriesVersions> series_;
  // What this process has checked out: version -> its path in the work tree.
  std::map<ContentId, std::string> checked_out_;
  // Delayed smudges, in the order they are handed back, and the pointer
  // text each was delayed with (git asks again with no content).
  struct DelayedKey {
    series::Placed placed;
    std::string path;
    bool operator<(const DelayedKey& o) const;  // series::SeriesLess, then by path
  };
  std::set<DelayedKey> delayed_;
  std::map<std::string, std::string> delayed_pointers_;
  SmudgeOptions smudge_;
  access::Versions versions_;  // reads repo_
  access::Versions local_versions_;  // reads repo_ only, once the remote failed
  bool remote_down_ = false;
  size_t left_unfetched_ = 0;
  size_t pointers_left_ = 0;
  size_t left_outside_ = 0;
  ops::Cleaner cleaner_;  // borrows series_
};

}  // namespace zipnn::filters
