// Pointer: the small text git versions in place of a checkpoint
// (docs/pointer.md). It names the raw content only (id, size, format),
// never how or where it is stored, so cleaning is deterministic and a
// later repack never rewrites history. Two versions are read: 1 (four
// lines) and 2 (one line, written since 0.6.0, that git's rename
// detection never pairs with another pointer). Exactly one encoding of
// each version is valid: Format and Parse are inverse, and Parse rejects
// every other spelling. Thread-safe (pure functions, and one read of a
// file).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lib/base/content_id.h"
#include "lib/base/status.h"

namespace zipnn::store {

// What every pointer starts with, before its version.
inline constexpr char kPointerPrefix[] = "git-zipnn pointer ";
// The version new pointers are written in (docs/pointer.md).
inline constexpr int kPointerVersion = 2;
// Longer text is never a pointer (the longest valid one is ~130 bytes).
inline constexpr size_t kMaxPointerBytes = 200;

struct Pointer {
  ContentId id;
  uint64_t size = 0;
  std::string format;  // "safetensors", "pytorch", "raw"
  // How it is spelled: a pointer git already holds keeps its version
  // when its file is cleaned again, so that git sees no change.
  int version = kPointerVersion;

  // The same checkpoint, whichever version spells it.
  bool operator==(const Pointer& o) const { return id == o.id && size == o.size && format == o.format; }
};

// The text of `p` in its version.
std::string FormatPointer(const Pointer& p);

// Whether `text` claims to be a pointer (its first line); such text that
// does not parse is an error, anything else is content.
bool LooksLikePointer(std::string_view text);

// The pointer `text` encodes, or an InvalidArgument naming what is wrong.
Result<Pointer> ParsePointer(std::string_view text);

// The pointer the file at `path` holds; nothing when it holds something
// else, an error when it starts like a pointer and is not a valid one.
// Reads the file's first bytes only.
Result<std::optional<Pointer>> PointerInFile(const std::string& path);

}  // namespace zipnn::store
