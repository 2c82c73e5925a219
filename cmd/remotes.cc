#include "cmd/remotes.h"

#include <cstdio>
#include <optional>

#include "lib/base/file.h"
#include "lib/base/progress.h"
#include "lib/git/git.h"

namespace zipnn::cmd {

namespace {

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// git's rule for "host:path": a colon before any slash.
bool ScpLike(const std::string& url) {
  const size_t colon = url.find(':');
  return colon != std::string::npos && colon > 0 && url.find('/') > colon;
}

// The store of the git repository at `path` (its work tree or, bare, its
// git folder): zipnn.storepath in its configuration, else its own
// <git dir>/zipnn/objects. git is told the folder with --git-dir, which
// wins over the GIT_DIR that git exports to filters and hooks.
Result<std::string> StoreOfRepository(const std::string& path) {
  std::string git_dir;
  if (FileExists(path + "/.git")) {
    git_dir = path + "/.git";
  } else if (FileExists(path + "/HEAD") && FileExists(path + "/objects")) {
    git_dir = path;
  } else {
    return NotFound(path + " is not a git repository, so it has no object store (set remote.<name>.zipnnurl)");
  }
  ASSIGN_OR_RETURN(git_dir,
                   git::GitOutput({"--git-dir=" + git_dir, "rev-parse", "--path-format=absolute", "--git-common-dir"}));
  ASSIGN_OR_RETURN(git::GitRun configured, git::RunGit({"--git-dir=" + git_dir, "config", "--get", "zipnn.storepath"}));
  std::string store = configured.out;
  while (!store.empty() && store.back() == '\n') store.pop_back();
  return configured.exit_code == 0 && !store.empty() ? store : git_dir + "/zipnn/objects";
}

// The store a URL names. `repository`: the URL is a git remote's, so a
// path means a repository whose store is used; else it is the store itself.
Result<std::unique_ptr<store::RemoteStore>> StoreAt(const std::string& url, bool repository,
                                                     const std::string& remote) {
  const std::string fix = "set remote." + remote + ".zipnnurl to a shared folder (docs/remotes.md)";
  if (StartsWith(url, "s3://")) {
    return Unsupported(url + ": S3 object stores are not supported by this version of git-zipnn; " + fix);
  }
  if (StartsWith(url, "ssh://") || StartsWith(url, "git+ssh://") || StartsWith(url, "ssh+git://") ||
      (url.find("://") == std::string::npos && ScpLike(url))) {
    return Unsupported(url + ": stores over ssh are not supported by this version of git-zipnn; " + fix);
  }
  std::string path = url;
  if (StartsWith(url, "file://")) {
    path = url.substr(7);
  } else if (url.find("://") != std::string::npos) {
    return Unsupported(url + ": git-zipnn has no object store for this kind of URL; " + fix);
  }
  if (path.empty()) return InvalidArgument("remote " + remote + " has an empty URL");
  if (path[0] != '/') {  // git reads a relative URL from the top of the work tree
    auto top = git::TopLevel();
    if (top.ok()) path = *top + "/" + path;
  }
  if (!repository) return store::FolderRemote(path);
  ASSIGN_OR_RETURN(std::string root, StoreOfRepository(path));
  return store::FolderRemote(root);
}

store::TransferOptions OptionsShowing(Progress& progress, const std::string& state) {
  store::TransferOptions options;
  options.progress = [&progress, state](size_t objects, uint64_t bytes) {
    progress.Update(state + " " + std::to_string(objects) + " objects, " + HumanBytes(bytes), 0);
  };
  return options;
}

std::vector<ContentId> Ids(const FoundPointers& found) {
  std::vector<ContentId> ids;
  for (const auto& [pointer, place] : found.pointers) ids.push_back(pointer.id);
  for (const auto& [place, why] : found.damaged) {
    std::fprintf(stderr, "warning: %s:%s: %s\n", place.rev.c_str(), place.path.c_str(), why.c_str());
  }
  return ids;
}

}  // namespace

Result<std::vector<std::string>> GitRemotes() {
  ASSIGN_OR_RETURN(std::string listed, git::GitOutput({"remote"}));
  return Lines(listed);
}

Result<std::string> DefaultRemote() {
  auto branch = git::GitOutput({"symbolic-ref", "-q", "--short", "HEAD"});
  if (branch.ok()) {
    ASSIGN_OR_RETURN(std::optional<std::string> upstream, git::ConfigGet("branch." + *branch + ".remote"));
    if (upstream && *upstream != ".") return *upstream;
  }
  ASSIGN_OR_RETURN(std::vector<std::string> remotes, GitRemotes());
  for (const std::string& r : remotes) {
    if (r == "origin") return r;
  }
  if (remotes.size() == 1) return remotes[0];
  return NotFound(remotes.empty() ? "this repository has no git remote to fetch objects from"
                                  : "this repository has several git remotes and none is origin; name one");
}

Result<std::string> RemoteOrDefault(const std::string& named) {
  if (!named.empty()) return named;
  return DefaultRemote();
}

Result<std::unique_ptr<store::RemoteStore>> OpenRemoteStore(const std::string& remote) {
  ASSIGN_OR_RETURN(std::optional<std::string> zipnn_url, git::ConfigGet("remote." + remote + ".zipnnurl"));
  if (zipnn_url) return StoreAt(*zipnn_url, /*repository=*/false, remote);
  ASSIGN_OR_RETURN(std::optional<std::string> url, git::ConfigGet("remote." + remote + ".url"));
  return StoreAt(url ? *url : remote, /*repository=*/true, remote);  // a URL given in place of a name
}

namespace {

// Pushes (or fetches) the objects of `found`, then prints a summary line.
Status Transfer(bool push, const store::Repository& repo, const std::string& remote, const FoundPointers& found,
                bool quiet) {
  ASSIGN_OR_RETURN(std::unique_ptr<store::RemoteStore> other, OpenRemoteStore(remote));
  store::TransferReport report;
  {
    Progress progress(std::string("git-zipnn: ") + (push ? "push to " : "fetch from ") + remote, 0);
    const store::TransferOptions options = OptionsShowing(progress, push ? "sent" : "received");
    const std::vector<ContentId> ids = Ids(found);
    ASSIGN_OR_RETURN(report, push ? store::PushObjects(repo, *other, ids, options)
                                  : store::FetchObjects(repo, *other, ids, options));
  }
  if (!quiet) {
    std::fprintf(stderr, "git-zipnn: %s %zu objects (%s) %s %s; %zu of %zu were %s already\n",
                 push ? "pushed" : "fetched", report.moved, HumanBytes(report.bytes).c_str(), push ? "to" : "from",
                 other->where().c_str(), report.present, report.needed, push ? "there" : "here");
  }
  return OkStatus();
}

}  // namespace

Status PushPointers(const store::Repository& repo, const std::string& remote, const FoundPointers& found, bool quiet) {
  Status pushed = Transfer(/*push=*/true, repo, remote, found, quiet);
  if (pushed.code() != StatusCode::kNotFound) return pushed;
  // A chain not whole here: name the pointer it belongs to (PushObjects
  // walks every chain before it sends anything, so nothing was sent).
  for (const auto& [pointer, place] : found.pointers) {
    Status whole = store::VisitChain(repo, pointer.id, [](const store::ChainLink&) {});
    if (!whole.ok()) {
      return Status(whole.code(), "cannot push " + place.path + " (in " + place.rev + "): " + whole.message());
    }
  }
  return pushed;
}

Status FetchPointers(const store::Repository& repo, const std::string& remote, const FoundPointers& found,
                     bool quiet) {
  return Transfer(/*push=*/false, repo, remote, found, quiet);
}

Status FetchChain(const store::Repository& repo, const ContentId& id) {
  auto remote = DefaultRemote();
  if (!remote.ok()) return OkStatus();  // nowhere to fetch from: the restore names what is missing
  auto from = OpenRemoteStore(*remote);
  if (!from.ok()) return Status(from.status().code(), "remote " + *remote + " cannot be read: " + from.status().message());
  Progress progress("git-zipnn: fetch from " + *remote, 0);
  return store::FetchObjects(repo, **from, {id}, OptionsShowing(progress, "received")).status();
}

Status RestoreFetching(const store::Repository& repo, const store::Pointer& pointer, const std::string& path,
                       ByteSink& out) {
  // A restore opens every object of the chain before it writes a byte, so
  // one that finds an object missing can be tried again after a fetch.
  Status restored = store::RestoreFile(repo, pointer, path, out);
  if (restored.code() != StatusCode::kNotFound) return restored;
  Status fetched = FetchChain(repo, pointer.id);
  if (!fetched.ok()) return Status(fetched.code(), path + ": " + fetched.message());
  return store::RestoreFile(repo, pointer, path, out);
}

}  // namespace zipnn::cmd
