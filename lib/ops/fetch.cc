#include "lib/ops/fetch.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <set>
#include <sstream>

#include "lib/access/versions.h"
#include "lib/base/closest.h"
#include "lib/base/file.h"
#include "lib/base/strings.h"
#include "lib/git/git.h"
#include "lib/git/repository.h"
#include "lib/git/rewrite.h"
#include "lib/remote/select.h"
#include "lib/store/pointer.h"
#include "lib/store/raw_cache.h"

namespace zipnn::ops {

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

// The paths --include and --exclude keep (all of them without either).
// An --include that matches none of `paths` is a mistake, not a wish for
// nothing: it is an error that says how patterns are read.
Result<std::set<std::string>> Chosen(const git::Repository& git_repo, const std::set<std::string>& paths,
                                     const FetchRequest& a) {
  std::vector<std::string> include = PatternList(a.include);
  const bool all = include.empty();
  if (all) include = {"*"};
  ZIPNN_ASSIGN_OR_RETURN(std::set<std::string> chosen,
                         git::MatchingPaths(git_repo, paths, include, PatternList(a.exclude)));
  if (!chosen.empty() || all || paths.empty()) return chosen;
  ZIPNN_ASSIGN_OR_RETURN(const std::set<std::string> included, git::MatchingPaths(git_repo, paths, include, {}));
  if (!included.empty()) return chosen;  // --exclude took them all, as asked
  std::set<std::string> named = paths;   // and their file names ('model.safetensors' of 'out/model.safetensors')
  for (const std::string& p : paths) named.insert(p.substr(p.rfind('/') + 1));
  const std::vector<std::string> names(named.begin(), named.end());
  std::string hint = " (e.g. -I 'model.safetensors', -I 'out/**')";
  for (const std::string& p : include) {
    // "./model.safetensors" is how a shell names the file; .gitattributes
    // anchors a path at the top with "/".
    if (p.rfind("./", 0) == 0) {
      hint = "; for the file at the top, -I '/" + p.substr(2) + "'";
      break;
    }
    const std::vector<std::string> close = ClosestWords(p, names);
    if (!close.empty()) hint = " (did you mean " + Alternatives(close, "'") + "?)";
  }
  std::string given;  // as a comma-separated list
  for (const std::string& p : include) given += (given.empty() ? "" : ",") + p;
  return InvalidArgument("-I '" + given + "' matches none of the " + Counted(paths.size(), "checkpoint path") +
                         " here; patterns are read as in .gitattributes, from the top of the work tree" + hint);
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

}  // namespace

std::vector<std::string> PatternList(const std::vector<std::string>& given) {
  std::vector<std::string> patterns;
  for (const std::string& g : given) {
    for (size_t at = 0; at <= g.size();) {
      size_t end = g.find(',', at);
      if (end == std::string::npos) end = g.size();
      // "*.pt, *.bin": the spaces around a comma are no part of a pattern.
      size_t from = at, to = end;
      while (from < to && g[from] == ' ') ++from;
      while (to > from && g[to - 1] == ' ') --to;
      if (to > from) patterns.push_back(g.substr(from, to - from));
      at = end + 1;
    }
  }
  return patterns;
}

Result<FetchPlan> PlanFetch(Context& context, const FetchRequest& asked) {
  FetchPlan plan;
  ZIPNN_ASSIGN_OR_RETURN(const remote::RemoteSettings* settings, context.RemoteSettings());
  ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
  // As Git LFS's fetch takes it: a first word that names no remote but a
  // revision (`fetch HEAD~5`) is the first revision, of the default remote.
  FetchRequest a = asked;
  if (!a.remote.empty() && !settings->Get("remote." + a.remote + ".url") &&
      !settings->Get("remote." + a.remote + ".zipnnurl")) {
    if (auto commit = git_repo->ResolveCommit(a.remote); commit.ok() && *commit) {
      a.refs.insert(a.refs.begin(), a.remote);
      a.remote.clear();
    } else if (IsRegularFile(a.remote)) {
      // `pull model.safetensors`: a file is no remote (a folder may be).
      return InvalidArgument("'" + a.remote + "' is a file, not a remote or a revision; to take only some files, " +
                             "name them with -I: -I '" + a.remote + "'");
    }
  }
  ZIPNN_ASSIGN_OR_RETURN(plan.remote, remote::RemoteOrDefault(*settings, a.remote));
  ZIPNN_RETURN_IF_ERROR(remote::CheckRemoteName(*settings, plan.remote));
  git::FoundPointers& found = plan.found;
  if (a.all && a.recent) return InvalidArgument("--all and --recent choose differently; give one");
  if (a.all) {
    ZIPNN_ASSIGN_OR_RETURN(found, git::FindPointersIn(*git_repo, {"--all"}));
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
    ZIPNN_ASSIGN_OR_RETURN(found, git::FindPointersInTrees(*git_repo, revs));
    if (commit_days > 0) {
      ZIPNN_ASSIGN_OR_RETURN(std::vector<git::CommitInfo> commits, git_repo->Commits(revs));
      std::vector<std::string> recent;
      for (const git::CommitInfo& c : commits) {
        if (c.time >= now - commit_days * 86400) recent.push_back(c.id.Hex());
      }
      if (!recent.empty()) {
        ZIPNN_ASSIGN_OR_RETURN(git::FoundPointers history, git::FindPointersInTrees(*git_repo, recent));
        found.pointers.insert(found.pointers.end(), history.pointers.begin(), history.pointers.end());
      }
    }
  } else {
    for (const std::string& ref : a.refs) ZIPNN_RETURN_IF_ERROR(git::CheckRevision(ref));
    const std::vector<std::string> revs = a.refs.empty() ? std::vector<std::string>{"HEAD"} : a.refs;
    ZIPNN_ASSIGN_OR_RETURN(found, git::FindPointersInTrees(*git_repo, revs));
  }
  if (!a.include.empty() || !a.exclude.empty()) {
    std::set<std::string> paths;
    for (const auto& [pointer, place] : found.pointers) paths.insert(place.path);
    ZIPNN_ASSIGN_OR_RETURN(const std::set<std::string> chosen, Chosen(*git_repo, paths, a));
    found.pointers.erase(std::remove_if(found.pointers.begin(), found.pointers.end(),
                                        [&](const auto& p) { return chosen.count(p.second.path) == 0; }),
                         found.pointers.end());
  }
  return plan;
}

Result<remote::Transferred> Fetch(Context& context, const FetchPlan& plan) {
  ZIPNN_ASSIGN_OR_RETURN(store::Store * store, context.Store());
  ZIPNN_ASSIGN_OR_RETURN(const remote::RemoteSettings* settings, context.RemoteSettings());
  return remote::FetchPointers(*store, *settings, plan.remote, plan.found);
}

namespace {

// Writes the checkpoint of each of `paths` (from the top of the work tree)
// that holds a pointer, and brings the index record of each that is
// what the index names up to date.
Result<PullResult> RestoreFiles(Context& context, const std::vector<std::string>& paths, const OnRestored& on_file) {
  ZIPNN_ASSIGN_OR_RETURN(store::Store * store, context.Store());
  ZIPNN_ASSIGN_OR_RETURN(std::string top, git::TopLevel());
  // What the index names for each path: a restored file that is that
  // version has its index record brought up to date.
  ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
  using Staged = std::map<std::string, ContentId>;
  ZIPNN_ASSIGN_OR_RETURN(const Staged staged, git::StagedPointers(*git_repo));
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
  RemoveAbandonedTemps(store->temp_dir);
  const access::Versions versions(*store);
  PullResult result;
  for (const std::string& path : paths) {
    const std::string file = top + "/" + path;
    if (!FileExists(file)) continue;  // deleted in the work tree
    auto pointer = store::PointerInFile(file);
    if (pointer.ok() && !*pointer) continue;  // not a pointer: nothing to restore
    list.Note(path);
    Result<std::optional<ContentId>> written = access::RestorePointerFile(versions, path, file);
    on_file(path, written);
    if (written.status().code() == StatusCode::kRemoved) continue;  // it stays a pointer, as a checkout leaves it
    if (!written.ok()) {
      ++result.failed;
      continue;
    }
    if (!*written) continue;  // not a pointer
    auto in_index = staged.find(path);
    if (in_index != staged.end() && in_index->second == **written) restored.push_back(path);
    ++result.restored;
  }
  git::RestageUnchanged(restored, top);
  list.Remove();
  return result;
}

}  // namespace

Result<PullResult> RestorePointerFiles(Context& context, const FetchRequest& a, const OnRestored& on_file) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> paths, git::TrackedPaths());
  if (!a.include.empty() || !a.exclude.empty()) {  // the files chosen, as for the fetch
    ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
    ZIPNN_ASSIGN_OR_RETURN(const std::set<std::string> chosen,
                           Chosen(*git_repo, std::set<std::string>(paths.begin(), paths.end()), a));
    paths.erase(std::remove_if(paths.begin(), paths.end(), [&](const std::string& p) { return !chosen.count(p); }),
                paths.end());
  }
  return RestoreFiles(context, paths, on_file);
}

Result<std::string> LeftOutsideList() { return git::WorkTreeGitPath("zipnn/checkout-outside"); }

Result<PullResult> WriteLeftOutside(Context& context, const OnRestored& on_file) {
  ZIPNN_ASSIGN_OR_RETURN(const std::string list, LeftOutsideList());
  Result<std::vector<uint8_t>> text = ReadWholeFile(list);
  if (!text.ok()) return PullResult{};  // none left (what cannot be read stays pointers, for pull)
  // Taken before the work: a checkout meanwhile notes its own anew.
  ::unlink(list.c_str());
  std::vector<std::string> paths;
  std::set<std::string> seen;
  std::string path;
  for (const uint8_t c : *text) {
    if (c != 0) {
      path += static_cast<char>(c);
    } else if (!path.empty()) {
      if (seen.insert(path).second) paths.push_back(path);
      path.clear();
    }
  }
  if (paths.empty()) return PullResult{};
  return RestoreFiles(context, paths, on_file);
}

Result<git::FoundPointers> PointersToPush(Context& context, const std::vector<std::string>& refs, bool all) {
  // A ref given as "--all" is a name, not the option it spells.
  for (const std::string& ref : refs) ZIPNN_RETURN_IF_ERROR(git::CheckRevision(ref));
  std::vector<std::string> revs = refs;
  if (all) revs = {"--all"};
  if (revs.empty()) revs = {"HEAD"};
  ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
  return git::FindPointersIn(*git_repo, revs);
}

namespace {

bool IsRemoteName(const std::string& name) {
  auto remotes = git::Remotes();
  return remotes.ok() && std::find(remotes->begin(), remotes->end(), name) != remotes->end();
}

}  // namespace

Result<git::FoundPointers> PointersBeforePush(Context& context, const std::string& remote,
                                              const std::vector<std::string>& lines) {
  ZIPNN_ASSIGN_OR_RETURN(git::Repository * git_repo, context.Git());
  std::vector<std::string> revs;
  for (const std::string& line : lines) {
    std::istringstream fields(line);
    std::string local_ref, local_oid, remote_ref, remote_oid;
    if (!(fields >> local_ref >> local_oid >> remote_ref >> remote_oid)) continue;
    if (local_oid.find_first_not_of('0') == std::string::npos) continue;  // a deletion
    revs.push_back(local_oid);
    if (remote_oid.find_first_not_of('0') == std::string::npos) continue;  // a new ref
    auto have = git_repo->ResolveCommit(remote_oid);                       // what we know of the remote's side
    if (have.ok() && *have) revs.push_back("^" + remote_oid);
  }
  if (revs.empty()) return git::FoundPointers{};
  ZIPNN_RETURN_IF_ERROR(context.Store().status());
  ZIPNN_ASSIGN_OR_RETURN(git::FoundPointers wide, git::FindPointersIn(*git_repo, revs));
  if (wide.pointers.empty() || !IsRemoteName(remote)) return wide;
  // What this clone last fetched from the remote is there already, as a
  // rule; but a remote given another URL, or made again, holds none of
  // it. So the remote-tracking refs may leave out only what the remote
  // still holds: when they hide a pointer, the remote is asked what it
  // holds now, and what it cannot say is sent (its store skips what it
  // has).
  std::vector<std::string> narrow_revs = revs;
  narrow_revs.push_back("--not");
  narrow_revs.push_back("--remotes=" + remote);
  ZIPNN_ASSIGN_OR_RETURN(git::FoundPointers narrow, git::FindPointersIn(*git_repo, narrow_revs));
  if (narrow.pointers.size() == wide.pointers.size()) return narrow;
  Result<git::RemoteTips> there = git::ReadRemoteTips(*git_repo, remote);
  if (!there.ok()) return wide;
  std::vector<std::string> held_revs = revs;
  for (const git::ExtraTip& tip : there->tips) held_revs.push_back("^" + tip.commit.Hex());
  return git::FindPointersIn(*git_repo, held_revs);
}

}  // namespace zipnn::ops
