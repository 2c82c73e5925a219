// git zipnn gc: removes the objects nothing needs (lib/store/gc.h): the
// pointers of every commit reachable from a ref, a reflog or a stash, and
// of every index, in this repository and in the others sharing its store
// (lib/git/shared_store.h), and what was used in the grace period.
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/strings.h"
#include "lib/ops/maintain.h"
#include "lib/store/gc.h"
#include "lib/store/raw_cache.h"

namespace zipnn::cmd {

namespace {

// Foreign files named in gc's warning; more are counted.
constexpr size_t kForeignNamed = 5;

struct GcArgs {
  bool dry_run = false;
  bool now = false;
  double keep_recent_days = 14;
  std::vector<std::string> forget;
};

Status RunGc(const GcArgs& a) {
  if (a.keep_recent_days < 0) return InvalidArgument("--keep-recent must not be negative");
  GcArgs args = a;
  if (args.now) args.keep_recent_days = 0;  // and leftovers of any age
  ops::Context context;
  ZIPNN_ASSIGN_OR_RETURN(store::Store * opened, context.Store());
  store::Store& store = *opened;
  ZIPNN_ASSIGN_OR_RETURN(store::Removing removing, store.BeginRemoving("git-zipnn gc"));
  store::SweepOptions options;
  options.dry_run = a.dry_run;
  options.started = static_cast<int64_t>(std::time(nullptr));
  options.keep_since = options.started - static_cast<int64_t>(args.keep_recent_days * 86400);
  options.now = args.now;
  if (!a.dry_run) ZIPNN_RETURN_IF_ERROR(store::PutBackSetAside(store, removing));

  ZIPNN_ASSIGN_OR_RETURN(ops::GcNeeds needs, ops::NeededObjects(context, a.forget, a.dry_run));
  const FoundPointers& found = needs.found;
  store::Needed& needed = needs.needed;
  const auto& others = needs.others;
  for (const std::string& user : others.sharing) {
    std::printf("the store is shared: keeping what %s needs too\n", user.c_str());
  }
  for (const std::string& user : others.forgot) {
    std::fprintf(stderr, "git-zipnn gc: %s %s; what only it needed %s\n", a.dry_run ? "would forget" : "forgot",
                 user.c_str(), a.dry_run ? "would go" : "goes now");
  }
  ZIPNN_ASSIGN_OR_RETURN(store::Swept swept, store::Sweep(store, removing, needed, options));
  for (const auto& [id, why] : needed.unreadable) {
    std::fprintf(stderr, "warning: object %s cannot be read, kept: %s (`git zipnn fsck --all` names what it holds)\n",
                 id.c_str(), why.c_str());
  }
  if (!swept.foreign.empty()) {
    // A storepath naming a team folder or $HOME: say so, every time.
    std::string names;
    for (size_t i = 0; i < swept.foreign.size() && i < kForeignNamed; ++i) names += (i ? ", " : "") + swept.foreign[i];
    if (swept.foreign.size() > kForeignNamed)
      names += " and " + std::to_string(swept.foreign.size() - kForeignNamed) + " more";
    std::fprintf(stderr,
                 "warning: the store folder %s also holds %s that git-zipnn did not write (%s); gc left %s as %s. "
                 "Keep the store in a folder of its own: move %s out, or set zipnn.storepath to an empty folder\n",
                 store.objects.root().c_str(),
                 Counted(swept.foreign.size(), "file or folder", "files or folders").c_str(), names.c_str(),
                 swept.foreign.size() == 1 ? "it" : "them", swept.foreign.size() == 1 ? "it is" : "they are",
                 swept.foreign.size() == 1 ? "it" : "them");
  }
  for (const auto& [place, message] : found.damaged) {
    std::fprintf(stderr, "warning: %s at %.10s: %s (what it named cannot be kept)\n", place.path.c_str(),
                 place.rev.c_str(), message.c_str());
  }
  if (a.dry_run) {
    for (const auto& [id, size] : swept.objects)
      std::printf("would remove %s (%s)\n", id.Hex().c_str(), HumanBytes(size).c_str());
    for (const auto& [id, size] : swept.raw_copies) {
      std::printf("would remove raw copy %s (%s)\n", id.Hex().c_str(), HumanBytes(size).c_str());
    }
    for (const std::string& f : swept.leftovers) std::printf("would remove leftover %s\n", f.c_str());
  }
  const size_t removed = swept.objects.size(), leftovers = swept.leftovers.size();
  const size_t pointers = found.pointers.size() + others.pointers;
  std::printf("%s %zu object%s (%s) and %zu leftover file%s; kept %" PRIu64
              " (needed by %zu pointer%s, or used in the last %g days)\n",
              a.dry_run ? "would remove" : "removed", removed, removed == 1 ? "" : "s", HumanBytes(swept.freed).c_str(),
              leftovers, leftovers == 1 ? "" : "s", swept.kept, pointers, pointers == 1 ? "" : "s",
              args.keep_recent_days);
  if (swept.locks_hold_nothing) {
    std::printf("note: file locks hold nothing on the file system of %s, so the files of a running git add or fetch "
                "cannot be told from those of a stopped one: --now removed only leftovers over an hour old, and kept "
                "%s younger (%s)\n",
                store.temp_dir.c_str(), Counted(swept.young_files, "file").c_str(),
                HumanBytes(swept.young_bytes).c_str());
  } else if (swept.young_files > 0) {
    std::printf("%s of leftovers no running process holds (%s of a git add or fetch that was stopped) %s until they "
                "are an hour old; `git zipnn gc --now` removes them\n",
                HumanBytes(swept.young_bytes).c_str(), Counted(swept.young_files, "file").c_str(),
                a.dry_run ? "would be kept" : "kept");
  }
  const std::vector<store::RawCache::Entry> copies = store::RawCache(store.cache_dir, store.policy.raw_cache).List();
  if (swept.cache_freed > 0 || !copies.empty()) {
    uint64_t held = 0;
    for (const auto& e : copies) held += e.size;
    std::printf("raw cache: %s%zu cop%s kept (%s of a %s budget)\n",
                swept.cache_freed > 0 ? ("freed " + HumanBytes(swept.cache_freed) + "; ").c_str() : "", copies.size(),
                copies.size() == 1 ? "y" : "ies", HumanBytes(held).c_str(), HumanBytes(store.policy.raw_cache).c_str());
  }
  if (swept.prepared_freed > 0) {
    std::printf("prepared deltas: freed %s (of versions gone or re-stored since)\n",
                HumanBytes(swept.prepared_freed).c_str());
  }
  return OkStatus();
}

}  // namespace

Action SetupGc(CLI::App& sub) {
  auto a = std::make_shared<GcArgs>();
  sub.add_flag("-n,--dry-run", a->dry_run, "Only list what would be removed");
  sub.add_flag("--now", a->now,
               "Keep nothing for being recent (--keep-recent 0), and remove the leftovers of a process that died "
               "(a Ctrl-C'd git add) whatever their age, once no running process holds them");
  sub.add_option("--keep-recent", a->keep_recent_days,
                 "Keep every object used in the last DAYS days, with its bases (default 14)")
      ->default_str("14");
  sub.add_option("--forget", a->forget,
                 "A repository sharing the store that is gone for good (its git folder): stop keeping what it needs");
  return [a] { return RunGc(*a); };
}

}  // namespace zipnn::cmd
