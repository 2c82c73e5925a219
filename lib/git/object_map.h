// The map git keeps of where versions are stored on Git LFS servers
// (lib/remote/lfs.h): the union ref refs/zipnn/objects (union_ref.h), so
// that every clone finds what anyone pushed (docs/remotes.md, "The object
// map"). Its files each hold one version's lines (the key is the
// version's id in hex), each line naming one stored form of it; lines are
// opaque here (lfs.h writes and reads them). A file's lines are kept
// sorted and each once, and two maps are merged by taking every line of
// both.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/git/union_ref.h"

namespace zipnn::git {

inline constexpr char kObjectMapRef[] = "refs/zipnn/objects";
extern const UnionRef kObjectMap;

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
// (`git fetch`, so git's transport and credentials), and the tensor
// listings with it (listings.h). A remote that holds none is no error.
// `prompt` as for FetchUnionRefs.
Status FetchObjectMap(const std::string& remote, bool prompt = true);

// Sends the local map to `remote` (`git push`, hooks not run), and the
// listings (listings.h) in the same push, each merged first with what the
// remote holds when that moved on: tried again a few times when another
// push lands in between.
Status PushObjectMap(const std::string& remote);

}  // namespace zipnn::git
