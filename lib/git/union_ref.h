// Refs that only grow and travel beside the branches: git-zipnn's own
// records in git (the object map of Git LFS servers, object_map.h; the
// tensor listings, listings.h), pushed to and fetched from each git remote
// so that every clone finds what anyone pushed.
//
// A union ref's commit holds a tree with one file per key (a hex id), at
// <2 hex>/<key>, and no parent: each commit holds all there is, so a
// history would only clutter `git log --all`. Two copies are merged by
// taking every file of both, a file both hold by the ref's own rule, and
// a push replaces the remote's commit only if it is still the one merged
// (--force-with-lease); so two clones that pushed at once lose nothing,
// whatever order their pushes land in. Each remote's copy, as last
// fetched or pushed, is kept at refs/zipnn/remotes/<remote>/<name>.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace zipnn::git {

struct UnionRef {
  const char* ref;   // "refs/zipnn/objects"
  const char* name;  // "objects": the last part of each remote's copy
  const char* what;  // "object map": in messages and commit subjects
  // The text of a file both copies hold: the two merged (`ours` when they
  // agree).
  std::string (*merge)(const std::string& ours, const std::string& theirs);
};

// Files by key.
using RefFiles = std::map<std::string, std::string>;

// For refs whose files are sets of lines: the non-empty lines of a file,
// a file of lines (each ending in a newline, sorted), and the merge rule
// of such refs, every line of both once.
std::set<std::string> LineSet(const std::string& text);
std::string LineSetText(const std::set<std::string>& lines);
std::string UnionOfLines(const std::string& ours, const std::string& theirs);

// Every file of the local ref and, with `remotes`, of every remote's copy
// fetched, merged. Empty when there is none yet.
Result<RefFiles> ReadUnionRef(const UnionRef& u, bool remotes);

// The key of each file of `remote`'s copy, with the hex id of the blob
// that holds it (its text is not read).
Result<std::map<std::string, std::string>> ListRemoteCopy(const UnionRef& u, const std::string& remote);
// The text of a blob ListRemoteCopy named, when it is at most `limit`
// bytes; nullopt for a bigger one.
Result<std::optional<std::string>> ReadBlob(const std::string& hex, size_t limit);

// Adds `files` to the local ref in one commit, each merged with the file
// it already holds; no commit when nothing changes. A ref moved meanwhile
// by another process is read again.
Status AddToUnionRef(const UnionRef& u, const RefFiles& files);

// Brings each remote's copy of `refs` to refs/zipnn/remotes/<remote>/...
// in one `git fetch` (git's transport and credentials). A ref the remote
// lacks is no error.
// With `prompt` false git never asks for credentials on the terminal
// (work in the background, which would ask beside the foreground's).
Status FetchUnionRefs(const std::vector<const UnionRef*>& refs, const std::string& remote, bool prompt = true);
// Whether this process fetched `remote`'s copy of `u` already.
bool FetchedHere(const UnionRef& u, const std::string& remote);

// The local ref merged with `remote`'s copy: moved to that copy when the
// local one holds nothing it lacks, else a new commit of both.
Status MergeUnionRef(const UnionRef& u, const std::string& remote);

// Sends each local ref of `refs` to `remote` (`git push`, hooks not run),
// merged first with what the remote's copy holds, in place of that copy
// only if the remote still holds it: tried again a few times when another
// push lands in between. A ref already where the remote's
// copy is costs nothing.
Status PushUnionRefs(const std::vector<const UnionRef*>& refs, const std::string& remote);

// Whether `remote` can name copies in refs/zipnn/remotes/ (a configured
// remote's name; not a URL or a path, which `git push <url>` may give).
bool CanTrack(const std::string& remote);

}  // namespace zipnn::git
