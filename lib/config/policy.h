// Policy: how a repository stores its checkpoints, read from .zipnn.yaml
// at the repository root (committed, so a team shares it); every key is
// optional (docs/policy.md). This is the only place that uses yaml-cpp;
// its exceptions stop here. Plain data; thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/base/status.h"
#include "lib/codec/delta_transform.h"
#include "lib/codec/thin.h"

namespace zipnn::config {

enum class DeltaAgainst { kPrevious, kBase };
// How the newest version of a series is stored: whole, the older ones
// re-stored as deltas as newer ones arrive (reads of the present cost a
// base's), or as a delta of the version before it (0.6's placement:
// writes cost one encoding, reads of the newest decode its chain).
enum class Newest { kWhole, kDelta };

struct Policy {
  // Every base_interval-th version of a series is stored standalone. With
  // the newest whole, 7 leaves 3 versions chained to each of the two bases
  // around them, so no restore decodes more than 3 deltas: 2.4x a base's
  // restore on a training run, where 10 (5 deltas) took 3.3x and stored
  // 15% less (docs/policy.md, "Storage against restore time").
  uint32_t base_interval = 7;
  // What a delta is made against: the previous version (smallest deltas,
  // chains) or the series' last base (restores decode at most two objects).
  DeltaAgainst delta_against = DeltaAgainst::kPrevious;
  Newest newest = Newest::kWhole;
  // No restore decodes a chain of more than this many deltas.
  uint32_t max_chain = 3;  // DefaultMaxChain unless set
  // A delta must be at least this much smaller than the version stored
  // standalone, or the version becomes a base.
  double min_gain = 0.10;
  // How a delta's chunks are taken against their base: the smaller of XOR
  // and the arithmetic difference per chunk (object format 3 on), or one of
  // them; xor keeps deltas readable by git-zipnn before 0.4 (format 2).
  codec::TransformPolicy delta_transform = codec::kAutoTransform;
  uint32_t chunk_size = 256u << 10;
  int threads = 0;  // 0: all cores
  int zstd_level = 3;
  // Explicit series: globs where "{step}" stands for a step's digits,
  // tried before the built-in rules (lib/series/series.h).
  std::vector<std::string> series;
  // Explicit parents (lib/store/parents.h): the first version of a series
  // whose path matches `checkpoints` (a glob as in `series`) is a delta of
  // the version git holds at `parent`: a file, or a folder whose file of
  // the same name is taken. In the file's order; the first match wins.
  struct ParentRule {
    std::string checkpoints;
    std::string parent;
  };
  std::vector<ParentRule> parents;
  // Bytes of raw checkpoint copies kept to make the next delta without
  // decoding a chain; 0 keeps none. A copy costs a whole checkpoint of
  // disk, which for checkpoints beyond 512 MiB outweighs the decode it
  // spares (docs/policy.md, "Bytes of the base").
  uint64_t raw_cache = 512ull << 20;
  // Retention (docs/retention.md): which versions of a series keep their
  // exact bytes, and what becomes of the rest, when `git zipnn retain`
  // runs. A series takes the first rule whose glob matches the path of
  // its newest version; a series no rule matches keeps everything.
  struct RetentionRule {
    std::string checkpoints;  // a glob as in `parents`
    uint32_t keep_newest = 0;
    uint32_t keep_every = 0;  // the 1st, (M+1)th, (2M+1)th... version of the series; 0: none
    bool keep_tagged = true;  // versions a tag's commit holds
    // Versions first committed at or after a date (keep_since_date,
    // seconds since the epoch), or within an age before the retain runs
    // (keep_since_age, seconds); 0: neither.
    int64_t keep_since_date = 0;
    int64_t keep_since_age = 0;
    std::string keep_since_text;              // as written, for messages
    std::vector<std::string> keep;            // named versions: "<rev>:<path>"
    bool drop = false;                        // the rest: dropped, else thinned at `precision`
    codec::Precision precision;
  };
  std::vector<RetentionRule> retention;
};

// The longest chain of deltas any restore follows (a longer one is taken
// for a loop or a damaged store), and so the most max_chain may allow:
// add never writes a chain that restore would refuse.
inline constexpr uint32_t kMaxChainLimit = 1000;

// The most explicit series patterns, and the longest pattern, a policy
// may hold. Every tracked path is matched against them on every git
// command, and the file is written by whoever wrote the repository; real
// layouts need a few patterns of a few dozen characters.
inline constexpr size_t kMaxSeriesPatterns = 100;
inline constexpr size_t kMaxSeriesPatternLength = 1000;

// max_chain when .zipnn.yaml does not set it, never more than
// kMaxChainLimit. With the newest whole, the versions between two bases
// k apart chain half to the older base and half to the newer one, so
// chains of k / 2 deltas at most; with the newest a delta, all of them
// chain to the older one: k - 1.
inline uint32_t DefaultMaxChain(uint32_t base_interval, Newest newest) {
  const uint32_t chain = newest == Newest::kWhole ? base_interval / 2 : base_interval - 1;
  return chain < kMaxChainLimit ? chain : kMaxChainLimit;
}

// `policy` with base_interval `k` (repack --base-interval): max_chain
// follows the interval as DefaultMaxChain says, unless it differs from
// what the old interval gives it by default (.zipnn.yaml set another).
Policy WithBaseInterval(Policy policy, uint32_t k);

// How the stretch between two bases splits with the newest whole
// (lib/store/placement.h): the versions after the older base that are
// deltas of the version before them, then those that are deltas of the
// version after them; each part at most max_chain. With delta_against:
// base, every version of the stretch is a delta of its older base.
struct Stretch {
  uint32_t forward = 0;
  uint32_t reverse = 0;
  bool against_base = false;
};
Stretch StretchOf(const Policy& policy);

// The threads the work of `policy` runs on, on a machine of `cores` cores
// (at least 1): its `threads`, all cores for 0, and never more than the
// cores. .zipnn.yaml is committed by whoever wrote the repository, and on
// a machine with fewer cores more threads add memory, not speed. A
// command's --threads is the user's own and is not capped; the memory of
// any count is bounded where chunks are coded (lib/container/object.h).
int EffectiveThreads(const Policy& policy, int cores);

// The policy in `yaml` (the text of .zipnn.yaml), with defaults for what
// it leaves out. `source` names the file in error messages; the first
// wrong key is the error.
Result<Policy> ParsePolicy(const std::string& yaml, const std::string& source);

// Reads `path`; a missing file gives the defaults.
Result<Policy> LoadPolicy(const std::string& path);

// A policy read leniently: every key that is right, the defaults for the
// rest, and a warning (the message ParsePolicy would fail with) for each
// key that is wrong. Storing never depends on .zipnn.yaml being right:
// git runs the clean filter for `git status` too, and a pointer does not
// depend on the policy.
struct LoadedPolicy {
  Policy policy;
  std::vector<std::string> warnings;
};
LoadedPolicy ParsePolicyLenient(const std::string& yaml, const std::string& source);
LoadedPolicy LoadPolicyLenient(const std::string& path);

}  // namespace zipnn::config
