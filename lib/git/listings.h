// The tensor listings clean leaves in git's textconv cache
// (textconv_cache.h) travel with the branches, so that `git log -p` in a
// clone reads them as the repository that added the versions does,
// instead of restoring every version it shows (docs/commands/diff.md).
//
// They go on the union ref refs/zipnn/listings (union_ref.h): one file
// per pointer blob, its key the blob's id, holding what textconv prints
// for it. A push sends the listings of the pointers it pushes; a fetch
// takes into the local cache each listing it lacks once the pointer blob
// it is for is shown to name the checkpoint the listing is of.
#pragma once

#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/git/git.h"
#include "lib/git/union_ref.h"

namespace zipnn::git {

extern const UnionRef kListings;

// Whether `listing` is one textconv would print for a blob whose bytes are
// `pointer_text`: the text is a pointer and the listing's first line
// names its checkpoint and size. A fetched listing is taken only so.
bool ListingFitsPointer(const std::string& pointer_text, const std::string& listing);

// Puts the listings the cache holds for the pointer blobs `blobs` (hex
// ids) on the local ref, on top of `remote`'s copy as last seen. Nothing
// is done without a cache (diff.zipnn.cachetextconv unset), for a remote
// that is not a configured one, or when the cache holds none of them.
// `config`, when given, is a snapshot holding kStartKeys (discover.h),
// read already; else they are read here.
Status KeepListings(const std::string& remote, const std::vector<std::string>& blobs,
                    const ConfigSnapshot* config = nullptr);
// Sends the local ref, and the children of versions in other series
// (children.h), to `remote` unless they are there already (the object
// map of a Git LFS server sends them with the map, object_map.h).
Status PushListings(const std::string& remote);

// Fetches `remote`'s listings (and its children, children.h, in the same
// fetch) and writes into the local cache each listing it
// lacks (or holds only a failure for) whose pointer blob git has here and
// names the checkpoint the listing is of; others are left out. How many
// were written. `prompt` as for FetchUnionRefs.
Result<size_t> TakeListings(const std::string& remote, const ConfigSnapshot* config = nullptr, bool prompt = true);

}  // namespace zipnn::git
