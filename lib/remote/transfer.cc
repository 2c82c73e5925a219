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
#include "lib/store/gc.h"
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
  ZIPNN_ASSIGN_OR_RETURN(const std::unique_ptr<ScratchStore> checked,
                         ScratchStore::In(local, store::kCheckRemoteScratch));
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
    ZIPNN_ASSIGN_OR_RETURN(scratch, ScratchStore::In(local, store::kRefetchScratch));
  }
  const store::Store& into = keep ? local : scratch->store;
  ZIPNN_ASSIGN_OR_RETURN(const bool delivered, FetchChain(into, id, raw_size, find_copy, &deliver));
  if (delivered || !into.objects.Has(id)) return delivered;
  ZIPNN_RETURN_IF_ERROR(store::Restore(into, id, deliver, find_copy));
  return true;
}

namespace {

// Versions read where the objects of their chains lie (OpenRemoteVersion):
// each one a reader over its object, from the local store or read by
// parts on the remote, decoding against its base and the versions it
// references (format 8), opened the same way, each once however many
// objects read it; a version below the top that the local store holds
// whole is read from there. Only the top version's reader checks raw
// checksums: a wrong byte anywhere below shows in its chunks.
class RemoteChains {
 public:
  RemoteChains(const store::Store& local, std::unique_ptr<RemoteStore> remote, const ContentId& top)
      : local_(local), remote_(std::move(remote)), top_(top) {}

  // Version `id` of `size` bytes, `depth` links below the top one.
  Result<const ByteSource*> Open(const ContentId& id, uint64_t size, size_t depth) {
    auto [it, fresh] = opened_.try_emplace(id);
    if (!fresh) {
      if (it->second == nullptr) {
        return Corruption("chain of object " + top_.Hex() + " loops: object " + id.Hex() +
                          " needs a version that needs it");
      }
      return it->second->source;
    }
    if (opened_.size() > store::kMaxChainObjects) {
      return Corruption("chain of object " + top_.Hex() + " needs more than " +
                        std::to_string(store::kMaxChainObjects) + " objects");
    }
    Result<std::unique_ptr<Version>> version = OpenVersion(id, size, depth);
    if (!version.ok()) {
      opened_.erase(id);
      return version.status();
    }
    if ((*version)->source->size() != size) {
      return Corruption((*version)->source->name() + " holds " + std::to_string((*version)->source->size()) +
                        " bytes of checkpoint, not the " + std::to_string(size) + " the version above it needs");
    }
    it = opened_.find(id);
    it->second = std::move(*version);
    return it->second->source;
  }

 private:
  struct Version {
    std::unique_ptr<store::VersionReader> whole;  // the local store holds it whole
    std::unique_ptr<ByteSource> object;
    std::unique_ptr<container::ObjectReader> reader;
    const ByteSource* source = nullptr;
  };

  Result<std::unique_ptr<Version>> OpenVersion(const ContentId& id, uint64_t size, size_t depth) {
    auto version = std::make_unique<Version>();
    const bool top = depth == 0;
    if (!top) {
      Result<std::unique_ptr<store::VersionReader>> whole = store::OpenVersion(local_, id);
      if (whole.ok()) {
        version->whole = std::move(*whole);
        version->source = version->whole.get();
        return version;
      }
      const StatusCode code = whole.status().code();
      if (code != StatusCode::kNotFound && code != StatusCode::kUnsupported) return whole.status();
    }
    if (depth > static_cast<size_t>(store::kMaxChainDepth)) {
      return Corruption("chain of object " + top_.Hex() + " is longer than " + std::to_string(store::kMaxChainDepth));
    }
    container::ObjectInfo info;
    std::vector<ContentId> passed;  // loops are found by opened_
    Result<store::Link> here = store::OpenLink(local_, top_, id, passed, depth);
    if (here.ok()) {
      version->object = std::make_unique<ReadFile>(std::move(here->file));
      info = std::move(here->info);
    } else if (here.status().code() == StatusCode::kNotFound) {
      RangedReads* ranged = remote_->capabilities().ranged_reads;
      if (ranged == nullptr) return Unsupported(remote_->where() + " cannot serve parts of object " + id.Hex());
      ZIPNN_ASSIGN_OR_RETURN(RangedObject there, ranged->OpenRanges(id, ObjectSizeLimit(size)));
      version->object = std::move(there.bytes);
      info = std::move(there.info);
    } else {
      return here.status();
    }
    if (top && !container::HasRawChecksums(info.header)) {
      return Unsupported("object " + id.Hex() + " is of format " + std::to_string(info.header.version) +
                         ", without raw checksums to check its parts against");
    }
    container::Sources sources;
    if (info.header.kind == container::ObjectKind::kDelta) {
      ZIPNN_ASSIGN_OR_RETURN(sources.base, Open(info.header.base_id, info.header.base_size, depth + 1));
    }
    for (const container::Reference& r : info.header.references) {
      ZIPNN_ASSIGN_OR_RETURN(const ByteSource* referenced, Open(r.id, r.size, depth + 1));
      sources.references.push_back(referenced);
    }
    // Two chunks below the top keep memory small.
    ZIPNN_ASSIGN_OR_RETURN(version->reader,
                           container::ObjectReader::Open(*version->object, std::move(info), std::move(sources), top,
                                                         top ? container::kReaderCacheBytes : 0));
    version->source = version->reader.get();
    return version;
  }

  const store::Store& local_;
  const std::unique_ptr<RemoteStore> remote_;
  const ContentId top_;
  std::map<ContentId, std::unique_ptr<Version>> opened_;  // null while it is being opened
};

// The top version of RemoteChains, as a ByteSource that owns them.
class RemoteVersion : public ByteSource {
 public:
  RemoteVersion(std::unique_ptr<RemoteChains> chains, const ByteSource* top) : chains_(std::move(chains)), top_(top) {}
  uint64_t size() const override { return top_->size(); }
  Status ReadAt(uint64_t offset, void* out, size_t n) const override { return top_->ReadAt(offset, out, n); }
  const std::string& name() const override { return top_->name(); }

 private:
  const std::unique_ptr<RemoteChains> chains_;
  const ByteSource* const top_;
};

}  // namespace

Result<std::unique_ptr<ByteSource>> OpenRemoteVersion(const store::Store& local, const ContentId& id,
                                                      uint64_t raw_size) {
  const Result<RemoteSettings> settings = RemoteSettings::Read();
  Result<std::string> remote = settings.ok() ? DefaultRemote(*settings) : Result<std::string>(settings.status());
  if (!remote.ok()) return Unsupported("no remote to read parts of object " + id.Hex() + " from");
  auto from = OpenRemoteStore(*settings, *remote);
  if (!from.ok()) return Annotate(from.status(), "remote " + *remote + " cannot be read");
  auto chains = std::make_unique<RemoteChains>(local, std::move(*from), id);
  ZIPNN_ASSIGN_OR_RETURN(const ByteSource* top, chains->Open(id, raw_size, 0));
  return std::unique_ptr<ByteSource>(std::make_unique<RemoteVersion>(std::move(chains), top));
}

}  // namespace zipnn::remote
