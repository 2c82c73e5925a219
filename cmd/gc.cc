// git zipnn gc: removes the objects nothing needs. Needed are the objects
// of every checkpoint a pointer names anywhere in the repository (every
// commit reachable from a ref, a reflog or a stash, and the index), every
// base of their chains, and every object used within the grace period
// (with the bases of its chain). gc holds the store's lock exclusive, so
// it waits for running adds to finish (their filter processes hold it
// shared until git has recorded their pointers), and adds wait for it. As
// a second guard, an add marks what it stores or reuses, with every base
// of its chain (ObjectStore::Touch), before git records a pointer.
//
// An object is removed by renaming it aside, checking that no add marked
// it meanwhile, then unlinking; one marked meanwhile is put back. A gc
// interrupted between the two steps leaves `<object>.gc`, which the next
// gc puts back first.
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/store/raw_cache.h"
#include "lib/git/discover.h"
#include "lib/git/git.h"
#include "lib/git/pointers.h"

namespace zipnn::cmd {

namespace {

constexpr char kDoomedSuffix[] = ".gc";
// Scratch files (spooled input, restored bases, unfinished objects) older
// than this are leftovers of a process that died.
constexpr int64_t kScratchSeconds = 3600;

struct GcArgs {
  bool dry_run = false;
  double keep_recent_days = 14;
  std::vector<std::string> forget;
};

bool EndsWith(const std::string& s, const std::string& end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

int64_t ModifiedAt(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_mtime) : -1;
}

// Adds `id` and every base of its chain to `needed`. An object that
// cannot be read (a damaged header) is needed all the same: gc never
// turns damaged into missing. Its id and why go to `unreadable` (a
// missing object is fsck's to report: there is nothing to keep).
void NeedChain(const store::Repository& repo, const ContentId& id, std::set<std::string>& needed,
               std::map<std::string, std::string>& unreadable) {
  needed.insert(id.Hex());
  ContentId next = id;  // the object the walk opens next
  const Status walked = store::VisitChain(repo, id, [&](const store::ChainLink& link) {
    needed.insert(link.id.Hex());
    if (link.delta) needed.insert(link.base.Hex());
    next = link.base;
  });
  if (!walked.ok() && walked.code() != StatusCode::kNotFound) unreadable.emplace(next.Hex(), walked.message());
}

bool SameFolder(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

// Whether `given` (as typed, perhaps relative, perhaps gone) names the
// registered folder `user`.
bool Names(const std::string& given, const std::string& user) {
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(given, ec).lexically_normal().string();
  return given == user || SameFolder(given, user) || (!ec && (absolute == user || absolute == user + "/"));
}

// Adds what the other repositories that use this store need (every
// pointer of theirs, as for this one). A repository registered once that
// now uses another store is dropped from the list. One that cannot be
// read stops gc, as what it needs is unknown, unless `forget` names it;
// `forget` never drops one that can still be read and still uses the
// store. With `dry_run` nothing is dropped, only said. Returns how many
// pointers the others hold.
Result<size_t> NeedOthers(const store::Repository& repo, const std::string& own_git_dir,
                          const std::vector<std::string>& forget, bool dry_run, std::set<std::string>& needed,
                          std::map<std::string, std::string>& unreadable) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> users, repo.objects.Users());
  auto forgotten = [&](const std::string& user) {
    return std::any_of(forget.begin(), forget.end(), [&](const std::string& f) { return Names(f, user); });
  };
  for (const std::string& f : forget) {
    if (std::none_of(users.begin(), users.end(), [&](const std::string& u) { return Names(f, u); })) {
      std::string list;
      for (const std::string& u : users) list += "\n  " + u;
      return InvalidArgument("--forget " + f + ": not a repository of the store " + repo.objects.root() +
                             "; its repositories are:" + list);
    }
  }
  size_t pointers = 0;
  std::vector<std::string> unknown;
  for (const std::string& user : users) {
    if (user == own_git_dir || SameFolder(user, own_git_dir)) continue;
    auto other = git::Repository::Discover(user);
    if (other.ok()) {
      auto store = git::StoreOfRepository(user);
      if (store.ok() && !SameFolder(*store, repo.objects.root())) {
        if (!dry_run) ZIPNN_RETURN_IF_ERROR(repo.objects.ForgetUser(user));  // it moved to another store
        continue;
      }
      if (forgotten(user)) {
        return InvalidArgument("--forget " + user + ": that repository is still there and keeps its checkpoints in " +
                               "this store; gc keeps what it needs (to stop sharing, set its zipnn.storepath to "
                               "another folder)");
      }
      auto found = git::FindPointers(*other, /*all=*/true);
      if (found.ok()) {
        for (const auto& [pointer, place] : found->pointers) NeedChain(repo, pointer.id, needed, unreadable);
        pointers += found->pointers.size();
        std::printf("the store is shared: keeping what %s needs too\n", user.c_str());
        continue;
      }
      other = found.status();
    }
    if (forgotten(user)) {
      if (!dry_run) ZIPNN_RETURN_IF_ERROR(repo.objects.ForgetUser(user));
      std::fprintf(stderr, "git-zipnn gc: %s %s; what only it needed %s\n", dry_run ? "would forget" : "forgot",
                   user.c_str(), dry_run ? "would go" : "goes now");
      continue;
    }
    const bool gone = !std::filesystem::exists(user);
    unknown.push_back(user + (gone ? " (no longer exists)" : " (" + other.status().message() + ")"));
  }
  if (!unknown.empty()) {
    std::string list;
    for (const std::string& u : unknown) list += "\n  " + u;
    return Unsupported("the store " + repo.objects.root() + " is shared with repositories that cannot be read:" +
                       list + "\nnothing was removed: what they need is unknown. If one is gone for good, "
                       "name it: git zipnn gc --forget <its git folder>");
  }
  return pointers;
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

Status RunGc(const GcArgs& a) {
  if (a.keep_recent_days < 0) return InvalidArgument("--keep-recent must not be negative");
  ZIPNN_ASSIGN_OR_RETURN(store::Repository repo, OpenRepository());
  ZIPNN_ASSIGN_OR_RETURN(store::StoreLock lock, repo.objects.Lock(store::StoreLock::Mode::kExclusive, [] {
    std::fprintf(stderr, "git-zipnn gc: waiting for running adds to finish\n");
  }));
  const int64_t started = static_cast<int64_t>(std::time(nullptr));
  const int64_t cutoff = started - static_cast<int64_t>(a.keep_recent_days * 86400);

  // First put back what an interrupted gc left aside.
  ZIPNN_ASSIGN_OR_RETURN(std::vector<store::ObjectStore::Entry> listed, repo.objects.List());
  for (const auto& e : listed) {
    if (!EndsWith(e.path, kDoomedSuffix) || a.dry_run) continue;
    const std::string object = e.path.substr(0, e.path.size() - (sizeof kDoomedSuffix - 1));
    if (::link(e.path.c_str(), object.c_str()) == 0 || errno == EEXIST) ::unlink(e.path.c_str());
  }
  ZIPNN_ASSIGN_OR_RETURN(listed, repo.objects.List());

  std::set<std::string> needed;
  std::map<std::string, std::string> unreadable;
  ZIPNN_ASSIGN_OR_RETURN(git::Repository git_repo, git::Repository::Discover());
  ZIPNN_ASSIGN_OR_RETURN(FoundPointers found, git::FindPointers(git_repo, /*all=*/true));
  for (const auto& [pointer, place] : found.pointers) NeedChain(repo, pointer.id, needed, unreadable);
  ZIPNN_ASSIGN_OR_RETURN(size_t others, NeedOthers(repo, git_repo.common_dir(), a.forget, a.dry_run, needed, unreadable));
  for (const auto& e : listed) {
    if (e.id && e.mtime >= cutoff) NeedChain(repo, *e.id, needed, unreadable);
  }
  for (const auto& [id, why] : unreadable) {
    std::fprintf(stderr, "warning: object %s cannot be read, kept: %s (`git zipnn fsck --all` names what it holds)\n",
                 id.c_str(), why.c_str());
  }
  for (const auto& [place, message] : found.damaged) {
    std::fprintf(stderr, "warning: %s at %.10s: %s (what it named cannot be kept)\n", place.path.c_str(),
                 place.rev.c_str(), message.c_str());
  }

  uint64_t freed = 0, removed = 0, kept = 0, scratch = 0;
  for (const auto& e : listed) {
    if (!e.id) continue;
    if (needed.count(e.id->Hex()) != 0) {
      ++kept;
      continue;
    }
    if (a.dry_run) {
      std::printf("would remove %s (%s)\n", e.id->Hex().c_str(), HumanBytes(e.size).c_str());
    } else {
      const std::string doomed = e.path + kDoomedSuffix;
      if (::rename(e.path.c_str(), doomed.c_str()) != 0) continue;  // gone already
      if (ModifiedAt(doomed) >= started) {  // an add marked it meanwhile: it stays
        if (::link(doomed.c_str(), e.path.c_str()) == 0 || errno == EEXIST) ::unlink(doomed.c_str());
        ++kept;
        continue;
      }
      ::unlink(doomed.c_str());
    }
    ++removed;
    freed += e.size;
  }
  // Raw copies that no pointer names any more, and any beyond the budget.
  const store::RawCache cache(repo.cache_dir, repo.policy.raw_cache);
  uint64_t cache_freed = 0;
  if (a.dry_run) {
    for (const auto& e : cache.List()) {
      if (needed.count(e.id.Hex()) == 0) std::printf("would remove raw copy %s (%s)\n", e.id.Hex().c_str(), HumanBytes(e.size).c_str());
    }
  } else {
    cache_freed = cache.Prune([&](const ContentId& id) { return needed.count(id.Hex()) != 0; });
  }
  // Leftovers of processes that died: unfinished objects in the store and
  // scratch files (among them the raw copies and series lists that
  // earlier versions kept per clone, in tmp/latest and series/).
  std::vector<std::string> leftovers;
  for (const auto& e : listed) {
    if (!e.id && !EndsWith(e.path, kDoomedSuffix) && e.mtime < started - kScratchSeconds) leftovers.push_back(e.path);
  }
  for (const std::string& f : OldScratch(repo.temp_dir, started - kScratchSeconds)) leftovers.push_back(f);
  const std::string legacy_series = repo.temp_dir.substr(0, repo.temp_dir.rfind('/')) + "/series";
  for (const std::string& f : OldScratch(legacy_series, started)) leftovers.push_back(f);
  for (const std::string& f : leftovers) {
    if (a.dry_run) {
      std::printf("would remove leftover %s\n", f.c_str());
    } else if (::unlink(f.c_str()) != 0) {
      continue;
    }
    ++scratch;
  }
  std::printf("%s %" PRIu64 " object%s (%s) and %" PRIu64 " leftover file%s; kept %" PRIu64
              " (needed by %zu pointer%s, or used in the last %g days)\n",
              a.dry_run ? "would remove" : "removed", removed, removed == 1 ? "" : "s", HumanBytes(freed).c_str(),
              scratch, scratch == 1 ? "" : "s", kept, found.pointers.size() + others,
              found.pointers.size() + others == 1 ? "" : "s",
              a.keep_recent_days);
  const std::vector<store::RawCache::Entry> copies = cache.List();
  if (cache_freed > 0 || !copies.empty()) {
    uint64_t held = 0;
    for (const auto& e : copies) held += e.size;
    std::printf("raw cache: %s%zu cop%s kept (%s of a %s budget)\n",
                cache_freed > 0 ? ("freed " + HumanBytes(cache_freed) + "; ").c_str() : "", copies.size(),
                copies.size() == 1 ? "y" : "ies", HumanBytes(held).c_str(), HumanBytes(repo.policy.raw_cache).c_str());
  }
  return OkStatus();
}

}  // namespace

Action SetupGc(CLI::App& sub) {
  auto a = std::make_shared<GcArgs>();
  sub.add_flag("-n,--dry-run", a->dry_run, "Only list what would be removed");
  sub.add_option("--keep-recent", a->keep_recent_days,
                 "Keep every object used in the last DAYS days, with its bases (default 14)")
      ->default_str("14");
  sub.add_option("--forget", a->forget,
                 "A repository sharing the store that is gone for good (its git folder): stop keeping what it needs");
  return [a] { return RunGc(*a); };
}

}  // namespace zipnn::cmd
