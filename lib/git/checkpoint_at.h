// A checkpoint as git holds it at a revision: the pointer at
// "<rev>:<path>", and the version it names restored (verified) into a
// scratch file, or the file's own bytes when git holds it unfiltered.
// Thread-compatible.
#pragma once

#include <string>

#include "lib/base/status.h"
#include "lib/formats/checkpoint.h"
#include "lib/store/store.h"
#include "lib/store/pointer.h"

namespace zipnn::git {

// The pointer git holds at `spec` ("<rev>:<path>"; a path starting with
// "./" is relative to the current folder), read in-process (git is run
// only for specs such as ":<path>" or "../"). NotFound when git has no
// such revision or file there, InvalidArgument when the file is not a
// git-zipnn pointer or the revision starts with '-' (CheckRevision: git
// would take it for an option).
Result<store::Pointer> PointerAt(const std::string& spec);

// The checkpoint git holds at <rev>:<path>: the version its pointer names,
// or the file itself when git holds it unfiltered, in a scratch file in
// repo.temp_dir (its layout not read yet). `rev` is checked
// (CheckRevision) before git reads it.
Result<formats::Checkpoint> CheckpointAt(const store::Store& repo, const std::string& rev,
                                         const std::string& path);

// The checkpoint `pointer` names (`name`: where the pointer was read, for
// messages). A work-tree file that the index holds for that version is
// read where it lies, and a kept raw copy where it is kept, when its bytes
// still hash to the id; else the version is restored into a scratch file
// in repo.temp_dir, its chain starting from the nearest version that such
// a file holds. So a diff or textconv of step-numbered saves decodes
// nothing while the saves are in the work tree.
Result<formats::Checkpoint> CheckpointOf(const store::Store& repo, const store::Pointer& pointer,
                                         const std::string& name);

}  // namespace zipnn::git
