// Reports of an analysis: aligned tables for a terminal, and the same
// figures as data tables for CSV and JSON (docs/analyze.md lists every
// column). Pure functions of an Analysis, apart from the file writes.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "lib/analyze/analysis.h"
#include "lib/base/status.h"

namespace zipnn::analyze {

struct TextOptions {
  size_t top_tensors = 20;  // rows of the tensor table; 0 for all
};

// The terminal report: changes per checkpoint, stored sizes per coder,
// the tensors of the last compared checkpoint, exponent histograms and the
// policy what-if.
std::string TextReport(const Analysis& analysis, const TextOptions& options);

// What changed from one checkpoint to another, tensor by tensor (the
// ScanTensors result): a summary line, then a row per tensor that is not
// frozen (with `all`, every tensor).
std::string DiffText(const std::vector<TensorChange>& changes, bool all);

// One cell of a data table: empty (not applicable), an integer, a real
// number (NaN written as empty) or text.
using Cell = std::variant<std::monostate, uint64_t, int64_t, double, std::string, bool>;

struct DataTable {
  std::string name;  // "checkpoints", "tensors", "exponents", "policies"
  std::vector<std::string> columns;
  std::vector<std::vector<Cell>> rows;
};

// The analysis as four tables with fixed columns (per-group columns only
// for the byte groups that occur).
std::vector<DataTable> DataTables(const Analysis& analysis);

// `path` gets the checkpoints table; the others go beside it, named
// <path without .csv>.<table>.csv. Returns the paths written.
Result<std::vector<std::string>> WriteCsv(const Analysis& analysis, const std::string& path);

// One JSON object: {"format": "git-zipnn-analysis", "version": 1,
// "against", "base_interval", "tensor_filter", and one array of records
// per table}.
Status WriteJson(const Analysis& analysis, const std::string& path);

}  // namespace zipnn::analyze
