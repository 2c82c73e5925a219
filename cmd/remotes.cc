#include "cmd/remotes.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>

#include "lib/base/file.h"
#include "lib/base/process.h"
#include "lib/base/progress.h"
#include "lib/git/git.h"
#include "lib/remote/ssh.h"
#include "lib/s3/s3.h"
#include "lib/store/served.h"

namespace zipnn::cmd {

namespace {

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// How to run ssh, as git does it: $GIT_SSH_COMMAND or core.sshCommand (a
// command line of the user's, run by sh, our arguments after it), else
// $GIT_SSH (a program), else ssh.
Result<std::vector<std::string>> SshCommand(const remote::SshTarget& t, const std::string& remote_command) {
  std::optional<std::string> line;
  if (const char* env = std::getenv("GIT_SSH_COMMAND"); env != nullptr && *env != '\0') {
    line = env;
  } else {
    ZIPNN_ASSIGN_OR_RETURN(line, git::ConfigGet("core.sshCommand"));
  }
  const char* program = std::getenv("GIT_SSH");
  return remote::SshArgv(t, remote_command, line, program != nullptr ? program : "");
}

// Seconds a remote may go without a byte moving: $GIT_ZIPNN_TIMEOUT, else
// zipnn.timeout, else a minute (docs/remotes.md, "Timeouts").
Result<double> RemoteTimeout() {
  std::optional<std::string> text;
  const char* env = std::getenv("GIT_ZIPNN_TIMEOUT");
  if (env != nullptr && *env != '\0') {
    text = env;
  } else {
    ZIPNN_ASSIGN_OR_RETURN(text, git::ConfigGet("zipnn.timeout"));
  }
  if (!text) return store::kDefaultTimeout;
  char* end = nullptr;
  const double seconds = std::strtod(text->c_str(), &end);
  if (end == text->c_str() || *end != '\0' || !(seconds > 0) || seconds > 86400) {
    return InvalidArgument("the remote timeout \"" + *text + "\" (" + store::kTimeoutSetting +
                           ") is not a number of seconds between 0 and 86400");
  }
  return seconds;
}

// A store served over ssh by `git zipnn serve-store` on the host: the
// store of the repository at the path (`repository`), or the folder.
Result<std::unique_ptr<store::RemoteStore>> SshStore(const std::string& url, const remote::SshTarget& t, bool repository,
                                                      const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> serve, git::ConfigGet("remote." + remote + ".zipnnserve"));
  const std::string remote_command = (serve ? *serve : std::string("git-zipnn")) + " serve-store " +
                                     (repository ? "--repository " : "") + remote::ShellQuote(t.path);
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> argv, SshCommand(t, remote_command));
  store::StoreConnector connect = [argv]() -> Result<std::unique_ptr<Channel>> {
    ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<Process> ssh, Process::Start(argv));
    return std::unique_ptr<Channel>(std::move(ssh));
  };
  ZIPNN_ASSIGN_OR_RETURN(double timeout, RemoteTimeout());
  return store::ServedRemote(url, std::move(connect),
                             "if ssh connected, is git-zipnn on the PATH there? remote." + remote +
                                 ".zipnnserve names the program to run",
                             timeout);
}

// An S3 bucket: remote.<name>.zipnnendpoint (else $AWS_ENDPOINT_URL_S3 or
// $AWS_ENDPOINT_URL) for a server other than AWS, remote.<name>.zipnnregion
// (else the AWS settings), remote.<name>.zipnnpartsize for the size of
// upload parts, and credentials from the AWS sources.
Result<std::unique_ptr<store::RemoteStore>> S3Store(const std::string& url, const std::string& remote) {
  s3::Options o;
  ZIPNN_ASSIGN_OR_RETURN(o.location, s3::ParseUrl(url));
  const std::string key = "remote." + remote + ".zipnn";
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> endpoint, git::ConfigGet(key + "endpoint"));
  for (const char* name : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    const char* env = std::getenv(name);
    if (!endpoint && env != nullptr && *env != '\0') endpoint = env;
  }
  o.endpoint = endpoint.value_or("");
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> region, git::ConfigGet(key + "region"));
  o.region = region ? *region : s3::FindRegion();
  ZIPNN_ASSIGN_OR_RETURN(git::GitRun part, git::RunGit({"config", "--type=int", "--get", key + "partsize"}));
  if (part.exit_code == 0) {
    const long long size = std::atoll(part.out.c_str());
    if (size < (5 << 20)) return InvalidArgument(key + "partsize must be at least 5m (S3's smallest part)");
    o.part_size = static_cast<uint64_t>(size);
  } else if (part.exit_code != 1) {  // 1: not set
    return InvalidArgument(key + "partsize: " + part.err);
  }
  ZIPNN_ASSIGN_OR_RETURN(o.timeout, RemoteTimeout());
  ZIPNN_ASSIGN_OR_RETURN(o.credentials, s3::FindCredentials());
  return s3::Remote(url, std::move(o));
}

// The store a URL names. `repository`: the URL is a git remote's, so a
// path means a repository whose store is used; else it is the store itself.
Result<std::unique_ptr<store::RemoteStore>> StoreAt(const std::string& url, bool repository,
                                                     const std::string& remote) {
  const std::string fix = "set remote." + remote + ".zipnnurl to a shared folder (docs/remotes.md)";
  if (StartsWith(url, "s3://")) return S3Store(url, remote);
  ZIPNN_ASSIGN_OR_RETURN(std::optional<remote::SshTarget> ssh, remote::ParseSshUrl(url));
  if (ssh) return SshStore(url, *ssh, repository, remote);
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
  ZIPNN_ASSIGN_OR_RETURN(std::string root, StoreOfRepository(path));
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

Result<std::string> StoreOfRepository(const std::string& path) {
  std::string git_dir;
  if (FileExists(path + "/.git")) {
    git_dir = path + "/.git";
  } else if (FileExists(path + "/HEAD") && FileExists(path + "/objects")) {
    git_dir = path;
  } else {
    return NotFound(path + " is not a git repository, so it has no object store (set remote.<name>.zipnnurl)");
  }
  ZIPNN_ASSIGN_OR_RETURN(git_dir,
                         git::GitOutput({"--git-dir=" + git_dir, "rev-parse", "--path-format=absolute", "--git-common-dir"}));
  ZIPNN_ASSIGN_OR_RETURN(git::GitRun configured, git::RunGit({"--git-dir=" + git_dir, "config", "--get", "zipnn.storepath"}));
  std::string store = configured.out;
  while (!store.empty() && store.back() == '\n') store.pop_back();
  return configured.exit_code == 0 && !store.empty() ? store : git_dir + "/zipnn/objects";
}

Result<std::vector<std::string>> GitRemotes() {
  ZIPNN_ASSIGN_OR_RETURN(std::string listed, git::GitOutput({"remote"}));
  return Lines(listed);
}

Result<std::string> DefaultRemote() {
  auto branch = git::GitOutput({"symbolic-ref", "-q", "--short", "HEAD"});
  if (branch.ok()) {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> upstream, git::ConfigGet("branch." + *branch + ".remote"));
    if (upstream && *upstream != ".") return *upstream;
  }
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> remotes, GitRemotes());
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
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> zipnn_url, git::ConfigGet("remote." + remote + ".zipnnurl"));
  if (zipnn_url) return StoreAt(*zipnn_url, /*repository=*/false, remote);
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> url, git::ConfigGet("remote." + remote + ".url"));
  return StoreAt(url ? *url : remote, /*repository=*/true, remote);  // a URL given in place of a name
}

namespace {

// Pushes (or fetches) the objects of `found`, then prints a summary line.
Status Transfer(bool push, const store::Repository& repo, const std::string& remote, const FoundPointers& found,
                bool quiet) {
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<store::RemoteStore> other, OpenRemoteStore(remote));
  store::TransferReport report;
  {
    Progress progress(std::string("git-zipnn: ") + (push ? "push to " : "fetch from ") + remote, 0);
    store::TransferOptions options = OptionsShowing(progress, push ? "sent" : "received");
    for (const auto& [pointer, place] : found.pointers) options.raw_sizes[pointer.id] = pointer.size;
    const std::vector<ContentId> ids = Ids(found);
    ZIPNN_ASSIGN_OR_RETURN(report, push ? store::PushObjects(repo, *other, ids, options)
                                  : store::FetchObjects(repo, *other, ids, options));
  }
  if (!quiet) {
    std::fprintf(stderr, "git-zipnn: %s %zu object%s (%s) %s %s; %zu of %zu were %s already\n",
                 push ? "pushed" : "fetched", report.moved, report.moved == 1 ? "" : "s",
                 HumanBytes(report.bytes).c_str(), push ? "to" : "from",
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
      return Annotate(whole, "cannot push " + place.path + " (in " + place.rev + ")");
    }
  }
  return pushed;
}

Status FetchPointers(const store::Repository& repo, const std::string& remote, const FoundPointers& found,
                     bool quiet) {
  return Transfer(/*push=*/false, repo, remote, found, quiet);
}

Result<RemoteCheck> CheckRemote(const store::Repository& repo, const std::string& remote, const FoundPointers& found) {
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<store::RemoteStore> other, OpenRemoteStore(remote));
  RemoteCheck check;
  check.where = other->where();
  ZIPNN_RETURN_IF_ERROR(MakeDirectories(repo.temp_dir));
  std::string dir = repo.temp_dir + "/fsck-remote-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) return IoError(dir + ": cannot create a scratch folder");
  const store::Repository scratch{store::ObjectStore(dir + "/objects"), dir + "/tmp", dir + "/cache", "", repo.policy};
  std::set<ContentId> seen;
  {
    Progress progress("git-zipnn fsck: remote " + remote, found.pointers.size());
    for (const auto& [pointer, place] : found.pointers) {
      if (!seen.insert(pointer.id).second) continue;
      progress.Update("decoding", check.checkpoints++);
      store::TransferOptions options;
      options.raw_sizes[pointer.id] = pointer.size;
      Result<store::TransferReport> got = store::FetchObjects(scratch, *other, {pointer.id}, options);
      if (!got.ok()) check.problems.emplace_back(&place, got.status().message());
    }
  }
  auto listed = scratch.objects.List();
  if (listed.ok()) {
    for (const auto& entry : *listed) check.objects += entry.id ? 1 : 0;
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  ZIPNN_ASSIGN_OR_RETURN(check.temporaries, other->RemoveOldTemporaries());
  return check;
}

Status FetchChain(const store::Repository& repo, const ContentId& id, std::optional<uint64_t> raw_size) {
  auto remote = DefaultRemote();
  if (!remote.ok()) return OkStatus();  // nowhere to fetch from: the restore names what is missing
  auto from = OpenRemoteStore(*remote);
  if (!from.ok()) return Annotate(from.status(), "remote " + *remote + " cannot be read");
  Progress progress("git-zipnn: fetch from " + *remote, 0);
  store::TransferOptions options = OptionsShowing(progress, "received");
  if (raw_size) options.raw_sizes[id] = *raw_size;
  return store::FetchObjects(repo, **from, {id}, options).status();
}

Status RestoreFetching(const store::Repository& repo, const store::Pointer& pointer, const std::string& path,
                       ByteSink& out) {
  // A restore opens every object of the chain before it writes a byte, so
  // one that finds an object missing can be tried again after a fetch.
  Status restored = store::RestoreFile(repo, pointer, path, out);
  if (restored.code() != StatusCode::kNotFound) return restored;
  Status fetched = FetchChain(repo, pointer.id, pointer.size);
  if (!fetched.ok()) return Annotate(fetched, path);
  return store::RestoreFile(repo, pointer, path, out);
}

}  // namespace zipnn::cmd
