// Notes of checkpoints stored ahead of `git add`: in a distributed save
// (`git zipnn commit` on every rank, lib/ops/commit.h) each rank stores
// its own files, and one `git add` then records them all. The note of a
// file says which pointer it was stored under and what the file's stat
// was then; clean, given the same file with the same stat, hashes the
// stream git sends and, when it is the version noted, answers the noted
// pointer without spooling or storing anything again.
//
// A note is a hint, never trusted: the stream is always hashed, and a
// note whose file changed in any way it can see (size, times, inode) is
// passed over. One file per noted path, written whole by rename, so
// ranks note their files side by side without a lock.
#pragma once

#include <optional>
#include <string>

#include "lib/base/status.h"
#include "lib/store/pointer.h"

namespace zipnn::ops {

// The note of `path` (as git names it, from the top of the work tree,
// which is the current folder) stored under `pointer_text`: taken only
// when the file's stat `before` (lstat before it was read, as
// FileStamp gives it) still holds, else the file changed while it was
// read and nothing is noted.
Status NoteAdded(const std::string& dir, const std::string& path, const std::string& before,
                 const std::string& pointer_text);

// The file's stat as notes compare it: size, modification and change
// times to the nanosecond, inode and device; nullopt when it is no
// regular file.
std::optional<std::string> FileStamp(const std::string& path);

// The pointer noted for `path` when its stat is still the noted one;
// nullopt otherwise (no note, another stat, a damaged note).
std::optional<store::Pointer> NotedPointer(const std::string& dir, const std::string& path);

// Forgets the note of `path` (its file changed after it was noted).
void ForgetAdded(const std::string& dir, const std::string& path);

}  // namespace zipnn::ops
