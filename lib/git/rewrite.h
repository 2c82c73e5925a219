// Rewriting history with git's own fast-export and fast-import, for `git
// zipnn migrate`: the commits of the chosen revisions are written again
// with the blobs of some files replaced (a checkpoint by its pointer, or a
// pointer by another) and the top .gitattributes of each commit edited.
// Every other byte of every commit and tag (authors, dates, messages,
// parents, modes, the other files) is what fast-export gave. Refs move
// only when fast-import has written everything: an error before that
// leaves every ref as it was.
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
// fast-export listed them, and the refs fast-import moved.
struct Rewritten {
  std::vector<std::pair<std::string, std::string>> commits;
  std::vector<std::string> refs;
};

class HistoryRewrite {
 public:
  // Reads the history `revs` names (rev-list words such as
  // "refs/heads/main", "a..b", "^x", "--branches", "--tags"; each is
  // checked before git reads it) and chooses the regular files whose
  // paths match a pattern of `include` and none of `exclude` (patterns
  // as .gitattributes writes them, matched by git itself). The top
  // .gitattributes is never chosen.
  static Result<HistoryRewrite> Read(Repository& repo, const std::vector<std::string>& revs,
                                     const std::vector<std::string>& include, const std::vector<std::string>& exclude);

  const std::vector<RewriteFile>& files() const { return files_; }
  size_t commits() const { return commits_; }
  // Each chosen path with the blobs it holds in the history read.
  const std::map<std::string, std::vector<Oid>>& by_path() const { return by_path_; }

  // Writes every commit again with fast-import: each chosen blob as
  // `replace` says, the top .gitattributes as `edit` says, then moves the
  // refs (forced: the new history does not descend from the old).
  Result<Rewritten> Write(const ReplaceBlob& replace, const EditAttributes& edit);

 private:
  HistoryRewrite(Repository& repo, std::string stream) : repo_(&repo), stream_(std::move(stream)) {}

  Repository* repo_;
  std::string stream_;         // fast-export's, without blobs
  std::set<std::string> chosen_;  // paths, unquoted
  std::vector<RewriteFile> files_;
  std::map<std::string, std::vector<Oid>> by_path_;
  size_t commits_ = 0;
};

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
