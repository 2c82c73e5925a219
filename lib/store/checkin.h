// Storing checkpoints by the policy of .zipnn.yaml. A new version of a
// series (lib/series) is stored as a delta against the nearest earlier
// version the store holds, or as a base when it is the first, when it is
// due (every base_interval-th), when the delta would exceed max_chain, or
// when the delta does not save min_gain against the version coded
// standalone (placement.h says where it goes; this file encodes it). The
// caller says which versions came before (read from git:
// lib/git/series_versions.h), so every clone and worktree continues the
// same chains. A delta is built only on bytes proven to be its base.
//
// Thread-compatible; separate processes may store at once (objects are
// written atomically).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/status.h"
#include "lib/formats/checkpoint.h"
#include "lib/store/parents.h"
#include "lib/store/placement.h"
#include "lib/store/pointer.h"
#include "lib/store/store.h"

namespace zipnn::store {

// The versions of the new one's series that git holds, in series order;
// with `deep`, its whole history too (asked for only when the last base
// before the new version is not among the shallow ones).
using EarlierVersions = std::function<Result<std::vector<Version>>(bool deep)>;

// A checkpoint to store: its bytes in `file` (content id known), where
// git will hold it, and its place in its series.
struct NewVersion {
  std::string file;
  ContentId id;
  std::string path;
  std::string series;  // series::Placed::name
  std::string step;
  // Versions of other series it may be a delta of (parents.h), asked for
  // only where its own series would store it whole: when it is the first
  // of its series, any parent that pays; when it is the newest (newest:
  // whole), a twin. Unset or empty: none. `fingerprints` keeps what is
  // learned of this version and of the candidates; needed with `parents`.
  std::function<std::vector<ParentCandidate>()> parents = nullptr;
  Fingerprints* fingerprints = nullptr;
  // Where encoding it reports its progress (bytes done of total): the
  // clean filter's line on a terminal. Unset: nowhere.
  std::function<void(uint64_t done, uint64_t total)> progress = nullptr;
  // `file` opened already and held to the bytes of `id` (ReadFile::Pin):
  // a work-tree file the caller found to hold what git streamed. Read in
  // place of opening `file`, and never linked into the raw cache, which
  // keeps only files of the store's own. Borrowed; null: open `file`.
  const ReadFile* held = nullptr;
};

// The new version's bytes: `held`, else the file at `file`.
Result<formats::Checkpoint> OpenNewVersion(const NewVersion& version);

struct CheckedIn {
  Pointer pointer;
  bool stored = false;  // false: the store had it already
  BaseReason reason = BaseReason::kNotBase;
  // The version of another series it was stored as a delta of, and why.
  struct TakenParent {
    ContentId id;
    std::string path;
    ParentWhy why = ParentWhy::kSameTensors;
  };
  std::optional<TakenParent> parent;
  // A parent named for it that was not taken, and why ("<path> (<why>)").
  std::string named_parent_unused;
  // Found by its tensors' hashes and not taken, its chain not being in the
  // store (stored whole for it): the path git holds it at.
  std::string parent_not_here;
  // What was found damaged on the way: this version's own object (stored
  // anew in its place), or the chain of the version it would have been a
  // delta of (made a base instead). Empty when nothing was.
  std::string damaged;
  // Newest: whole: the version before this one, when it was re-stored as
  // a delta (placement.h), or why that failed (it stays whole; the add
  // goes on).
  struct Demoted {
    ContentId id;
    ContentId base;       // what it is a delta of now
    uint64_t before = 0;  // its object's bytes before (whole, or a delta of shared tensors)
    uint64_t after = 0;   // and as a delta
  };
  std::optional<Demoted> demoted;
  std::string demotion_error;
};

// Stores `version` unless the store has it (whole). Returns its pointer
// and how it was stored.
Result<CheckedIn> CheckIn(const Store& store, const NewVersion& version, const EarlierVersions& earlier);

// An object written to a scratch file in temp_dir/candidates, fsynced,
// for the caller to link into the store; removed with the Candidate.
// CheckIn and RepackSeries (repack.h) make them.
struct Candidate {
  TempFile file;
  bool delta = false;
  uint64_t size = 0;
  // What the encode wrote; `encoded.verified` for one that is to replace
  // a stored object, each chunk decoded as it was encoded (VerifyCandidate).
  container::EncodeResult encoded;
  // The versions a delta takes tensors from besides its base (object
  // format 8), in the order of its reference table.
  std::vector<ContentId> references;
};

// Encodes `input` as a delta against `base` when that saves min_gain
// against `input` coded standalone, else standalone. Cheapest first: a
// delta that pays by a clear margin (kHintMargin) against `base_ratio`
// (the series' last base, Placement) is kept at once; else the standalone
// size is bounded by the order-0 entropy of its groups (container/
// estimate.h: the auto coders land within about 1% above it); only a delta
// that does not pay against that bound either is weighed against a real
// standalone encoding.
inline constexpr double kHintMargin = 0.95;
// With `verify`, each chunk is decoded as it is encoded (for a candidate
// that is to replace a stored object).
// `choice` is recorded in a delta's header: why `base` was taken. A
// delta takes each tensor `base` does not hold by its bytes from the first
// of `references` that does (each carrying its tensors' content hashes,
// as `input` must then), and references those it takes from. With
// `equal_only`, it takes only tensors of the same bytes, from `base` or a
// reference, and codes the rest standalone (formats::ToDeltaRegions).
Result<Candidate> EncodeCandidate(const Store& store, const formats::CheckpointView& input,
                                  const formats::CheckpointView* base, double base_ratio = 0, bool verify = false,
                                  container::BaseChoice choice = container::BaseChoice::kSeries,
                                  const std::vector<formats::CheckpointView>& references = {}, bool equal_only = false);

// Proves a candidate before it takes the place of a stored object: it
// holds `input`, as the kind of object it says (a delta of `base`), and
// decodes to exactly `input`'s content id. A candidate encoded with
// `verify` is proven by container::CheckWritten (its chunks were decoded
// as they were encoded, while their bytes were at hand); any other is
// decoded whole, reading the candidate's `references` among those given.
Status VerifyCandidate(const Store& store, const Candidate& c, const formats::CheckpointView& input,
                       const formats::CheckpointView* base,
                       const std::vector<formats::CheckpointView>& references = {});

// Removes the prepared deltas (a newest version's delta, made in its own
// add for the next add to take: checkin.cc) whose version `needed` says no
// pointer names, or whose version the store no longer holds whole.
// Returns the bytes freed.
uint64_t PrunePrepared(const Store& store, const std::function<bool(const ContentId&)>& needed);

}  // namespace zipnn::store
