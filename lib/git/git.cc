#include "lib/git/git.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "lib/base/strings.h"
#include "lib/git/rewrite.h"
#include "lib/git/run.h"

namespace zipnn::git {

namespace {

// What to say when a git command that needs a repository failed: the
// reason git gives, without the command line.
Status OutsideRepository(const Status& failed) {
  const std::string& message = failed.message();
  const size_t fatal = message.find("fatal: ");
  const std::string why = fatal == std::string::npos ? message : message.substr(fatal + 7);
  if (why.find("not a git repository") != std::string::npos) {
    return NotFound("not inside a git repository: run this in a repository's work tree (`git init` makes one)");
  }
  return NotFound("git cannot open the repository here: " + why);
}

}  // namespace

Result<std::string> TopLevel(const std::string& cwd) {
  auto top = GitOutput({"rev-parse", "--show-toplevel"}, cwd);
  if (!top.ok()) {
    // Outside any repository, git's own words are no help: what to do is.
    if (top.status().message().find("not a git repository") != std::string::npos)
      return OutsideRepository(top.status());
    return NotFound("not inside a git work tree (" + top.status().message() + ")");
  }
  return top;
}

Result<std::string> GitDir(const std::string& cwd) {
  // The common folder: linked worktrees share one store with their main
  // repository.
  auto dir = GitOutput({"rev-parse", "--path-format=absolute", "--git-common-dir"}, cwd);
  if (!dir.ok()) return OutsideRepository(dir.status());
  return dir;
}

Result<Folders> RepositoryFolders() {
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"rev-parse", "--path-format=absolute", "--git-common-dir", "--git-path",
                                             "hooks", "--show-toplevel"}));
  // git answers in order and stops at the first question it cannot
  // answer: outside a work tree, after the two folders.
  std::vector<std::string> lines;
  std::istringstream out(run.out);
  for (std::string line; std::getline(out, line);) lines.push_back(line);
  const bool no_work_tree = run.err.find("must be run in a work tree") != std::string::npos;
  if (run.exit_code == 0 && lines.size() == 3) return Folders{lines[0], lines[1], lines[2]};
  if (run.exit_code != 0 && no_work_tree && lines.size() == 2) return Folders{lines[0], lines[1], std::nullopt};
  // Anything else (outside a repository, a folder whose name holds a
  // newline): one question at a time, as before.
  ZIPNN_ASSIGN_OR_RETURN(std::string git_dir, GitDir());
  ZIPNN_ASSIGN_OR_RETURN(std::string hooks, HooksFolder());
  auto top = TopLevel();
  return Folders{git_dir, hooks, top.ok() ? std::optional<std::string>(*top) : std::nullopt};
}

Result<ConfigSnapshot> ConfigSnapshot::Read(const std::string& pattern, const std::string& cwd) {
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"config", "-z", "--get-regexp", pattern}, cwd));
  ConfigSnapshot snapshot;
  if (run.exit_code == 1) return snapshot;  // nothing matches
  if (run.exit_code != 0) return Status(StatusCode::kGit, "git config --get-regexp " + pattern + " failed: " + run.err);
  // Each entry is the key, then a newline and the value when there is
  // one, ended by a NUL.
  size_t at = 0;
  while (at < run.out.size()) {
    size_t end = run.out.find('\0', at);
    if (end == std::string::npos) end = run.out.size();
    const std::string entry = run.out.substr(at, end - at);
    const size_t newline = entry.find('\n');
    if (newline == std::string::npos) {
      snapshot.values_[entry] = std::nullopt;
    } else {
      snapshot.values_[entry.substr(0, newline)] = entry.substr(newline + 1);
    }
    at = end + 1;
  }
  return snapshot;
}

std::optional<std::string> ConfigSnapshot::Get(const std::string& key) const {
  const auto it = values_.find(key);
  if (it == values_.end()) return std::nullopt;
  return it->second.value_or("");
}

namespace {

std::string Lowered(std::string v) {
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v;
}

bool IsTrue(const std::string& text) {
  const std::string v = Lowered(text);
  return v == "true" || v == "yes" || v == "on" || v == "1";
}

// An integer as git's --type=int reads one (a decimal, octal or hex
// number, then k, m or g for 2^10, 2^20, 2^30), or nullopt when git
// would not take it.
std::optional<int64_t> GitInt(const std::string& text) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const intmax_t value = std::strtoimax(text.c_str(), &end, 0);
  if (errno == ERANGE || end == text.c_str()) return std::nullopt;
  const std::string unit = Lowered(end);
  const intmax_t factor = unit.empty() ? 1 : unit == "k" ? intmax_t{1} << 10 : unit == "m" ? intmax_t{1} << 20
                                         : unit == "g"   ? intmax_t{1} << 30 : 0;
  if (factor == 0) return std::nullopt;
  const intmax_t max = INT64_MAX;
  if ((value < 0 && -max / factor > value) || (value > 0 && max / factor < value)) return std::nullopt;
  return static_cast<int64_t>(value * factor);
}

}  // namespace

bool ConfigSnapshot::Flag(const std::string& key, bool unset) const {
  const auto it = values_.find(key);
  if (it == values_.end()) return unset;
  return !it->second || IsTrue(*it->second);
}

Result<std::optional<int64_t>> ConfigSnapshot::GetInt(const std::string& key) const {
  const std::optional<std::string> text = Get(key);
  if (!text) return std::optional<int64_t>();
  if (std::optional<int64_t> n = GitInt(*text)) return n;
  return ConfigGetInt(key);  // git's own word on what it does not take, as it says it
}

Result<std::optional<std::string>> ConfigGet(const std::string& key, const std::string& cwd) {
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"config", "--get", key}, cwd));
  if (run.exit_code == 1) return std::optional<std::string>();  // unset
  if (run.exit_code != 0) return Status(StatusCode::kGit, "git config --get " + key + " failed: " + run.err);
  while (!run.out.empty() && run.out.back() == '\n') run.out.pop_back();
  return std::optional<std::string>(run.out);
}

Result<std::optional<int64_t>> ConfigGetInt(const std::string& key) {
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"config", "--type=int", "--get", key}));
  if (run.exit_code == 1) return std::optional<int64_t>();  // unset
  if (run.exit_code != 0) {
    while (!run.err.empty() && run.err.back() == '\n') run.err.pop_back();
    return InvalidArgument(key + ": " + run.err);
  }
  return std::optional<int64_t>(std::atoll(run.out.c_str()));
}

Result<std::optional<std::string>> ConfigGetForUrl(const std::string& key, const std::string& url) {
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"config", "--get-urlmatch", key, url}));
  if (run.exit_code == 1) return std::optional<std::string>();  // unset
  if (run.exit_code != 0) return Status(StatusCode::kGit, "git config --get-urlmatch " + key + " failed: " + run.err);
  while (!run.out.empty() && run.out.back() == '\n') run.out.pop_back();
  return std::optional<std::string>(run.out);
}

bool ConfigFlag(const std::string& key, bool unset) {
  auto value = ConfigGet(key);
  if (!value.ok() || !*value) return unset;
  return IsTrue(**value);
}

Status ConfigSet(const std::string& scope, const std::string& key, const std::string& value) {
  return GitOutput({"config", scope, key, value}).status();
}

Status ConfigUnset(const std::string& scope, const std::string& key) {
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"config", scope, "--unset-all", key}));
  if (run.exit_code != 0 && run.exit_code != 5) {  // 5: it was not set
    return Status(StatusCode::kGit, "git config " + scope + " --unset-all " + key + " failed: " + run.err);
  }
  return OkStatus();
}

Result<std::vector<std::string>> Remotes() {
  ZIPNN_ASSIGN_OR_RETURN(std::string listed, GitOutput({"remote"}));
  std::vector<std::string> names;
  std::istringstream in(listed);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) names.push_back(line);
  }
  return names;
}

Result<std::vector<RemoteRef>> RemoteRefs(const std::string& remote) {
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"ls-remote", "--", remote}));
  if (run.exit_code != 0) {
    while (!run.err.empty() && run.err.back() == '\n') run.err.pop_back();
    return Status(StatusCode::kGit, "cannot list the refs of remote '" + remote + "': " + run.err);
  }
  std::vector<RemoteRef> refs;
  std::map<std::string, size_t> at;  // name -> index in refs
  std::istringstream in(run.out);
  for (std::string line; std::getline(in, line);) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    std::string name = line.substr(tab + 1);
    const std::string object = line.substr(0, tab);
    if (name == "HEAD") continue;
    const bool peeled = name.size() > 3 && name.compare(name.size() - 3, 3, "^{}") == 0;
    if (peeled) name.resize(name.size() - 3);
    auto [it, fresh] = at.emplace(name, refs.size());
    if (fresh) {
      refs.push_back(RemoteRef{name, object});
    } else if (peeled) {
      refs[it->second].object = object;  // what the annotated tag leads to
    }
  }
  return refs;
}

Result<Credential> CredentialFill(const std::string& url) {
  if (url.find_first_of("\n\r") != std::string::npos) return InvalidArgument("a URL with a line break");
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"credential", "fill"}, "", "url=" + url + "\n\n"));
  if (run.exit_code != 0) {
    while (!run.err.empty() && run.err.back() == '\n') run.err.pop_back();
    const size_t fatal = run.err.rfind("fatal: ");
    return NotFound(fatal == std::string::npos ? run.err : run.err.substr(fatal + 7));
  }
  Credential c;
  std::istringstream in(run.out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("username=", 0) == 0) c.user = line.substr(9);
    if (line.rfind("password=", 0) == 0) c.password = line.substr(9);
  }
  return c;
}

void CredentialReport(const std::string& url, const Credential& credential, bool worked) {
  if ((url + credential.user + credential.password).find_first_of("\n\r") != std::string::npos) return;
  (void)RunGit({"credential", worked ? "approve" : "reject"}, "",
               "url=" + url + "\nusername=" + credential.user + "\npassword=" + credential.password + "\n\n");
}

Result<std::optional<std::string>> UpstreamRemote() {
  auto branch = GitOutput({"symbolic-ref", "-q", "--short", "HEAD"});
  if (!branch.ok()) return std::optional<std::string>();  // detached
  ZIPNN_ASSIGN_OR_RETURN(std::optional<std::string> upstream, ConfigGet("branch." + *branch + ".remote"));
  if (upstream && *upstream == ".") return std::optional<std::string>();
  return upstream;
}

Result<std::optional<std::string>> UpstreamRemote(const ConfigSnapshot& config) {
  auto branch = GitOutput({"symbolic-ref", "-q", "--short", "HEAD"});
  if (!branch.ok()) return std::optional<std::string>();  // detached
  std::optional<std::string> upstream = config.Get("branch." + *branch + ".remote");
  while (upstream && !upstream->empty() && upstream->back() == '\n') upstream->pop_back();  // as ConfigGet
  if (upstream && *upstream == ".") return std::optional<std::string>();
  return upstream;
}

Result<std::string> HooksFolder() {
  auto dir = GitOutput({"rev-parse", "--path-format=absolute", "--git-path", "hooks"});
  if (!dir.ok()) return OutsideRepository(dir.status());
  return dir;
}

Result<std::string> WorkTreeGitPath(const std::string& name) {
  auto path = GitOutput({"rev-parse", "--path-format=absolute", "--git-path", name});
  if (!path.ok()) return OutsideRepository(path.status());
  return path;
}

namespace {

// The two ends of a range ("a..b" or "a...b"; an end may be empty), or
// the revision alone as the first with no second.
std::pair<std::string, std::optional<std::string>> RangeEnds(const std::string& range) {
  const size_t dots = range.find("..");
  if (dots == std::string::npos) return {range, std::nullopt};
  const size_t after = dots + (range.compare(dots, 3, "...") == 0 ? 3 : 2);
  return {range.substr(0, dots), range.substr(after)};
}

}  // namespace

Status CheckRevision(const std::string& rev) {
  const auto [from, to] = RangeEnds(rev);
  if ((!from.empty() && from[0] == '-') || (to && !to->empty() && (*to)[0] == '-') || rev.empty()) {
    return InvalidArgument(
        "'" + rev + "' is not a revision" +
        (rev.empty() ? "" : ": a revision never starts with '-', which git would read as an option"));
  }
  return OkStatus();
}

Status CheckRange(const std::string& range, const std::string& cwd) {
  ZIPNN_RETURN_IF_ERROR(CheckRevision(range));
  const auto [from, to] = RangeEnds(range);
  for (std::string end : {from, to.value_or("")}) {
    if (end.empty()) continue;  // "a.." and "..b": HEAD, as git reads them
    if (end[0] == '^') end = end.substr(1);
    ZIPNN_ASSIGN_OR_RETURN(GitRun run,
                           RunGit({"rev-parse", "--verify", "--quiet", "--end-of-options", end + "^{commit}"}, cwd));
    if (run.exit_code != 0) {
      return InvalidArgument("no revision '" + end + "' in this repository" +
                             (end == range ? "" : " (in the range '" + range + "')"));
    }
  }
  return OkStatus();
}

Result<std::vector<std::string>> FilesAt(const std::string& rev, const std::string& cwd) {
  ZIPNN_RETURN_IF_ERROR(CheckRevision(rev));
  return GitPaths({"ls-tree", "-r", "-z", "--name-only", "--full-tree", "--end-of-options", rev}, cwd);
}

Result<std::vector<CommitTouching>> CommitsTouching(const std::string& range, const std::string& path,
                                                    const std::string& cwd) {
  ZIPNN_RETURN_IF_ERROR(CheckRange(range, cwd));
  // NUL after each record: subjects may hold any other byte.
  ZIPNN_ASSIGN_OR_RETURN(
      std::string listed,
      GitOutput({"log", "-z", "--reverse", "--format=%H%x1f%s", "--end-of-options", range, "--", path}, cwd));
  std::vector<CommitTouching> commits;
  for (size_t at = 0; at < listed.size();) {
    size_t end = listed.find('\0', at);
    if (end == std::string::npos) end = listed.size();
    const std::string record = listed.substr(at, end - at);
    at = end + 1;
    if (record.empty()) continue;
    const size_t sep = record.find('\x1f');
    commits.push_back({record.substr(0, sep), sep == std::string::npos ? "" : record.substr(sep + 1)});
  }
  return commits;
}

Result<std::vector<std::string>> TrackedPaths(const std::string& cwd) {
  return GitPaths({"ls-files", "-z", "--full-name", "--", ":(top,attr:filter=zipnn)"}, cwd);
}

Result<std::vector<StagedPath>> TrackedPathsStaged(const std::string& cwd) {
  // ":<old mode> <new mode> <old blob> <new blob> <status>", then the path.
  ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> fields,
                         GitPaths({"diff", "--cached", "--raw", "-z", "--no-abbrev", "--no-renames", "--diff-filter=AM",
                                   "--no-ext-diff", "--", ":(top,attr:filter=zipnn)"},
                                  cwd));
  std::vector<StagedPath> staged;
  for (size_t i = 0; i + 1 < fields.size(); i += 2) {
    const std::string& meta = fields[i];
    std::optional<Oid> blob;
    if (meta.size() > 1 && meta[0] == ':') {
      std::istringstream words(meta.substr(1));
      std::string old_mode, new_mode, old_blob, new_blob;
      words >> old_mode >> new_mode >> old_blob >> new_blob;
      if (new_mode.rfind("100", 0) != 0) continue;  // a link or a submodule: no file's bytes
      blob = ParseOid(new_blob);
    }
    if (!blob) return Status(StatusCode::kGit, "git diff --raw printed '" + meta + "'");
    staged.push_back(StagedPath{fields[i + 1], *blob});
  }
  return staged;
}

Result<std::string> TrackedPath(const std::string& given) {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> paths,
                         GitPaths({"ls-files", "-z", "--full-name", "--error-unmatch", "--", given}));
  if (paths.empty()) return Status(StatusCode::kGit, "git ls-files lists no file for " + given);
  return paths[0];
}

Result<std::vector<std::string>> FilesNamed(const std::string& given) {
  auto paths = GitPaths({"ls-files", "-z", "--full-name", "--", given});
  // A clone made with --no-checkout has an empty index: HEAD's tree then.
  if (paths.ok() && paths->empty()) {
    paths = GitPaths({"ls-tree", "-r", "-z", "--full-name", "--name-only", "--end-of-options", "HEAD", "--", given});
  }
  if (!paths.ok() || paths->empty()) {
    return NotFound("'" + given + "' names no file that git holds here, nor a folder of them");
  }
  return paths;
}

void RestageUnchanged(const std::vector<std::string>& paths, const std::string& top) {
  if (paths.empty()) return;
  std::vector<std::string> args = {"add", "--"};
  for (const std::string& path : paths) args.push_back(":(literal)" + path);
  (void)RunGit(args, top);
}

Result<std::vector<std::string>> LocalChanges() {
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> entries,
                         GitPaths({"status", "--porcelain", "-z", "--untracked-files=no"}));
  ZIPNN_ASSIGN_OR_RETURN(std::string top, TopLevel());
  std::vector<std::string> changes;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& entry = entries[i];
    if (entry.size() < 4) continue;
    std::string line = entry;
    if (entry[0] == 'R' || entry[0] == 'C') {
      if (i + 1 < entries.size()) line += " <- " + entries[++i];  // where it came from
    } else if (entry[0] == ' ' && entry[1] == 'M') {
      // The same bytes as the index holds, seen as changed only because a
      // filter applies to the path now (a file committed plainly before
      // its pattern was tracked): no work to lose.
      const std::string path = entry.substr(3);
      Result<std::string> raw = GitOutput({"hash-object", "--no-filters", "--", top + "/" + path});
      Result<std::string> staged = GitOutput({"rev-parse", "--verify", "-q", ":0:" + path});
      if (raw.ok() && staged.ok() && !raw->empty() && *raw == *staged) continue;
    }
    changes.push_back(line);
  }
  return changes;
}

Result<std::vector<std::string>> RefsCommittedSince(int64_t since) {
  ZIPNN_ASSIGN_OR_RETURN(std::string out, GitOutput({"for-each-ref", "--format=%(committerdate:unix) %(refname)",
                                                     "refs/heads", "refs/remotes"}));
  std::vector<std::string> refs;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const size_t space = line.find(' ');
    if (space == std::string::npos || (line.size() >= 5 && line.compare(line.size() - 5, 5, "/HEAD") == 0)) continue;
    if (std::strtoll(line.c_str(), nullptr, 10) >= since) refs.push_back(line.substr(space + 1));
  }
  return refs;
}

Result<WorkTreeChanges> TrackedChanges() {
  ZIPNN_ASSIGN_OR_RETURN(std::string out, GitOutput({"status", "--porcelain=v1", "-z", "--untracked-files=all", "--",
                                                     ":(top,attr:filter=zipnn)"}));
  WorkTreeChanges changes;
  for (size_t at = 0; at < out.size();) {
    size_t end = out.find('\0', at);
    if (end == std::string::npos) end = out.size();
    const std::string entry = out.substr(at, end - at);
    at = end + 1;
    if (entry.size() < 4) continue;
    const char x = entry[0], y = entry[1];
    const std::string path = entry.substr(3);
    if (x == 'R' || x == 'C') at = std::min(out.size(), out.find('\0', at) + 1);  // the source path follows
    if (x == '?' && y == '?') {
      changes.untracked.push_back(path);
    } else if (y == 'M' || y == 'T') {
      changes.changed.emplace_back(path, "modified");
    } else if (y == 'D') {
      changes.changed.emplace_back(path, "deleted");
    }
  }
  return changes;
}

Result<std::optional<std::string>> HeadBranch() {
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"symbolic-ref", "-q", "HEAD"}));
  if (run.exit_code != 0) return std::optional<std::string>();
  while (!run.out.empty() && run.out.back() == '\n') run.out.pop_back();
  return std::optional<std::string>(run.out);
}

Result<std::optional<std::string>> ConfigGetAt(const std::string& scope, const std::string& key) {
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGit({"config", scope, "--get", key}));
  if (run.exit_code != 0) return std::optional<std::string>();
  while (!run.out.empty() && run.out.back() == '\n') run.out.pop_back();
  return std::optional<std::string>(run.out);
}

Result<std::string> GitVersion() { return GitOutput({"--version"}); }

}  // namespace zipnn::git
