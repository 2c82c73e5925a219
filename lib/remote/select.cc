#include "lib/remote/select.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
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
Result<double> RemoteTimeout(const RemoteSettings& settings) {
  std::optional<std::string> text = Env("GIT_ZIPNN_TIMEOUT");
  if (!text) {
    text = settings.Get("zipnn.timeout");
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
Result<LowSpeed> RemoteLowSpeed(const RemoteSettings& settings) {
  LowSpeed limit = kDefaultLowSpeed;
  if (std::optional<std::string> text = Env("GIT_ZIPNN_LOW_SPEED_LIMIT")) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(text->c_str(), &end, 10);
    if (end == text->c_str() || *end != '\0' || (*text)[0] == '-') {
      return InvalidArgument("GIT_ZIPNN_LOW_SPEED_LIMIT \"" + *text + "\" is not a number of bytes a second");
    }
    limit.bytes_per_second = n;
  } else {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<int64_t> n, settings.GetInt("zipnn.lowSpeedLimit"));
    if (n && *n < 0) return InvalidArgument("zipnn.lowSpeedLimit must not be negative (0 turns the check off)");
    if (n) limit.bytes_per_second = static_cast<uint64_t>(*n);
  }
  std::optional<std::string> time = Env("GIT_ZIPNN_LOW_SPEED_TIME");
  const char* time_setting = "GIT_ZIPNN_LOW_SPEED_TIME";
  if (!time) {
    time = settings.Get("zipnn.lowSpeedTime");
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
Result<std::vector<std::string>> SshCommand(const RemoteSettings& settings, const SshTarget& t,
                                            const std::string& remote_command) {
  std::optional<std::string> line = Env("GIT_SSH_COMMAND");
  if (!line) {
    line = settings.Get("core.sshCommand");
  }
  return SshArgv(t, remote_command, line, Env("GIT_SSH").value_or(""));
}

// The object stores a git remote may mean, each a row of kRemoteKinds:
// whether it is the one a remote's URL and settings name (`match`), what
// `git zipnn env` says of it (`describe`, without reaching it), and the
// store (`open`). `t.url` is remote.<name>.zipnnurl when set (then
// `t.repository` is false), else the remote's URL.

// One git remote as the kinds see it.
struct RemoteTarget {
  const RemoteSettings& settings;
  std::string remote;  // the git remote's name, or the URL or path given in its place
  std::string url;     // remote.<name>.zipnnurl when set, else the remote's URL
  bool repository;     // the URL is a git remote's: a path there means that repository's store
  std::string set;     // what a description adds when the URL is remote.<name>.zipnnurl
};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool IsHttp(const std::string& url) { return StartsWith(url, "https://") || StartsWith(url, "http://"); }

// Where a remote keeps what a transfer cut short leaves for the next:
// `name` in the repository's scratch folder (downloads as they come in,
// which gc removes after an hour), or with `lasting` beside it, where gc
// does not reach (S3's records of uploads in parts); empty outside a
// repository: nowhere.
std::string KeptDownloads(const std::string& name, bool lasting = false) {
  Result<git::Folders> folders = git::RepositoryFolders();
  if (!folders.ok()) return "";
  const std::string scratch = git::ScratchDirOf(folders->git_dir);
  return (lasting ? scratch.substr(0, scratch.rfind('/')) : scratch) + "/" + name;
}

// --- S3: an s3:// URL.

bool MatchS3(const RemoteTarget& t) { return StartsWith(t.url, "s3://"); }

std::string DescribeS3(const RemoteTarget& t) { return "the S3 bucket " + t.url + t.set; }

// The most bytes one object, or for S3 one request, may carry to remote
// `t.remote` as set: remote.<name>.zipnnMaxObjectSize, else
// zipnn.maxObjectSize; nullopt when neither is set.
Result<std::optional<uint64_t>> SetObjectLimit(const RemoteTarget& t);

// An S3 bucket: remote.<name>.zipnnendpoint (else $AWS_ENDPOINT_URL_S3 or
// $AWS_ENDPOINT_URL) for a server other than AWS, remote.<name>.zipnnregion
// (else the AWS settings), remote.<name>.zipnnpartsize for the size of
// upload parts (at most the set object limit: a server that takes no
// request over it gets parts of at most it), and credentials from the AWS
// sources.
Result<std::unique_ptr<RemoteStore>> OpenS3(const RemoteTarget& t) {
  s3::Options o;
  ZIPNN_ASSIGN_OR_RETURN(o.location, s3::ParseUrl(t.url));
  const std::string key = "remote." + t.remote + ".zipnn";
  std::optional<std::string> endpoint = t.settings.Get(key + "endpoint");
  if (!endpoint) endpoint = Env("AWS_ENDPOINT_URL_S3");
  if (!endpoint) endpoint = Env("AWS_ENDPOINT_URL");
  o.endpoint = endpoint.value_or("");
  const std::optional<std::string> region = t.settings.Get(key + "region");
  o.region = region ? *region : s3::FindRegion();
  ZIPNN_ASSIGN_OR_RETURN(std::optional<int64_t> part_size, t.settings.GetInt(key + "partsize"));
  if (part_size) {
    if (*part_size < (5 << 20)) return InvalidArgument(key + "partsize must be at least 5m (S3's smallest part)");
    o.part_size = static_cast<uint64_t>(*part_size);
  }
  ZIPNN_ASSIGN_OR_RETURN(const std::optional<uint64_t> limit, SetObjectLimit(t));
  if (limit) {
    if (*limit < (5 << 20)) {
      return InvalidArgument("the object limit of remote " + t.remote + " is " + std::to_string(*limit) +
                             " bytes: an S3 server takes parts of at least 5m, so it must be at least that");
    }
    o.part_size = std::min(o.part_size, *limit);
  }
  ZIPNN_ASSIGN_OR_RETURN(o.timeout, RemoteTimeout(t.settings));
  ZIPNN_ASSIGN_OR_RETURN(o.low_speed, RemoteLowSpeed(t.settings));
  ZIPNN_ASSIGN_OR_RETURN(o.connections, ConcurrentTransfers(t.settings));
  ZIPNN_ASSIGN_OR_RETURN(o.credentials, s3::FindCredentials());
  o.partial_dir = KeptDownloads("s3-partial");
  o.uploads_dir = KeptDownloads("s3-uploads", /*lasting=*/true);
  return s3::Remote(t.url, std::move(o));
}

// --- Git LFS: the storage of the host that serves the repository.

// Hosting sites that serve Git LFS beside their repositories: an ssh
// remote there means its LFS storage (no git-zipnn runs on such a host).
constexpr const char* kLfsHosts[] = {"github.com",    "gitlab.com",   "huggingface.co", "hf.co",
                                     "bitbucket.org", "codeberg.org", "gitea.com"};

// Whether an ssh remote's objects go to its host's Git LFS storage:
// remote.<name>.zipnnkind ("lfs" or "store") when set, else whether the
// host is one of kLfsHosts.
Result<bool> ServesLfs(const RemoteSettings& settings, const SshTarget& t, const std::string& remote) {
  if (const std::optional<std::string> kind = settings.Get("remote." + remote + ".zipnnkind")) {
    if (*kind == "lfs") return true;
    if (*kind == "store") return false;
    return InvalidArgument("remote." + remote + ".zipnnkind is \"" + *kind + "\"; it may be lfs or store");
  }
  const std::string host = Lower(t.host.substr(t.host.find('@') + 1));
  for (const char* known : kLfsHosts) {
    if (host == known) return true;
  }
  return false;
}

// How a remote reaches its Git LFS storage, if it does: the LFS API of
// an http(s) URL; for a git remote reached over ssh, the endpoint set in
// remote.<name>.lfsurl (else lfs.url), else the host's, asked over ssh.
struct LfsRoute {
  enum class Way { kHttp, kSetEndpoint, kOverSsh } way;
  std::string endpoint;  // kSetEndpoint's
  SshTarget ssh;         // kOverSsh's
};

// The endpoint Git LFS itself would use for a git remote: remote.<name>.lfsurl,
// else lfs.url; nullopt when neither is set.
std::optional<std::string> SetLfsEndpoint(const RemoteTarget& t) {
  std::optional<std::string> set = t.settings.Get("remote." + t.remote + ".lfsurl");
  if (!set) set = t.settings.Get("lfs.url");
  return set;
}

Result<std::optional<LfsRoute>> LfsRouteOf(const RemoteTarget& t) {
  if (IsHttp(t.url)) return std::optional<LfsRoute>(LfsRoute{LfsRoute::Way::kHttp, "", {}});
  ZIPNN_ASSIGN_OR_RETURN(std::optional<SshTarget> ssh, ParseSshUrl(t.url));
  if (!ssh || !t.repository) return std::optional<LfsRoute>();
  if (std::optional<std::string> set = SetLfsEndpoint(t)) {
    return std::optional<LfsRoute>(LfsRoute{LfsRoute::Way::kSetEndpoint, *set, *ssh});
  }
  ZIPNN_ASSIGN_OR_RETURN(bool lfs, ServesLfs(t.settings, *ssh, t.remote));
  if (!lfs) return std::optional<LfsRoute>();
  return std::optional<LfsRoute>(LfsRoute{LfsRoute::Way::kOverSsh, "", *ssh});
}

Result<bool> MatchLfs(const RemoteTarget& t) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<LfsRoute> route, LfsRouteOf(t));
  return route.has_value();
}

Result<std::string> DescribeLfs(const RemoteTarget& t) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<LfsRoute> route, LfsRouteOf(t));
  if (route && route->way == LfsRoute::Way::kSetEndpoint) return "the Git LFS storage at " + route->endpoint;
  if (route && route->way == LfsRoute::Way::kOverSsh) return "the Git LFS storage of " + t.url + " (over ssh)";
  return "the Git LFS storage of " + t.url + t.set;
}

// The most bytes hosts that serve Git LFS take in one object: GitHub's
// 2 GiB (on every plan; its larger plans take more, which a setting
// says), the Hugging Face Hub's 50 GB (objects over 5 GB go up in
// chunks there, by its "multipart" adapter).
constexpr std::pair<const char*, uint64_t> kLfsObjectLimits[] = {
    {"github.com", uint64_t{2} << 30}, {"lfs.github.com", uint64_t{2} << 30},
    {"huggingface.co", uint64_t{50'000'000'000}}, {"hf.co", uint64_t{50'000'000'000}}};

// The most bytes remote `t.remote`'s LFS server at `endpoint` takes in
// one object (0: no limit known): remote.<name>.zipnnMaxObjectSize, else
// zipnn.maxObjectSize, else what its host is known to take.
Result<uint64_t> LfsObjectLimit(const RemoteTarget& t, const std::string& endpoint);

// The size of the parts objects go up to a Git LFS server in:
// remote.<name>.zipnnpartsize, else 64 MiB.
constexpr uint64_t kLfsPartSize = uint64_t{64} << 20;
// Transfers at once to a Git LFS server when no setting says: Git LFS's
// own default for lfs.concurrenttransfers.
constexpr int kLfsConcurrentTransfers = 8;

// How objects move to and from remote `t.remote`'s LFS server at
// `endpoint`, as its settings say.
Result<LfsTransfers> LfsTransfersOf(const RemoteTarget& t, const std::string& endpoint) {
  LfsTransfers transfers;
  ZIPNN_ASSIGN_OR_RETURN(transfers.timeout, RemoteTimeout(t.settings));
  ZIPNN_ASSIGN_OR_RETURN(transfers.low_speed, RemoteLowSpeed(t.settings));
  ZIPNN_ASSIGN_OR_RETURN(transfers.max_object_size, LfsObjectLimit(t, endpoint));
  ZIPNN_ASSIGN_OR_RETURN(transfers.connections, ConcurrentTransfers(t.settings));
  // Unset, as many as Git LFS itself runs against such a server.
  if (!t.settings.Get("zipnn.concurrentTransfers") && !t.settings.Get("lfs.concurrenttransfers")) {
    transfers.connections = kLfsConcurrentTransfers;
  }
  const std::string key = "remote." + t.remote + ".zipnnpartsize";
  ZIPNN_ASSIGN_OR_RETURN(const std::optional<int64_t> part_size, t.settings.GetInt(key));
  if (part_size && *part_size < static_cast<int64_t>(lfs::kMinObjectLimit)) {
    return InvalidArgument(key + " is " + std::to_string(*part_size) + ": it must be at least 64k");
  }
  transfers.part_size = part_size ? static_cast<uint64_t>(*part_size) : kLfsPartSize;
  return transfers;
}

Result<std::optional<uint64_t>> SetObjectLimit(const RemoteTarget& t) {
  for (const std::string& key : {"remote." + t.remote + ".zipnnMaxObjectSize", std::string("zipnn.maxObjectSize")}) {
    ZIPNN_ASSIGN_OR_RETURN(const std::optional<int64_t> n, t.settings.GetInt(key));
    if (!n) continue;
    if (*n < static_cast<int64_t>(lfs::kMinObjectLimit)) {
      return InvalidArgument(key + " is " + std::to_string(*n) + ": it must be at least " +
                             std::to_string(lfs::kMinObjectLimit) + " (64k)");
    }
    return std::optional<uint64_t>(static_cast<uint64_t>(*n));
  }
  return std::optional<uint64_t>();
}

Result<uint64_t> LfsObjectLimit(const RemoteTarget& t, const std::string& endpoint) {
  ZIPNN_ASSIGN_OR_RETURN(const std::optional<uint64_t> set, SetObjectLimit(t));
  if (set) return *set;
  const size_t scheme = endpoint.find("://");
  const size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  std::string host = Lower(endpoint.substr(start, endpoint.find_first_of("/:", start) - start));
  host = host.substr(host.find('@') + 1);
  for (const auto& [known, limit] : kLfsObjectLimits) {
    if (host == known) return limit;
  }
  return uint64_t{0};
}

// The Git LFS server of a repository hosted at `t.url` (an http(s) URL):
// the endpoint Git LFS itself would use (remote.<name>.lfsurl, else
// lfs.url, else the one derived from the URL), or `t.url` itself when it
// is remote.<name>.zipnnurl (not `t.repository`), which names the LFS API.
Result<std::unique_ptr<RemoteStore>> LfsStore(const RemoteTarget& t) {
  std::string endpoint = t.url;
  if (t.repository) {
    if (std::optional<std::string> set = SetLfsEndpoint(t)) {
      endpoint = *set;
    } else {
      ZIPNN_ASSIGN_OR_RETURN(endpoint, lfs::EndpointOf(t.url));
    }
  }
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  if (!http::IsHttpUrl(endpoint)) {
    return InvalidArgument("the Git LFS endpoint of remote " + t.remote + " is " + RedactUrl(endpoint) +
                           ", not an http or https URL: set remote." + t.remote +
                           ".lfsurl (or lfs.url) to the https URL of its LFS API");
  }
  ZIPNN_ASSIGN_OR_RETURN(const LfsTransfers transfers, LfsTransfersOf(t, endpoint));
  return OpenGitLfsStore(t.remote, endpoint, transfers);
}

// The Git LFS storage of a repository reached over ssh: its API's place
// and headers for each operation are what `git-lfs-authenticate <path>
// <operation>` answers on the host, as Git LFS asks for them.
Result<std::unique_ptr<RemoteStore>> LfsOverSsh(const RemoteTarget& target, const SshTarget& t) {
  const std::string& url = target.url;
  ZIPNN_ASSIGN_OR_RETURN(const std::string endpoint, lfs::EndpointOf(url));
  ZIPNN_ASSIGN_OR_RETURN(const LfsTransfers transfers, LfsTransfersOf(target, endpoint));
  const double timeout = transfers.timeout;
  std::string path = t.path;
  while (!path.empty() && path.front() == '/') path.erase(0, 1);
  // The ssh command line is read now: the settings do not outlive the
  // opening.
  const std::optional<std::string> ssh_line =
      Env("GIT_SSH_COMMAND") ? Env("GIT_SSH_COMMAND") : target.settings.Get("core.sshCommand");
  auto authenticate = [t, path, url, timeout, ssh_line](const std::string& operation) -> Result<lfs::Grant> {
    const std::vector<std::string> argv =
        SshArgv(t, "git-lfs-authenticate " + ShellQuote(path) + " " + operation, ssh_line, Env("GIT_SSH").value_or(""));
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
  return OpenGitLfsStore(target.remote, endpoint, transfers, std::move(authenticate));
}

Result<std::unique_ptr<RemoteStore>> OpenLfs(const RemoteTarget& t) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<LfsRoute> route, LfsRouteOf(t));
  if (route && route->way == LfsRoute::Way::kOverSsh) return LfsOverSsh(t, route->ssh);
  return LfsStore(t);  // over https: the URL's, or the endpoint set
}

// --- A store served over ssh by `git zipnn serve-store` on the host.

Result<bool> MatchServed(const RemoteTarget& t) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<SshTarget> ssh, ParseSshUrl(t.url));
  return ssh.has_value();
}

std::string DescribeServed(const RemoteTarget& t) {
  return "a store served over ssh by git zipnn serve-store at " + t.url + t.set;
}

// The store of the repository at the path (`t.repository`), or the
// folder; remote.<name>.zipnnserve names the program to run there.
Result<std::unique_ptr<RemoteStore>> OpenServed(const RemoteTarget& target) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<SshTarget> ssh, ParseSshUrl(target.url));
  const SshTarget& t = *ssh;  // MatchServed said so
  const std::optional<std::string> serve = target.settings.Get("remote." + target.remote + ".zipnnserve");
  const std::string remote_command = serve.value_or("git-zipnn") + " serve-store " +
                                     (target.repository ? "--repository " : "") + "-- " + ShellQuote(t.path);
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> argv, SshCommand(target.settings, t, remote_command));
  StoreConnector connect = [argv]() -> Result<std::unique_ptr<Channel>> {
    ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<Process> ssh, Process::Start(argv));
    return std::unique_ptr<Channel>(std::move(ssh));
  };
  ZIPNN_ASSIGN_OR_RETURN(double timeout, RemoteTimeout(target.settings));
  ZIPNN_ASSIGN_OR_RETURN(LowSpeed low_speed, RemoteLowSpeed(target.settings));
  ZIPNN_ASSIGN_OR_RETURN(const int connections, ConcurrentTransfers(target.settings));
  std::string partial_dir = KeptDownloads("store-partial");
  return ServedRemote(RedactUrl(target.url), std::move(connect),
                      "if ssh connected, is git-zipnn on the PATH there? remote." + target.remote +
                          ".zipnnserve names the program to run",
                      timeout, low_speed, std::move(partial_dir), connections);
}

// --- A folder: a path or a file:// URL; for a git remote, the store of
// the repository there.

bool MatchFolder(const RemoteTarget& t) {
  return StartsWith(t.url, "file://") || t.url.find("://") == std::string::npos;
}

std::string DescribeFolder(const RemoteTarget& t) {
  return (t.repository ? "the object store of the repository at " : "the folder ") + t.url + t.set;
}

Result<std::unique_ptr<RemoteStore>> OpenFolder(const RemoteTarget& t) {
  std::string path = StartsWith(t.url, "file://") ? t.url.substr(7) : t.url;
  if (path.empty()) return InvalidArgument("remote " + t.remote + " has an empty URL");
  if (path[0] != '/') {  // git reads a relative URL from the top of the work tree
    auto top = git::TopLevel();
    if (top.ok()) path = *top + "/" + path;
  }
  const bool links = t.settings.Flag("zipnn.hardlinks", /*unset=*/true);
  if (!t.repository) return FolderRemote(path, links);
  ZIPNN_ASSIGN_OR_RETURN(std::string root, git::StoreOfRepository(path));
  return FolderRemote(root, links);
}

// Adapters for rows whose match or describe cannot fail.
template <bool (*f)(const RemoteTarget&)>
Result<bool> Always(const RemoteTarget& t) {
  return f(t);
}
template <std::string (*f)(const RemoteTarget&)>
Result<std::string> Said(const RemoteTarget& t) {
  return f(t);
}

// The kinds, in the order they are tried: the first whose match says
// yes is the remote's.
struct RemoteKind {
  const char* name;  // for docs/architecture.md, "Adding a remote kind"
  bool removes;      // it can remove objects (retain --remote): a Git LFS API has no delete
  Result<bool> (*match)(const RemoteTarget& t);
  Result<std::string> (*describe)(const RemoteTarget& t);
  Result<std::unique_ptr<RemoteStore>> (*open)(const RemoteTarget& t);
};
constexpr RemoteKind kRemoteKinds[] = {
    {"S3", true, Always<MatchS3>, Said<DescribeS3>, OpenS3},
    {"Git LFS", false, MatchLfs, DescribeLfs, OpenLfs},
    {"store served over ssh", true, MatchServed, Said<DescribeServed>, OpenServed},
    {"folder", true, Always<MatchFolder>, Said<DescribeFolder>, OpenFolder},
};

// The row of the kind `t` means; null when none is (a URL of a scheme no
// kind takes).
Result<const RemoteKind*> KindOf(const RemoteTarget& t) {
  for (const RemoteKind& kind : kRemoteKinds) {
    ZIPNN_ASSIGN_OR_RETURN(bool match, kind.match(t));
    if (match) return &kind;
  }
  return static_cast<const RemoteKind*>(nullptr);
}

// The store a URL names. `repository`: the URL is a git remote's, so a
// path means a repository whose store is used; else it is the store itself.
Result<std::unique_ptr<RemoteStore>> StoreAt(const RemoteTarget& t) {
  ZIPNN_ASSIGN_OR_RETURN(const RemoteKind* kind, KindOf(t));
  if (kind == nullptr) {
    return Unsupported(RedactUrl(t.url) + ": git-zipnn has no object store for this kind of URL; set remote." +
                       t.remote + ".zipnnurl to a shared folder (docs/remotes.md)");
  }
  return kind->open(t);
}

// The keys remotes read (RemoteSettings), as `git config --get-regexp`
// takes them: every remote's and branch's, git-zipnn's own and Git LFS's
// (with diff.zipnn, so that the tensor listings read them here too:
// lib/git/listings.h), and the ssh command line.
constexpr char kRemoteKeys[] = "^(remote|branch|zipnn|lfs|diff\\.zipnn)\\.|^core\\.sshcommand$";

bool IsTrue(const std::string& v) {
  const std::string lower = Lower(v);
  return lower == "true" || lower == "yes" || lower == "on" || lower == "1";
}

}  // namespace

Result<RemoteSettings> RemoteSettings::Read() {
  RemoteSettings settings;
  ZIPNN_ASSIGN_OR_RETURN(settings.config_, git::ConfigSnapshot::Read(kRemoteKeys));
  return settings;
}

namespace {

// `key` as git names it: the section and the name in lower case, a
// subsection (a remote's or a branch's name) as it is; nullopt for a key
// with no section.
std::optional<std::string> GitName(const std::string& key) {
  const size_t first = key.find('.'), last = key.rfind('.');
  if (first == std::string::npos) return std::nullopt;
  return Lower(key.substr(0, first)) + key.substr(first, last - first) + Lower(key.substr(last));
}

}  // namespace

std::optional<std::string> RemoteSettings::Get(const std::string& key) const {
  const std::optional<std::string> name = GitName(key);
  if (!name) return std::nullopt;
  std::optional<std::string> value = config_.Get(*name);
  while (value && !value->empty() && value->back() == '\n') value->pop_back();  // as git::ConfigGet
  return value;
}

Result<std::optional<int64_t>> RemoteSettings::GetInt(const std::string& key) const {
  const std::optional<std::string> name = GitName(key);
  if (!name) return std::optional<int64_t>();
  return config_.GetInt(*name);
}

bool RemoteSettings::Flag(const std::string& key, bool unset) const {
  const std::optional<std::string> value = Get(key);
  return value ? IsTrue(*value) : unset;
}

Result<std::string> DefaultRemote(const RemoteSettings& settings) {
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> upstream, git::UpstreamRemote(settings.config()));
  if (upstream) return *upstream;
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> remotes, git::Remotes());
  for (const std::string& r : remotes) {
    if (r == "origin") return r;
  }
  if (remotes.size() == 1) return remotes[0];
  return NotFound(remotes.empty() ? "this repository has no git remote to fetch objects from"
                                  : "this repository has several git remotes and none is origin; name one");
}

Result<std::string> RemoteOrDefault(const RemoteSettings& settings, const std::string& named) {
  if (!named.empty()) return named;
  return DefaultRemote(settings);
}

namespace {

// The store a git remote means, as its settings say: remote.<name>.zipnnurl
// when set, else the remote's URL, else the name itself (a URL or path).
RemoteTarget TargetOf(const RemoteSettings& settings, const std::string& remote) {
  const std::optional<std::string> zipnn_url = settings.Get("remote." + remote + ".zipnnurl");
  const std::optional<std::string> url = settings.Get("remote." + remote + ".url");
  const std::string where = zipnn_url ? *zipnn_url : url ? *url : remote;
  return RemoteTarget{settings, remote, where, /*repository=*/!zipnn_url,
                      zipnn_url ? " (remote." + remote + ".zipnnurl)" : ""};
}

}  // namespace

Result<std::string> DescribeStore(const RemoteSettings& settings, const std::string& remote) {
  const RemoteTarget t = TargetOf(settings, remote);
  ZIPNN_ASSIGN_OR_RETURN(const RemoteKind* kind, KindOf(t));
  if (kind == nullptr) return "none: git-zipnn has no object store for " + t.url;
  return kind->describe(t);
}

bool KeepsRefetched(const RemoteSettings& settings) { return settings.Flag("zipnn.keepRefetched", /*unset=*/false); }

Result<bool> StoreRemoves(const RemoteSettings& settings, const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(const RemoteKind* kind, KindOf(TargetOf(settings, remote)));
  return kind == nullptr || kind->removes;
}

Result<int> ConcurrentTransfers(const RemoteSettings& settings) {
  for (const char* key : {"zipnn.concurrentTransfers", "lfs.concurrenttransfers"}) {
    ZIPNN_ASSIGN_OR_RETURN(std::optional<int64_t> n, settings.GetInt(key));
    if (!n) continue;
    if (*n < 1 || *n > 64) return InvalidArgument(std::string(key) + " must be between 1 and 64");
    return static_cast<int>(*n);
  }
  return 4;
}

Status CheckRemoteName(const RemoteSettings& settings, const std::string& remote) {
  if (settings.Get("remote." + remote + ".zipnnurl") || settings.Get("remote." + remote + ".url")) return OkStatus();
  // A word that is no remote's name and cannot be a path or a URL (no
  // '/', ':' or '.'): a name mistyped, said as one.
  if (remote.find_first_of("/:.") != std::string::npos || FileExists(remote)) return OkStatus();
  ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> names, git::Remotes());
  const std::vector<std::string> closest = ClosestWords(remote, names);
  return NotFound("there is no remote named '" + remote + "'" +
                  (!closest.empty() ? " (did you mean " + Alternatives(closest) + "?)"
                   : names.empty()  ? " (this repository has no remote: `git remote add <name> <url>`)"
                                    : " (the remotes are " + Alternatives(names) + ")"));
}

Result<std::unique_ptr<RemoteStore>> OpenRemoteStore(const RemoteSettings& settings, const std::string& remote) {
  if (std::optional<std::string> zipnn_url = settings.Get("remote." + remote + ".zipnnurl")) {
    return StoreAt(RemoteTarget{settings, remote, *zipnn_url, /*repository=*/false, ""});
  }
  ZIPNN_RETURN_IF_ERROR(CheckRemoteName(settings, remote));
  const std::optional<std::string> url = settings.Get("remote." + remote + ".url");
  // A URL given in place of a name is taken as a git remote's.
  return StoreAt(RemoteTarget{settings, remote, url ? *url : remote, /*repository=*/true, ""});
}

Result<std::string> DefaultRemote() {
  ZIPNN_ASSIGN_OR_RETURN(const RemoteSettings settings, RemoteSettings::Read());
  return DefaultRemote(settings);
}

Result<std::string> RemoteOrDefault(const std::string& named) {
  if (!named.empty()) return named;
  return DefaultRemote();
}

Result<std::string> DescribeStore(const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(const RemoteSettings settings, RemoteSettings::Read());
  return DescribeStore(settings, remote);
}

Result<int> ConcurrentTransfers() {
  ZIPNN_ASSIGN_OR_RETURN(const RemoteSettings settings, RemoteSettings::Read());
  return ConcurrentTransfers(settings);
}

Result<std::unique_ptr<RemoteStore>> OpenRemoteStore(const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(const RemoteSettings settings, RemoteSettings::Read());
  return OpenRemoteStore(settings, remote);
}

}  // namespace zipnn::remote
