// Rewriting history with git's own fast-export and fast-import, for `git
// zipnn migrate`: the commits of the chosen revisions are written again
// with the blobs of some files replaced (a checkpoint by its pointer, or a
// pointer by another) and the top .gitattributes of each commit edited.
// Every other byte of every commit and tag (authors, dates, messages,
// parents, modes, the other files) is what fast-export gave.
//
// A rewrite stopped at any point (killed, an error) and run again ends as
// one run does, with the same commit ids:
// - fast-import writes its objects into the repository but its refs into
//   a scratch git folder, and a stream without its closing `done` (its
//   writer killed) is refused by it; no ref of the repository moves then;
// - git notes on the old commits are copied to the new ones before any
//   ref moves (a copy there already is not made again);
// - every ref moves in one `git update-ref` transaction that checks each
//   is still what was read;
// - when the branch checked out moves, a note in the worktree's git folder
//   says so until its files are checked out again (FinishCheckout), so a
//   run stopped between the two ends the checkout first.
// A branch checked out in another worktree must not move under it (its
// index would then commit the old files back); BranchesCheckedOutElsewhere
// names them, and callers leave them out or refuse.
//
// A HistoryRewrite holds the whole fast-export stream of the history
// without file contents (commit messages and file lists: small beside
// the checkpoints). Not thread-safe; one rewrite per repository at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/git/repository.h"

namespace zipnn::git {

// A file the rewrite may replace: a blob, with the first path history
// holds it at, listed in the order history first holds each blob.
struct RewriteFile {
  std::string path;
  Oid blob;
};

// What a chosen file's blob becomes: new bytes, or nullopt to keep it.
// Asked once per blob, in the order of files().
using ReplaceBlob = std::function<Result<std::optional<std::string>>(const RewriteFile& file)>;

// What the top .gitattributes of a commit is to hold, given what it holds
// (nullopt: the commit has none). Asked once per distinct text.
using EditAttributes = std::function<std::string(const std::optional<std::string>& text)>;

// The commits written again: each old commit's new id (hex), in the order
// fast-export listed them; the refs moved; and the git notes copied from
// old commits and annotated tags to their new ones, with the notes refs
// that hold them.
struct Rewritten {
  std::vector<std::pair<std::string, std::string>> commits;
  std::vector<std::string> refs;
  size_t notes = 0;
  std::vector<std::string> notes_refs;
};

// A branch (full ref name) checked out in a worktree (its folder) other
// than the one git-zipnn runs in.
struct CheckedOut {
  std::string ref;
  std::string worktree;
};

class HistoryRewrite {
 public:
  // Reads the history `revs` names (rev-list words such as
  // "refs/heads/main", "a..b", "^x", "--branches", "--tags",
  // "--exclude=<branch>" before "--branches"; each is checked before git
  // reads it) and chooses the regular files whose
  // paths match a pattern of `include` and none of `exclude` (patterns
  // as .gitattributes writes them, matched by git itself). The top
  // .gitattributes is never chosen.
  static Result<HistoryRewrite> Read(Repository& repo, const std::vector<std::string>& revs,
                                     const std::vector<std::string>& include, const std::vector<std::string>& exclude);

  const std::vector<RewriteFile>& files() const { return files_; }
  // The refs the history read names (full names, sorted): those Write
  // moves when their commits change.
  const std::vector<std::string>& refs() const { return refs_; }
  size_t commits() const { return commits_; }
  // Each chosen path with the blobs it holds in the history read.
  const std::map<std::string, std::vector<Oid>>& by_path() const { return by_path_; }

  // Writes every commit again with fast-import: each chosen blob as
  // `replace` says, the top .gitattributes as `edit` says; copies the
  // notes; then moves the refs (forced: the new history does not descend
  // from the old), each only if it still names what Read saw. When
  // `checked_out` (the branch of the worktree we run in) moves, the
  // worktree's files are to be checked out again with FinishCheckout.
  Result<Rewritten> Write(const ReplaceBlob& replace, const EditAttributes& edit,
                          const std::optional<std::string>& checked_out);

 private:
  HistoryRewrite(Repository& repo, std::string stream, std::map<std::string, std::string> tips)
      : repo_(&repo), stream_(std::move(stream)), tips_(std::move(tips)) {}

  Repository* repo_;
  std::string stream_;         // fast-export's, without blobs
  std::set<std::string> chosen_;  // paths, unquoted
  std::vector<RewriteFile> files_;
  std::map<std::string, std::vector<Oid>> by_path_;
  std::vector<std::string> refs_;
  std::map<std::string, std::string> tips_;  // every ref -> its object id before the history was read
  size_t commits_ = 0;
};

// The branches checked out in the other worktrees of the repository (the
// main one and each linked one, except the one we run in), as `git
// worktree list` gives them; a worktree whose folder is gone still counts,
// as git counts it until `git worktree prune`.
Result<std::vector<CheckedOut>> BranchesCheckedOutElsewhere(const Repository& repo);

// Checks out again the files of the branch a rewrite moved in this
// worktree (`git reset --hard`, through the filters), when Write, or a
// run of it that was stopped, left that to do: the branch, or nullopt
// when nothing was left. Each file must be the old commit's or the new
// one's (a checkout stopped half-way); when the index or a file changed
// otherwise since, it touches nothing and says what to do. When the
// branch has moved elsewhere since, there is nothing to do.
Result<std::optional<std::string>> FinishCheckout(const Repository& repo);

// Streams the bytes of blob `blob` (`git cat-file`), checking as it ends
// that they hash to the blob's id: a git that stops early, or a damaged
// object, is an error, never short or wrong content.
Result<std::unique_ptr<ByteReader>> OpenBlob(const Repository& repo, const Oid& blob);

// The paths of `paths` that match a pattern of `include` and none of
// `exclude`, as git matches .gitattributes patterns (git check-attr).
// None when `include` is empty.
Result<std::set<std::string>> MatchingPaths(const Repository& repo, const std::set<std::string>& paths,
                                            const std::vector<std::string>& include,
                                            const std::vector<std::string>& exclude);

// `hex` (40 hex digits) as an Oid; nullopt when it is not one.
std::optional<Oid> ParseOid(const std::string& hex);

}  // namespace zipnn::git
