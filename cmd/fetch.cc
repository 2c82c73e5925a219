// git zipnn fetch / pull: bring the objects that pointers need from a
// remote's object store; pull then writes the checkpoints into the work
// tree where git left pointers (GIT_ZIPNN_SKIP_SMUDGE, or a checkout
// without the objects).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <set>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/access/versions.h"
#include "lib/base/file.h"
#include "lib/base/redact.h"
#include "lib/git/git.h"
#include "lib/git/pointers.h"
#include "lib/git/rewrite.h"
#include "lib/remote/select.h"
#include "lib/remote/transfer.h"
#include "lib/store/raw_cache.h"

namespace zipnn::cmd {

namespace {

// The files a pull has begun to put in place and not restaged yet: until
// it is restaged, git's record of a restored file still has the pointer's
// size, so git status calls it modified. A pull notes each file before it
// writes it and removes the list once it has restaged them; a pull killed
// in between leaves the list to the next one, which restages those that
// hold exactly what the index names. One per work tree, in its git folder;
// paths end with NUL (a path may hold any other byte).
class RestageList {
 public:
  explicit RestageList(std::string path) : path_(std::move(path)) {}
  ~RestageList() {
    if (fd_ >= 0) ::close(fd_);
  }
  RestageList(const RestageList&) = delete;
  RestageList& operator=(const RestageList&) = delete;

  // What an earlier pull left.
  std::vector<std::string> Left() const {
    std::vector<std::string> paths;
    auto data = ReadWholeFile(path_);
    if (!data.ok()) return paths;
    const std::string text(data->begin(), data->end());
    for (size_t at = 0, end; (end = text.find('\0', at)) != std::string::npos; at = end + 1) {
      if (end > at) paths.push_back(text.substr(at, end - at));
    }
    return paths;
  }
  // Before `path`'s file changes. A list that cannot be written costs
  // only the restage after a kill, so it does not stop the pull.
  void Note(const std::string& path) {
    if (fd_ < 0 && !failed_) {
      failed_ = !MakeDirectories(path_.substr(0, path_.rfind('/'))).ok() ||
                (fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0;
    }
    if (fd_ >= 0) (void)WriteAll(fd_, path.c_str(), path.size() + 1, path_);  // with its NUL
  }
  void Remove() { ::unlink(path_.c_str()); }

 private:
  std::string path_;
  int fd_ = -1;
  bool failed_ = false;
};

struct FetchArgs {
  std::string remote;
  std::vector<std::string> refs;
  bool all = false;
  bool recent = false;
  bool quiet = false;
  std::vector<std::string> include, exclude;  // path patterns, several to a word with commas
};

// The paths --include and --exclude keep (all of them without either).
Result<std::set<std::string>> Chosen(const git::Repository& git_repo, const std::set<std::string>& paths,
                                     const FetchArgs& a) {
  std::vector<std::string> include = PatternList(a.include);
  if (include.empty()) include = {"*"};
  return git::MatchingPaths(git_repo, paths, include, PatternList(a.exclude));
}

// The days a config key gives (Git LFS's lfs.<key> when zipnn.<key> is
// unset), else `fallback`.
Result<int64_t> Days(const std::string& key, int64_t fallback) {
  for (const std::string& k : {"zipnn." + key, "lfs." + key}) {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<int64_t> days, git::ConfigGetInt(k));
    if (!days) continue;
    if (*days < 0) return InvalidArgument(k + " must not be negative");
    return *days;
  }
  return fallback;
}

Status Fetch(const store::Store& repo, const FetchArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(const remote::RemoteSettings settings, remote::RemoteSettings::Read());
  ZIPNN_ASSIGN_OR_RETURN(std::string remote, remote::RemoteOrDefault(settings, a.remote));
  ZIPNN_ASSIGN_OR_RETURN(git::Repository git_repo, git::Repository::Discover());
  FoundPointers found;
  if (a.all && a.recent) return InvalidArgument("--all and --recent choose differently; give one");
  if (a.all) {
    ZIPNN_ASSIGN_OR_RETURN(found, git::FindPointersIn(git_repo, {"--all"}));
  } else if (a.recent) {
    // As Git LFS's fetch --recent: HEAD, and the branches (local and
    // remote-tracking) committed to in the last fetchrecentrefsdays; with
    // fetchrecentcommitsdays, the versions of their commits of that many
    // days before now too.
    const int64_t now = static_cast<int64_t>(std::time(nullptr));
    ZIPNN_ASSIGN_OR_RETURN(const int64_t ref_days, Days("fetchrecentrefsdays", 7));
    ZIPNN_ASSIGN_OR_RETURN(const int64_t commit_days, Days("fetchrecentcommitsdays", 0));
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> revs, git::RefsCommittedSince(now - ref_days * 86400));
    revs.push_back("HEAD");
    ZIPNN_ASSIGN_OR_RETURN(found, git::FindPointersInTrees(git_repo, revs));
    if (commit_days > 0) {
      ZIPNN_ASSIGN_OR_RETURN(std::vector<git::CommitInfo> commits, git_repo.Commits(revs));
      std::vector<std::string> recent;
      for (const git::CommitInfo& c : commits) {
        if (c.time >= now - commit_days * 86400) recent.push_back(c.id.Hex());
      }
      if (!recent.empty()) {
        ZIPNN_ASSIGN_OR_RETURN(FoundPointers history, git::FindPointersInTrees(git_repo, recent));
        found.pointers.insert(found.pointers.end(), history.pointers.begin(), history.pointers.end());
      }
    }
  } else {
    for (const std::string& ref : a.refs) ZIPNN_RETURN_IF_ERROR(git::CheckRevision(ref));
    const std::vector<std::string> revs = a.refs.empty() ? std::vector<std::string>{"HEAD"} : a.refs;
    ZIPNN_ASSIGN_OR_RETURN(found, git::FindPointersInTrees(git_repo, revs));
  }
  if (!a.include.empty() || !a.exclude.empty()) {
    std::set<std::string> paths;
    for (const auto& [pointer, place] : found.pointers) paths.insert(place.path);
    ZIPNN_ASSIGN_OR_RETURN(const std::set<std::string> chosen, Chosen(git_repo, paths, a));
    found.pointers.erase(std::remove_if(found.pointers.begin(), found.pointers.end(),
                                        [&](const auto& p) { return chosen.count(p.second.path) == 0; }),
                         found.pointers.end());
  }
  WarnDamaged(found);
  ZIPNN_ASSIGN_OR_RETURN(remote::Transferred done, remote::FetchPointers(repo, settings, remote, found));
  PrintTransfer(/*push=*/false, done, a.quiet);
  return OkStatus();
}

// Restores what it can: a remote that is out of reach, or an object it
// lacks, costs only the files that need it; they stay pointers, are named,
// and the exit code says so.
Status RunPull(const FetchArgs& a) {
  ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
  Status fetched = Fetch(repo, a);
  if (!fetched.ok()) std::fprintf(stderr, "git-zipnn pull: %s\n", RedactSecrets(fetched.message()).c_str());
  ZIPNN_ASSIGN_OR_RETURN(std::string top, git::TopLevel());
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> paths, git::TrackedPaths());
  // What the index names for each path: a restored file that is that
  // version has its index record brought up to date.
  ZIPNN_ASSIGN_OR_RETURN(git::Repository git_repo, git::Repository::Discover());
  if (!a.include.empty() || !a.exclude.empty()) {  // the files chosen, as for the fetch
    ZIPNN_ASSIGN_OR_RETURN(const std::set<std::string> chosen,
                           Chosen(git_repo, std::set<std::string>(paths.begin(), paths.end()), a));
    paths.erase(std::remove_if(paths.begin(), paths.end(), [&](const std::string& p) { return !chosen.count(p); }),
                paths.end());
  }
  using Staged = std::map<std::string, ContentId>;
  ZIPNN_ASSIGN_OR_RETURN(const Staged staged, git::StagedPointers(git_repo));
  std::vector<std::string> restored;  // those whose index entry names them
  // What a pull killed before its restage left: restaged now if still
  // exactly what the index names; the temporary files it was writing go.
  ZIPNN_ASSIGN_OR_RETURN(std::string list_path, git::WorkTreeGitPath("zipnn/pull-restage"));
  RestageList list(list_path);
  for (const std::string& path : list.Left()) {
    const auto in_index = staged.find(path);
    if (in_index == staged.end()) continue;
    const std::string file = top + "/" + path;
    auto pointer = store::PointerInFile(file);
    if (pointer.ok() && !*pointer && ReadFile::OpenHolding(file, in_index->second)) restored.push_back(path);
  }
  RemoveAbandonedTemps(repo.temp_dir);
  const access::Versions versions(repo);
  size_t count = 0, failed = 0;
  for (const std::string& path : paths) {
    const std::string file = top + "/" + path;
    if (!FileExists(file)) continue;  // deleted in the work tree
    auto pointer = store::PointerInFile(file);
    if (pointer.ok() && !*pointer) continue;  // not a pointer: nothing to restore
    list.Note(path);
    Result<std::optional<ContentId>> written = access::RestorePointerFile(versions, path, file);
    if (written.status().code() == StatusCode::kRemoved) {
      // Retention took it: it stays a pointer, as a checkout leaves it.
      std::fprintf(stderr, "git-zipnn: %s; left as its pointer\n", RedactSecrets(written.status().message()).c_str());
      continue;
    }
    if (!written.ok()) {
      ++failed;
      const std::string why = RedactSecrets(written.status().message());
      const bool named = why.find(path) != std::string::npos;
      std::fprintf(stderr, "error: %s%s (left as it was)\n", named ? "" : (path + ": ").c_str(), why.c_str());
      continue;
    }
    if (!*written) continue;  // not a pointer
    auto in_index = staged.find(path);
    if (in_index != staged.end() && in_index->second == **written) restored.push_back(path);
    if (!a.quiet) std::printf("%s: restored %s\n", path.c_str(), (*written)->Hex().c_str());
    ++count;
  }
  git::RestageUnchanged(restored, top);
  list.Remove();
  if (failed > 0) {
    return NotFound(std::to_string(failed) + " checkpoint" + (failed == 1 ? "" : "s") + " could not be restored (see " +
                    "above); restored " + std::to_string(count));
  }
  return OkStatus();
}

void AddFetchOptions(CLI::App& sub, FetchArgs& a) {
  sub.add_option("remote", a.remote,
                 "Git remote whose object store has the objects (default: the upstream, or origin)");
  sub.add_option("refs", a.refs, "Get what the files of these revisions need (default: HEAD)");
  sub.add_flag("--all", a.all, "What every version in every ref's history needs");
  sub.add_flag("--recent", a.recent,
               "What HEAD and the branches committed to in the last zipnn.fetchrecentrefsdays (7) days need");
  sub.add_option("-I,--include", a.include, "Only checkpoints whose paths match these patterns (comma-separated)")
      ->allow_extra_args(false);
  sub.add_option("-X,--exclude", a.exclude, "Not the checkpoints whose paths match these patterns")
      ->allow_extra_args(false);
  sub.add_flag("-q,--quiet", a.quiet, "Print nothing on success");
}

}  // namespace

Action SetupFetch(CLI::App& sub) {
  auto a = std::make_shared<FetchArgs>();
  AddFetchOptions(sub, *a);
  return [a]() -> Status {
    ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
    return Fetch(repo, *a);
  };
}

Action SetupPull(CLI::App& sub) {
  auto a = std::make_shared<FetchArgs>();
  AddFetchOptions(sub, *a);
  return [a] { return RunPull(*a); };
}

}  // namespace zipnn::cmd
