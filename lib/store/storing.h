// How one version of a series is stored, shared by CheckIn (a new
// version) and RepackSeries (a stored one, rewritten): the choice of its
// base by the policy, and its encoding into a candidate object file that
// the caller then links into the store. Internal to lib/store.
//
// Thread-compatible; separate processes may store at once.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/formats/file_layout.h"
#include "lib/store/checkpoints.h"

namespace zipnn::store {

// What the version at `position` of `series` (in series order) is stored
// against, by the policy and by how the versions before it are stored
// now: nothing (a base) when it is due to be a base, when no base is
// reachable before it, or when the delta would exceed max_chain. Also the
// size of the series' last base before it, which a delta must undercut by
// min_gain (0 when there is none).
struct Placement {
  std::optional<ContentId> base;
  uint64_t reference = 0;
};
Placement PlaceVersion(const Repository& repo, const std::vector<Version>& series, size_t position);

// A checkpoint's bytes in a file, with the layout the format layer reads.
struct RawVersion {
  const ReadFile* file;
  const formats::FileLayout* layout;
  ContentId id;
};

// An object written to a scratch file in temp_dir/candidates, fsynced,
// for the caller to link into the store; removed with the Candidate.
struct Candidate {
  TempFile file;
  bool delta = false;
  uint64_t size = 0;
};

// Encodes `input` as a delta against `base` when that saves min_gain
// against `reference` (or there is no reference), else standalone.
Result<Candidate> EncodeCandidate(const Repository& repo, const RawVersion& input, const RawVersion* base,
                                  uint64_t reference);

// A checkpoint's bytes written to a scratch file in temp_dir, open for
// reading; removed with the Scratch.
struct Scratch {
  TempFile file;
  ReadFile reader;
};
// What `fill` writes, in a scratch file.
Result<Scratch> WriteScratch(const Repository& repo, const std::function<Status(ByteSink&)>& fill);
// `id` decoded into a scratch file, verified.
Result<Scratch> RestoreToScratch(const Repository& repo, const ContentId& id);

}  // namespace zipnn::store
