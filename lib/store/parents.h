// Parents across series: the earlier version, in another series, that a
// new checkpoint is stored as a delta of when its own series offers none
// worth taking (docs/policy.md, "Parents"). A fine-tune is a delta of the
// model it started from; a twin (the same tensors saved again under
// another name or in another container: last.ckpt beside
// epoch=3-step=300.ckpt, pytorch_model.bin beside model.safetensors) is a
// delta of its twin and costs nearly nothing.
//
// A candidate is named by a rule (.zipnn.yaml `parents`, or the caller's
// own: the Python module's commit_checkpoint(parent=...)), or found: a
// recent version of another series whose tensors have the same names,
// dtypes and shapes (formats::TensorFingerprint) and whose sampled bytes
// are close, or any earlier version whose tensors hash the same (a twin
// of an older save: the best model re-saved at the end of a run), or any
// earlier version holding tensors of the same bytes under any names (a
// base model inside an adapter file, a second naming scheme of the same
// weights), whose delta takes each tensor against its own bytes.
// Fingerprints and tensor hashes are kept in caches (Fingerprints,
// TwinIndex) so that finding candidates reads no checkpoint's bytes; a
// missing fingerprint is read again from the version's file in the work
// tree, a missing key from git's listings.
//
// Thread-compatible.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <string>
#include <string_view>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/status.h"
#include "lib/container/format.h"
#include "lib/formats/checkpoint.h"
#include "lib/store/store.h"

namespace zipnn::store {

// Why a version is a delta of a version of another series.
// Recorded in the delta's header (container::BaseChoice, format 6 on).
enum class ParentWhy : uint8_t {
  kRule = static_cast<uint8_t>(container::BaseChoice::kNamed),  // named by .zipnn.yaml `parents` or by the caller
  kTwin = static_cast<uint8_t>(container::BaseChoice::kTwin),   // the same tensors, with the same values
  kSameTensors = static_cast<uint8_t>(container::BaseChoice::kSameTensors),  // the same tensors, close values
  kShared = static_cast<uint8_t>(container::BaseChoice::kShared),  // tensors of the same bytes, under any names
};
// How log, show and add say it: "named as its parent", "a twin: ...".
const char* ParentWhyText(ParentWhy why);
// The same for a choice read from a header; empty for kSeries.
std::string BaseChoiceText(container::BaseChoice choice);

// A version git holds that a new checkpoint may be a delta of: its id and
// where git holds it (from the top of the work tree).
struct ParentCandidate {
  ContentId id;
  std::string path;
  bool by_rule = false;
  // Found by its tensors' hashes (TwinIndex): weighed on bytes proven to
  // be it, as `path` may hold another version now.
  bool listed_twin = false;
  // Found holding this many bytes of the new checkpoint's tensors, by
  // their contents under any names (TensorIndex); weighed as a listed
  // twin is, its tensors matched by content.
  uint64_t shared_bytes = 0;
  // Of those bytes, those no candidate before it holds (TensorIndex::
  // Cover): all the candidates' add up to what they hold together.
  uint64_t adds_bytes = 0;
};

// The parent taken, with its bytes (verified: a work-tree file or kept
// copy that hashes to its id, or its chain decoded) ready for the delta.
struct Parent {
  ContentId id;
  std::string path;
  ParentWhy why = ParentWhy::kSameTensors;
  formats::Checkpoint bytes;
  double sampled_ratio = 1;  // the sampled delta's bound over the sampled standalone bound
  // Taken for the tensors of the same bytes only (a newest that shares
  // part of its tensors: ChooseParent); its delta codes the rest alone.
  bool equal_only = false;
};

// Where the caches of this file live: the folder holding the raw cache
// (.git/zipnn/cache), beside it rather than among its copies; empty when
// the store keeps no cache.
std::string ParentCachesDir(const Store& store);

// The fingerprint cache: <ParentCachesDir>/fingerprints, a line per version,
// "<content id> <fingerprint>" (both 32 hex digits), appended as versions
// are stored. Any line may be lost; a damaged line is passed over.
class Fingerprints {
 public:
  explicit Fingerprints(std::string cache_dir) : dir_(std::move(cache_dir)), file_(dir_ + "/fingerprints") {}
  std::optional<ContentId> Find(const ContentId& id);
  // Best effort: a failure to write loses a cache entry, nothing else.
  void Keep(const ContentId& id, const ContentId& fingerprint);

 private:
  void Load();
  std::string dir_;
  std::string file_;
  bool loaded_ = false;
  std::map<ContentId, ContentId> known_;
};

// Twins by their listings: <ParentCachesDir>/twins, a line per version
// listed, "<key> <version> <source>": the key is analyze::TwinKey of the
// version's tensor listing ("-" for none, or for a version gc took), the
// source the pointer blob whose listing it was read from. Kept as
// versions are stored and brought up to date from the listings git holds
// (lib/git/textconv_cache.h, which travel with the branches), so a clone
// builds it again; any line may be lost and is read again.
class TwinIndex {
 public:
  explicit TwinIndex(std::string cache_dir) : dir_(std::move(cache_dir)), file_(dir_ + "/twins") {}
  // Whether the listing of pointer blob `source` has been read.
  bool Knows(const std::string& source);
  // The versions listed with `key`, the first listed first.
  std::vector<ContentId> Find(const ContentId& key);
  // Best effort: a failure to write loses a cache entry, nothing else. A
  // source known without a key takes one given now.
  void Keep(const std::optional<ContentId>& key, const ContentId& id, const std::string& source);

 private:
  void Load();
  std::string dir_;
  std::string file_;
  bool loaded_ = false;
  std::map<std::string, bool> sources_;  // read, and whether with a key
  std::vector<std::pair<ContentId, ContentId>> keyed_;  // (key, version)
};

// Tensors by their contents: <ParentCachesDir>/tensors, a line per
// version listed, "<version> <source> <tensors>": the source the pointer
// blob whose listing it was read from, the tensors each of at least
// kIndexedTensorBytes as "<content key>:<bytes>" (formats::ContentKey, 16
// hex digits, from the listing's hash), comma-separated, or "-" (none,
// or a version gc took). Kept and read again as the twin index is, so
// that any tensor git holds a listing of can be found under any name.
inline constexpr uint64_t kIndexedTensorBytes = 4096;
struct KeyedTensor {
  uint64_t key = 0;
  uint64_t bytes = 0;
};
class TensorIndex {
 public:
  explicit TensorIndex(std::string cache_dir) : dir_(std::move(cache_dir)), file_(dir_ + "/tensors") {}
  bool Knows(const std::string& source);
  // Best effort, as TwinIndex::Keep; tensors under kIndexedTensorBytes are
  // left out.
  void Keep(const ContentId& id, const std::string& source, const std::vector<KeyedTensor>& tensors);
  // The versions holding tensors of `tensors`' contents, with the bytes
  // of `tensors` each holds (a content counted once a version), most
  // first; those holding less than `least` bytes are left out.
  // One pass over the index's text, whose keys are only parsed here and
  // looked up among `tensors`' (thousands of versions of hundreds of
  // tensors each are tens of MB: building a map of them all would cost
  // every add that searches more than the search).
  std::vector<std::pair<ContentId, uint64_t>> Find(const std::vector<KeyedTensor>& tensors, uint64_t least);
  // At most `most` versions that together hold as many of `tensors`'
  // contents as can be: each in turn the one adding the most bytes not
  // held by those before it, of those whose bytes added are a quarter of
  // their own at least (each is read whole to give them), none of `skip`;
  // with the bytes of `tensors` each holds in all, and of those the bytes
  // it adds.
  struct Covering {
    ContentId id;
    uint64_t held = 0, adds = 0;
  };
  std::vector<Covering> Cover(const std::vector<KeyedTensor>& tensors, size_t most,
                              const std::set<ContentId>& skip = {});

 private:
  struct Holding {
    std::set<uint64_t> keys;  // the contents of `tensors` it holds
    uint64_t own = 0;         // the bytes of its indexed tensors
  };
  // Every version holding any of `tensors`' contents; `wanted` gets the
  // bytes of each content among `tensors`.
  std::map<ContentId, Holding> Holders(const std::vector<KeyedTensor>& tensors,
                                       std::unordered_map<uint64_t, uint64_t>& wanted);
  void Load();
  // Takes a line's "<tensors>" part (or "-") for `id`.
  void Hold(const ContentId& id, std::string_view tensors);
  std::string dir_;
  std::string file_;
  bool loaded_ = false;
  std::map<std::string, bool> sources_;  // read, and whether with tensors
  // The tensors part of every line read or kept, and the version of each.
  std::string text_;
  struct Held {
    ContentId id;
    size_t from = 0, to = 0;  // in text_
  };
  std::vector<Held> held_;
};

// The versions stored as deltas of a parent in another series, noted
// when they are stored, or when a clone that did not store them finds
// them among the recent versions as their parent is about to be
// re-stored: <ParentCachesDir>/children, a line "<parent> <child>" each,
// once. A cache: a lost line lets a later re-store of the parent make the
// child's chain longer than max_chain (a restore still follows it).
void NoteChild(const Store& store, const ContentId& parent, const ContentId& child);
// The same for many (parent, child), the cache read once; and every pair
// it holds. Children noted in git by other clones (git/children.h) come
// in here, and the store's go there with a push.
void NoteChildren(const Store& store, const std::vector<std::pair<ContentId, ContentId>>& children);
std::vector<std::pair<ContentId, ContentId>> NotedChildren(const Store& store);
// How far up the noted children of `id` (and theirs) reach above it, for
// those that are still deltas of it, or whose object is not here to say
// (a child another clone stored: it is taken to rest on it still); 0
// when none are.
uint32_t HangingElsewhere(const Store& store, const ContentId& id);

// Drops the lines of the fingerprint and children caches that name a
// version `keep` refuses, and the key of such a version in the twin index
// and its tensors in the tensor index (git zipnn gc, under the store's
// exclusive lock). Best effort.
void PruneParentCaches(const Store& store, const std::function<bool(const ContentId&)>& keep);

// How close `input` is to `base` from a sample of their matched tensors
// (at most kSampleBytes, spread over them): the order-0 bound of the
// sample taken as a delta over its bound taken standalone; 1 when nothing
// matched. A twin's is near 0 (not 0: a zip's member names lie between
// its tensors); below kTwinRatio the two are taken for twins. With
// `matched_share`, the share of `input`'s bytes in matched tensors.
inline constexpr uint64_t kSampleBytes = 4u << 20;
inline constexpr double kTwinRatio = 0.02;
Result<double> SampledRatio(const Store& store, const formats::CheckpointView& input,
                            const formats::CheckpointView& base, double* matched_share = nullptr);

// The parent `input` (fingerprint `fingerprint`, stored at `path`) is best
// stored as a delta of, among `candidates` (the caller's order: the first
// rule candidate wins; found ones are weighed by their sampled ratio), or
// nullopt. A found candidate must have `fingerprint` and a sampled ratio
// of at most kCloseRatio; `twins_only` takes only a twin, or else, when
// the candidates found by shared tensors hold at least twice min_gain of
// its indexed bytes, the one of those stored whole that holds most, for
// the tensors of the same bytes only (Parent::equal_only; the others
// stored whole give theirs as `holders`). A listed twin
// is weighed on its verified bytes (decoded when no copy holds them), and
// so is one found by shared tensors, whose sampled ratio counts the
// tensors it does not hold as stored alone; `input` must then carry its
// tensors' content hashes (formats::HashTensorContents). A candidate
// whose chain the store does not hold whole, or whose chain is already
// max_chain long, is passed over.
inline constexpr double kCloseRatio = 0.85;
// `not_here`, when given, gets the path of each candidate found by its
// hashes that was passed over because no copy holds it and its chain is
// not in the store (a clone that fetched only the newest versions).
// Whether a delta may reference versions besides its base (object format
// 8) under `policy`: not where it keeps to a format for older readers
// (delta_transform other than auto).
bool ReferencesAllowed(const config::Policy& policy);
// A delta takes tensors from at most this many versions besides its
// parent: each is read whole when the delta is made (restored when no
// copy holds it) and opened with it at every restore.
inline constexpr size_t kMaxTakenReferences = 32;
// `holders`, when given, gets the other candidates found by shared
// tensors that were weighed on proven bytes (a restore, or a verified
// copy) with their tensors' content hashes, and whose chains keep within
// max_chain: versions the delta may take the tensors the parent lacks
// from (references, object format 8). Their chains are not marked as
// used: the caller does that for those it takes.
Result<std::optional<Parent>> ChooseParent(const Store& store, const formats::CheckpointView& input,
                                           const std::vector<ParentCandidate>& candidates, Fingerprints& fingerprints,
                                           bool twins_only, std::vector<std::string>* not_here = nullptr,
                                           std::vector<Parent>* holders = nullptr);

}  // namespace zipnn::store
