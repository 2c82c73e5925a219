// analyze's use case: how the weights moved over a trajectory of
// checkpoints (files on disk in the order of their series, the history of
// a tracked checkpoint, or its step-numbered series in git), and what
// each coder and storage policy would store for it (lib/analyze).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "lib/analyze/analysis.h"
#include "lib/base/status.h"
#include "lib/ops/context.h"

namespace zipnn::ops {

struct AnalyzeRequest {
  std::vector<std::string> paths;  // one tracked checkpoint, or files of one series
  std::string rev;                 // the history's range (a tracked checkpoint only)
  std::string tensors, tensors_regex;
  std::string against = "previous";  // or "base"
  uint32_t base_interval = 0;        // 0: the policy's
  std::string at;
  bool as_given = false;          // files of several series compared in the order given
  std::vector<std::string> thin;  // precisions of the thinning what-if; "none"
  int threads = 0;
};

// Whether the request names files on disk rather than one tracked
// checkpoint.
bool OnDisk(const AnalyzeRequest& request);

// `left_out` hears of each version retention thinned or dropped, left out
// of the trajectory: its label and why, in its own words.
using OnLeftOut = std::function<void(const std::string& label, const std::string& why)>;
struct AnalyzeResult {
  analyze::Analysis analysis;
  bool on_disk = false;  // files on disk, not one tracked checkpoint
};
Result<AnalyzeResult> Analyze(Context& context, const AnalyzeRequest& request, const OnLeftOut& left_out);

}  // namespace zipnn::ops
