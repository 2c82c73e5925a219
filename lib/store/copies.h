// Verified copies of a version's bytes outside the object store: a file
// git holds for it in the work tree, or the raw cache's copy. Every reader
// that may take a copy instead of decoding objects finds it here
// (access::Versions for smudge, diff and analyze; CheckIn for the version
// a delta is built on). A copy is used only when its bytes hash to the
// id, and every later read of it is checked again (ReadFile::OpenHolding),
// so a file rewritten meanwhile yields an error, never other bytes.
//
// Thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/file.h"
#include "lib/store/store.h"

namespace zipnn::store {

struct VerifiedCopy {
  ReadFile file;
  bool in_work_tree = false;  // else the raw cache's
};

// The first of the work-tree files `paths` (from the top of the work tree;
// empty ones are passed over) that holds `id`, else the raw cache's copy
// of `id`. With `size`, a copy must hold that many bytes (a pointer may
// lie about its size), and a work-tree file of another size is passed
// over without hashing it.
std::optional<VerifiedCopy> FindVerifiedCopy(const Store& store, const ContentId& id,
                                             const std::vector<std::string>& paths,
                                             std::optional<uint64_t> size = std::nullopt);

}  // namespace zipnn::store
