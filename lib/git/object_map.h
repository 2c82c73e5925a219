// The map git keeps of where versions are stored on Git LFS servers
// (lib/remote/lfs.h): the ref refs/zipnn/objects, pushed to and fetched
// from each git remote beside the branches, so that every clone finds
// what anyone pushed (docs/remotes.md, "The object map").
//
// Its commits hold a tree with one file per version, <2 hex>/<id>, whose
// lines each name one stored form of it. Lines are opaque here (lfs.h
// writes and reads them); a file's lines are kept sorted and each once.
// The map only grows: two maps are merged by taking every line of both
// (a commit with both as parents), so two clones that pushed at once
// lose nothing, whatever order their pushes land in.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace zipnn::git {

inline constexpr char kObjectMapRef[] = "refs/zipnn/objects";

// Lines by version (the id in hex), as many files hold them.
using MapLines = std::map<std::string, std::set<std::string>>;

// Every line of the map here: the local ref's and those of each remote's
// copy fetched (refs/zipnn/remotes/<remote>/objects). Empty when there is
// none yet.
Result<MapLines> ReadObjectMap();

// Adds `lines` to the local map in one commit (none when it holds them
// all already); a map moved meanwhile by another process is read again.
Status AddToObjectMap(const MapLines& lines);

// Brings the map `remote` holds to refs/zipnn/remotes/<remote>/objects
// (`git fetch`, so git's transport and credentials). A remote that holds
// none is no error.
Status FetchObjectMap(const std::string& remote);

// Sends the local map to `remote` (`git push`, hooks not run), merged
// first with what the remote holds when that moved on: tried again a few
// times when another push lands in between.
Status PushObjectMap(const std::string& remote);

// The local map merged with `remote`'s copy: fast-forwarded when the
// local one holds nothing the other lacks, else a merge commit of both
// whose files hold the lines of both.
Status MergeObjectMap(const std::string& remote);

}  // namespace zipnn::git
