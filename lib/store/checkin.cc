#include "lib/store/checkin.h"

#include <algorithm>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/fs_ops.h"
#include "lib/base/thread_pool.h"
#include "lib/container/estimate.h"
#include "lib/formats/detect.h"
#include "lib/formats/file_layout.h"
#include "lib/container/object.h"
#include "lib/store/base_note.h"
#include "lib/store/chain.h"
#include "lib/store/copies.h"
#include "lib/store/parents.h"
#include "lib/store/raw_cache.h"
#include "lib/store/rebased.h"
#include "lib/store/restore.h"

namespace zipnn::store {
namespace {

// Encodes `input` standalone, or as a delta against `base` (and the
// `references` it takes tensors from: EncodeCandidate), into `out` (each
// chunk decoded as it is encoded, with `verify`); what was written in
// `*encoded`, and the ids of the references taken in `*taken`.
Status EncodeTo(const Store& store, const formats::CheckpointView& input, const formats::CheckpointView* base,
                AtomicFile& out, container::EncodeResult* encoded, bool verify = false,
                container::BaseChoice choice = container::BaseChoice::kSeries,
                const std::vector<formats::CheckpointView>& references = {}, std::vector<ContentId>* taken = nullptr,
                bool equal_only = false) {
  std::vector<const formats::FileLayout*> from;
  for (const formats::CheckpointView& r : references) from.push_back(r.layout);
  container::Layout regions = base != nullptr ? formats::ToDeltaRegions(*input.layout, *base->layout, from, equal_only)
                                              : formats::ToRegions(*input.layout);
  std::optional<container::DeltaBase> delta;
  if (base != nullptr) {
    delta = container::DeltaBase{base->source, base->id, choice};
    for (const size_t k : regions.KeepUsedReferences(references.size())) {
      delta->references.push_back(container::ReferenceSource{references[k].source, references[k].id});
      if (taken != nullptr) taken->push_back(references[k].id);
    }
  }
  container::EncodeOptions options;
  options.chunk_size = store.policy.chunk_size;
  options.threads = store.policy.threads;
  options.zstd_level = store.policy.zstd_level;
  options.transform = store.policy.delta_transform;
  options.verify = verify;
  options.progress = store.encoding;
  ZIPNN_ASSIGN_OR_RETURN(*encoded,
                         container::EncodeObject(*input.source, regions, delta ? &*delta : nullptr, options, out));
  if (encoded->content_id != input.id) return Corruption(input.source->name() + " changed while it was stored");
  return OkStatus();
}

Result<Candidate> EncodeCandidateAs(const Store& store, const formats::CheckpointView& input,
                                    const formats::CheckpointView* base, bool verify,
                                    container::BaseChoice choice = container::BaseChoice::kSeries,
                                    const std::vector<formats::CheckpointView>& references = {},
                                    bool equal_only = false) {
  ZIPNN_ASSIGN_OR_RETURN(TempFile file, TempFile::Create(store.temp_dir + "/candidates", "object"));
  Candidate c{std::move(file), base != nullptr, 0, {}, {}};
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::InTemp(c.file));
  ZIPNN_RETURN_IF_ERROR(
      EncodeTo(store, input, base, out, &c.encoded, verify, choice, references, &c.references, equal_only));
  ZIPNN_RETURN_IF_ERROR(out.Commit());
  c.size = c.encoded.object_size;
  return c;
}

// The raw bytes of `base` (a version of `series`): the work-tree file git
// holds it at when that still hashes to it, a kept raw copy, or its chain
// (always, with `decode`). The file at `storing`, the path of the
// version being stored, holds that version and is not hashed in vain (a
// path overwritten in place). A copy is read through
// ReadFile::OpenHolding, so a copy rewritten while a delta is built on it
// fails the encoding rather than feeding it other bytes; `copy` and
// `from_work_tree` say where the bytes came from.
//
// A chain is read in place (VersionReader: each chunk decoded as it is
// read and checked against its raw checksum), not restored to a scratch
// file first: on a 1 GiB shard, writing the restored bytes and reading
// them back cost more CPU than decoding its chunks again for each pass
// (the encode, its verification). Objects older than format 5 have no
// raw checksums and are restored to scratch as before.
struct BaseBytes {
  std::optional<formats::Checkpoint> bytes;  // a copy, or restored to scratch
  std::unique_ptr<VersionReader> reader;     // else: read through the store
  std::optional<formats::FileLayout> layout;  // the reader's
  bool copy = false;
  bool from_work_tree = false;

  Status ReadLayout() {
    if (bytes) return bytes->ReadLayout();
    if (layout) return OkStatus();
    ZIPNN_ASSIGN_OR_RETURN(formats::FileLayout read, formats::ReadLayout(*reader, formats::kAutoFormat));
    layout.emplace(std::move(read));
    return OkStatus();
  }
  // After ReadLayout.
  formats::CheckpointView View(const ContentId& id) const {
    return bytes ? bytes->View(id) : formats::CheckpointView{reader.get(), &*layout, id};
  }
};
// `opened`, when given, is read instead of a chain the store holds now
// (a reader of the object `base` had when it was opened).
Result<BaseBytes> ReadBase(const Store& store, const std::vector<Version>& series, const ContentId& base,
                           const std::string& storing, bool decode,
                           std::unique_ptr<VersionReader> opened = nullptr) {
  BaseBytes bytes;
  if (!decode) {
    // The base's files in the work tree, then the raw cache.
    std::vector<std::string> paths;
    for (const Version& v : series) {
      if (v.id == base && v.path != storing) paths.push_back(v.path);
    }
    if (std::optional<VerifiedCopy> copy = FindVerifiedCopy(store, base, paths)) {
      bytes.bytes.emplace(std::move(copy->file));
      bytes.copy = true;
      bytes.from_work_tree = copy->in_work_tree;
      return bytes;
    }
  }
  if (opened) {
    bytes.reader = std::move(opened);
    return bytes;
  }
  Result<std::unique_ptr<VersionReader>> reader = OpenVersion(store, base);
  if (reader.ok()) {
    bytes.reader = std::move(*reader);
    return bytes;
  }
  if (reader.status().code() != StatusCode::kUnsupported) return reader.status();
  ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint decoded, RestoreToScratch(store, base));
  bytes.bytes.emplace(std::move(decoded));
  return bytes;
}

// Prepared deltas. In the first half of a stretch, the newest version is
// re-stored, when the next one comes, as a delta of the version before it
// (placement.h). When its bytes are not kept for that add (larger than
// raw_cache), that add would decode it and its predecessor's chain from
// the store. So its add makes that delta at once, while its bytes are at
// hand and its predecessor is still whole, proven as a re-stored delta is
// (each chunk decoded as it is encoded), and keeps it in
// <cache>/prepared/<its id> until the next add takes it. Only a cache:
// the next add takes it only when its header names that version and the
// base placement gives, and every record matches its checksum; otherwise
// it encodes as before. gc removes those whose version is no longer
// stored whole.
std::string PreparedPath(const Store& store, const ContentId& id) {
  const std::string caches = ParentCachesDir(store);
  return caches.empty() ? std::string() : caches + "/prepared/" + id.Hex();
}

// A re-store owed. The add of the newest version of a series stores it,
// then re-stores the version before it; an add stopped between the two
// would leave that version whole for good, since adding the newest again
// finds it stored. So the add notes <cache>/demoting/<newest id> first and
// removes it once the version before is re-stored or stays whole; an add
// that finds its version stored and this note there does the rest.
std::string DemotingPath(const Store& store, const ContentId& newest) {
  const std::string caches = ParentCachesDir(store);
  return caches.empty() ? std::string() : caches + "/demoting/" + newest.Hex();
}

void NoteDemoting(const std::string& path) {
  if (path.empty() || !MakeDirectories(path.substr(0, path.find_last_of('/'))).ok()) return;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd >= 0) ::close(fd);
}

// The size of the prepared delta of `id` against `base`, when it is there
// and whole. Only a plain file of one link is taken: the store must hold
// the bytes itself, not a name for a file elsewhere that may go.
std::optional<uint64_t> CheckPrepared(const std::string& path, const ContentId& id, const ContentId& base) {
  struct stat st {};
  if (path.empty() || ::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
    return std::nullopt;
  }
  Result<ReadFile> file = ReadFile::Open(path);
  if (!file.ok()) return std::nullopt;
  Result<container::ObjectInfo> info = container::ReadObjectInfo(*file);
  if (!info.ok() || info->content_id != id || info->header.kind != container::ObjectKind::kDelta ||
      info->header.base_id != base || !container::CheckRecords(*file, *info).ok()) {
    return std::nullopt;
  }
  return file->size();
}

// Re-stores the version `at` (stored whole as the newest until `newer`
// came, or as a delta of the tensors of the same bytes other versions
// hold) as the delta PlaceDemoted gives, when that saves min_gain against
// its object; else it stays as it is.
// Nothing here may fail the add of `newer`: the caller reports an error
// and goes on, and every step leaves `older` whole or as a verified delta.
// It runs while `newer` is being stored, and replaces nothing before
// `newer_stored` says it is (a delta of it must not be there first).
// `planned`, when given, gets the placement as soon as it is made (a
// Placement without a base when the version stays whole), before the
// encode.
using MaybeDemoted = std::optional<CheckedIn::Demoted>;
// A delta of shared tensors is re-stored in its series only when it holds
// at least this share of its raw bytes.
inline constexpr double kDemotedSharedShare = 0.10;
Result<MaybeDemoted> Demote(const Store& store, SeriesAt at, const formats::CheckpointView& newer,
                            const std::string& storing, bool complete, const EarlierVersions& deeper,
                            const std::shared_future<Status>& newer_stored, std::promise<Placement>* planned = nullptr) {
  const ContentId id = at.version().id;
  struct Tell {
    std::promise<Placement>* planned;
    bool told = false;
    void operator()(const Placement& placed) {
      if (planned != nullptr && !told) planned->set_value(placed);
      told = true;
    }
    ~Tell() { (*this)(Placement()); }
  } tell{planned};
  // Its prepared delta is taken below or not at all.
  const std::string prepared = PreparedPath(store, id);
  struct Unlink {
    const std::string& path;
    ~Unlink() {
      if (!path.empty()) ::unlink(path.c_str());
    }
  } unlink_prepared{prepared};
  auto link = ReadLink(store, id);
  // Not here, or a delta already: nothing to do. But a delta found by
  // shared tensors that still codes much of its bytes alone (a newest that
  // took only the tensors of the same bytes: ChooseParent) is, to its
  // series, a whole object, and is re-stored as one is when that pays.
  // One that costs little already (a twin, a copy of shards) is left as
  // it is without encoding a delta to find that out.
  if (!link.ok()) return MaybeDemoted();
  const bool shared =
      link->delta && link->choice == container::BaseChoice::kShared &&
      static_cast<double>(link->object_size) >= kDemotedSharedShare * static_cast<double>(link->raw_size);
  if (link->delta && !shared) return MaybeDemoted();
  std::vector<Version> all;
  // Versions of other series stored as deltas of it (a twin, a
  // fine-tune's first save) get as much deeper as it does.
  const uint32_t elsewhere = HangingElsewhere(store, id);
  std::optional<Placement> placed = PlaceDemoted(store, at, newer.id, complete, nullptr, elsewhere);
  if (!placed) {
    ZIPNN_ASSIGN_OR_RETURN(all, deeper(true));
    const std::optional<SeriesAt> found = SeriesAt::Find(all, id);
    if (!found) return MaybeDemoted();
    at = *found;
    placed = PlaceDemoted(store, at, newer.id, /*complete=*/true, nullptr, elsewhere);
  }
  const std::vector<Version>& versions = at.series();
  // It stays whole: when that is for another reason than its note gives
  // (the newest no longer), the note says why now, and goes to a remote
  // with the push of `newer` (rebased.h).
  auto stays_whole = [&](BaseReason why) {
    if (shared) return MaybeDemoted();  // as it was: a delta has no base note
    const std::optional<BaseNote> was = ReadBaseNote(store.objects, id);
    const BaseNote now = NoteOf(why, store.policy, link->object_size);
    if (!was || was->reason != now.reason || was->figure != now.figure) {
      WriteBaseNote(store.objects, id, why, store.policy);
      NoteRebased(store, newer.id, id);
    }
    return MaybeDemoted();
  };
  if (!placed->base) return stays_whole(placed->reason);
  // Within a series no base's chain comes back to a version re-stored on
  // it; across series it may (a twin of this version, itself the base of
  // an earlier version of this series): then it stays whole, never a loop.
  bool loops = false;
  (void)VisitChain(store, *placed->base, [&](const ChainLink& link) { loops = loops || link.id == id; });
  if (loops) return MaybeDemoted();
  tell(*placed);  // otherwise it stays whole, as Tell says on return
  // The base's chain must outlive the delta (see CheckIn), `newer`'s once
  // it is there, and the version's own object while it is read.
  const bool of_newer = *placed->base == newer.id;
  if (!of_newer) ZIPNN_RETURN_IF_ERROR(TouchChain(store, *placed->base));
  const double whole = static_cast<double>(link->object_size);
  // A delta prepared in its own add (PreparedPath) needs nothing of its
  // whole object; one encoded here reads it.
  if (!of_newer) {
    if (std::optional<uint64_t> size = CheckPrepared(prepared, id, *placed->base)) {
      if (static_cast<double>(*size) > whole * (1 - store.policy.min_gain)) return stays_whole(BaseReason::kNoGain);
      ZIPNN_RETURN_IF_ERROR(newer_stored.get());
      if (Status replaced = store.objects.Replace(id, prepared); !replaced.ok()) {
        // An add of the same series in another work tree may have taken
        // it first: then there is nothing left to do here.
        const auto now = ReadLink(store, id);
        if (now.ok() && now->delta) return MaybeDemoted();
        return replaced;
      }
      RemoveBaseNote(store.objects, id);
      NoteRebased(store, newer.id, id);
      return MaybeDemoted(CheckedIn::Demoted{id, *placed->base, link->object_size, *size});
    }
  }
  ZIPNN_RETURN_IF_ERROR(TouchChain(store, id));
  ZIPNN_ASSIGN_OR_RETURN(BaseBytes bytes, ReadBase(store, versions, id, storing, /*decode=*/false));
  ZIPNN_RETURN_IF_ERROR(bytes.ReadLayout());
  const formats::CheckpointView input = bytes.View(id);
  std::optional<BaseBytes> base_bytes;
  formats::CheckpointView base = newer;
  if (*placed->base != newer.id) {
    ZIPNN_ASSIGN_OR_RETURN(base_bytes, ReadBase(store, versions, *placed->base, storing, /*decode=*/false));
    ZIPNN_RETURN_IF_ERROR(base_bytes->ReadLayout());
    base = base_bytes->View(*placed->base);
  }
  ZIPNN_ASSIGN_OR_RETURN(Candidate c, EncodeCandidateAs(store, input, &base, /*verify=*/true));
  if (static_cast<double>(c.size) > whole * (1 - store.policy.min_gain)) return stays_whole(BaseReason::kNoGain);
  ZIPNN_RETURN_IF_ERROR(newer_stored.get());
  if (of_newer) ZIPNN_RETURN_IF_ERROR(TouchChain(store, newer.id));
  ZIPNN_RETURN_IF_ERROR(VerifyCandidate(store, c, input, &base));
  ZIPNN_RETURN_IF_ERROR(store.objects.Replace(id, c.file.path()));
  RemoveBaseNote(store.objects, id);
  NoteRebased(store, newer.id, id);
  return MaybeDemoted(CheckedIn::Demoted{id, *placed->base, link->object_size, c.size});
}

// What a demotion came to, in `result`: the version re-stored, or why it
// stays whole (the add goes on either way).
void NoteDemotion(Result<MaybeDemoted> demoted, CheckedIn& result) {
  if (!demoted.ok()) {
    result.demotion_error = demoted.status().message();
  } else {
    result.demoted = *demoted;
  }
}

// The newest of a path overwritten in place: the next version re-stores
// this one as a delta and needs its bytes, which the path will not hold
// then.
void KeepForNext(const Store& store, const NewVersion& version) {
  if (version.step.empty() && version.held == nullptr) {
    RawCache(store.cache_dir, store.policy.raw_cache).Keep(version.series, version.id, version.file);
  }
}

// Makes the delta that `version` (just stored whole as the newest of
// `series`, which it follows) is to be re-stored as when the next version
// comes, and keeps it as prepared (PreparedPath), when that is a delta of
// an earlier version. `before` reads the version it follows as it was
// stored before this add re-stored it (whole, so one decode); `planned`
// says how this add re-stores that version (Demote). Best effort: nothing
// here fails the add, and what is not made here the next add makes, as
// before.
void Prepare(const Store& store, const NewVersion& version, const formats::CheckpointView& raw,
             const std::vector<Version>& series, std::unique_ptr<VersionReader> before,
             std::future<Placement> planned) {
  const std::string path = PreparedPath(store, version.id);
  if (path.empty()) return;
  std::vector<Version> with = series;
  with.push_back(Version{version.id, version.step, version.path});
  const std::optional<Placement> placed = PlaceDemotedNext(store, SeriesAt(with, with.size() - 1), planned.get());
  if (!placed || !placed->base || placed->base->IsZero()) return;  // a base, or a delta of the next
  if (!TouchChain(store, *placed->base).ok()) return;
  if (*placed->base != series.back().id) before.reset();
  Result<BaseBytes> bytes = ReadBase(store, with, *placed->base, version.path, /*decode=*/false, std::move(before));
  if (!bytes.ok() || !bytes->ReadLayout().ok()) return;
  const formats::CheckpointView base = bytes->View(*placed->base);
  Result<Candidate> c = EncodeCandidateAs(store, raw, &base, /*verify=*/true);
  const std::string dir = path.substr(0, path.find_last_of('/'));
  if (!c.ok() || !MakeDirectories(dir).ok()) return;
  (void)FsRename(c->file.path().c_str(), path.c_str());
}

// The rest of CheckIn for the newest version of its series (newest:
// whole): stored whole, then the version it follows re-stored as a delta.
// `owed`: the version is stored whole already, by an add stopped before
// it re-stored the version before (DemotingPath).
Result<CheckedIn> CheckInNewest(const Store& store, const NewVersion& version, formats::Checkpoint& input,
                                const std::vector<Version>& series, bool present, bool owed,
                                const EarlierVersions& earlier, CheckedIn result) {
  const formats::CheckpointView raw = input.View(version.id);
  auto store_newest = [&]() -> Status {
    if (owed) return OkStatus();
    if (present) {
      // Damaged in the store: written anew in its place.
      ZIPNN_ASSIGN_OR_RETURN(Candidate c, EncodeCandidateAs(store, raw, nullptr, /*verify=*/false));
      return store.objects.Replace(version.id, c.file.path());
    }
    container::EncodeResult encoded;
    return store.objects.Put(version.id, [&](AtomicFile& out) { return EncodeTo(store, raw, nullptr, out, &encoded); });
  };
  result.reason = series.empty() ? BaseReason::kFirst : BaseReason::kNewest;
  if (series.empty()) {
    ZIPNN_RETURN_IF_ERROR(store_newest());
  } else {
    const std::string demoting = DemotingPath(store, version.id);
    NoteDemoting(demoting);
    // The version before it is re-stored while this one is: the encodes
    // share the cores, and each fills the others' waits (the fsyncs, the
    // serial reads of the raw copies).
    std::promise<Status> stored;
    const std::shared_future<Status> newest_stored = stored.get_future().share();
    // A checkpoint larger than raw_cache is not kept for the next add,
    // which would decode it: its own delta is prepared now too, against
    // the version before, opened while that is still whole.
    std::promise<Placement> planned;
    std::future<void> preparing;
    if (raw.source->size() > store.policy.raw_cache) {
      Result<std::unique_ptr<VersionReader>> before = OpenVersion(store, series.back().id);
      preparing = std::async(std::launch::async, [&, before = before.ok() ? std::move(*before) : nullptr,
                                                  plan = planned.get_future()]() mutable {
        Prepare(store, version, raw, series, std::move(before), std::move(plan));
      });
    }
    auto demotion = std::async(std::launch::async, [&] {
      return Demote(store, SeriesAt(series, series.size() - 1), raw, version.path, /*complete=*/false, earlier,
                    newest_stored, &planned);
    });
    const Status newest = store_newest();
    stored.set_value(newest);
    Result<MaybeDemoted> demoted = demotion.get();
    if (preparing.valid()) preparing.get();
    if (!demoting.empty()) ::unlink(demoting.c_str());
    ZIPNN_RETURN_IF_ERROR(newest);
    NoteDemotion(std::move(demoted), result);
  }
  KeepForNext(store, version);
  return result;
}

// CheckIn's try of a parent in another series (parents.h), where its own
// series would store the version whole: `position` is past every stored
// version of `series` (the first of its series: any parent that pays), or
// it is the newest with the newest whole, or (`series_base`) its series
// stored it whole under newest: delta (a base that is due, a delta that
// did not pay): then a twin only, or the tensors of the same bytes that
// versions stored whole hold (a delta that costs nearly nothing more to
// decode than a whole object). True when
// the version was stored as a delta of one; false leaves the store as it
// was. A parent that cannot be read costs this version its delta, never
// the add.
Result<bool> CheckInOfParent(const Store& store, const NewVersion& version, formats::Checkpoint& input, SeriesAt at,
                             bool present, const EarlierVersions& earlier, CheckedIn& result,
                             bool series_base = false) {
  const std::vector<Version>& series = at.series();
  const bool newest_whole = store.policy.newest == config::Newest::kWhole && at.at_end();
  const bool first = std::none_of(series.begin(), series.begin() + static_cast<std::ptrdiff_t>(at.position()),
                                  [&](const Version& v) { return store.objects.Has(v.id); });
  // (With `series_base`, the first was tried already, before its series
  // placed it.)
  if (series_base ? first : !first && !newest_whole) return false;
  std::vector<ParentCandidate> candidates = version.parents();
  if (newest_whole && !series.empty()) {
    // The version before it will be re-stored: among the candidates are
    // its children in other series that another clone stored (the cache
    // of children is this clone's), noted so that Demote counts them.
    const ContentId& older = series.back().id;
    for (const ParentCandidate& c : candidates) {
      auto link = ReadLink(store, c.id);
      if (link.ok() && link->delta && link->base == older) NoteChild(store, older, c.id);
    }
  }
  if (candidates.empty() || version.fingerprints == nullptr) return false;
  if (std::any_of(candidates.begin(), candidates.end(), [](const ParentCandidate& c) { return c.shared_bytes > 0; }) &&
      !input.layout().tensors.empty() && !input.layout().tensors.front().content) {
    // Found by shared tensors: its delta takes each tensor against the
    // parent's of the same bytes, which the hashes of both tell.
    formats::FileLayout hashed = input.layout();
    ThreadPool pool(container::WorkingThreads(store.policy.threads, store.policy.chunk_size));
    if (formats::HashTensorContents(input.file(), hashed, pool).ok()) input.SetLayout(std::move(hashed));
  }
  const formats::CheckpointView raw = input.View(version.id);
  // The parent named for it first; when that one is not taken, the
  // versions found by their tensors.
  std::optional<Parent> parent;
  std::optional<Candidate> c;
  std::vector<std::string> not_here;
  for (int round = 0; round < 2 && !c; ++round) {
    std::vector<Parent> holders;
    auto chosen =
        ChooseParent(store, raw, candidates, *version.fingerprints, /*twins_only=*/!first, &not_here, &holders);
    if (!chosen.ok() || !*chosen) {
      if (round == 0 && first && candidates.front().by_rule) {
        result.named_parent_unused = candidates.front().path + " (" +
                                     (chosen.ok() ? "not stored whole here, or its chain is at max_chain"
                                                  : chosen.status().message()) +
                                     ")";
      }
    } else {
      parent = std::move(**chosen);
      const formats::CheckpointView base = parent->bytes.View(parent->id);
      // The tensors the parent lacks may be taken from the other versions
      // found holding them (their chains marked as used, as the parent's).
      std::vector<formats::CheckpointView> references;
      for (Parent& holder : holders) {
        if (references.size() == kMaxTakenReferences || !ReferencesAllowed(store.policy)) break;
        if (TouchChain(store, holder.id).ok()) references.push_back(holder.bytes.View(holder.id));
      }
      // A parent's copy rewritten while the delta was built on it fails
      // the encoding: the version is then stored as its series places it.
      Result<Candidate> encoded =
          EncodeCandidate(store, raw, &base, /*base_ratio=*/0, /*verify=*/false,
                          static_cast<container::BaseChoice>(parent->why), references, parent->equal_only);
      if (encoded.ok() && encoded->delta) {
        c = std::move(*encoded);
      } else if (parent->why == ParentWhy::kRule) {
        result.named_parent_unused =
            parent->path + " (" +
            (encoded.ok() ? "a delta of it saves less than min_gain against this checkpoint alone"
                          : encoded.status().message()) +
            ")";
      }
    }
    // A named parent taken and not paying: the search by tensors, without
    // it. (Otherwise the first round weighed those already.)
    if (c || !parent || parent->why != ParentWhy::kRule) break;
    candidates.erase(candidates.begin());
  }
  if (!c) {
    if (!not_here.empty()) result.parent_not_here = not_here.front();
    return false;
  }
  ZIPNN_RETURN_IF_ERROR(present ? store.objects.Replace(version.id, c->file.path())
                                : store.objects.Adopt(version.id, c->file.path()));
  result.reason = BaseReason::kNotBase;
  result.parent = CheckedIn::TakenParent{parent->id, parent->path, parent->why};
  NoteChild(store, parent->id, version.id);
  for (const ContentId& reference : c->references) NoteChild(store, reference, version.id);
  if (newest_whole && !series.empty()) {
    // The version before it in its series is re-stored as a delta, as
    // after any newest (its chain now counts this one's: placement.h).
    std::promise<Status> stored;
    stored.set_value(OkStatus());
    NoteDemotion(Demote(store, SeriesAt(series, series.size() - 1), raw, version.path, /*complete=*/false, earlier,
                        stored.get_future().share()),
                 result);
  }
  KeepForNext(store, version);
  return true;
}

}  // namespace

Status VerifyCandidate(const Store& store, const Candidate& c, const formats::CheckpointView& input,
                       const formats::CheckpointView* base, const std::vector<formats::CheckpointView>& references) {
  ZIPNN_ASSIGN_OR_RETURN(ReadFile object, ReadFile::Open(c.file.path()));
  ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, c.encoded.verified ? container::CheckWritten(object, c.encoded)
                                                                        : container::ReadObjectInfo(object));
  const bool delta = info.header.kind == container::ObjectKind::kDelta;
  if (info.content_id != input.id || delta != c.delta || (delta && info.header.base_id != base->id)) {
    return Corruption("the object made for " + input.id.Hex() + " is not what was encoded");
  }
  if (c.encoded.verified) return OkStatus();
  container::DecodeOptions options;
  options.threads = store.policy.threads;
  CountingSink discarded;  // the decoder checks the content id itself
  container::Sources sources{delta ? base->source : nullptr, {}};
  for (const container::Reference& r : info.header.references) {
    const auto given = std::find_if(references.begin(), references.end(),
                                    [&](const formats::CheckpointView& v) { return v.id == r.id; });
    if (given == references.end())
      return Corruption("the object made for " + input.id.Hex() + " is not what was encoded");
    sources.references.push_back(given->source);
  }
  return container::DecodeObject(object, info, sources, options, discarded);
}

Result<Candidate> EncodeCandidate(const Store& store, const formats::CheckpointView& input,
                                  const formats::CheckpointView* base, double base_ratio, bool verify,
                                  container::BaseChoice choice, const std::vector<formats::CheckpointView>& references,
                                  bool equal_only) {
  if (base == nullptr) return EncodeCandidateAs(store, input, nullptr, verify);
  ZIPNN_ASSIGN_OR_RETURN(Candidate delta,
                         EncodeCandidateAs(store, input, base, verify, choice, references, equal_only));
  const double keep = 1 - store.policy.min_gain;
  // Versions of one series store alone at nearly the same share of their
  // size (within about 1% between saves); a delta far below the last
  // base's share needs no second look.
  const double raw = static_cast<double>(input.source->size());
  if (static_cast<double>(delta.size) <= base_ratio * raw * keep * kHintMargin) return delta;
  // The bound is below any standalone coding of weights, so a delta that
  // pays against it pays against the real thing.
  ThreadPool pool(container::WorkingThreads(store.policy.threads, store.policy.chunk_size));
  ZIPNN_ASSIGN_OR_RETURN(double bound, container::EntropyBound(*input.source, formats::ToRegions(*input.layout),
                                                               nullptr, store.policy.chunk_size, pool));
  if (static_cast<double>(delta.size) <= bound * keep) return delta;
  ZIPNN_ASSIGN_OR_RETURN(Candidate standalone, EncodeCandidateAs(store, input, nullptr, verify));
  if (static_cast<double>(delta.size) <= static_cast<double>(standalone.size) * keep) return delta;
  return standalone;
}

namespace {

Result<CheckedIn> StoreVersion(const Store& store, const NewVersion& version, const EarlierVersions& earlier) {
  ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint input, OpenNewVersion(version));
  ZIPNN_RETURN_IF_ERROR(input.ReadLayout());
  if (version.fingerprints) {
    if (const auto fingerprint = formats::TensorFingerprint(input.layout())) {
      version.fingerprints->Keep(version.id, *fingerprint);
    }
  }
  CheckedIn result;
  result.pointer = Pointer{version.id, input.file().size(), formats::FormatName(input.layout().format)};
  // Already stored: its chain is marked as used, so that a gc running now
  // keeps it. If gc took the object meanwhile, it is stored again below;
  // if it lost a base, it is stored again in its place.
  const bool present = store.objects.Has(version.id);
  bool owed = false;  // stored whole, the version before it not yet re-stored
  if (present) {
    const Status whole = TouchChain(store, version.id);
    const std::string demoting = DemotingPath(store, version.id);
    owed = whole.ok() && !demoting.empty() && ::access(demoting.c_str(), F_OK) == 0;
    if (whole.ok() && !owed) return result;
    if (whole.code() == StatusCode::kCorruption) result.damaged = whole.message();
  }
  result.stored = true;

  // The versions git holds may include this one (a commit whose object
  // this store lacks): it is placed among the others, as where it was
  // first stored.
  auto others = [&](bool deep) -> Result<std::vector<Version>> {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<Version> versions, earlier(deep));
    versions.erase(
        std::remove_if(versions.begin(), versions.end(), [&](const Version& v) { return v.id == version.id; }),
        versions.end());
    return versions;
  };
  ZIPNN_ASSIGN_OR_RETURN(std::vector<Version> series, others(false));
  const SeriesAt at = SeriesAt::ForStep(series, version.step);
  const bool newest_whole = store.policy.newest == config::Newest::kWhole && at.at_end();
  if (version.parents) {
    ZIPNN_ASSIGN_OR_RETURN(bool taken, CheckInOfParent(store, version, input, at, present, others, result));
    if (taken) return result;
  }
  if (owed) {
    const Result<ChainLink> link = ReadLink(store, version.id);
    if (!newest_whole || series.empty() || !link.ok() || link->delta) {
      // No longer the newest, or re-stored since: nothing is owed now.
      ::unlink(DemotingPath(store, version.id).c_str());
      result.stored = false;
      return result;
    }
  }
  if (newest_whole) return CheckInNewest(store, version, input, series, present, owed, others, std::move(result));
  std::optional<Placement> placed = PlaceVersion(store, at, false);
  if (!placed) {
    ZIPNN_ASSIGN_OR_RETURN(series, others(true));
    placed = PlaceVersion(store, SeriesAt::ForStep(series, version.step), true);
  }
  // The base's chain must outlive this delta: marked as used before it is
  // read (a gc that took part of it meanwhile makes this version a base).
  if (placed->base) {
    const Status whole = TouchChain(store, *placed->base);
    if (whole.code() == StatusCode::kCorruption) {
      if (result.damaged.empty()) result.damaged = whole.message();
      *placed = Placement{std::nullopt, BaseReason::kDamagedBase};
    } else if (!whole.ok()) {
      *placed = Placement{std::nullopt, BaseReason::kNotStored};
    }
  }

  const formats::CheckpointView raw = input.View(version.id);
  std::optional<BaseBytes> bytes;
  // Encodes against `bytes` (nothing when there is no base) and links the
  // result in.
  auto encode_and_link = [&]() -> Status {
    if (!placed->base && !present) {
      container::EncodeResult encoded;
      return store.objects.Put(version.id,
                               [&](AtomicFile& out) { return EncodeTo(store, raw, nullptr, out, &encoded); });
    }
    std::optional<formats::CheckpointView> base;
    if (placed->base) {
      ZIPNN_RETURN_IF_ERROR(bytes->ReadLayout());
      base = bytes->View(*placed->base);
    }
    ZIPNN_ASSIGN_OR_RETURN(Candidate c, EncodeCandidate(store, raw, base ? &*base : nullptr, placed->base_ratio));
    if (base && !c.delta) placed->reason = BaseReason::kNoGain;
    if (c.delta) placed->reason = BaseReason::kNotBase;
    return present ? store.objects.Replace(version.id, c.file.path()) : store.objects.Adopt(version.id, c.file.path());
  };
  auto read_base = [&](bool decode) -> Status {
    auto read = ReadBase(store, series, *placed->base, version.path, decode);
    if (read.ok()) {
      bytes.emplace(std::move(*read));
    } else if (read.status().code() == StatusCode::kNotFound) {
      *placed = Placement{std::nullopt, BaseReason::kNotStored};  // gc took it after all
    } else {
      return read.status();
    }
    return OkStatus();
  };
  if (placed->base) ZIPNN_RETURN_IF_ERROR(read_base(/*decode=*/false));
  Status stored = encode_and_link();
  if (!stored.ok() && bytes && bytes->copy) {
    // The copy changed while the delta was built on it (a work-tree file
    // rewritten in place): build it again on the base decoded from the
    // store, which nobody else writes.
    bytes.reset();
    ZIPNN_RETURN_IF_ERROR(read_base(/*decode=*/true));
    stored = encode_and_link();
  }
  ZIPNN_RETURN_IF_ERROR(stored);
  result.reason = placed->reason;
  // Stored whole by its series (a base that is due, or a delta that did
  // not pay: AdamW's moments between saves): what versions of other series
  // hold of it is taken as a newest's is, rather than coded again.
  if (version.parents && result.reason != BaseReason::kNotBase) {
    ZIPNN_ASSIGN_OR_RETURN(const bool taken,
                           CheckInOfParent(store, version, input, SeriesAt::ForStep(series, version.step),
                                           /*present=*/true, others, result, /*series_base=*/true));
    if (taken) return result;
  }
  // The next version makes its delta against this one. A path overwritten
  // in place will not hold these bytes then, nor will a series whose
  // earlier files were gone from the work tree (a trainer deleting old
  // saves): keep a raw copy for it.
  const bool gone_from_work_tree = bytes && !bytes->from_work_tree;
  if ((version.step.empty() || gone_from_work_tree) && version.held == nullptr) {
    RawCache(store.cache_dir, store.policy.raw_cache).Keep(version.series, version.id, version.file);
  }
  return result;
}

}  // namespace

Result<formats::Checkpoint> OpenNewVersion(const NewVersion& version) {
  if (version.held == nullptr) return formats::Checkpoint::Open(version.file);
  ZIPNN_ASSIGN_OR_RETURN(ReadFile file, version.held->Dup());
  return formats::Checkpoint(std::move(file));
}

uint64_t PrunePrepared(const Store& store, const std::function<bool(const ContentId&)>& needed) {
  const std::string caches = ParentCachesDir(store);
  if (caches.empty()) return 0;
  uint64_t freed = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(caches + "/prepared", ec)) {
    // Only plain files are prepared here; anything else goes, uncounted
    // (a link's target is not removed).
    if (!e.is_regular_file(ec) || e.is_symlink(ec)) {
      std::filesystem::remove_all(e.path(), ec);
      continue;
    }
    const std::optional<ContentId> id = ContentId::FromHex(e.path().filename().string());
    bool keep = false;
    if (id && needed(*id)) {
      const Result<ChainLink> link = ReadLink(store, *id);
      keep = link.ok() && !link->delta;
    }
    if (keep) continue;
    const uint64_t size = e.file_size(ec);
    if (::unlink(e.path().c_str()) == 0 && !ec) freed += size;
  }
  return freed;
}

Result<CheckedIn> CheckIn(const Store& given, const NewVersion& version, const EarlierVersions& earlier) {
  // The encoder reports to this version's progress, and to nothing once
  // it is stored: on a copy of the store, which is what encoding reads.
  Store store = given;
  store.encoding = version.progress;
  ZIPNN_ASSIGN_OR_RETURN(CheckedIn result, StoreVersion(store, version, earlier));
  // Why it is standalone, noted while that is known (base_note.h).
  if (result.stored) WriteBaseNote(store.objects, result.pointer.id, result.reason, store.policy);
  return result;
}

}  // namespace zipnn::store
