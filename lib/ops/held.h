// What the store holds of a version, and reading versions by name: the
// answers log, ls-files, status and show give about each version, and
// what the readers (cat, restore, diff, analyze) share. Stateless apart
// from the Context they are given; thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/access/versions.h"
#include "lib/base/content_id.h"
#include "lib/base/status.h"
#include "lib/container/format.h"
#include "lib/formats/checkpoint.h"
#include "lib/ops/context.h"
#include "lib/store/chain.h"
#include "lib/store/placement.h"
#include "lib/store/pointer.h"
#include "lib/store/retention.h"
#include "lib/store/store.h"

namespace zipnn::ops {

// How the store holds version `id`, for log, ls-files and status: its
// object's StoredInfo (for a version retention thinned, its approximate
// version's; for one it dropped, NotFound) and a word for it: "base",
// "delta", "thin", "drop", "missing" (its object, or a base of its chain,
// is not here) or "unreadable" (damaged, or of a newer format).
struct HeldVersion {
  Result<store::StoredInfo> info;
  std::string kind;
  std::optional<store::Retained> retained;
};
HeldVersion DescribeHeld(const store::Store& where, const ContentId& id);

// Why the stored version `id` of `path` (from the top of the work tree)
// is a base (lib/git/discover.h WhyBase); "" when the series git holds
// cannot be read.
std::string WhyBase(Context& context, const std::string& path, const ContentId& id);
// Where git holds the version `id` (a path of HEAD's history), or its id
// when nowhere or when the series cannot be read.
std::string WhereHeld(Context& context, const ContentId& id);
// Where a delta's parent in another series is, and why it was taken
// (lib/git/discover.h ParentNote); the choice in words when the series
// cannot be read; `detail` as git::ParentNote takes it.
std::string ParentNote(Context& context, container::BaseChoice choice, const ContentId& base,
                       const std::string& detail = "");

// Of a delta whose base was taken for tensors of the same bytes (base
// choice kShared: a base model inside an adapter, a second naming scheme,
// a fine-tune's frozen layers) or that references other versions, each
// tensor taken as the same bytes: its name, the base's name for it (its
// own, or another) and its bytes, in file order; empty for any other
// object. A tensor taken under its own name counts when its delta chunks
// hold nothing (container::ChunkUnchanged). Read from the
// object's regions and both versions' headers, by parts, through
// `versions` (which fetches what is missing, or not, as it was made to).
// `layout` is the version's own when it was read already.
struct SharedTensor {
  std::string name, base_name;
  uint64_t bytes = 0;
  std::optional<ContentId> from;  // the version it references that holds it; none: its base
};
struct SharedWith {
  std::vector<SharedTensor> tensors;
  size_t of = 0;  // the version's tensors in all
  // The tensors taken from each version it references besides its base
  // (object format 8), under any name, in the order of its reference table.
  struct Referenced {
    ContentId id;
    std::vector<SharedTensor> tensors;
  };
  std::vector<Referenced> references;
  size_t ReferencedTensors() const;
  uint64_t ReferencedBytes() const;
};
Result<SharedWith> SharedWithBase(const access::Versions& versions, const ContentId& id,
                                  const formats::FileLayout* layout = nullptr);
uint64_t BytesOf(const std::vector<SharedTensor>& tensors);
// How many of `tensors` have another name in their source, as a phrase
// that follows a count of them: " under other names" (all), ", 12 under
// other names" (some) or "" (none).
std::string UnderOtherNames(const std::vector<SharedTensor>& tensors);

// The checkpoint in `file`: the file itself, or the version it names when
// it holds a git-zipnn pointer (as the files git hands to diff drivers
// may), read from the context's store (access::Versions, fetching what is
// missing).
Result<formats::Checkpoint> CheckpointInFile(Context& context, const std::string& file);

// For a new file at `path` (from the top of the work tree) that continues
// a series (step 60 beside step 40): the version before it in its series,
// read with its layout, and where git holds that; nothing for the first of
// a series, or a version that cannot be read.
struct PreviousVersion {
  formats::Checkpoint checkpoint;
  store::Version version;
};
std::optional<PreviousVersion> PreviousInSeries(Context& context, const std::string& path);

// What textconv prints instead of a listing for a checkpoint it cannot
// read (lib/git/textconv_cache.h).
std::string ListingFailure(const std::string& why);

// `checkpoint` with its layout read.
Result<formats::Checkpoint> WithLayout(Result<formats::Checkpoint> checkpoint);

// For a reader given --approximate: InvalidArgument when `output` is a
// file git tracks here (however it is spelled), which approximate bytes
// must never replace.
Status RefuseTrackedOutput(const std::string& output);
// For a reader given --approximate: when `pointer`'s version is one
// retention thinned (and no exact copy is here), what to say of it
// ("version 1234abcd... was thinned ..."); nullopt otherwise.
Result<std::optional<std::string>> ApproximateNote(const access::Versions& versions, const store::Pointer& pointer);

}  // namespace zipnn::ops
