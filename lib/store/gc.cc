#include "lib/store/gc.h"

#include <cstdint>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <filesystem>

#include "lib/base/file.h"
#include "lib/base/fs_ops.h"
#include "lib/store/base_note.h"
#include "lib/store/checkin.h"
#include "lib/store/raw_cache.h"
#include "lib/store/parents.h"
#include "lib/store/rebased.h"
#include "lib/store/retention.h"

namespace zipnn::store {

namespace {

constexpr char kSetAsideSuffix[] = ".gc";  // as ObjectStore::List knows it
// Scratch files (spooled input, restored bases, unfinished objects) older
// than this are leftovers of a process that died.
constexpr int64_t kScratchSeconds = 3600;

int64_t ModifiedAt(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_mtime) : -1;
}

// Puts the object set aside at `aside` back in its place, durably before
// the name it was set aside under goes.
void PutBack(const std::string& aside, const std::string& object) {
  if (FsLink(aside.c_str(), object.c_str()) != 0 && errno != EEXIST) return;
  if (SyncFolder(object.substr(0, object.rfind('/'))).ok()) ::unlink(aside.c_str());
}

// Files under `dir` older than `before`.
std::vector<std::string> OldScratch(const std::string& dir, int64_t before) {
  std::vector<std::string> old;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string path = it->path().string();
    if (!it->is_regular_file(ec)) continue;
    const int64_t at = ModifiedAt(path);
    if (at >= 0 && at < before) old.push_back(path);
  }
  return old;
}

// The folders of the scratch stores under `dir` (kRefetchScratch,
// kCheckRemoteScratch) and every folder in them, last changed before
// `before` (seconds), the deepest first.
std::vector<std::string> OldScratchFolders(const std::string& dir, int64_t before) {
  std::vector<std::string> old;
  std::error_code ec;
  for (std::filesystem::directory_iterator top(dir, ec), end; !ec && top != end; top.increment(ec)) {
    const std::string name = top->path().filename().string();
    const bool scratch_store = name.rfind(std::string(kRefetchScratch) + "-", 0) == 0 ||
                               name.rfind(std::string(kCheckRemoteScratch) + "-", 0) == 0;
    std::error_code is;
    if (!scratch_store || top->is_symlink(is) || !top->is_directory(is)) continue;
    std::vector<std::string> folders = {top->path().string()};
    std::error_code walk;
    for (std::filesystem::recursive_directory_iterator it(top->path(), walk), last; !walk && it != last;
         it.increment(walk)) {
      if (it->is_directory(is) && !it->is_symlink(is)) folders.push_back(it->path().string());
    }
    for (const std::string& folder : folders) {
      const int64_t at = ModifiedAt(folder);
      if (at >= 0 && at < before) old.push_back(folder);
    }
  }
  std::sort(old.begin(), old.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return old;
}

}  // namespace

void NeedChain(const Store& store, const ContentId& id, Needed& needed) {
  needed.ids.insert(id.Hex());
  ContentId next = id;  // the object the walk opens next
  const Status walked = VisitChain(store, id, [&](const ChainLink& link) {
    needed.ids.insert(link.id.Hex());
    if (link.delta) needed.ids.insert(link.base.Hex());
    next = link.base;
  });
  if (!walked.ok() && walked.code() != StatusCode::kNotFound) needed.unreadable.emplace(next.Hex(), walked.message());
  // A version retention thinned reads as its approximate version.
  auto record = ReadRecord(store.objects, id);
  if (record.ok() && *record && !(*record)->dropped && needed.ids.count((*record)->approximate.Hex()) == 0) {
    NeedChain(store, (*record)->approximate, needed);
  }
}

Status PutBackSetAside(const Store& store, const Removing&) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<ObjectStore::Entry> listed, store.objects.List());
  for (const auto& e : listed) {
    if (e.kind != ObjectStore::Kind::kSetAside) continue;
    PutBack(e.path, e.path.substr(0, e.path.size() - (sizeof kSetAsideSuffix - 1)));
  }
  return OkStatus();
}

Result<Swept> Sweep(const Store& store, const Removing&, Needed& needed, const SweepOptions& options) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<ObjectStore::Entry> listed, store.objects.List());
  for (const auto& e : listed) {
    if (e.id && e.mtime >= options.keep_since) NeedChain(store, *e.id, needed);
  }
  Swept swept;
  for (const auto& e : listed) {
    if (!e.id) continue;
    if (needed.ids.count(e.id->Hex()) != 0) {
      ++swept.kept;
      continue;
    }
    if (!options.dry_run) {
      const std::string aside = e.path + kSetAsideSuffix;
      if (FsRename(e.path.c_str(), aside.c_str()) != 0) continue;  // gone already
      if (ModifiedAt(aside) >= options.started) {                  // an add marked it meanwhile: it stays
        PutBack(aside, e.path);
        ++swept.kept;
        continue;
      }
      ::unlink(aside.c_str());
    }
    swept.objects.emplace_back(*e.id, e.size);
    swept.freed += e.size;
  }
  // Base notes whose object is gone (this gc's, or a remote's Remove).
  if (!options.dry_run) {
    for (const auto& e : listed) {
      if (e.kind != ObjectStore::Kind::kNote) continue;
      const std::string object = e.path.substr(0, e.path.size() - (sizeof kBaseNoteSuffix - 1));
      if (::access(object.c_str(), F_OK) != 0 && errno == ENOENT) ::unlink(e.path.c_str());
    }
  }
  // Raw copies that no pointer names any more, and any beyond the budget.
  const RawCache cache(store.cache_dir, store.policy.raw_cache);
  if (options.dry_run) {
    for (const auto& e : cache.List()) {
      if (needed.ids.count(e.id.Hex()) == 0) swept.raw_copies.emplace_back(e.id, e.size);
    }
  } else {
    swept.cache_freed = cache.Prune([&](const ContentId& id) { return needed.ids.count(id.Hex()) != 0; });
    // Deltas prepared for versions that are gone or re-stored already.
    swept.prepared_freed = PrunePrepared(store, [&](const ContentId& id) { return needed.ids.count(id.Hex()) != 0; });
    // Notes for pushes filed under versions that are gone (rebased.h).
    PruneRebased(store, [&](const ContentId& id) { return needed.ids.count(id.Hex()) != 0; });
    // Fingerprints and children of versions that are gone (parents.h).
    PruneParentCaches(store, [&](const ContentId& id) { return needed.ids.count(id.Hex()) != 0; });
  }
  // Leftovers of processes that died: unfinished objects in the store
  // (by their temporary names only: whatever else is in the store's
  // folder is someone else's, and stays) and scratch files in this
  // clone's own folder (among them the raw copies and series lists that
  // earlier versions kept per clone, in tmp/latest and series/).
  std::vector<std::string> leftovers;
  // --now takes leftovers of any age that no live process holds; where
  // locks hold nothing that cannot be told, and age decides as without it.
  const bool any_age = options.now && LocksWork(store.temp_dir);
  swept.locks_hold_nothing = options.now && !any_age;
  const int64_t old = any_age ? INT64_MAX : options.started - kScratchSeconds;
  const std::string root = store.objects.root() + "/";
  for (const auto& e : listed) {
    if (e.kind == ObjectStore::Kind::kTemporary && e.mtime < old) leftovers.push_back(e.path);
    if (e.kind == ObjectStore::Kind::kForeign) {
      swept.foreign.push_back(e.path.rfind(root, 0) == 0 ? e.path.substr(root.size()) : e.path);
    }
  }
  std::sort(swept.foreign.begin(), swept.foreign.end());
  for (const std::string& f : OldScratch(store.temp_dir, old)) leftovers.push_back(f);
  const std::string legacy_series = store.temp_dir.substr(0, store.temp_dir.rfind('/')) + "/series";
  for (const std::string& f : OldScratch(legacy_series, options.started)) leftovers.push_back(f);
  // The folders a killed command's scratch store left (refetch-*, its
  // objects' fan-out), old before the files in them go: rmdir takes only
  // those left empty.
  const std::vector<std::string> old_folders = OldScratchFolders(store.temp_dir, old);
  for (const std::string& f : leftovers) {
    if (InUse(f)) continue;  // a live process writes or reads it
    if (!options.dry_run && ::unlink(f.c_str()) != 0) continue;
    swept.leftovers.push_back(f);
  }
  if (!options.dry_run) {
    for (const std::string& dir : old_folders) ::rmdir(dir.c_str());
  }
  // Younger ones no live process holds: kept, and counted for the hint
  // that --now takes them.
  if (!any_age) {
    std::vector<std::string> young;
    for (const auto& e : listed) {
      if (e.kind == ObjectStore::Kind::kTemporary && e.mtime >= old) young.push_back(e.path);
    }
    for (const std::string& f : OldScratch(store.temp_dir, INT64_MAX)) {
      if (ModifiedAt(f) >= old) young.push_back(f);
    }
    for (const std::string& f : young) {
      struct stat st;
      if (InUse(f) || ::stat(f.c_str(), &st) != 0) continue;
      ++swept.young_files;
      swept.young_bytes += static_cast<uint64_t>(st.st_size);
    }
  }
  return swept;
}

Freed RemoveStoppedScratch(const Store& store, const std::string& probe) {
  Freed freed;
  if (!InUse(probe)) return freed;
  const int64_t before = static_cast<int64_t>(std::time(nullptr)) - kStoppedSeconds;
  for (const std::string& f : OldScratch(store.temp_dir, before)) {
    struct stat st;
    if (f == probe || InUse(f) || ::stat(f.c_str(), &st) != 0 || ::unlink(f.c_str()) != 0) continue;
    ++freed.files;
    freed.bytes += static_cast<uint64_t>(st.st_size);
  }
  return freed;
}

}  // namespace zipnn::store
