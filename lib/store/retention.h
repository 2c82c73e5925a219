// Retention records (docs/retention.md): versions whose exact bytes a
// repository no longer keeps, by the rules of .zipnn.yaml. A version is
// thinned (its float tensors rounded to a stated precision,
// lib/codec/thin.h, every other byte exact) or dropped. The thinned file
// is a checkpoint of its own, stored under its own content id like any
// version, so the approximate bytes too are proved to decode to their id
// before anyone reads them. A record beside the place of the exact
// version's object says what became of it: when, at what precision, the
// error each tensor took, and the id of the approximate bytes. Pointers
// in history never change; a reader asks for approximate bytes by name
// (access/versions.h), and a checkout leaves the pointer.
//
// Records are small text files, written atomically; an exact object
// beside a record still wins (a retain interrupted before it removed it).
// Thread-compatible; the file system arbitrates between processes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/base/status.h"
#include "lib/codec/thin.h"
#include "lib/formats/checkpoint.h"
#include "lib/formats/thin.h"
#include "lib/store/object_store.h"

namespace zipnn::store {

using formats::TensorError;

struct Retained {
  ContentId id;  // the exact version
  uint64_t size = 0;
  bool dropped = false;  // else thinned
  int64_t date = 0;      // when, seconds since the epoch
  // Thinned only: the approximate version (same size) and how it was made.
  ContentId approximate;
  codec::Precision precision;
  std::vector<TensorError> tensors;

  double MaxAbs() const;
  double MaxRel() const;
  // "dropped by retention on 2026-11-28", "thinned by retention on
  // 2026-11-28 (absolute 2^-23; max error 5.96e-08 absolute, 3.1e-05
  // relative)".
  std::string Describe() const;
};

// "2026-11-28": the UTC day of `seconds` since the epoch.
std::string Day(int64_t seconds);

// The record's text (docs/retention.md, "Records") and back; ParseRecord
// checks the record's own checksum and that it is `id`'s.
std::string RecordText(const Retained& r);
Result<Retained> ParseRecord(const std::string& text, const ContentId& id);

// Where the record of `id` lives: beside the place of its object.
std::string RecordPath(const ObjectStore& objects, const ContentId& id);
inline constexpr char kRecordSuffix[] = ".retained";
// The largest record read (a record names one version: far less).
inline constexpr uint64_t kMaxRecordBytes = uint64_t{128} << 20;
// The record of `id`, if there is one; Corruption for a damaged one.
Result<std::optional<Retained>> ReadRecord(const ObjectStore& objects, const ContentId& id);
Status WriteRecord(const ObjectStore& objects, const Retained& r);

}  // namespace zipnn::store
