// What git holds for a checkpoint at a revision: the pointer at
// "<rev>:<path>", or the file's own bytes when git holds it unfiltered.
// Thread-compatible.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "lib/base/status.h"
#include "lib/formats/checkpoint.h"
#include "lib/git/port.h"
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

// The part of PointerAt read in-process, through the port: the pointer at
// "<rev>:<path>" for a spec whose path names a file from the top of the
// work tree, or from `cwd` (an absolute folder) when it starts with "./".
// nullopt, with nothing read, for a spec only git reads (":<path>", a
// path with "..", a bare repository), which PointerAt gives to git.
Result<std::optional<store::Pointer>> PointerInProcess(const Port& git, const std::string& spec,
                                                       const std::filesystem::path& cwd);

// The bytes of the file git holds unfiltered at `spec` ("<rev>:<path>",
// a file committed before it was tracked), in a scratch file in
// `temp_dir`. The version a pointer names is read through
// lib/access/versions.h.
Result<formats::Checkpoint> UnfilteredAt(const std::string& temp_dir, const std::string& spec);

}  // namespace zipnn::git
