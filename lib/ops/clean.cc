#include "lib/ops/clean.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

#include "lib/analyze/scan.h"
#include "lib/base/buffer.h"
#include "lib/base/content_id.h"
#include "lib/base/file.h"
#include "lib/base/progress.h"
#include "lib/base/thread_pool.h"
#include "lib/formats/checkpoint.h"
#include "lib/formats/detect.h"
#include "lib/git/checkpoint_at.h"
#include "lib/git/children.h"
#include "lib/git/pointers.h"
#include "lib/ops/added.h"
#include "lib/remote/select.h"
#include "lib/series/series.h"
#include "lib/store/chain.h"
#include "lib/store/checkin.h"
#include "lib/store/gc.h"
#include "lib/store/raw_cache.h"

namespace zipnn::ops {

namespace {

// The first kMaxPointerBytes + 1 bytes (or all): enough to tell a pointer
// from content.
Result<std::string> ReadHead(ByteReader& in) { return ReadUpTo(in, store::kMaxPointerBytes + 1); }

// Whether `text` holds the lines git writes around a merge conflict.
bool HasConflictMarkers(const std::string& text) {
  for (const char* marker : {"<<<<<<< ", "=======\n", ">>>>>>> "}) {
    if (text.rfind(marker, 0) == 0 || text.find(std::string("\n") + marker) != std::string::npos) return true;
  }
  return false;
}

// Copies what the rest of `content` holds to `out`, hashing it.
Status CopyRest(ByteReader& content, ByteSink& out, Hasher& hasher) {
  char buf[1 << 16];
  for (;;) {
    ZIPNN_ASSIGN_OR_RETURN(size_t n, content.Read(buf, sizeof buf));
    if (n == 0) return OkStatus();
    hasher.Update(buf, n);
    ZIPNN_RETURN_IF_ERROR(out.Append(buf, n));
  }
}

// Fills `buffer` from `content` as far as it goes; returns the bytes read
// (fewer than its size only at the end of the stream).
Result<size_t> Fill(ByteReader& content, Buffer& buffer, size_t from) {
  size_t filled = from;
  while (filled < buffer.size()) {
    ZIPNN_ASSIGN_OR_RETURN(size_t n, content.Read(buffer.data() + filled, buffer.size() - filled));
    if (n == 0) break;
    filled += n;
  }
  return filled;
}

// Whether `file`, pinned, still holds the bytes it is pinned to.
bool Unchanged(const ReadFile& file) {
  Buffer part(16 * ReadFile::kPinBlock);
  for (uint64_t at = 0; at < file.size(); at += part.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(part.size(), file.size() - at));
    if (!file.ReadAt(at, part.data(), n).ok()) return false;
  }
  return true;
}

// Takes in git's stream of a checkpoint (`head`, then the rest of
// `content`), hashing it. With `work_file` (the work-tree file git read,
// opened), compares the stream with it as it goes, and when the two hold
// the same bytes pins the file to them (ReadFile::Pin) and returns true:
// the store reads it in place of a copy. Otherwise (no file, or one that
// is not what git streamed: changed since git read it, or a stream of
// other bytes as `git hash-object --stdin --path` sends) writes the
// stream to `spool` and returns false; the part already compared is
// copied from the file, checked against the stream's pins.
Result<bool> TakeIn(const std::string& head, ByteReader& content, ReadFile* work_file, const TempFile& spool,
                    Hasher& hasher, Progress& progress) {
  constexpr size_t kBlock = ReadFile::kPinBlock;
  constexpr size_t kRead = 16 * kBlock;
  static_assert(store::kMaxPointerBytes + 1 < kRead, "the head fits the first read");
  uint64_t same = 0;  // bytes of the stream the file holds too, whole reads
  Buffer parted;      // the stream's read where the file parts from it
  std::vector<uint64_t> pins;
  if (work_file != nullptr) {
    Buffer stream(kRead), disk(kRead);
    std::memcpy(stream.data(), head.data(), head.size());
    for (size_t from = head.size();; from = 0) {
      ZIPNN_ASSIGN_OR_RETURN(const size_t n, Fill(content, stream, from));
      if (n == 0) break;
      hasher.Update(stream.data(), n);
      for (size_t b = 0; b < n; b += kBlock) pins.push_back(Checksum64(stream.data() + b, std::min(kBlock, n - b)));
      const bool fits = same + n <= work_file->size() && work_file->ReadAt(same, disk.data(), n).ok();
      if (!fits || std::memcmp(disk.data(), stream.data(), n) != 0) {
        parted.Append(stream.data(), n);
        break;
      }
      same += n;
      progress.Update("reading", same);
      if (n < kRead) break;
    }
    if (parted.size() == 0 && same == work_file->size()) {
      ZIPNN_RETURN_IF_ERROR(work_file->Pin(std::move(pins)));
      return true;
    }
  }
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile file, AtomicFile::InTemp(spool));
  ProgressSink spooled(file, progress, "reading");
  if (work_file == nullptr) {
    hasher.Update(head.data(), head.size());
    ZIPNN_RETURN_IF_ERROR(spooled.Append(head.data(), head.size()));
  }
  // What the file held the same as the stream is copied from it, each
  // block checked against the stream's.
  Buffer part(kRead);
  for (uint64_t at = 0; at < same; at += kRead) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kRead, same - at));
    ZIPNN_RETURN_IF_ERROR(work_file->ReadAt(at, part.data(), n));
    for (size_t b = 0; b < n; b += kBlock) {
      if (Checksum64(part.data() + b, std::min(kBlock, n - b)) != pins[static_cast<size_t>((at + b) / kBlock)]) {
        return Corruption(
            "the work-tree file changed while it was compared with what git sent; run the command "
            "again once it is written");
      }
    }
    ZIPNN_RETURN_IF_ERROR(spooled.Append(part.data(), n));
  }
  ZIPNN_RETURN_IF_ERROR(spooled.Append(parted.data(), parted.size()));
  ZIPNN_RETURN_IF_ERROR(CopyRest(content, spooled, hasher));
  ZIPNN_RETURN_IF_ERROR(file.CommitUnsynced());
  return false;
}

}  // namespace

Cleaner::Cleaner(store::Store store, git::SeriesVersions* series)
    : store_(std::move(store)),
      series_(series),
      fingerprints_(store::ParentCachesDir(store_)),
      twins_(store::ParentCachesDir(store_)),
      tensors_(store::ParentCachesDir(store_)) {}

Status Cleaner::Clean(const std::string& path, ByteReader& content, ByteSink& out) {
  ZIPNN_ASSIGN_OR_RETURN(std::string head, ReadHead(content));
  // A one-line pointer in conflict starts with git's marker, not with the
  // pointer: refused, never stored as a checkpoint of its own.
  if (head.rfind("<<<<<<< ", 0) == 0) {
    ZIPNN_ASSIGN_OR_RETURN(std::string more, ReadUpTo(content, 1024 - head.size()));
    head += more;
    if (head.find(std::string("\n") + store::kPointerPrefix) != std::string::npos && HasConflictMarkers(head)) {
      return InvalidArgument(path +
                             " holds a damaged git-zipnn pointer (merge conflict markers); after a merge "
                             "conflict, pick a side: git checkout --ours (or --theirs) -- " +
                             path);
    }
  }
  if (head.size() <= store::kMaxPointerBytes && store::LooksLikePointer(head)) {
    // Cleaning a pointer gives the same pointer (after checking it). A
    // merge conflict in a pointer is refused rather than committed; any
    // other damaged pointer (one a commit already holds) is kept as the
    // text it is, so that status, stash and checkout go on working for
    // everyone, and fsck names it.
    auto p = store::ParsePointer(head);
    if (!p.ok()) {
      if (HasConflictMarkers(head)) {
        return InvalidArgument(path + " holds a damaged git-zipnn pointer (" + p.status().message() +
                               "); after a merge conflict, pick a side: git checkout --ours (or --theirs) -- " + path);
      }
      std::fprintf(stderr,
                   "git-zipnn: warning: %s holds a damaged git-zipnn pointer (%s); kept as text (check out a "
                   "commit where it is whole, or git rm it)\n",
                   path.c_str(), p.status().message().c_str());
      return out.Append(head.data(), head.size());
    }
    const std::string text = store::FormatPointer(*p);
    return out.Append(text.data(), text.size());
  }
  // The store's lock, shared, before the first scratch file: a gc (even
  // --now) waits until git has recorded what this process stores.
  if (!lock_) {
    ZIPNN_ASSIGN_OR_RETURN(lock_, store_.BeginAdding("git-zipnn"));
  }
  // Stored already, on a rank of a distributed save: only checked.
  if (std::optional<store::Pointer> noted = NotedPointer(store_.added_dir, path)) {
    return CleanNoted(path, head, content, std::move(*noted), out);
  }
  // Spool to a file beside the store while hashing: the encoder needs
  // random access, and git streams the content only once.
  ZIPNN_ASSIGN_OR_RETURN(TempFile spool, TempFile::Create(store_.temp_dir, "clean"));
  // What a stopped add left there (its spooled input, up to the size of
  // the checkpoint) goes before this one writes as much again.
  if (!swept_scratch_) {
    swept_scratch_ = true;
    const store::Freed freed = store::RemoveStoppedScratch(store_, spool.path());
    if (freed.bytes > 0) {
      std::fprintf(stderr, "git-zipnn: removed %s of scratch files that a stopped command left in %s\n",
                   HumanBytes(freed.bytes).c_str(), store_.temp_dir.c_str());
    }
  }
  // Git streams what the work tree holds at `path` (the filter runs at
  // the top of the work tree): its size is what reading will come to.
  struct stat file;
  const bool sized = ::stat(path.c_str(), &file) == 0 && S_ISREG(file.st_mode);
  Progress progress("git-zipnn: " + path, sized ? static_cast<uint64_t>(file.st_size) : 0);
  // A checkpoint larger than the raw cache keeps is not copied to
  // scratch when the work tree holds what git streams: its copy would
  // serve this add alone, and writing it cost more than any coder
  // (up to 2.9 CPU-s a GiB, in the kernel's page-cache copies).
  std::optional<ReadFile> work_file;
  if (sized && static_cast<uint64_t>(file.st_size) > store_.policy.raw_cache) {
    auto opened = ReadFile::OpenRegular(path);
    if (opened.ok()) work_file.emplace(std::move(*opened));
  }
  Hasher hasher;
  ZIPNN_ASSIGN_OR_RETURN(const bool held,
                         TakeIn(head, content, work_file ? &*work_file : nullptr, spool, hasher, progress));
  const ContentId id = hasher.Finish();
  if (std::optional<store::Pointer> read_through = HeldElsewhere(path, id)) {
    const std::string text = store::FormatPointer(*read_through);
    return out.Append(text.data(), text.size());
  }
  progress.SetTotal(0);
  progress.Update("storing", 0);
  const series::Placed placed = series_ ? series_->rules().Place(path) : series::Rules().Place(path);
  store::NewVersion version{spool.path(), id, path, placed.name, placed.step};
  if (held) version.held = &*work_file;
  TakeChildrenFromGit();
  version.parents = [&] { return ParentCandidates(path, placed.name, version); };
  version.fingerprints = &fingerprints_;
  // The encoder's progress shows on the line while this checkpoint is
  // stored.
  version.progress = [&progress](uint64_t done, uint64_t total) {
    progress.SetTotal(total);
    progress.Update("storing", done);
  };
  auto earlier = [&](bool deep) -> Result<std::vector<store::Version>> {
    if (!series_) return std::vector<store::Version>();
    auto versions = series_->Of(placed.name, deep);
    if (versions.ok()) return versions;
    // Storing a base is always safe: a repository git-zipnn
    // cannot read costs deltas, never the add.
    if (!warned_) {
      std::fprintf(stderr,
                   "git-zipnn: cannot read the earlier versions of %s from git (%s); "
                   "storing it standalone\n",
                   path.c_str(), versions.status().message().c_str());
      warned_ = true;
    }
    return std::vector<store::Version>();
  };
  Result<store::CheckedIn> checked_in = store::CheckIn(store_, version, earlier);
  if (!checked_in.ok() && held && !Unchanged(*work_file)) {
    // Rewritten in place while it was stored: the bytes git sent are
    // gone, and the file's new ones may not be what git sent them for.
    return Corruption(
        "the file was rewritten while it was stored; run the git command again once it is written (a file "
        "written in place while git reads it: set raw_cache above its size, so that it is copied first)");
  }
  ZIPNN_ASSIGN_OR_RETURN(store::CheckedIn checked, std::move(checked_in));
  if (series_) series_->Add(path, id);
  if (!checked.damaged.empty()) {
    std::fprintf(stderr,
                 "git-zipnn: warning: %s: the store holds a damaged object (%s); this version is stored "
                 "anew without it. A disk may be failing: `git zipnn fsck --all` names what else it affects\n",
                 path.c_str(), checked.damaged.c_str());
  }
  if (!checked.named_parent_unused.empty()) {
    std::fprintf(stderr, "git-zipnn: warning: %s: the parent named for it was not taken: %s; %s\n", path.c_str(),
                 checked.named_parent_unused.c_str(),
                 checked.parent ? ("stored as a delta of " + checked.parent->path + " instead").c_str()
                                : "stored as its series places it");
  }
  if (!checked.parent_not_here.empty()) {
    std::fprintf(stderr,
                 "git-zipnn: note: %s holds tensors of %s (a version in history) under other names, but that "
                 "version's object is not in this clone, so this file is stored as its own series places it, and "
                 "stays so. After `git zipnn fetch --all -I '%s'`, the next file holding them is stored as a delta "
                 "of that version, at next to nothing\n",
                 path.c_str(), checked.parent_not_here.c_str(), checked.parent_not_here.c_str());
  }
  if (!checked.demotion_error.empty()) {
    // The new version is stored; the one before it stays whole (it costs
    // bytes, never data).
    std::fprintf(stderr, "git-zipnn: warning: %s: the version before this one stays stored whole: %s\n", path.c_str(),
                 checked.demotion_error.c_str());
  }
  if (checked.stored) NoteRawCopy(path, id, checked.pointer.size);
  store::Pointer& pointer = checked.pointer;
  if (checked.stored && pointer.format == "raw") {
    // Said once, as it is stored: a text file or a pickle under a tracked
    // pattern costs its size and no more, but is no checkpoint.
    std::fprintf(stderr,
                 "git-zipnn: note: %s is not a checkpoint git-zipnn can read (no safetensors or torch.save layout); "
                 "stored as plain bytes, compressed whole\n",
                 path.c_str());
  }
  pointer.version = PointerVersionFor(path, pointer);
  if (checked.stored && progress.enabled()) {
    auto info = store::Describe(store_, id);
    if (info.ok()) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%.1f s", progress.Seconds());
      std::string how = info->delta ? "a delta (chain depth " + std::to_string(info->depth) + ")"
                                    : "a base (" + store::BaseReasonText(checked.reason, store_.policy) + ")";
      if (checked.parent) {
        how = "a delta of " + checked.parent->path + " (" + store::ParentWhyText(checked.parent->why) +
              "; chain depth " + std::to_string(info->depth) + ")";
      }
      std::string demoted;
      if (checked.demoted) {
        demoted = "; the version before it is now a delta, " + HumanBytes(checked.demoted->before) + " -> " +
                  HumanBytes(checked.demoted->after);
      }
      progress.Finish("stored as " + how + ", " + HumanBytes(pointer.size) + " -> " + HumanBytes(info->object_size) +
                      " (" + Percent(info->object_size, pointer.size) + ") in " + seconds + demoted);
    }
  }
  const std::string text = store::FormatPointer(pointer);
  if (listings_) {
    const std::optional<std::string> note = listings_->Note(text);
    if (!note || git::IsListingFailure(*note)) {
      KeepListing(version, text);
    } else if (checked.stored) {
      KeepIndexed(text, *note, id);  // stored anew (gc took it) under a listing git kept
    }
  }
  listing_.reset();
  return out.Append(text.data(), text.size());
}

Status Cleaner::CleanNoted(const std::string& path, const std::string& head, ByteReader& content,
                           store::Pointer pointer, ByteSink& out) {
  Hasher hasher;
  hasher.Update(head.data(), head.size());
  uint64_t size = head.size();
  char buf[1 << 16];
  for (;;) {
    ZIPNN_ASSIGN_OR_RETURN(size_t n, content.Read(buf, sizeof buf));
    if (n == 0) break;
    hasher.Update(buf, n);
    size += n;
  }
  // The format is read again from the file's layout, as storing it does:
  // a note names the bytes, nothing else is taken from it.
  auto FormatOfFile = [&]() -> std::string {
    auto checkpoint = formats::Checkpoint::Open(path);
    if (!checkpoint.ok() || !checkpoint->ReadLayout().ok()) return "";
    return formats::FormatName(checkpoint->layout().format);
  };
  if (size != pointer.size || hasher.Finish() != pointer.id || !store_.objects.Has(pointer.id) ||
      FormatOfFile() != pointer.format) {
    // Its bytes were read once, and not kept: the next add stores them.
    ForgetAdded(store_.added_dir, path);
    return InvalidArgument(path + " is not what `git zipnn commit` stored for it a moment ago (it changed since, "
                                     "keeping its size and times, or its object is gone): git add it again");
  }
  if (series_) series_->Add(path, pointer.id);
  pointer.version = PointerVersionFor(path, pointer);
  const std::string text = store::FormatPointer(pointer);
  if (listings_ && !listings_->Note(text)) KeepListing(store::NewVersion{path, pointer.id, path, "", ""}, text);
  listing_.reset();
  return out.Append(text.data(), text.size());
}

void Cleaner::NoteRawCopy(const std::string& path, const ContentId& id, uint64_t size) {
  // Said for the first large copy a repository keeps, once.
  constexpr uint64_t kLarge = uint64_t{64} << 20;
  if (size < kLarge || size > store_.policy.raw_cache) return;  // small, or never kept
  const std::string dir = store::ParentCachesDir(store_);
  if (dir.empty() || FileExists(dir + "/raw-cache-noted")) return;
  for (const store::RawCache::Entry& e : store::RawCache(store_.cache_dir, store_.policy.raw_cache).List()) {
    if (e.id != id) continue;
    std::fprintf(stderr,
                 "git-zipnn: note: a copy of %s (%s) is kept in %s, so that its next save is stored as a delta "
                 "without decoding this one; such copies take at most raw_cache (%s; set it in .zipnn.yaml, 0 "
                 "keeps none), and `git zipnn du` shows what they take\n",
                 path.c_str(), HumanBytes(e.size).c_str(), store_.cache_dir.c_str(),
                 HumanBytes(store_.policy.raw_cache).c_str());
    const std::string noted = dir + "/raw-cache-noted";
    if (const int fd = ::open(noted.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644); fd >= 0) ::close(fd);
    return;
  }
}

std::optional<store::Pointer> Cleaner::HeldElsewhere(const std::string& path, const ContentId& id) {
  Result<store::Resolved> held = store_.Resolve(id);
  if (!held.ok() || !held->retained) return std::nullopt;
  Result<remote::RemoteSettings> settings = remote::RemoteSettings::Read();
  if (!settings.ok() || remote::KeepsRefetched(*settings)) return std::nullopt;
  Result<store::Pointer> indexed = git::PointerAt(":" + path);
  if (!indexed.ok() || indexed->id != id) return std::nullopt;
  Result<std::string> name = remote::DefaultRemote(*settings);
  if (!name.ok()) return std::nullopt;
  Result<std::unique_ptr<remote::RemoteStore>> there = remote::OpenRemoteStore(*settings, *name);
  if (!there.ok()) return std::nullopt;
  Result<std::vector<bool>> has = (*there)->Has({id});
  if (!has.ok() || has->empty() || !has->front()) return std::nullopt;
  return *indexed;
}

void Cleaner::TakeChildrenFromGit() {
  if (took_children_ || !series_) return;
  took_children_ = true;
  // What other clones stored on versions of other series (noted in git at
  // their pushes): a re-store of one of those versions here counts them.
  auto children = git::ChildrenInGit();
  if (!children.ok()) return;
  store::NoteChildren(store_, *children);
}

const std::string* Cleaner::ListingOf(const store::NewVersion& version) {
  const ContentId& id = version.id;
  if (listing_ && listing_->first == id) return &listing_->second;
  // Read as `git zipnn textconv` reads the file git smudges, so that the
  // listing is the one it would print.
  auto checkpoint = store::OpenNewVersion(version);
  if (!checkpoint.ok() || !checkpoint->ReadLayout().ok()) return nullptr;
  ThreadPool pool(ThreadPool::DefaultThreads());
  auto listing = analyze::TextconvListing(id, checkpoint->file(), checkpoint->layout(), pool);
  if (!listing.ok()) return nullptr;
  listing_.emplace(id, std::move(*listing));
  return &listing_->second;
}

std::vector<store::ParentCandidate> Cleaner::ListedTwins(const store::NewVersion& version) {
  const ContentId& id = version.id;
  std::vector<store::ParentCandidate> twins;
  // Only with git's listings, which the twin index is built from: the new
  // version's listing is made for them anyway (KeepListing takes it).
  if (!listings_ || !series_) return twins;
  const std::string* listing = ListingOf(version);
  if (listing == nullptr) return twins;
  const std::optional<ContentId> key = analyze::TwinKey(*listing);
  if (!key) return twins;
  // The listings the index has not read yet: all of them in a fresh
  // clone, then those fetched or added since.
  listings_->ReadNotes([&](const std::string& blob) { return !twins_.Knows(blob) || !tensors_.Knows(blob); },
                       [&](const std::string& blob, const std::string& text) {
                         if (const auto listed = analyze::ListedCheckpoint(text)) {
                           twins_.Keep(analyze::TwinKey(text), *listed, blob);
                           tensors_.Keep(*listed, blob, analyze::ListedTensors(text));
                         }
                       });
  for (const ContentId& twin : twins_.Find(*key)) {
    if (twin == id) continue;
    auto where = series_->PathOf(twin);
    if (!where.ok() || !*where) continue;  // not in HEAD's history: gc may take it
    store::ParentCandidate c{twin, **where, /*by_rule=*/false};
    c.listed_twin = true;
    twins.push_back(std::move(c));
  }
  return twins;
}

std::vector<store::ParentCandidate> Cleaner::SharedHolders(const std::string& name, const store::NewVersion& version) {
  constexpr size_t kMostHolders = 3;
  std::vector<store::ParentCandidate> holders;
  if (!listings_ || !series_) return holders;
  const std::string* listing = ListingOf(version);
  if (listing == nullptr) return holders;
  const std::vector<store::KeyedTensor> tensors = analyze::ListedTensors(*listing);
  uint64_t total = 0;
  for (const store::KeyedTensor& t : tensors) total += t.bytes;
  auto own = series_->Of(name, /*deep=*/false);
  std::vector<std::pair<ContentId, uint64_t>> found = tensors_.Find(tensors, std::max<uint64_t>(1, total / 10));
  // Of those holding about as much as the most, the shortest chain first:
  // the same weights in a base model and in an adapter file carrying it
  // are better taken from the base.
  if (!found.empty()) {
    const uint64_t most = found.front().second;
    auto depth = [&](const ContentId& id) {
      auto info = store::Describe(store_, id);
      return info.ok() ? info->depth : std::numeric_limits<int>::max();
    };
    std::map<ContentId, int> depths;
    for (const auto& [id, bytes] : found) {
      if (bytes >= most - most / 50) depths[id] = depth(id);
    }
    std::stable_sort(found.begin(), found.end(), [&](const auto& a, const auto& b) {
      const bool a_top = depths.count(a.first) > 0, b_top = depths.count(b.first) > 0;
      if (a_top != b_top) return a_top;
      return a_top && depths[a.first] < depths[b.first];
    });
  }
  // Then the versions a delta may take the tensors its parent lacks from:
  // together as many of them as can be (a consolidated copy of a save in
  // many shards: every shard).
  const size_t parents = std::min(found.size(), kMostHolders);
  found.resize(parents);
  std::map<ContentId, uint64_t> adds;
  std::set<ContentId> skip{version.id};  // and its own series' versions (below)
  if (own.ok()) {
    for (const store::Version& v : *own) skip.insert(v.id);
  }
  for (const store::TensorIndex::Covering& holder :
       tensors_.Cover(tensors, parents + store::kMaxTakenReferences, skip)) {
    adds[holder.id] = holder.adds;
    if (std::none_of(found.begin(), found.end(), [&](const auto& f) { return f.first == holder.id; })) {
      found.emplace_back(holder.id, holder.held);
    }
  }
  for (const auto& holder : found) {
    const ContentId& id = holder.first;
    // Its own series places it against its own versions (and re-stores
    // them against it): a parent there would go round in a circle.
    if (id == version.id || !own.ok() ||
        std::any_of(own->begin(), own->end(), [&](const store::Version& v) { return v.id == id; })) {
      continue;
    }
    auto where = series_->PathOf(id);
    if (!where.ok() || !*where) continue;  // not in HEAD's history: gc may take it
    store::ParentCandidate c{id, **where, /*by_rule=*/false};
    c.shared_bytes = holder.second;
    if (auto it = adds.find(id); it != adds.end()) c.adds_bytes = it->second;
    holders.push_back(std::move(c));
  }
  return holders;
}

std::vector<store::ParentCandidate> Cleaner::ParentCandidates(const std::string& path, const std::string& name,
                                                              const store::NewVersion& version) {
  std::vector<store::ParentCandidate> candidates;
  if (!series_) return candidates;
  std::string named = named_parent_;
  for (const config::Policy::ParentRule& rule : store_.policy.parents) {
    if (!named.empty()) break;
    if (series::GlobMatches(rule.checkpoints, path)) named = rule.parent;
  }
  if (!named.empty()) {
    // A file, or a folder whose file of the same name is meant.
    const std::string base_name = path.substr(path.rfind('/') + 1);
    bool found = false;
    for (const std::string& at : {named, named + "/" + base_name}) {
      auto held = series_->At(at);
      if (held.ok() && *held && (*held)->path != path) {
        candidates.push_back(store::ParentCandidate{(*held)->id, (*held)->path, /*by_rule=*/true});
        found = true;
        break;
      }
    }
    if (!found && unknown_parents_.insert(named).second) {
      std::fprintf(stderr,
                   "git-zipnn: warning: the parent named for %s, '%s', is no checkpoint git holds (nor a folder "
                   "holding %s; paths are from the top of the work tree); the parent is looked for by its tensors "
                   "instead\n",
                   path.c_str(), named.c_str(), base_name.c_str());
    }
  }
  // A twin anywhere in history comes before the recent versions: nothing
  // is closer. A twin among the recent ones is weighed on its work-tree
  // file as they are (the search stops at the first twin).
  auto recent = series_->Recent(name);
  std::vector<store::ParentCandidate> twins = ListedTwins(version);
  for (store::ParentCandidate& twin : twins) {
    const bool is_recent = recent.ok() && std::any_of(recent->begin(), recent->end(),
                                                      [&](const store::Version& v) { return v.id == twin.id; });
    if (!is_recent) candidates.push_back(std::move(twin));
  }
  // Then the versions holding its tensors under other names, which a
  // fingerprint of names cannot find.
  for (store::ParentCandidate& holder : SharedHolders(name, version)) candidates.push_back(std::move(holder));
  if (recent.ok()) {
    for (const store::Version& v : *recent) candidates.push_back(store::ParentCandidate{v.id, v.path, false});
  }
  return candidates;
}

void Cleaner::KeepListing(const store::NewVersion& version, const std::string& pointer_text) {
  const std::string* listing = ListingOf(version);
  if (listing == nullptr) return;
  KeepIndexed(pointer_text, *listing, version.id);
  listings_->Add(pointer_text, *listing);
}

void Cleaner::KeepIndexed(const std::string& pointer_text, const std::string& listing, const ContentId& id) {
  auto blob = git::PointerBlob(pointer_text);
  if (!blob.ok()) return;
  twins_.Keep(analyze::TwinKey(listing), id, *blob);
  tensors_.Keep(id, *blob, analyze::ListedTensors(listing));
}

Status Cleaner::Finish() { return listings_ ? listings_->Write() : OkStatus(); }

int Cleaner::PointerVersionFor(const std::string& path, const store::Pointer& pointer) {
  if (!series_) return store::kPointerVersion;
  if (!staged_) {
    staged_.emplace();
    auto files = series_->repository().IndexFiles();
    if (files.ok()) {
      for (const git::FileEntry& f : *files) staged_->emplace(f.path, f.blob);
    }
  }
  const auto it = staged_->find(path);
  if (it == staged_->end()) return store::kPointerVersion;
  auto held = git::PointerInBlob(series_->repository(), it->second);
  return held.ok() && *held && **held == pointer ? (*held)->version : store::kPointerVersion;
}

}  // namespace zipnn::ops
