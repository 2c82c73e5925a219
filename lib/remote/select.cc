#include "lib/remote/select.h"

#include <cstdlib>
#include <optional>
#include <vector>

#include "lib/base/closest.h"
#include "lib/base/file.h"
#include "lib/base/process.h"
#include "lib/base/redact.h"
#include "lib/base/strings.h"
#include "lib/git/discover.h"
#include "lib/git/git.h"
#include "lib/remote/http.h"
#include "lib/remote/lfs.h"
#include "lib/remote/lfs_git.h"
#include "lib/remote/s3.h"
#include "lib/remote/served.h"
#include "lib/remote/ssh.h"

namespace zipnn::remote {

namespace {

// An environment variable's value; nullopt when unset or empty.
std::optional<std::string> Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// Seconds a remote may go without a byte moving: $GIT_ZIPNN_TIMEOUT, else
// zipnn.timeout, else kDefaultTimeout (docs/remotes.md, "Timeouts").
Result<double> RemoteTimeout() {
  std::optional<std::string> text = Env("GIT_ZIPNN_TIMEOUT");
  if (!text) {
    ZIPNN_ASSIGN_OR_RETURN(text, git::ConfigGet("zipnn.timeout"));
  }
  if (!text) return kDefaultTimeout;
  char* end = nullptr;
  const double seconds = std::strtod(text->c_str(), &end);
  if (end == text->c_str() || *end != '\0' || !(seconds > 0) || seconds > 86400) {
    return InvalidArgument("the remote timeout \"" + *text + "\" (" + kTimeoutSetting +
                           ") is not a number of seconds between 0 and 86400");
  }
  return seconds;
}

// The slowest a remote may go (docs/remotes.md, "Timeouts"): at least
// $GIT_ZIPNN_LOW_SPEED_LIMIT bytes a second (else zipnn.lowSpeedLimit,
// which git reads with its k/m/g suffixes) over
// $GIT_ZIPNN_LOW_SPEED_TIME seconds (else zipnn.lowSpeedTime), each
// kDefaultLowSpeed's when unset; 0 in either turns the check off.
Result<LowSpeed> RemoteLowSpeed() {
  LowSpeed limit = kDefaultLowSpeed;
  if (std::optional<std::string> text = Env("GIT_ZIPNN_LOW_SPEED_LIMIT")) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(text->c_str(), &end, 10);
    if (end == text->c_str() || *end != '\0' || (*text)[0] == '-') {
      return InvalidArgument("GIT_ZIPNN_LOW_SPEED_LIMIT \"" + *text + "\" is not a number of bytes a second");
    }
    limit.bytes_per_second = n;
  } else {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<int64_t> n, git::ConfigGetInt("zipnn.lowSpeedLimit"));
    if (n && *n < 0) return InvalidArgument("zipnn.lowSpeedLimit must not be negative (0 turns the check off)");
    if (n) limit.bytes_per_second = static_cast<uint64_t>(*n);
  }
  std::optional<std::string> time = Env("GIT_ZIPNN_LOW_SPEED_TIME");
  const char* time_setting = "GIT_ZIPNN_LOW_SPEED_TIME";
  if (!time) {
    ZIPNN_ASSIGN_OR_RETURN(time, git::ConfigGet("zipnn.lowSpeedTime"));
    time_setting = "zipnn.lowSpeedTime";
  }
  if (time) {
    char* end = nullptr;
    const double seconds = std::strtod(time->c_str(), &end);
    if (end == time->c_str() || *end != '\0' || !(seconds >= 0) || seconds > 86400) {
      return InvalidArgument(std::string(time_setting) + " \"" + *time +
                             "\" is not a number of seconds between 0 and 86400 (0 turns the check off)");
    }
    limit.seconds = seconds;
  }
  return limit;
}

// How to run ssh, as git does it: $GIT_SSH_COMMAND or core.sshCommand (a
// command line of the user's, run by sh, our arguments after it), else
// $GIT_SSH (a program), else ssh.
Result<std::vector<std::string>> SshCommand(const SshTarget& t, const std::string& remote_command) {
  std::optional<std::string> line = Env("GIT_SSH_COMMAND");
  if (!line) {
    ZIPNN_ASSIGN_OR_RETURN(line, git::ConfigGet("core.sshCommand"));
  }
  return SshArgv(t, remote_command, line, Env("GIT_SSH").value_or(""));
}

// A store served over ssh by `git zipnn serve-store` on the host: the
// store of the repository at the path (`repository`), or the folder.
Result<std::unique_ptr<RemoteStore>> SshStore(const std::string& url, const SshTarget& t, bool repository,
                                              const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> serve, git::ConfigGet("remote." + remote + ".zipnnserve"));
  const std::string remote_command =
      serve.value_or("git-zipnn") + " serve-store " + (repository ? "--repository " : "") + "-- " + ShellQuote(t.path);
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> argv, SshCommand(t, remote_command));
  StoreConnector connect = [argv]() -> Result<std::unique_ptr<Channel>> {
    ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<Process> ssh, Process::Start(argv));
    return std::unique_ptr<Channel>(std::move(ssh));
  };
  ZIPNN_ASSIGN_OR_RETURN(double timeout, RemoteTimeout());
  ZIPNN_ASSIGN_OR_RETURN(LowSpeed low_speed, RemoteLowSpeed());
  return ServedRemote(
      RedactUrl(url), std::move(connect),
      "if ssh connected, is git-zipnn on the PATH there? remote." + remote + ".zipnnserve names the program to run",
      timeout, low_speed);
}

// An S3 bucket: remote.<name>.zipnnendpoint (else $AWS_ENDPOINT_URL_S3 or
// $AWS_ENDPOINT_URL) for a server other than AWS, remote.<name>.zipnnregion
// (else the AWS settings), remote.<name>.zipnnpartsize for the size of
// upload parts, and credentials from the AWS sources.
Result<std::unique_ptr<RemoteStore>> S3Store(const std::string& url, const std::string& remote) {
  s3::Options o;
  ZIPNN_ASSIGN_OR_RETURN(o.location, s3::ParseUrl(url));
  const std::string key = "remote." + remote + ".zipnn";
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> endpoint, git::ConfigGet(key + "endpoint"));
  if (!endpoint) endpoint = Env("AWS_ENDPOINT_URL_S3");
  if (!endpoint) endpoint = Env("AWS_ENDPOINT_URL");
  o.endpoint = endpoint.value_or("");
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> region, git::ConfigGet(key + "region"));
  o.region = region ? *region : s3::FindRegion();
  ZIPNN_ASSIGN_OR_RETURN(std::optional<int64_t> part_size, git::ConfigGetInt(key + "partsize"));
  if (part_size) {
    if (*part_size < (5 << 20)) return InvalidArgument(key + "partsize must be at least 5m (S3's smallest part)");
    o.part_size = static_cast<uint64_t>(*part_size);
  }
  ZIPNN_ASSIGN_OR_RETURN(o.timeout, RemoteTimeout());
  ZIPNN_ASSIGN_OR_RETURN(o.low_speed, RemoteLowSpeed());
  ZIPNN_ASSIGN_OR_RETURN(o.credentials, s3::FindCredentials());
  return s3::Remote(url, std::move(o));
}

// The store a URL names. `repository`: the URL is a git remote's, so a
// path means a repository whose store is used; else it is the store itself.
// The Git LFS server of a repository hosted at `url` (an http(s) URL):
// the endpoint Git LFS itself would use (remote.<name>.lfsurl, else
// lfs.url, else the one derived from the URL), or `url` itself when it is
// remote.<name>.zipnnurl (not `repository`), which names the LFS API.
Result<std::unique_ptr<RemoteStore>> LfsStore(const std::string& url, bool repository, const std::string& remote) {
  std::string endpoint = url;
  if (repository) {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> set, git::ConfigGet("remote." + remote + ".lfsurl"));
    if (!set) {
      ZIPNN_ASSIGN_OR_RETURN(set, git::ConfigGet("lfs.url"));
    }
    if (set) {
      endpoint = *set;
    } else {
      ZIPNN_ASSIGN_OR_RETURN(endpoint, lfs::EndpointOf(url));
    }
  }
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  if (!http::IsHttpUrl(endpoint)) {
    return InvalidArgument("the Git LFS endpoint of remote " + remote + " is " + RedactUrl(endpoint) +
                           ", not an http or https URL: set remote." + remote +
                           ".lfsurl (or lfs.url) to the https URL of its LFS API");
  }
  ZIPNN_ASSIGN_OR_RETURN(double timeout, RemoteTimeout());
  ZIPNN_ASSIGN_OR_RETURN(LowSpeed low_speed, RemoteLowSpeed());
  return OpenGitLfsStore(remote, endpoint, timeout, low_speed);
}

// Hosting sites that serve Git LFS beside their repositories: an ssh
// remote there means its LFS storage (no git-zipnn runs on such a host).
constexpr const char* kLfsHosts[] = {"github.com",    "gitlab.com",   "huggingface.co", "hf.co",
                                     "bitbucket.org", "codeberg.org", "gitea.com"};

// Whether an ssh remote's objects go to its host's Git LFS storage:
// remote.<name>.zipnnkind ("lfs" or "store") when set, else whether the
// host is one of kLfsHosts.
Result<bool> ServesLfs(const SshTarget& t, const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> kind, git::ConfigGet("remote." + remote + ".zipnnkind"));
  if (kind) {
    if (*kind == "lfs") return true;
    if (*kind == "store") return false;
    return InvalidArgument("remote." + remote + ".zipnnkind is \"" + *kind + "\"; it may be lfs or store");
  }
  std::string host = t.host.substr(t.host.find('@') + 1);
  for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* known : kLfsHosts) {
    if (host == known) return true;
  }
  return false;
}

// The Git LFS storage of a repository reached over ssh: its API's place
// and headers for each operation are what `git-lfs-authenticate <path>
// <operation>` answers on the host, as Git LFS asks for them.
Result<std::unique_ptr<RemoteStore>> LfsOverSsh(const std::string& url, const SshTarget& t, const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(const std::string endpoint, lfs::EndpointOf(url));
  ZIPNN_ASSIGN_OR_RETURN(double timeout, RemoteTimeout());
  ZIPNN_ASSIGN_OR_RETURN(LowSpeed low_speed, RemoteLowSpeed());
  std::string path = t.path;
  while (!path.empty() && path.front() == '/') path.erase(0, 1);
  auto authenticate = [t, path, url, timeout](const std::string& operation) -> Result<lfs::Grant> {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> argv,
                           SshCommand(t, "git-lfs-authenticate " + ShellQuote(path) + " " + operation));
    Result<Captured> ran = RunCapture(argv, "", timeout);
    if (!ran.ok()) {  // one that does not answer within the timeout is stopped
      return Annotate(ran.status(), "git-lfs-authenticate over ssh for " + RedactUrl(url) +
                                        " (the timeout: " + kTimeoutSetting + ")");
    }
    Captured run = std::move(*ran);
    if (run.exit_code != 0) {
      while (!run.err.empty() && run.err.back() == '\n') run.err.pop_back();
      return IoError("git-lfs-authenticate over ssh for " + RedactUrl(url) +
                     " failed: " + (run.err.empty() ? "exit " + std::to_string(run.exit_code) : run.err));
    }
    return lfs::ParseGrant(run.out);
  };
  return OpenGitLfsStore(remote, endpoint, timeout, low_speed, std::move(authenticate));
}

Result<std::unique_ptr<RemoteStore>> StoreAt(const std::string& url, bool repository, const std::string& remote) {
  const std::string fix = "set remote." + remote + ".zipnnurl to a shared folder (docs/remotes.md)";
  if (StartsWith(url, "s3://")) return S3Store(url, remote);
  if (StartsWith(url, "https://") || StartsWith(url, "http://")) return LfsStore(url, repository, remote);
  ZIPNN_ASSIGN_OR_RETURN(std::optional<SshTarget> ssh, ParseSshUrl(url));
  if (ssh && repository) {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> lfs_url, git::ConfigGet("remote." + remote + ".lfsurl"));
    if (!lfs_url) {
      ZIPNN_ASSIGN_OR_RETURN(lfs_url, git::ConfigGet("lfs.url"));
    }
    if (lfs_url) return LfsStore(url, repository, remote);  // the endpoint set, over https
    ZIPNN_ASSIGN_OR_RETURN(bool lfs, ServesLfs(*ssh, remote));
    if (lfs) return LfsOverSsh(url, *ssh, remote);
  }
  if (ssh) return SshStore(url, *ssh, repository, remote);
  std::string path = url;
  if (StartsWith(url, "file://")) {
    path = url.substr(7);
  } else if (url.find("://") != std::string::npos) {
    return Unsupported(RedactUrl(url) + ": git-zipnn has no object store for this kind of URL; " + fix);
  }
  if (path.empty()) return InvalidArgument("remote " + remote + " has an empty URL");
  if (path[0] != '/') {  // git reads a relative URL from the top of the work tree
    auto top = git::TopLevel();
    if (top.ok()) path = *top + "/" + path;
  }
  const bool links = git::ConfigFlag("zipnn.hardlinks", /*unset=*/true);
  if (!repository) return FolderRemote(path, links);
  ZIPNN_ASSIGN_OR_RETURN(std::string root, git::StoreOfRepository(path));
  return FolderRemote(root, links);
}

}  // namespace

Result<std::string> DefaultRemote() {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> upstream, git::UpstreamRemote());
  if (upstream) return *upstream;
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> remotes, git::Remotes());
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

Result<std::string> DescribeStore(const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> zipnn_url, git::ConfigGet("remote." + remote + ".zipnnurl"));
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> url, git::ConfigGet("remote." + remote + ".url"));
  const bool repository = !zipnn_url;
  const std::string where = zipnn_url ? *zipnn_url : url ? *url : remote;
  const std::string set = zipnn_url ? " (remote." + remote + ".zipnnurl)" : "";
  if (StartsWith(where, "s3://")) return "the S3 bucket " + where + set;
  if (StartsWith(where, "https://") || StartsWith(where, "http://")) return "the Git LFS storage of " + where + set;
  ZIPNN_ASSIGN_OR_RETURN(std::optional<SshTarget> ssh, ParseSshUrl(where));
  if (ssh && repository) {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> lfs_url, git::ConfigGet("remote." + remote + ".lfsurl"));
    if (!lfs_url) {
      ZIPNN_ASSIGN_OR_RETURN(lfs_url, git::ConfigGet("lfs.url"));
    }
    if (lfs_url) return "the Git LFS storage at " + *lfs_url;
    ZIPNN_ASSIGN_OR_RETURN(bool lfs, ServesLfs(*ssh, remote));
    if (lfs) return "the Git LFS storage of " + where + " (over ssh)";
  }
  if (ssh) return "a store served over ssh by git zipnn serve-store at " + where + set;
  if (where.find("://") != std::string::npos && !StartsWith(where, "file://")) {
    return "none: git-zipnn has no object store for " + where;
  }
  return (repository ? "the object store of the repository at " : "the folder ") + where + set;
}

Result<int> ConcurrentTransfers() {
  for (const char* key : {"zipnn.concurrentTransfers", "lfs.concurrenttransfers"}) {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<int64_t> n, git::ConfigGetInt(key));
    if (!n) continue;
    if (*n < 1 || *n > 64) return InvalidArgument(std::string(key) + " must be between 1 and 64");
    return static_cast<int>(*n);
  }
  return 4;
}

Result<std::unique_ptr<RemoteStore>> OpenRemoteStore(const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> zipnn_url, git::ConfigGet("remote." + remote + ".zipnnurl"));
  if (zipnn_url) return StoreAt(*zipnn_url, /*repository=*/false, remote);
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> url, git::ConfigGet("remote." + remote + ".url"));
  // A word that is no remote's name and cannot be a path or a URL (no
  // '/', ':' or '.'): a name mistyped, said as one.
  if (!url && remote.find_first_of("/:.") == std::string::npos && !FileExists(remote)) {
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> names, git::Remotes());
    const std::vector<std::string> closest = ClosestWords(remote, names);
    return NotFound("there is no remote named '" + remote + "'" +
                    (!closest.empty() ? " (did you mean " + Alternatives(closest) + "?)"
                     : names.empty()  ? " (this repository has no remote: `git remote add <name> <url>`)"
                                      : " (the remotes are " + Alternatives(names) + ")"));
  }
  return StoreAt(url ? *url : remote, /*repository=*/true, remote);  // a URL given in place of a name
}

}  // namespace zipnn::remote
