// git zipnn du: where the bytes of a repository's checkpoints are: the
// object store, what git-zipnn keeps beside it (the raw cache and scratch
// files), and the tracked checkpoints in the work tree.
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/strings.h"
#include "lib/store/raw_cache.h"

namespace zipnn::cmd {

namespace {

struct Tally {
  uint64_t files = 0, bytes = 0;
  void Add(uint64_t size) {
    ++files;
    bytes += size;
  }
};

// Every regular file under `dir` (none when it does not exist).
Tally FilesUnder(const std::string& dir) {
  Tally t;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    struct stat st;
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) t.Add(static_cast<uint64_t>(st.st_size));
  }
  return t;
}

void Row(const char* what, const Tally& t, const std::string& note) {
  std::printf("  %-22s %10s in %6llu file%s%s\n", what, HumanBytes(t.bytes).c_str(),
              static_cast<unsigned long long>(t.files), t.files == 1 ? " " : "s", note.c_str());
}

Status RunDu() {
  ops::Context context;
  ZIPNN_ASSIGN_OR_RETURN(store::Store * opened, context.Store());
  store::Store& store = *opened;
  Tally objects, unfinished, records, notes;
  size_t foreign = 0;  // not git-zipnn's: not counted
  ZIPNN_ASSIGN_OR_RETURN(std::vector<store::ObjectStore::Entry> listed, store.objects.List());
  for (const auto& e : listed) {
    if (e.kind == store::ObjectStore::Kind::kForeign) {
      ++foreign;
    } else if (e.kind == store::ObjectStore::Kind::kNote) {
      notes.Add(e.size);
    } else if (e.kind == store::ObjectStore::Kind::kRecord) {
      records.Add(e.size);
    } else {
      (e.kind == store::ObjectStore::Kind::kObject ? objects : unfinished).Add(e.size);
    }
  }
  Tally cache;
  for (const auto& e : store::RawCache(store.cache_dir, store.policy.raw_cache).List()) cache.Add(e.size);
  const Tally scratch = FilesUnder(store.temp_dir);
  const Tally prepared = FilesUnder(store.cache_dir.substr(0, store.cache_dir.rfind('/')) + "/prepared");
  const std::string zipnn_dir = store.temp_dir.substr(0, store.temp_dir.rfind('/'));
  const Tally legacy = FilesUnder(zipnn_dir + "/series");
  Tally work_tree;
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> tracked, ops::TrackedPaths());
  for (const std::string& path : tracked) {
    struct stat st;
    if (::stat((store.work_dir + "/" + path).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      work_tree.Add(static_cast<uint64_t>(st.st_size));
    }
  }
  const uint64_t beside = cache.bytes + prepared.bytes + scratch.bytes + unfinished.bytes + legacy.bytes;
  std::printf("object store %s\n", store.objects.root().c_str());
  Row("objects", objects, "");
  if (records.files > 0) Row("retention records", records, "  (versions thinned or dropped: git zipnn retain)");
  if (notes.files > 0) Row("base notes", notes, "  (why each standalone object is one: git zipnn log)");
  if (unfinished.files > 0) Row("unfinished objects", unfinished, "  (a process died mid-write; gc removes them)");
  if (foreign > 0) {
    std::printf("  and %s that git-zipnn did not write (not counted; gc leaves them)\n",
                Counted(foreign, "file or folder", "files or folders").c_str());
  }
  std::printf("kept beside it\n");
  Row("raw cache", cache, "  (budget " + HumanBytes(store.policy.raw_cache) + ", raw_cache in .zipnn.yaml)");
  if (prepared.files > 0) Row("prepared deltas", prepared, "  (made for the next add to take; gc removes stale ones)");
  Row("scratch files", scratch, scratch.files > 0 ? "  (gc removes those older than an hour; gc --now at once)" : "");
  if (legacy.files > 0) Row("old series lists", legacy, "  (no longer used; gc removes them)");
  std::printf("  %-22s %10s (%s of the store)\n", "in all", HumanBytes(beside).c_str(),
              Percent(beside, objects.bytes).c_str());
  std::printf("work tree\n");
  Row("tracked checkpoints", work_tree, "");
  return OkStatus();
}

}  // namespace

Action SetupDu(CLI::App&) {
  return [] { return RunDu(); };
}

}  // namespace zipnn::cmd
