// What git-zipnn asks the git binary, each question a named function:
// the repository's folders, config (read and written through `git
// config`, which knows every level exactly as git does), remotes, hooks,
// trees, history, the tracked paths and the index. The commands that run
// git are in lib/git/run.h, which only lib/git may include (Bazel
// visibility), so every git command line is in this folder. Thread-safe
// (each call runs its own process).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/git/port.h"

namespace zipnn::git {

// The work tree's top folder and the git folder of the repository around
// `cwd` (the common one, which linked worktrees share); NotFound outside a
// repository.
Result<std::string> TopLevel(const std::string& cwd = "");
Result<std::string> GitDir(const std::string& cwd = "");

// The folders of the repository around the current folder, asked of git at once (one
// `git rev-parse`, where GitDir, HooksFolder and TopLevel run one each):
// the common git folder and the hooks folder (core.hooksPath respected),
// both absolute, and the work tree's top, nullopt where there is none (a
// bare repository, or inside the git folder). NotFound outside a
// repository, as GitDir.
struct Folders {
  std::string git_dir;
  std::string hooks;
  std::optional<std::string> top;
};
Result<Folders> RepositoryFolders();

// The keys whose names match `pattern` (a regular expression, as `git
// config --get-regexp` takes it) with their values, read by one `git
// config` run, so with git's own reading of every file, include and
// `git -c`: for a process that asks several keys before its first byte.
class ConfigSnapshot {
 public:
  static Result<ConfigSnapshot> Read(const std::string& pattern, const std::string& cwd = "");
  // As ConfigGet: the last value given, nullopt when unset. `key` as git
  // names it (section and name in lower case).
  std::optional<std::string> Get(const std::string& key) const;
  // As ConfigFlag; a key given with no value ("[zipnn] skipSmudgeErrors"
  // alone) is true, as git reads it.
  bool Flag(const std::string& key, bool unset = false) const;
  // As ConfigGetInt (git's k, m and g suffixes); a value git would not
  // take is InvalidArgument, as git words it.
  Result<std::optional<int64_t>> GetInt(const std::string& key) const;

 private:
  // Each key's last value; nullopt for a key given with no value.
  std::map<std::string, std::optional<std::string>> values_;
};

// `git config --get <key>`; nullopt when unset.
Result<std::optional<std::string>> ConfigGet(const std::string& key, const std::string& cwd = "");
// `git config <scope> --get <key>` (scope --local, --global or --system):
// the value set at that level alone; nullopt when it sets none.
Result<std::optional<std::string>> ConfigGetAt(const std::string& scope, const std::string& key);
// "git version 2.39.5", as `git --version` says it.
Result<std::string> GitVersion();
// `git config --type=int --get <key>` (git reads "5m" as 5242880);
// nullopt when unset, InvalidArgument naming the key when not a number.
Result<std::optional<int64_t>> ConfigGetInt(const std::string& key);
// The value of `key` ("http.extraheader") that git uses for `url`: the
// most specific http.<url>.<name> that matches it, else the plain key
// (`git config --get-urlmatch`); nullopt when unset.
Result<std::optional<std::string>> ConfigGetForUrl(const std::string& key, const std::string& url);
// Whether `key` is set to true as git spells it (true, yes, on, 1, any
// case); `unset` when it is unset or unreadable. Set to anything else, it
// is false.
bool ConfigFlag(const std::string& key, bool unset = false);
// `git config <scope> <key> <value>` and `git config <scope> --unset-all
// <key>` (unset already is no error); scope is --local, --global or
// --system.
Status ConfigSet(const std::string& scope, const std::string& key, const std::string& value);
Status ConfigUnset(const std::string& scope, const std::string& key);

// The names `git remote` lists, and the remote the current branch
// pushes to and fetches from (branch.<name>.remote; nullopt on a
// detached HEAD, without one, or when it is "." for the repository
// itself).
Result<std::vector<std::string>> Remotes();

// The refs the git remote `remote` holds now, as `git ls-remote` lists
// them (branches, tags, any other ref; not HEAD), each with the object it
// leads to, an annotated tag peeled (hex ids). A Git error quoting git
// when the remote cannot be read.
struct RemoteRef {
  std::string name;    // "refs/tags/v1.0"
  std::string object;  // hex
};
Result<std::vector<RemoteRef>> RemoteRefs(const std::string& remote);

// What git's credential helpers give for `url` (`git credential fill`:
// a helper's answer, else what the user types when git may ask, as
// GIT_TERMINAL_PROMPT and GIT_ASKPASS allow); an error saying why when
// there is nothing. Never part of a message.
struct Credential {
  std::string user;
  std::string password;
};
Result<Credential> CredentialFill(const std::string& url);
// Tells the helpers whether `credential` worked for `url` (`git credential
// approve` or `reject`), so they keep it or forget it.
void CredentialReport(const std::string& url, const Credential& credential, bool worked);
Result<std::optional<std::string>> UpstreamRemote();
// The same, reading branch.<name>.remote from `config` (a snapshot that
// holds the branch keys) rather than asking git config.
Result<std::optional<std::string>> UpstreamRemote(const ConfigSnapshot& config);

// The hooks folder of the repository around the current folder
// (core.hooksPath respected), absolute; NotFound outside a repository.
Result<std::string> HooksFolder();
// Where git keeps `name` for the work tree around the current folder
// (rev-parse --git-path), absolute: in a linked worktree, its own folder
// under .git/worktrees/ for a name git does not share among worktrees
// (any name of git-zipnn's own).
Result<std::string> WorkTreeGitPath(const std::string& name);

// Refuses a revision that git would read as an option: `rev`, or either
// end of a range ("a..b", "a...b"), starting with '-' (--output=F would
// make git write F). Every revision a user gives is checked so before it
// reaches git, and git is told where options end (--end-of-options), so
// neither alone lets a string pass as an option. InvalidArgument naming
// the revision.
Status CheckRevision(const std::string& rev);
// CheckRevision, then each end of `range` resolved to a commit: a
// revision git does not know is InvalidArgument naming it, before any
// git command reads it as part of a range.
Status CheckRange(const std::string& range, const std::string& cwd = "");

// The files of the tree of `rev`, from its top (ls-tree -r); `rev` is
// checked (CheckRevision) first.
Result<std::vector<std::string>> FilesAt(const std::string& rev, const std::string& cwd = "");
// The commits of `range` (a revision or "a..b") that change `path`,
// oldest first; `range` is checked (CheckRange) first.
struct CommitTouching {
  std::string commit;   // full hex id
  std::string subject;  // first line of its message
};
Result<std::vector<CommitTouching>> CommitsTouching(const std::string& range, const std::string& path,
                                                    const std::string& cwd = "");

// Paths in the index whose filter attribute is zipnn, in the whole tree,
// byte for byte as the files are named (whatever core.quotePath says), of
// the repository around `cwd` (empty: the current folder).
Result<std::vector<std::string>> TrackedPaths(const std::string& cwd = "");
// Of those, the ones the index adds or changes against HEAD (against
// nothing before the first commit), each with its staged blob: what the
// commit being made brings in. The index is the one git's environment
// names (GIT_INDEX_FILE: `git commit -a` gives its hooks a temporary
// one). git compares only what changed, so this costs little in a large
// tree.
struct StagedPath {
  std::string path;
  Oid blob;
};
Result<std::vector<StagedPath>> TrackedPathsStaged(const std::string& cwd = "");
// The path from the top of the work tree of the file in the index that
// `given` (relative to the current folder) names; of a folder, its first
// file. A Git error quoting git when the index holds no such file.
Result<std::string> TrackedPath(const std::string& given);
// Every file in the index that `given` (relative to the current folder)
// names: the file itself, or each file under a folder, from the top of the
// work tree in index order; with an empty index (a clone made with
// --no-checkout), in HEAD's tree. NotFound, naming `given`, when there is
// none.
Result<std::vector<std::string>> FilesNamed(const std::string& given);

// Brings git's record of work-tree files up to date after they were
// rewritten behind its back with exactly the content their index entries
// name (a pointer restored as its checkpoint), so that `git status` stays
// quiet. They are added again: clean gives the same pointers, so only the
// times and sizes git keeps change (a refresh cannot do it: git takes a
// changed size for changed content without asking the filter). Callers
// must not pass a path whose content differs from its index entry.
// `top`: the work tree's top folder (empty: the current folder). A failure
// only costs `git status` a clean pass, so none is reported.
void RestageUnchanged(const std::vector<std::string>& paths, const std::string& top = "");

// What a history rewrite (`git zipnn migrate`) checks first and does last:
// the changes to tracked files that neither the index nor HEAD holds
// (`git status --porcelain`, untracked files left out), one line each,
// leaving out files whose bytes are the index's and that git sees as
// changed only because a filter now applies to them;
// and the ref HEAD names ("refs/heads/main"; nullopt when detached).
Result<std::vector<std::string>> LocalChanges();
// The branches and remote-tracking branches whose tip was committed at or
// after `since` (seconds since the epoch), as Git LFS's fetch --recent
// takes them.
Result<std::vector<std::string>> RefsCommittedSince(int64_t since);
Result<std::optional<std::string>> HeadBranch();
// The tracked checkpoints (filter=zipnn) git status sees changed in the
// work tree against the index ("modified", "deleted"), and the files under
// a tracked pattern git does not track yet. git's own status runs, so the
// filter cleans files whose times changed, as git status does.
struct WorkTreeChanges {
  std::vector<std::pair<std::string, std::string>> changed;
  std::vector<std::string> untracked;
};
Result<WorkTreeChanges> TrackedChanges();

}  // namespace zipnn::git
