// The versions re-stored as deltas after they were stored whole, filed by
// the version that made it happen: the newer version whose add demoted
// the one before it (placement.h), or for a repack the version it is a
// delta of now. A remote may still hold such a version whole; when the
// version it is filed under is pushed, the push re-stores it there too
// (lib/remote/remote_store.h), so a remote's history stays as small as the
// local one. Only a note for pushes: any entry may go (the remote then
// keeps the whole object, which costs bytes, never data), and an entry is
// acted on only while the local object is still a delta. A version the
// newer one left whole for a new reason (the newest no longer, now the
// base that ends its stretch) is filed the same way, so that the push
// sends its new base note (base_note.h).
//
// Files are <rebased_dir>/<id filed under>, one id a line.
// Thread-compatible; processes may append at once (each line is one
// write of O_APPEND).
#pragma once

#include <functional>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/store/store.h"

namespace zipnn::store {

// Notes that `id` is stored as a delta now, under `cause`. Best effort.
void NoteRebased(const Store& store, const ContentId& cause, const ContentId& id);

// The versions noted under `cause` (each once).
std::vector<ContentId> RebasedOn(const Store& store, const ContentId& cause);

// Removes the notes filed under versions `keep` says no (a gc's, of the
// versions it removes), and files whose names are no id.
void PruneRebased(const Store& store, const std::function<bool(const ContentId&)>& keep);

}  // namespace zipnn::store
