#include "lib/analyze/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "lib/base/file.h"
#include "lib/base/progress.h"
#include "lib/base/strings.h"

namespace zipnn::analyze {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Format(const char* fmt, double v) {
  char s[64];
  std::snprintf(s, sizeof s, fmt, v);
  return s;
}

// "12.3%", "0.42%", "-" for not applicable.
std::string Pct(double fraction) {
  if (std::isnan(fraction)) return "-";
  const double p = fraction * 100;
  if (p > 0 && p < 0.005) return "<0.01%";
  return Format(p != 0 && p < 10 ? "%.2f%%" : "%.1f%%", p);
}

std::string Sci(double v) { return std::isnan(v) ? "-" : Format("%.2e", v); }

std::string Ratio(double size, uint64_t raw) { return raw == 0 ? "-" : Pct(size / static_cast<double>(raw)); }

std::string Count(uint64_t n) {
  if (n < 10000) return std::to_string(n);
  if (n < 10000000) return Format("%.1fk", static_cast<double>(n) / 1e3);
  if (n < 10000000000ull) return Format("%.1fM", static_cast<double>(n) / 1e6);
  return Format("%.1fG", static_cast<double>(n) / 1e9);
}

std::string Shape(const std::vector<uint64_t>& shape) { return "[" + JoinDims(shape, ",") + "]"; }

// "  <what>: a b c and 9 more", the first dozen names; nothing for none.
std::string NameList(const char* what, const std::vector<std::string>& names) {
  if (names.empty()) return "";
  std::string line = std::string("  ") + what + ":";
  for (size_t i = 0; i < names.size() && i < 12; ++i) line += " " + names[i];
  if (names.size() > 12) line += " and " + std::to_string(names.size() - 12) + " more";
  return line + "\n";
}

// A text table: the first column left-aligned, the others right-aligned
// unless told otherwise; an optional line above names groups of columns.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void LeftAlign(size_t column) { left_.push_back(column); }
  // `text` starts above column `first`.
  void Group(size_t first, std::string text) { groups_.emplace_back(first, std::move(text)); }

  std::string Render() const {
    std::vector<size_t> width;
    for (const auto& row : rows_) {
      if (width.size() < row.size()) width.resize(row.size(), 0);
      for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    }
    std::string out;
    if (!groups_.empty()) {
      std::string line;
      for (const auto& [first, text] : groups_) {
        size_t at = 0;
        for (size_t c = 0; c < first && c < width.size(); ++c) at += width[c] + (c == 0 ? 0 : 2);
        at += 2;
        if (line.size() < at) line.resize(at, ' ');
        line += text + " ";
      }
      out += "  " + line.substr(0, line.size() - 1) + "\n";
    }
    for (const auto& row : rows_) {
      std::string line;
      for (size_t c = 0; c < row.size(); ++c) {
        const std::string pad(width[c] - row[c].size(), ' ');
        const bool left = c == 0 || std::find(left_.begin(), left_.end(), c) != left_.end();
        line += (c == 0 ? "" : "  ") + (left ? row[c] + pad : pad + row[c]);
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += "  " + line + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<size_t> left_;
  std::vector<std::pair<size_t, std::string>> groups_;
};

std::string AgainstText(const Analysis& a) {
  return a.against == config::DeltaAgainst::kBase
             ? "the periodic base, every " + std::to_string(a.base_interval) + " checkpoints"
             : std::string("the previous checkpoint");
}

std::string IntervalText(uint32_t k) { return k == 0 ? "inf" : std::to_string(k); }

// The last checkpoint compared with a reference: the tensor table's.
std::optional<size_t> LastCompared(const Analysis& a) {
  for (size_t i = a.rows.size(); i-- > 0;) {
    if (a.rows[i].reference) return i;
  }
  return std::nullopt;
}

void ChangesSection(const Analysis& a, const std::vector<int>& slots, std::string& out) {
  out += "Changes against " + AgainstText(a) + ": share of the parameters and of each byte group's bytes\n";
  std::vector<std::string> header = {"checkpoint", "against", "params", "changed"};
  for (int s : slots) header.push_back(SlotLabel(s));
  header.push_back("rel.update");
  header.push_back("frozen");
  TextTable t(std::move(header));
  for (const CheckpointRow& r : a.rows) {
    std::vector<std::string> row = {r.label, r.reference ? a.rows[*r.reference].label : "-", Count(r.parameters),
                                    r.reference ? Pct(r.change.ChangedFraction()) : "-"};
    for (int s : slots) row.push_back(r.reference ? Pct(r.change.GroupChangedFraction(s)) : "-");
    row.push_back(r.reference ? Sci(r.change.RelativeUpdate()) : "-");
    row.push_back(r.reference ? std::to_string(r.frozen_tensors) + "/" + std::to_string(r.tensors) : "-");
    t.Add(std::move(row));
  }
  out += t.Render();
  // Tensors matched by name are compared above; those under other names
  // whose bytes the reference holds are said apart.
  for (const CheckpointRow& r : a.rows) {
    if (!r.reference || r.shared_tensors == 0) continue;
    out += r.label + ": " + Counted(r.shared_tensors, "tensor") + " (" + HumanBytes(r.shared_bytes) + ") " +
           (r.shared_tensors == 1 ? "is " : "are ") + a.rows[*r.reference].label + "'s bytes under other names\n";
  }
}

void SizesSection(const Analysis& a, std::string& out) {
  out +=
      "\nStored size as a share of raw: huff = Huffman only, zstd = zstd only, auto = the auto rule,\n"
      "xor, diff, alone = the auto rule with every delta chunk XORed, taken as a difference, or coded on its own,\n"
      "H0 = order-0 entropy bound of the byte groups\n";
  out += a.transform == codec::kAutoTransform
             ? "(the other delta columns take each chunk the smallest of those ways, as the store does)\n"
             : std::string("(the other delta columns take every delta chunk as ") +
                   codec::TransformPolicyName(a.transform) + ": .zipnn.yaml sets delta_transform)\n";
  const std::string k = std::to_string(a.base_interval);
  std::vector<std::string> header = {"checkpoint", "raw", "huff", "zstd", "auto", "H0", "huff", "zstd"};
  for (const codec::TransformInfo& info : codec::kTransforms) header.push_back(info.short_name);
  const size_t base_column = header.size() + 2;
  header.insert(header.end(), {"auto", "H0", "base", "huff", "zstd", "auto", "H0"});
  TextTable t(std::move(header));
  t.Group(2, "standalone");
  t.Group(6, "delta vs previous");
  t.Group(base_column, "delta vs base (every " + k + ")");
  auto sizes = [](const Sizes& s, uint64_t raw, bool transforms, std::vector<std::string>& row) {
    std::vector<double> shown = {static_cast<double>(s.huffman), static_cast<double>(s.zstd)};
    if (transforms) shown.insert(shown.end(), s.by_transform.begin(), s.by_transform.end());
    shown.insert(shown.end(), {static_cast<double>(s.automatic), s.bound});
    for (double v : shown) row.push_back(s.measured ? Ratio(v, raw) : "-");
  };
  for (const CheckpointRow& r : a.rows) {
    std::vector<std::string> row = {r.label, HumanBytes(r.raw_bytes)};
    sizes(r.standalone, r.raw_bytes, false, row);
    sizes(r.vs_previous, r.raw_bytes, true, row);
    row.push_back(r.base ? a.rows[*r.base].label : "-");
    sizes(r.vs_base, r.raw_bytes, false, row);
    t.Add(std::move(row));
  }
  out += t.Render();
}

void TensorsSection(const Analysis& a, const std::vector<int>& slots, const TextOptions& o, std::string& out) {
  const std::optional<size_t> at = LastCompared(a);
  if (!at) return;
  const CheckpointRow& r = a.rows[*at];
  std::vector<const TensorChange*> moved, frozen, other;
  for (const TensorChange& t : a.tensors) {
    if (t.checkpoint != *at) continue;
    (t.status == TensorStatus::kChanged ? moved : t.status == TensorStatus::kFrozen ? frozen : other).push_back(&t);
  }
  std::stable_sort(moved.begin(), moved.end(), [](const TensorChange* x, const TensorChange* y) {
    const double ux = x->stats.RelativeUpdate(), uy = y->stats.RelativeUpdate();
    if (std::isnan(uy)) return !std::isnan(ux);
    return !std::isnan(ux) && ux > uy;
  });
  const size_t shown = o.top_tensors == 0 ? moved.size() : std::min(o.top_tensors, moved.size());
  out += "\nTensors of " + r.label + " against " + a.rows[*r.reference].label + ": " + std::to_string(moved.size()) +
         " changed" + (shown < moved.size() ? " (the " + std::to_string(shown) + " that moved most)" : "") + ", " +
         std::to_string(frozen.size()) + " frozen, " + std::to_string(other.size()) + " added, removed or reshaped\n";
  std::vector<std::string> header = {"tensor", "dtype", "shape", "changed"};
  for (int s : slots) header.push_back(SlotLabel(s));
  header.push_back("rel.update");
  TextTable t(std::move(header));
  t.LeftAlign(1);
  t.LeftAlign(2);
  for (size_t i = 0; i < shown; ++i) {
    const TensorChange& c = *moved[i];
    std::vector<std::string> row = {c.tensor.name, std::string(codec::DTypeName(c.tensor.dtype)), Shape(c.tensor.shape),
                                    Pct(c.stats.ChangedFraction())};
    for (int s : slots) row.push_back(Pct(c.stats.GroupChangedFraction(s)));
    row.push_back(Sci(c.stats.RelativeUpdate()));
    t.Add(std::move(row));
  }
  out += t.Render();
  std::vector<std::string> frozen_names, other_names;
  for (const TensorChange* t : frozen) frozen_names.push_back(t->tensor.name);
  for (const TensorChange* t : other) other_names.push_back(t->tensor.name + " (" + TensorStatusName(t->status) + ")");
  out += NameList("frozen", frozen_names) + NameList("other", other_names);
}

void ExponentsSection(const Analysis& a, std::string& out) {
  if (!a.histogram_at) return;
  for (const ExponentHistogram& h : a.histograms) {
    out += "\nExponents of the " + std::string(codec::DTypeName(h.dtype)) + " values of " +
           a.rows[*a.histogram_at].label + " (" + Count(h.total) + " elements)\n";
    TextTable t({"exponent", "count", "share", ""});
    t.LeftAlign(3);
    const size_t top = h.counts.size() - 1;
    uint64_t most = 0;
    for (uint64_t c : h.counts) most = std::max(most, c);
    for (size_t e = 0; e < h.counts.size(); ++e) {
      if (h.counts[e] == 0) continue;
      const std::string name = e == 0 ? "0/sub"
                               : e == top && h.dtype != codec::DType::kF8E4M3
                                   ? "inf/nan"
                                   : "2^" + std::to_string(static_cast<int>(e) - h.bias);
      const double share = static_cast<double>(h.counts[e]) / static_cast<double>(h.total);
      const size_t bar = static_cast<size_t>(std::lround(40.0 * static_cast<double>(h.counts[e]) / most));
      t.Add({name, std::to_string(h.counts[e]), Pct(share), std::string(bar, '#')});
    }
    out += t.Render();
  }
}

double Fraction(uint64_t part, uint64_t whole) {
  return whole == 0 ? kNaN : static_cast<double>(part) / static_cast<double>(whole);
}

uint64_t RawBytes(const Analysis& a) {
  uint64_t raw = 0;
  for (const CheckpointRow& r : a.rows) raw += r.raw_bytes;
  return raw;
}

// A what-if row as the lines of .zipnn.yaml that choose it (its max_chain
// is the one those give).
std::string PolicyLines(const PolicyOutcome& p) {
  return std::string("`newest: ") + NewestName(p.newest) +
         "`, `base_interval: " + (p.base_interval == 0 ? std::string("1000000") : std::to_string(p.base_interval)) +
         "`, `delta_against: " + AgainstName(p.against) + "`";
}

// What the policy what-if comes to: the row that stores least with
// restores and a clone of the last checkpoint as fast as the policy in
// use, and, when another stores less still, what that one costs.
std::string PolicySuggestion(const std::vector<PolicyOutcome>& rows, uint64_t raw) {
  const auto now = std::find_if(rows.begin(), rows.end(), [](const PolicyOutcome& p) { return p.current; });
  if (now == rows.end()) return "";
  const PolicyOutcome* as_fast = &*now;
  const PolicyOutcome* least = &*now;
  for (const PolicyOutcome& p : rows) {
    if (p.stored_bytes < least->stored_bytes) least = &p;
    if (p.worst_chain <= now->worst_chain && p.latest_bytes <= now->latest_bytes &&
        p.stored_bytes < as_fast->stored_bytes) {
      as_fast = &p;
    }
  }
  std::string out;
  if (as_fast == &*now) {
    out += "  The policy in use (*) stores least of those whose restores and clones are as fast.\n";
  } else {
    out += "  Stores least with restores and clones as fast as now: " + PolicyLines(*as_fast) + " in .zipnn.yaml, " +
           HumanBytes(as_fast->stored_bytes) + " (" + Percent(as_fast->stored_bytes, raw) +
           ") where the policy in use stores " + HumanBytes(now->stored_bytes) + ".\n";
  }
  if (least != as_fast && least->stored_bytes < as_fast->stored_bytes) {
    out += "  Stores least of all: " + PolicyLines(*least) + ", " + HumanBytes(least->stored_bytes) + " (" +
           Percent(least->stored_bytes, raw) + "), with restores decoding up to " + std::to_string(least->worst_chain) +
           " deltas and a clone of the last checkpoint fetching " + HumanBytes(least->latest_bytes) + ".\n";
  }
  return out;
}

void PoliciesSection(const Analysis& a, std::string& out) {
  if (a.policies.empty()) return;
  const uint64_t raw = RawBytes(a);
  out += "\nPolicy what-if: what the store would hold for these " + std::to_string(a.rows.size()) +
         " checkpoints (chain = deltas the costliest restore decodes; latest = what a clone of the last one "
         "fetches; * = .zipnn.yaml)\n";
  TextTable t(
      {"newest", "base every", "delta against", "max chain", "bases", "stored", "of raw", "latest", "chain", ""});
  t.LeftAlign(0);
  t.LeftAlign(2);
  for (const PolicyOutcome& p : a.policies) {
    t.Add({NewestName(p.newest), IntervalText(p.base_interval), AgainstName(p.against),
           p.max_chain == kNoChainLimit ? "-" : std::to_string(p.max_chain), std::to_string(p.bases),
           HumanBytes(p.stored_bytes), Percent(p.stored_bytes, raw), HumanBytes(p.latest_bytes),
           std::to_string(p.worst_chain), p.current ? "*" : ""});
  }
  out += t.Render();
  out += PolicySuggestion(a.policies, raw);
}

// "absolute" or "relative", as the thinning table's kind column says it.
const char* KindName(const codec::Precision& p) {
  return p.kind == codec::Precision::Kind::kAbsolute ? "absolute" : "relative";
}

void ThinningSection(const Analysis& a, std::string& out) {
  if (a.thinning.empty()) return;
  const uint64_t raw = RawBytes(a);
  out += "\nThinning what-if: these " + std::to_string(a.rows.size()) +
         " checkpoints with their float tensors rounded, as `git zipnn retain` thins them, a base every " +
         std::to_string(a.base_interval) + " and deltas against the previous (errors over every float value)\n";
  TextTable t({"precision", "stored", "of raw", "of exact", "rounded", "to zero", "max abs error", "max rel error",
               "bound"});
  t.LeftAlign(0);
  t.LeftAlign(8);
  t.Add({"exact", HumanBytes(a.exact_stored), Percent(a.exact_stored, raw), "100.0%", "-", "-", "0", "0", ""});
  for (const ThinningOutcome& o : a.thinning) {
    const bool absolute = o.precision.kind == codec::Precision::Kind::kAbsolute;
    t.Add({o.precision.Text(), HumanBytes(o.stored_bytes), Percent(o.stored_bytes, raw),
           Percent(o.stored_bytes, a.exact_stored), Pct(Fraction(o.changed, o.values)),
           Pct(Fraction(o.zeroed, o.values)), Sci(o.max_abs), Sci(o.max_rel),
           Sci(o.precision.Bound()) + (absolute ? " absolute" : " of |x|")});
  }
  out += t.Render();
  // An optimizer's state apart, where the checkpoints hold one.
  if (a.thinning.front().optimizer.values == 0) return;
  out += "  of which the optimizer's state (tensors named optimizer...), the rest the model's:\n";
  TextTable parts({"precision", "part", "values", "rounded", "to zero", "max abs error", "max rel error"});
  parts.LeftAlign(0);
  parts.LeftAlign(1);
  for (const ThinningOutcome& o : a.thinning) {
    auto add = [&](const std::string& precision, const char* name, const ThinPart& part) {
      parts.Add({precision, name, std::to_string(part.values), Pct(Fraction(part.changed, part.values)),
                 Pct(Fraction(part.zeroed, part.values)), Sci(part.max_abs), Sci(part.max_rel)});
    };
    add(o.precision.Text(), "optimizer", o.optimizer);
    add("", "model", o.model);
  }
  out += parts.Render();
}

// --- data tables ---

Cell Maybe(bool have, Cell c) { return have ? c : Cell{}; }

// The columns of AddSizes, each name after `prefix`.
void AddSizeColumns(const std::string& prefix, bool delta, std::vector<std::string>& columns) {
  for (const char* c : {"huffman", "zstd"}) columns.push_back(prefix + c);
  if (delta) {
    for (const codec::TransformInfo& info : codec::kTransforms) columns.push_back(prefix + info.name);
  }
  for (const char* c : {"auto", "bound"}) columns.push_back(prefix + c);
}

// The standalone sizes have no columns per delta transform.
void AddSizes(const Sizes& s, bool delta, std::vector<Cell>& row) {
  row.push_back(Maybe(s.measured, s.huffman));
  row.push_back(Maybe(s.measured, s.zstd));
  if (delta) {
    for (uint64_t size : s.by_transform) row.push_back(Maybe(s.measured, size));
  }
  row.push_back(Maybe(s.measured, s.automatic));
  row.push_back(Maybe(s.measured, s.bound));
}

DataTable CheckpointsTable(const Analysis& a, const std::vector<int>& slots) {
  DataTable t{"checkpoints",
              {"index", "label", "source", "subject", "id", "format", "raw_bytes", "tensors", "parameters",
               "reference_index", "reference_label", "changed_params"},
              {}};
  for (int s : slots) t.columns.push_back("changed_" + SlotLabel(s));
  for (const char* c : {"relative_update", "non_finite", "changed_tensors", "frozen_tensors", "added_tensors",
                        "removed_tensors", "reshaped_tensors", "shared_tensors", "shared_bytes"}) {
    t.columns.push_back(c);
  }
  AddSizeColumns("standalone_", false, t.columns);
  AddSizeColumns("previous_", true, t.columns);
  for (const char* c : {"base_index", "base_label", "base_distance"}) t.columns.push_back(c);
  AddSizeColumns("base_", true, t.columns);
  for (const CheckpointRow& r : a.rows) {
    const bool ref = r.reference.has_value();
    std::vector<Cell> row = {uint64_t{r.index},
                             r.label,
                             r.source,
                             r.subject,
                             r.id,
                             r.format,
                             r.raw_bytes,
                             r.tensors,
                             r.parameters,
                             Maybe(ref, uint64_t{r.reference.value_or(0)}),
                             Maybe(ref, ref ? a.rows[*r.reference].label : ""),
                             Maybe(ref, r.change.ChangedFraction())};
    for (int s : slots) row.push_back(Maybe(ref, r.change.GroupChangedFraction(s)));
    row.push_back(Maybe(ref, r.change.RelativeUpdate()));
    for (uint64_t n : {r.change.non_finite, r.changed_tensors, r.frozen_tensors, r.added_tensors, r.removed_tensors,
                       r.reshaped_tensors, r.shared_tensors, r.shared_bytes}) {
      row.push_back(Maybe(ref, n));
    }
    AddSizes(r.standalone, false, row);
    AddSizes(r.vs_previous, true, row);
    const bool base = r.base.has_value();
    row.push_back(Maybe(base, uint64_t{r.base.value_or(0)}));
    row.push_back(Maybe(base, base ? a.rows[*r.base].label : ""));
    row.push_back(Maybe(base, uint64_t{r.index - r.base.value_or(0)}));
    AddSizes(r.vs_base, true, row);
    t.rows.push_back(std::move(row));
  }
  return t;
}

DataTable TensorsTable(const Analysis& a, const std::vector<int>& slots) {
  DataTable t{"tensors",
              {"checkpoint_index", "checkpoint_label", "tensor", "dtype", "shape", "status", "elements", "changed",
               "changed_fraction"},
              {}};
  for (int s : slots) t.columns.push_back("changed_" + SlotLabel(s));
  for (const char* c : {"relative_update", "update_norm", "reference_norm", "non_finite"}) t.columns.push_back(c);
  for (const TensorChange& c : a.tensors) {
    const bool compared = c.status == TensorStatus::kChanged || c.status == TensorStatus::kFrozen;
    const bool counted = c.status != TensorStatus::kRemoved;
    std::vector<Cell> row = {uint64_t{c.checkpoint},
                             a.rows[c.checkpoint].label,
                             c.tensor.name,
                             std::string(codec::DTypeName(c.tensor.dtype)),
                             JoinDims(c.tensor.shape, "x"),
                             std::string(TensorStatusName(c.status)),
                             Maybe(counted, c.stats.elements),
                             Maybe(counted, c.stats.changed),
                             Maybe(counted, c.stats.ChangedFraction())};
    for (int s : slots) row.push_back(Maybe(counted, c.stats.GroupChangedFraction(s)));
    const bool floats = compared && c.stats.float_elements > 0;
    row.push_back(Maybe(floats, c.stats.RelativeUpdate()));
    row.push_back(Maybe(floats, std::sqrt(c.stats.diff_sq)));
    row.push_back(Maybe(floats, std::sqrt(c.stats.ref_sq)));
    row.push_back(Maybe(floats, c.stats.non_finite));
    t.rows.push_back(std::move(row));
  }
  return t;
}

DataTable ExponentsTable(const Analysis& a) {
  DataTable t{
      "exponents",
      {"checkpoint_index", "checkpoint_label", "dtype", "biased_exponent", "exponent", "kind", "count", "share"},
      {}};
  if (!a.histogram_at) return t;
  for (const ExponentHistogram& h : a.histograms) {
    const size_t top = h.counts.size() - 1;
    for (size_t e = 0; e < h.counts.size(); ++e) {
      if (h.counts[e] == 0) continue;
      const bool special = e == 0 || (e == top && h.dtype != codec::DType::kF8E4M3);
      t.rows.push_back({uint64_t{*a.histogram_at}, a.rows[*a.histogram_at].label,
                        std::string(codec::DTypeName(h.dtype)), uint64_t{e},
                        Maybe(!special, int64_t{static_cast<int64_t>(e) - h.bias}),
                        std::string(e == 0    ? "zero/subnormal"
                                    : special ? "inf/nan"
                                              : "normal"),
                        h.counts[e], Fraction(h.counts[e], h.total)});
    }
  }
  return t;
}

DataTable PoliciesTable(const Analysis& a) {
  DataTable t{"policies",
              {"newest", "base_interval", "against", "max_chain", "current", "bases", "stored_bytes", "stored_share",
               "latest_bytes", "worst_chain"},
              {}};
  const uint64_t raw = RawBytes(a);
  const double inf = std::numeric_limits<double>::infinity();
  for (const PolicyOutcome& p : a.policies) {
    t.rows.push_back(
        {std::string(NewestName(p.newest)), p.base_interval == 0 ? Cell{inf} : Cell{uint64_t{p.base_interval}},
         std::string(AgainstName(p.against)), p.max_chain == kNoChainLimit ? Cell{inf} : Cell{uint64_t{p.max_chain}},
         p.current, p.bases, p.stored_bytes, Fraction(p.stored_bytes, raw), p.latest_bytes, int64_t{p.worst_chain}});
  }
  return t;
}

DataTable ThinningTable(const Analysis& a) {
  DataTable t{"thinning",
              {"precision", "kind", "bits", "stored_bytes", "stored_share", "of_exact", "rounded_values", "float_values",
               "max_abs_error", "max_rel_error", "bound", "zeroed_values", "optimizer_values",
               "optimizer_rounded_values", "optimizer_zeroed_values", "optimizer_max_abs_error",
               "optimizer_max_rel_error"},
              {}};
  if (a.thinning.empty()) return t;
  const uint64_t raw = RawBytes(a);
  t.rows.push_back({std::string("exact"), std::string("exact"), Cell{}, a.exact_stored, Fraction(a.exact_stored, raw),
                    1.0, uint64_t{0}, Cell{}, 0.0, 0.0, 0.0, uint64_t{0}, Cell{}, uint64_t{0}, uint64_t{0}, 0.0, 0.0});
  for (const ThinningOutcome& o : a.thinning) {
    const ThinPart& opt = o.optimizer;
    t.rows.push_back({o.precision.Text(), std::string(KindName(o.precision)), int64_t{o.precision.bits},
                      o.stored_bytes, Fraction(o.stored_bytes, raw), Fraction(o.stored_bytes, a.exact_stored),
                      o.changed, o.values, o.max_abs, o.max_rel, o.precision.Bound(), o.zeroed, opt.values,
                      opt.changed, opt.zeroed, opt.max_abs, opt.max_rel});
  }
  return t;
}

std::string CsvField(const Cell& c) {
  struct Visit {
    std::string operator()(std::monostate) const { return ""; }
    std::string operator()(uint64_t v) const { return std::to_string(v); }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(double v) const {
      if (std::isnan(v)) return "";
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      return Format("%.10g", v);
    }
    std::string operator()(const std::string& s) const {
      if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
      std::string q = "\"";
      for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      return q + "\"";
    }
  };
  return std::visit(Visit{}, c);
}

nlohmann::ordered_json JsonValue(const Cell& c) {
  struct Visit {
    nlohmann::ordered_json operator()(std::monostate) const { return nullptr; }
    nlohmann::ordered_json operator()(uint64_t v) const { return v; }
    nlohmann::ordered_json operator()(int64_t v) const { return v; }
    nlohmann::ordered_json operator()(bool v) const { return v; }
    nlohmann::ordered_json operator()(double v) const {
      if (!std::isfinite(v)) return nullptr;
      return v;
    }
    nlohmann::ordered_json operator()(const std::string& s) const { return s; }
  };
  return std::visit(Visit{}, c);
}

Status WriteText(const std::string& path, const std::string& text) {
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(path, /*overwrite=*/true));
  ZIPNN_RETURN_IF_ERROR(out.Append(text.data(), text.size()));
  return out.CommitUnsynced();
}

}  // namespace

std::string TextReport(const Analysis& a, const TextOptions& o) {
  if (a.rows.empty()) return "no checkpoints to analyse\n";
  // The terminal shows the floating-point groups the papers study; the
  // bytes of integer tensors (step counters) are in the data tables.
  const std::vector<int> slots = SlotsPresent(a, /*floats_only=*/true);
  std::string out;
  ChangesSection(a, slots, out);
  SizesSection(a, out);
  TensorsSection(a, slots, o, out);
  ExponentsSection(a, out);
  PoliciesSection(a, out);
  ThinningSection(a, out);
  return out;
}

std::string DiffText(const std::vector<TensorChange>& changes, bool all) {
  if (changes.empty()) return "no tensors on either side to compare\n";
  ChangeStats total;
  std::array<uint64_t, 5> by_status{};
  std::array<bool, kGroupSlots> present{};
  for (const TensorChange& c : changes) {
    ++by_status[static_cast<size_t>(c.status)];
    if (c.status != TensorStatus::kRemoved) total.Add(c.stats);
    for (int s = 0; s < kGroupSlots; ++s) present[s] = present[s] || c.stats.group_bytes[s] > 0;
  }
  std::vector<int> slots;
  for (int s : SlotOrder()) {
    if (present[s] && IsFloatSlot(s)) slots.push_back(s);
  }
  std::string out = std::to_string(changes.size()) +
                    " tensors: " + std::to_string(by_status[static_cast<size_t>(TensorStatus::kChanged)]) +
                    " changed, " + std::to_string(by_status[static_cast<size_t>(TensorStatus::kFrozen)]) + " frozen, " +
                    std::to_string(by_status[static_cast<size_t>(TensorStatus::kAdded)]) + " added, " +
                    std::to_string(by_status[static_cast<size_t>(TensorStatus::kRemoved)]) + " removed, " +
                    std::to_string(by_status[static_cast<size_t>(TensorStatus::kReshaped)]) + " reshaped\n";
  out += Pct(total.ChangedFraction()) + " of " + Count(total.elements) + " parameters changed, relative update " +
         Sci(total.RelativeUpdate()) + "\n";
  std::vector<std::string> header = {"tensor", "dtype", "shape", "status", "changed"};
  for (int s : slots) header.push_back(SlotLabel(s));
  header.push_back("rel.update");
  TextTable t(std::move(header));
  t.LeftAlign(1);
  t.LeftAlign(2);
  t.LeftAlign(3);
  std::vector<std::string> hidden;
  for (const TensorChange& c : changes) {
    if (c.status == TensorStatus::kFrozen && !all) {
      hidden.push_back(c.tensor.name);
      continue;
    }
    const bool counted = c.status != TensorStatus::kRemoved;
    const bool compared = c.status == TensorStatus::kChanged || c.status == TensorStatus::kFrozen;
    std::string dtype(codec::DTypeName(c.tensor.dtype)), shape = Shape(c.tensor.shape);
    if (c.status == TensorStatus::kReshaped) {
      dtype = std::string(codec::DTypeName(c.before.dtype)) + (c.before.dtype == c.tensor.dtype ? "" : "->" + dtype);
      shape = Shape(c.before.shape) + "->" + shape;
    }
    std::vector<std::string> row = {c.tensor.name, dtype, shape, TensorStatusName(c.status),
                                    counted ? Pct(c.stats.ChangedFraction()) : "-"};
    for (int s : slots) row.push_back(compared ? Pct(c.stats.GroupChangedFraction(s)) : "-");
    row.push_back(compared ? Sci(c.stats.RelativeUpdate()) : "-");
    t.Add(std::move(row));
  }
  out += t.Render();
  out += NameList("unchanged", hidden);
  return out;
}

std::vector<DataTable> DataTables(const Analysis& a) {
  const std::vector<int> slots = SlotsPresent(a, /*floats_only=*/false);
  return {CheckpointsTable(a, slots), TensorsTable(a, slots), ExponentsTable(a), PoliciesTable(a), ThinningTable(a)};
}

Result<std::vector<std::string>> WriteCsv(const Analysis& a, const std::string& path) {
  const std::string stem =
      path.size() > 4 && path.compare(path.size() - 4, 4, ".csv") == 0 ? path.substr(0, path.size() - 4) : path;
  std::vector<std::string> written;
  for (const DataTable& t : DataTables(a)) {
    std::string text;
    for (size_t c = 0; c < t.columns.size(); ++c) text += (c ? "," : "") + t.columns[c];
    text += "\n";
    for (const auto& row : t.rows) {
      for (size_t c = 0; c < row.size(); ++c) text += (c ? "," : "") + CsvField(row[c]);
      text += "\n";
    }
    const std::string file = t.name == "checkpoints" ? path : stem + "." + t.name + ".csv";
    ZIPNN_RETURN_IF_ERROR(WriteText(file, text));
    written.push_back(file);
  }
  return written;
}

Status WriteJson(const Analysis& a, const std::string& path) {
  nlohmann::ordered_json doc = {{"format", "git-zipnn-analysis"},
                                {"version", 1},
                                {"against", AgainstName(a.against)},
                                {"base_interval", a.base_interval},
                                {"tensor_filter", a.tensor_filter}};
  for (const DataTable& t : DataTables(a)) {
    nlohmann::ordered_json records = nlohmann::ordered_json::array();
    for (const auto& row : t.rows) {
      nlohmann::ordered_json record = nlohmann::ordered_json::object();
      for (size_t c = 0; c < row.size(); ++c) record[t.columns[c]] = JsonValue(row[c]);
      records.push_back(std::move(record));
    }
    doc[t.name] = std::move(records);
  }
  return WriteText(path, doc.dump(1) + "\n");
}

}  // namespace zipnn::analyze
