#include "lib/remote/transfer.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <set>

#include "lib/base/file.h"
#include "lib/base/progress.h"
#include "lib/base/strings.h"
#include "lib/container/object.h"
#include "lib/git/children.h"
#include "lib/git/listings.h"
#include "lib/git/object_map.h"
#include "lib/store/parents.h"
#include "lib/remote/select.h"
#include "lib/store/restore.h"
#include "lib/store/store.h"
#include "lib/store/chain.h"
#include "lib/store/retention.h"

namespace zipnn::remote {

namespace {

TransferOptions OptionsShowing(Progress& progress, const std::string& state) {
  TransferOptions options;
  options.progress = [&progress, state](size_t objects, size_t total, uint64_t bytes) {
    progress.Update(state + " " + std::to_string(objects) + " of " + Counted(total, "object") + ",", bytes);
  };
  return options;
}

// The versions of `ids` the remote lacks that retention took there: each
// taken out of `ids` into `retained`, its record kept here. A remote that
// cannot say (a record it cannot send, one that does not parse) leaves
// the version where it was: its fetch fails as it would have.
void TakeRemoteRecords(const store::Store& local, RemoteStore& remote, std::vector<ContentId>& ids,
                       std::map<ContentId, store::Retained>& retained) {
  std::vector<ContentId> missing;
  for (const ContentId& id : ids) {
    if (!local.objects.Has(id)) missing.push_back(id);
  }
  if (missing.empty()) return;
  Result<std::vector<bool>> there = remote.Has(missing);
  if (!there.ok()) return;
  for (size_t i = 0; i < missing.size(); ++i) {
    if ((*there)[i]) continue;
    Result<std::optional<std::string>> text = GetSide(remote, SideKind::kRecord, missing[i]);
    if (!text.ok() || !*text) continue;
    Result<store::Retained> record = store::ParseRecord(**text, missing[i]);
    if (!record.ok() || !store::WriteRecord(local.objects, *record).ok()) continue;
    retained.emplace(missing[i], *record);
    ids.erase(std::find(ids.begin(), ids.end(), missing[i]));
  }
}

// Makes the objects of `found`, on `other` already, findable there (its
// Publish), the listings after them: in the same push as a Git LFS
// server's map, else one of their own. How the listings fared goes to
// `listings`; the error is Publish's.
Status PublishFound(RemoteStore& other, const store::Store* local, const RemoteSettings& settings,
                    const std::string& remote, const git::FoundPointers& found, Status& listings) {
  std::vector<std::string> blobs;
  for (const auto& [pointer, place] : found.pointers) blobs.push_back(place.blob);
  listings = git::KeepListings(remote, blobs, &settings.config());
  // The children of versions in other series this store noted, for the
  // clones that did not store them (they go with the listings).
  if (listings.ok() && local != nullptr) listings = git::KeepChildren(remote, store::NotedChildren(*local));
  ZIPNN_RETURN_IF_ERROR(other.Publish());
  if (listings.ok()) listings = git::PushListings(remote);
  return OkStatus();
}

// Pushes (or fetches) the objects of `found`.
Result<Transferred> Transfer(bool push, const store::Store& local, const RemoteSettings& settings,
                             const std::string& remote, const git::FoundPointers& found, bool publish = true) {
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<RemoteStore> other, OpenRemoteStore(settings, remote));
  Transferred done;
  done.where = other->where();
  Progress progress(std::string("git-zipnn: ") + (push ? "push to " : "fetch from ") + remote, 0);
  TransferOptions options = OptionsShowing(progress, push ? "sent" : "received");
  ZIPNN_ASSIGN_OR_RETURN(options.parallel, ConcurrentTransfers(settings));
  std::vector<ContentId> ids;
  std::map<ContentId, store::Retained> retained;  // versions retention took, here or there
  for (const auto& [pointer, place] : found.pointers) {
    ZIPNN_ASSIGN_OR_RETURN(store::Resolved held, local.Resolve(pointer.id));
    if (held.retained) {
      retained.emplace(pointer.id, std::move(*held.retained));
      continue;
    }
    ids.push_back(pointer.id);
    options.raw_sizes[pointer.id] = pointer.size;
  }
  // A thinned version moves as its approximate version; a dropped one as
  // nothing but its record.
  auto add_approximate = [&](const std::map<ContentId, store::Retained>& taken) {
    for (const auto& [id, record] : taken) {
      if (record.dropped) continue;
      ids.push_back(record.approximate);
      options.raw_sizes[record.approximate] = record.size;
    }
  };
  add_approximate(retained);
  Result<TransferReport> moved =
      push ? PushObjects(local, *other, ids, options) : FetchObjects(local, *other, ids, options);
  // An object the remote lacks may be one retention took there: its
  // record says so. Asked only then, so a fetch that fails otherwise fails
  // as it did.
  if (!push && moved.status().code() == StatusCode::kNotFound) {
    std::map<ContentId, store::Retained> there;
    TakeRemoteRecords(local, *other, ids, there);
    if (!there.empty()) {
      add_approximate(there);
      retained.insert(there.begin(), there.end());
      moved = FetchObjects(local, *other, ids, options);
    }
  }
  ZIPNN_ASSIGN_OR_RETURN(done.report, std::move(moved));
  if (push && !retained.empty()) {
    if (other->capabilities().retention != nullptr) {
      for (const auto& [id, record] : retained) {
        ZIPNN_RETURN_IF_ERROR(PutSide(*other, SideKind::kRecord, id, store::RecordText(record)));
      }
    } else {
      std::fprintf(stderr,
                   "git-zipnn: warning: %zu version%s of what was pushed %s thinned or dropped by retention here, and "
                   "%s cannot keep retention records: a clone from it will find %s missing\n",
                   retained.size(), retained.size() == 1 ? "" : "s", retained.size() == 1 ? "was" : "were",
                   done.where.c_str(), retained.size() == 1 ? "it" : "them");
    }
  }
  if (push && publish) {
    ZIPNN_RETURN_IF_ERROR(PublishFound(*other, &local, settings, remote, found, done.listings));
  } else if (!push) {
    done.listings = git::TakeListings(remote, &settings.config()).status();
  }
  return done;
}

}  // namespace

Result<Transferred> PublishPointers(const RemoteSettings& settings, const std::string& remote,
                                    const git::FoundPointers& found) {
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<RemoteStore> other, OpenRemoteStore(settings, remote));
  Transferred done;
  done.where = other->where();
  ZIPNN_RETURN_IF_ERROR(PublishFound(*other, nullptr, settings, remote, found, done.listings));
  return done;
}

Result<Transferred> PushPointers(const store::Store& local, const std::string& remote, const git::FoundPointers& found) {
  ZIPNN_ASSIGN_OR_RETURN(const RemoteSettings settings, RemoteSettings::Read());
  return PushPointers(local, settings, remote, found);
}

Result<Transferred> PushPointers(const store::Store& local, const RemoteSettings& settings, const std::string& remote,
                                 const git::FoundPointers& found, bool publish) {
  Result<Transferred> pushed = Transfer(/*push=*/true, local, settings, remote, found, publish);
  if (pushed.ok() || pushed.status().code() != StatusCode::kNotFound) return pushed;
  // A chain not whole here: name the pointer it belongs to (PushObjects
  // walks every chain before it sends anything, so nothing was sent). One
  // the remote holds was not walked: the pointer named is one whose walk
  // fails as the push did.
  for (const auto& [pointer, place] : found.pointers) {
    Status whole = store::VisitChain(local, pointer.id, [](const store::ChainLink&) {});
    if (!whole.ok() && whole.message() == pushed.status().message()) {
      return Annotate(whole, "cannot push " + place.path + " (in " + place.rev + ")");
    }
  }
  return pushed;
}

Result<Transferred> FetchPointers(const store::Store& local, const std::string& remote,
                                  const git::FoundPointers& found) {
  ZIPNN_ASSIGN_OR_RETURN(const RemoteSettings settings, RemoteSettings::Read());
  return FetchPointers(local, settings, remote, found);
}

Result<Transferred> FetchPointers(const store::Store& local, const RemoteSettings& settings, const std::string& remote,
                                  const git::FoundPointers& found) {
  return Transfer(/*push=*/false, local, settings, remote, found);
}

namespace {

// A store of its own in a fresh folder `<prefix>-XXXXXX` of `local`'s
// scratch folder, removed with all it holds when this goes away: where
// objects are fetched to be read, or checked, and not kept.
struct ScratchStore {
  static Result<std::unique_ptr<ScratchStore>> In(const store::Store& local, const std::string& prefix) {
    ZIPNN_RETURN_IF_ERROR(MakeDirectories(local.temp_dir));
    std::string dir = local.temp_dir + "/" + prefix + "-XXXXXX";
    if (::mkdtemp(dir.data()) == nullptr) return IoError(dir + ": cannot create a scratch folder");
    return std::make_unique<ScratchStore>(dir, local.policy);
  }
  ScratchStore(const std::string& folder, const config::Policy& policy)
      : dir(folder), store{store::ObjectStore(folder + "/objects"), folder + "/tmp", folder + "/cache", "", policy} {}
  ScratchStore(const ScratchStore&) = delete;
  ScratchStore& operator=(const ScratchStore&) = delete;
  ~ScratchStore() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  const std::string dir;
  const store::Store store;
};

}  // namespace

Result<RemoteCheck> CheckRemote(const store::Store& local, const std::string& remote, const git::FoundPointers& found) {
  ZIPNN_ASSIGN_OR_RETURN(const RemoteSettings settings, RemoteSettings::Read());
  return CheckRemote(local, settings, remote, found);
}

Result<RemoteCheck> CheckRemote(const store::Store& local, const RemoteSettings& settings, const std::string& remote,
                                const git::FoundPointers& found) {
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<RemoteStore> other, OpenRemoteStore(settings, remote));
  RemoteCheck check;
  check.where = other->where();
  ZIPNN_ASSIGN_OR_RETURN(const std::unique_ptr<ScratchStore> checked, ScratchStore::In(local, "fsck-remote"));
  const store::Store& scratch = checked->store;
  std::set<ContentId> seen;
  {
    Progress progress("git-zipnn fsck: remote " + remote, found.pointers.size(), Progress::Unit::kItems);
    for (const auto& [pointer, place] : found.pointers) {
      if (!seen.insert(pointer.id).second) continue;
      progress.Update("decoding", check.checkpoints++);
      TransferOptions options;
      options.raw_sizes[pointer.id] = pointer.size;
      Result<TransferReport> got = FetchObjects(scratch, *other, {pointer.id}, options);
      if (!got.ok()) check.problems.emplace_back(&place, got.status().message());
    }
  }
  auto listed = scratch.objects.List();
  if (listed.ok()) {
    for (const auto& entry : *listed) check.objects += entry.id ? 1 : 0;
  }
  if (OldTemporaries* old = other->capabilities().old_temporaries) {
    ZIPNN_ASSIGN_OR_RETURN(check.temporaries, old->RemoveOldTemporaries());
  }
  return check;
}

Result<bool> FetchChain(const store::Store& local, const ContentId& id, std::optional<uint64_t> raw_size,
                        const store::FindCopy& find_copy, ByteSink* deliver) {
  const Result<RemoteSettings> read = RemoteSettings::Read();
  if (!read.ok()) return false;  // as no remote: the restore names what is missing
  const RemoteSettings& settings = *read;
  auto remote = DefaultRemote(settings);
  if (!remote.ok()) return false;  // nowhere to fetch from: the restore names what is missing
  auto from = OpenRemoteStore(settings, *remote);
  if (!from.ok()) return Annotate(from.status(), "remote " + *remote + " cannot be read");
  Progress progress("git-zipnn: fetch from " + *remote, 0);
  TransferOptions options = OptionsShowing(progress, "received");
  ZIPNN_ASSIGN_OR_RETURN(options.parallel, ConcurrentTransfers(settings));
  if (raw_size) options.raw_sizes[id] = *raw_size;
  options.find_copy = find_copy;
  options.deliver = deliver;
  // The first fetch of a process (a clone's checkout, a pull's) also
  // brings the listings that `git log -p` will want, while the object
  // comes (never asking for credentials beside it); a failure costs only
  // that speed. The object map comes in the same git fetch: a Git LFS
  // host's object is found through it, and a second fetch for it would
  // wait for this one to end (FetchUnionRefs takes what this one brought).
  static std::once_flag listings;
  std::thread lister;
  std::call_once(listings, [&] {
    lister = std::thread([&remote_name = *remote, &config = settings.config()] {
      (void)git::FetchObjectMap(remote_name, /*prompt=*/false);
      (void)git::TakeListings(remote_name, &config, /*prompt=*/false);
    });
  });
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join{lister};
  ZIPNN_ASSIGN_OR_RETURN(TransferReport report, FetchObjects(local, **from, {id}, options));
  return report.delivered;
}

Result<bool> FetchRetained(const store::Store& local, const ContentId& id, uint64_t raw_size,
                           const store::FindCopy& find_copy, ByteSink& deliver) {
  ZIPNN_ASSIGN_OR_RETURN(const RemoteSettings settings, RemoteSettings::Read());
  const bool keep = KeepsRefetched(settings);
  std::unique_ptr<ScratchStore> scratch;
  if (!keep) {
    ZIPNN_ASSIGN_OR_RETURN(scratch, ScratchStore::In(local, "refetch"));
  }
  const store::Store& into = keep ? local : scratch->store;
  ZIPNN_ASSIGN_OR_RETURN(const bool delivered, FetchChain(into, id, raw_size, find_copy, &deliver));
  if (delivered || !into.objects.Has(id)) return delivered;
  ZIPNN_RETURN_IF_ERROR(store::Restore(into, id, deliver, find_copy));
  return true;
}

namespace {

// A version read where the objects of its chain lie (OpenRemoteVersion):
// one reader a level, the top one checking raw checksums, over an object
// of the local store or one on the remote read by parts, standing on a
// version the local store holds whole, if any.
class RemoteVersion : public ByteSource {
 public:
  uint64_t size() const override { return top->size(); }
  Status ReadAt(uint64_t offset, void* out, size_t n) const override { return top->ReadAt(offset, out, n); }
  const std::string& name() const override { return top->name(); }

  struct Level {
    std::unique_ptr<ByteSource> object;
    container::ObjectInfo info;
  };
  std::unique_ptr<RemoteStore> remote;
  std::vector<Level> levels;  // the top first
  std::unique_ptr<store::VersionReader> below;
  std::vector<std::unique_ptr<container::ObjectReader>> readers;  // the bottom first
  const container::ObjectReader* top = nullptr;
};

}  // namespace

Result<std::unique_ptr<ByteSource>> OpenRemoteVersion(const store::Store& local, const ContentId& id,
                                                      uint64_t raw_size) {
  const Result<RemoteSettings> settings = RemoteSettings::Read();
  Result<std::string> remote = settings.ok() ? DefaultRemote(*settings) : Result<std::string>(settings.status());
  if (!remote.ok()) return Unsupported("no remote to read parts of object " + id.Hex() + " from");
  auto from = OpenRemoteStore(*settings, *remote);
  if (!from.ok()) return Annotate(from.status(), "remote " + *remote + " cannot be read");
  auto version = std::make_unique<RemoteVersion>();
  version->remote = std::move(*from);
  std::vector<ContentId> passed;
  ContentId at = id;
  uint64_t size = raw_size;
  for (;;) {
    // Below the top, a version the local store holds whole ends the walk.
    if (!version->levels.empty()) {
      Result<std::unique_ptr<store::VersionReader>> whole = store::OpenVersion(local, at);
      if (whole.ok()) {
        version->below = std::move(*whole);
        break;
      }
      const StatusCode code = whole.status().code();
      if (code != StatusCode::kNotFound && code != StatusCode::kUnsupported) return whole.status();
    }
    RemoteVersion::Level level;
    // OpenLink checks for a loop and the depth before it looks.
    Result<store::Link> here = store::OpenLink(local, id, at, passed);
    if (here.ok()) {
      level.object = std::make_unique<ReadFile>(std::move(here->file));
      level.info = std::move(here->info);
    } else if (here.status().code() == StatusCode::kNotFound) {
      RangedReads* ranged = version->remote->capabilities().ranged_reads;
      if (ranged == nullptr) return Unsupported(version->remote->where() + " cannot serve parts of object " + at.Hex());
      ZIPNN_ASSIGN_OR_RETURN(RangedObject there, ranged->OpenRanges(at, ObjectSizeLimit(size)));
      level.object = std::move(there.bytes);
      level.info = std::move(there.info);
    } else {
      return here.status();
    }
    if (!level.info.header.references.empty()) {
      return Unsupported("object " + at.Hex() +
                         " takes tensors from other versions besides its base; its parts are "
                         "read once it is fetched whole");
    }
    if (level.info.header.raw_size != size) {
      return Corruption(level.object->name() + " holds " + std::to_string(level.info.header.raw_size) +
                        " bytes of checkpoint, not the " + std::to_string(size) + " the version above it needs");
    }
    const bool delta = level.info.header.kind == container::ObjectKind::kDelta;
    at = level.info.header.base_id;
    size = level.info.header.base_size;
    version->levels.push_back(std::move(level));
    if (!delta) break;
  }
  const container::ObjectHeader& top = version->levels.front().info.header;
  if (!container::HasRawChecksums(top)) {
    return Unsupported("object " + id.Hex() + " is of format " + std::to_string(top.version) +
                       ", without raw checksums to check its parts against");
  }
  // From the bottom up, each level reading its base through the one below;
  // two chunks at each level below the top keep memory small.
  const ByteSource* below = version->below.get();
  for (size_t i = version->levels.size(); i-- > 0;) {
    RemoteVersion::Level& level = version->levels[i];
    ZIPNN_ASSIGN_OR_RETURN(
        std::unique_ptr<container::ObjectReader> reader,
        container::ObjectReader::Open(*level.object, std::move(level.info), below,
                                      /*check_raw=*/i == 0, i == 0 ? container::kReaderCacheBytes : 0));
    below = reader.get();
    version->top = reader.get();
    version->readers.push_back(std::move(reader));
  }
  return std::unique_ptr<ByteSource>(std::move(version));
}

}  // namespace zipnn::remote
