// Which versions rest on a version of another series (a twin, a
// fine-tune's first save, a file holding its tensors under other names:
// store/parents.h's children), kept in git so that every clone knows
// them: a clone that did not store a child, and has not fetched its
// object, still counts it when it re-stores the parent, and keeps the
// child's chain within max_chain.
//
// They go on the union ref refs/zipnn/children (union_ref.h): one file
// per parent, its key the parent's content id, holding a line per child
// id. A push puts the store's noted children on it and sends it beside
// the listings; a fetch of the listings brings it, and the filter takes
// what it holds into the store's cache.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/status.h"
#include "lib/git/union_ref.h"

namespace zipnn::git {

extern const UnionRef kChildren;

using ChildOf = std::pair<ContentId, ContentId>;  // (parent, child)

// Puts `children` on the local ref, on top of `remote`'s copy as last
// seen; nothing for a remote that is not a configured one, or when the
// ref holds them all already.
Status KeepChildren(const std::string& remote, const std::vector<ChildOf>& children);

// Every (parent, child) the local ref and each remote's copy fetched
// hold; lines that do not read are left out.
Result<std::vector<ChildOf>> ChildrenInGit();

}  // namespace zipnn::git
