// Series: which checkpoint files are versions of one another. A path maps
// to a series name and a step; files of one series are versions of one
// checkpoint saved at different steps (or one path overwritten in place),
// and a new version is stored as a delta against an earlier one of its
// series. Plain string rules, no file system and no git; docs/policy.md
// ("Series") describes them for users.
//
// The rules, for every run of digits in every component of the path:
// - a shard number is part of the name, never a step: "-00001-of-00004",
//   and a number after a shard word (rank, shard, part, tp, pp, mp, dp,
//   layer, expert, worker, gpu, device, node, split, rng_state), as in
//   mp_rank_00, zero_pp_rank_3, rank3;
// - a number after a step word (step, global_step, checkpoint, ckpt, iter,
//   iteration, epoch, update, save), with or without one separator, is a
//   step: checkpoint-100, global_step100, iter_0000100, epoch=3-step=1000;
// - any other number glued to a letter is part of the name (fp16, gpt2,
//   run1, v2, resnet50, seed42);
// - any other number after a separator or at the start is a step in the
//   file name (step_000100.safetensors, model.100.pt) and in a folder made
//   of digits and separators only (000100/, 2024-05-01/), and part of the
//   name in any other folder (seed-42/, run_3/).
// A step becomes '#' in the series name; the steps of a path, joined by
// '.', order its versions by number ("3.1000" < "3.1200" < "4.20").
// Explicit patterns from .zipnn.yaml come first: a glob where "{step}"
// matches the digits of a step, '*' any text within a folder, '**' any
// folders and '?' one character.
//
// Rules is immutable after construction: thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace zipnn::series {

struct Placed {
  std::string name;  // "out/checkpoint-#/model.safetensors"
  std::string step;  // "100"; empty for a path with no step
};

class Rules {
 public:
  // The built-in rules only.
  Rules() = default;
  // Explicit patterns first, then the built-in rules. InvalidArgument
  // names a pattern without "{step}" or with another '{'.
  static Result<Rules> WithPatterns(const std::vector<std::string>& patterns);

  Placed Place(const std::string& path) const;

  struct Pattern;  // an explicit pattern made ready for matching (series.cc)

 private:
  std::vector<std::shared_ptr<const Pattern>> patterns_;
};

// Whether `path` matches `glob` ('*' any text within a folder, '**' any
// folders, '?' one character, "{step}" a step's digits), as an explicit
// pattern matches.
bool GlobMatches(const std::string& glob, const std::string& path);

// Checks one explicit pattern (what WithPatterns refuses).
Status CheckPattern(const std::string& pattern);

// Orders steps by their numbers in turn (so "20" < "100", "3.1000" <
// "4.20"); an empty step comes first.
bool StepLess(const std::string& a, const std::string& b);

// The one order of checkpoints, for listings (log), checkouts (the
// filter's delayed files) and analysis: by series name, then by step
// within a series (StepLess). Not a total order: files of one step (two
// spellings of it) are equal, and callers that need one add the path.
bool SeriesLess(const Placed& a, const Placed& b);

// `paths` (each once) in SeriesLess order, placed by `rules`; equal ones
// keep the order given.
std::vector<std::string> InSeriesOrder(const Rules& rules, const std::vector<std::string>& paths);

// What to call each of `paths`, versions of one checkpoint in a listing:
// the folder that tells them apart when that is not the file name
// (checkpoint-500, global_step500), else the step, else the file name.
std::vector<std::string> Labels(const Rules& rules, const std::vector<std::string>& paths);

}  // namespace zipnn::series
