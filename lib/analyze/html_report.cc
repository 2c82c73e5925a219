#include "lib/analyze/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/base/progress.h"
#include "lib/codec/dtype.h"

namespace zipnn::analyze {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kWidth = 960;      // every chart's width in px; CSS scales it down
constexpr double kLeft = 72;        // room for the value axis's labels
constexpr size_t kLabelChars = 14;  // longer axis labels keep their tail
constexpr size_t kNameChars = 56;   // tensor names beside bars likewise
constexpr size_t kTopTensors = 20;
constexpr size_t kFrozenListed = 200;

// Paul Tol's "muted" scheme: told apart by people with colour-blindness too.
// Series past its end are drawn dashed.
constexpr const char* kPalette[] = {"#cc6677", "#332288", "#44aa99", "#999933", "#882255",
                                    "#88ccee", "#117733", "#aa4499", "#ddcc77"};
constexpr size_t kColours = sizeof kPalette / sizeof kPalette[0];
constexpr const char* kBarFill = "#88a4c4";
constexpr const char* kHighlightFill = "#cc6677";

constexpr const char* kCss = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: #222; max-width: 1040px; margin: 1.5em auto; padding: 0 1em; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }  h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
svg { display: block; max-width: 100%; height: auto; margin: 0.6em 0; }
svg text { font-size: 11px; fill: #444; }  svg .title { font-size: 13px; font-weight: 600; fill: #222; }
svg .grid { stroke: #ececec; }  svg .axis { stroke: #999; }  svg .empty { font-size: 15px; fill: #999; }
.meta, .note { color: #555; }  .wide { overflow-x: auto; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.6em 0; }
th, td { padding: 2px 8px; border-bottom: 1px solid #eee; text-align: left; white-space: nowrap; }
th { background: #f6f6f6; }  .n { text-align: right; font-variant-numeric: tabular-nums; }
tr.current td { background: #f8eef0; font-weight: 600; }
)";

// Length of the character at s[i] when it is valid UTF-8 and one XML 1.0
// admits; 0 otherwise. Labels and names come from user files and commits,
// and one stray byte would make the page unparsable as XML.
int XmlCharLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const unsigned c = byte(0);
  if (c < 0x80) return c >= 0x20 || c == '\t' || c == '\n' || c == '\r' ? 1 : 0;
  const int len = c >= 0xC2 && c <= 0xDF ? 2 : (c & 0xF0) == 0xE0 ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  unsigned cp = c & (0x7F >> len);
  for (int k = 1; k < len; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (byte(k) & 0x3F);
  }
  if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF) || cp >= 0xFFFE)) return 0;
  if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
  return len;
}

// Text and attribute values: markup characters escaped, and what XML does
// not admit replaced by U+FFFD.
std::string Esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const int len = XmlCharLength(s, i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    switch (s[i]) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

// Keeps the last `n` bytes (on a character boundary): the tail of a tensor
// name or step label is what tells neighbours apart.
std::string Tail(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  size_t from = s.size() - (n - 1);
  while (from < s.size() && (static_cast<unsigned char>(s[from]) & 0xC0) == 0x80) ++from;
  return "\xE2\x80\xA6" + s.substr(from);
}

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// An SVG coordinate. The charts leave out non-finite values before they get
// here; this is the last guard that keeps "nan" out of the markup.
std::string Px(double v) {
  if (!std::isfinite(v)) v = 0;
  std::string s = Fmt("%.1f", std::clamp(v, -1e6, 1e6));
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

// Table cells: a dash where there is no value.
constexpr const char* kDash = "\xE2\x80\x93";
std::string PctCell(double fraction) { return std::isfinite(fraction) ? Fmt("%.2f%%", 100 * fraction) : kDash; }
std::string NumCell(double v) { return std::isfinite(v) ? Fmt("%.3g", v) : kDash; }

// Stored size as a percentage of raw; NaN when there is nothing to plot.
double StoredPct(const Sizes& s, double stored, uint64_t raw) {
  return s.measured && raw > 0 ? 100.0 * stored / static_cast<double>(raw) : kNaN;
}

// A value axis: [lo, hi] in axis units (decimal exponents on a log axis)
// with its tick positions.
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  int decimals = 0;
  std::vector<double> ticks;

  double Unit(double v) const { return log ? std::log10(v) : v; }
  double Frac(double v) const { return std::clamp((Unit(v) - lo) / (hi - lo), 0.0, 1.0); }
  double TickFrac(double t) const { return (t - lo) / (hi - lo); }
  std::string Label(double t) const {
    if (!log) return Fmt(("%." + std::to_string(decimals) + "f").c_str(), t);
    return t >= -3 && t <= 3 ? Fmt("%g", std::pow(10, t)) : Fmt("1e%.0f", t);
  }
};

// About five ticks at 1, 2 or 5 times a power of ten, covering [lo, hi].
Axis LinearAxis(double lo, double hi) {
  if (!(hi > lo)) hi = lo + 1;  // a flat series still gets a scale
  const double raw = (hi - lo) / 5;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  const double r = raw / magnitude;
  const double step = magnitude * (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10);
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  Axis a;
  a.lo = first * step;
  a.hi = last * step;
  // Counting steps rather than adding them keeps 0.1 * 3 from drifting.
  for (double k = first; k <= last; ++k) a.ticks.push_back(k * step);
  a.decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
  return a;
}

// Whole decades around [lo, hi] (both > 0), at most about eight ticks.
Axis LogAxis(double lo, double hi) {
  Axis a;
  a.log = true;
  a.lo = std::floor(std::log10(lo));
  a.hi = std::max(a.lo + 1, std::ceil(std::log10(hi)));
  const double every = std::ceil((a.hi - a.lo) / 8);
  for (double e = a.lo; e <= a.hi; e += every) a.ticks.push_back(e);
  return a;
}

std::string SeriesStroke(size_t k) {
  std::string s = std::string("stroke=\"") + kPalette[k % kColours] + "\"";
  if (k >= kColours) s += " stroke-dasharray=\"6 3\"";
  return s;
}

// The lines of a category label as drawn, each cut to kLabelChars.
std::vector<std::string> LabelLines(const std::string& label) {
  std::vector<std::string> lines;
  for (size_t from = 0, to; from <= label.size(); from = to + 1) {
    to = std::min(label.find('\n', from), label.size());
    lines.push_back(Tail(label.substr(from, to - from), kLabelChars));
  }
  return lines;
}

// Category labels are drawn tilted when a line is wider than its slot;
// charts leave room below the plot for that.
bool Tilted(const std::vector<std::string>& labels, double plot_width) {
  for (const auto& label : labels) {
    for (const auto& line : LabelLines(label)) {
      if (line.size() * 6.5 + 6 > plot_width / labels.size()) return true;
    }
  }
  return false;
}

// One chart: an <svg> of fixed size with its title drawn at the top, and
// the plot area inside its margins.
class Canvas {
 public:
  Canvas(const std::string& id, const std::string& title, double width, double height, double left, double right,
         double top, double bottom)
      : left_(left), top_(top), width_(width - left - right), height_(height - top - bottom) {
    out_ = "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" + Esc(id) + "\" width=\"" + Px(width) + "\" height=\"" +
           Px(height) + "\" viewBox=\"0 0 " + Px(width) + " " + Px(height) + "\" role=\"img\">\n<title>" + Esc(title) +
           "</title>\n";
    Text(left, 18, title, "class=\"title\"");
  }

  double Top() const { return top_; }
  double Width() const { return width_; }
  double Right() const { return left_ + width_; }
  double Bottom() const { return top_ + height_; }
  // Centre of category i of n along x.
  double Centre(size_t i, size_t n) const { return left_ + width_ * (i + 0.5) / n; }
  double X(const Axis& a, double v) const { return left_ + width_ * a.Frac(v); }
  double Y(const Axis& a, double v) const { return Bottom() - height_ * a.Frac(v); }

  void Line(double x1, double y1, double x2, double y2, const std::string& attrs) {
    out_ += "<line x1=\"" + Px(x1) + "\" y1=\"" + Px(y1) + "\" x2=\"" + Px(x2) + "\" y2=\"" + Px(y2) + "\" " + attrs +
            "/>\n";
  }
  void Text(double x, double y, const std::string& text, const std::string& attrs = "") {
    out_ += "<text x=\"" + Px(x) + "\" y=\"" + Px(y) + "\" " + attrs + ">" + Esc(text) + "</text>\n";
  }
  void Rect(double x, double y, double w, double h, const char* fill, const std::string& tip) {
    out_ += "<rect x=\"" + Px(x) + "\" y=\"" + Px(y) + "\" width=\"" + Px(std::max(w, 0.0)) + "\" height=\"" +
            Px(std::max(h, 0.0)) + "\" fill=\"" + fill + "\"><title>" + Esc(tip) + "</title></rect>\n";
  }
  void Add(const std::string& markup) { out_ += markup; }
  std::string Finish() { return out_ + "</svg>\n"; }

  // The chart with a note in place of a plot.
  std::string NoData() {
    Text((left_ + Right()) / 2, (top_ + Bottom()) / 2, "no data", "class=\"empty\" text-anchor=\"middle\"");
    return Finish();
  }

  // Grid lines and tick labels of a value axis: along y, or along x for
  // horizontal bars.
  void ValueAxis(const Axis& a, const std::string& label, bool along_x = false) {
    for (double t : a.ticks) {
      if (along_x) {
        const double x = left_ + width_ * a.TickFrac(t);
        Line(x, top_, x, Bottom(), "class=\"grid\"");
        Text(x, Bottom() + 14, a.Label(t), "text-anchor=\"middle\"");
      } else {
        const double y = Bottom() - height_ * a.TickFrac(t);
        Line(left_, y, Right(), y, "class=\"grid\"");
        Text(left_ - 6, y + 4, a.Label(t), "text-anchor=\"end\"");
      }
    }
    Line(left_, Bottom(), Right(), Bottom(), "class=\"axis\"");
    Line(left_, top_, left_, Bottom(), "class=\"axis\"");
    if (along_x) {
      Text((left_ + Right()) / 2, Bottom() + 34, label, "text-anchor=\"middle\"");
    } else {
      const double x = 14, y = (top_ + Bottom()) / 2;
      Text(x, y, label, "text-anchor=\"middle\" transform=\"rotate(-90 " + Px(x) + " " + Px(y) + ")\"");
    }
  }

  // Category labels under the plot ('\n' starts a new line). Labels wider
  // than their slot are tilted, and thinned out where even that crowds.
  void CategoryAxis(const std::vector<std::string>& labels) {
    const size_t n = labels.size();
    const double slot = width_ / n;
    const bool tilt = Tilted(labels, width_);
    // Tilted labels 22px apart along the axis sit 14px apart across it.
    const size_t every = tilt ? static_cast<size_t>(std::ceil(22 / slot)) : 1;
    for (size_t i = 0; i < n; i += every) {
      const double x = Centre(i, n), y = Bottom() + 14;
      const std::vector<std::string> lines = LabelLines(labels[i]);
      if (tilt) {
        std::string one = lines[0];
        for (size_t l = 1; l < lines.size(); ++l) one += " " + lines[l];
        Text(x, y, one, "text-anchor=\"end\" transform=\"rotate(-40 " + Px(x) + " " + Px(y) + ")\"");
        continue;
      }
      for (size_t l = 0; l < lines.size(); ++l) Text(x, y + 13 * l, lines[l], "text-anchor=\"middle\"");
    }
  }

  void Legend(const std::vector<std::string>& names) {
    for (size_t k = 0; k < names.size(); ++k) {
      const double x = Right() + 16, y = top_ + 8 + 16 * k;
      Line(x, y, x + 22, y, SeriesStroke(k) + " stroke-width=\"2\"");
      Text(x + 28, y + 4, names[k]);
    }
  }

 private:
  double left_, top_, width_, height_;
  std::string out_;
};

struct Series {
  std::string name;
  std::vector<double> y;  // one per x label; NaN (or <= 0 on a log axis) leaves a gap
};

enum class Scale { kPercent, kFromZero, kLog };

std::string LineChart(const std::string& id, const std::string& title, const std::string& y_label,
                      const std::vector<std::string>& x, const std::vector<Series>& series, Scale scale) {
  const auto usable = [&](const Series& s, size_t i) {
    return i < s.y.size() && std::isfinite(s.y[i]) && (scale != Scale::kLog || s.y[i] > 0);
  };
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : series) {
    for (size_t i = 0; i < x.size(); ++i) {
      if (usable(s, i)) lo = std::min(lo, s.y[i]), hi = std::max(hi, s.y[i]);
    }
  }
  const double right = series.size() > 1 ? 180 : 24, bottom = Tilted(x, kWidth - kLeft - right) ? 90 : 40;
  Canvas c(id, title, kWidth, std::max(320.0, 76 + bottom + 16.0 * series.size()), kLeft, right, 36, bottom);
  if (!(lo <= hi)) return c.NoData();
  const Axis axis = scale == Scale::kPercent ? LinearAxis(0, 100)
                    : scale == Scale::kLog   ? LogAxis(lo, hi)
                                             : LinearAxis(0, hi);
  c.ValueAxis(axis, y_label);
  c.CategoryAxis(x);
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    std::string points, markers;
    size_t run = 0;
    for (size_t i = 0; i <= x.size(); ++i) {
      if (i < x.size() && usable(s, i)) {
        const std::string cx = Px(c.Centre(i, x.size())), cy = Px(c.Y(axis, s.y[i]));
        points += cx + "," + cy + " ";
        ++run;
        // Markers on short series, and always on a point with no line to it.
        const bool alone = !(i > 0 && usable(s, i - 1)) && !usable(s, i + 1);
        if (x.size() <= 60 || alone) {
          markers +=
              "<circle cx=\"" + cx + "\" cy=\"" + cy + "\" r=\"2.5\" fill=\"" + kPalette[k % kColours] + "\"/>\n";
        }
      } else if (run > 0) {
        points.pop_back();
        if (run > 1) {
          c.Add("<polyline fill=\"none\" stroke-width=\"2\" " + SeriesStroke(k) + " points=\"" + points + "\"/>\n");
        }
        points.clear();
        run = 0;
      }
    }
    c.Add(markers);
  }
  if (series.size() > 1) {
    std::vector<std::string> names;
    for (const auto& s : series) names.push_back(s.name);
    c.Legend(names);
  }
  return c.Finish();
}

struct Bar {
  std::string label;  // '\n' breaks it into lines (column charts)
  double value = 0;   // non-finite values are drawn as 0
  std::string note;   // written above or beside the bar
  std::string tip;    // the bar's tooltip
  bool highlight = false;
};

double MaxValue(const std::vector<Bar>& bars) {
  double hi = 0;
  for (const auto& b : bars) {
    if (std::isfinite(b.value)) hi = std::max(hi, b.value);
  }
  return hi;
}

// Vertical bars over categories.
std::string ColumnChart(const std::string& id, const std::string& title, const std::string& y_label,
                        const std::vector<Bar>& bars) {
  std::vector<std::string> labels;
  for (const auto& b : bars) labels.push_back(b.label);
  size_t lines = 1;
  for (const auto& l : labels) lines = std::max(lines, LabelLines(l).size());
  const double bottom = Tilted(labels, kWidth - kLeft - 24) ? 90 : 28 + 13.0 * lines;
  Canvas c(id, title, kWidth, 260 + bottom, kLeft, 24, 44, bottom);
  if (bars.empty()) return c.NoData();
  const Axis axis = LinearAxis(0, MaxValue(bars));
  c.ValueAxis(axis, y_label);
  c.CategoryAxis(labels);
  const double slot = c.Width() / bars.size();
  for (size_t i = 0; i < bars.size(); ++i) {
    const double v = std::isfinite(bars[i].value) ? bars[i].value : 0;
    const double x = c.Centre(i, bars.size()), top = c.Y(axis, v);
    c.Rect(x - slot * 0.35, top, slot * 0.7, c.Bottom() - top, bars[i].highlight ? kHighlightFill : kBarFill,
           bars[i].tip);
    if (!bars[i].note.empty()) c.Text(x, top - 5, bars[i].note, "text-anchor=\"middle\"");
  }
  return c.Finish();
}

// Horizontal bars, one row per labelled item, for long names.
std::string BarChart(const std::string& id, const std::string& title, const std::string& x_label,
                     const std::vector<Bar>& bars) {
  size_t longest = 0;
  for (const auto& b : bars) longest = std::max(longest, std::min(b.label.size(), kNameChars));
  const double row = 20, left = std::clamp(12 + 6.2 * longest, 80.0, 380.0);
  Canvas c(id, title, kWidth, 86 + row * std::max<size_t>(bars.size(), 1), left, 80, 36, 50);
  if (bars.empty()) return c.NoData();
  const Axis axis = LinearAxis(0, MaxValue(bars));
  c.ValueAxis(axis, x_label, /*along_x=*/true);
  for (size_t i = 0; i < bars.size(); ++i) {
    const double v = std::isfinite(bars[i].value) ? bars[i].value : 0;
    const double y = c.Top() + row * i, end = c.X(axis, v);
    c.Rect(left, y + 3, end - left, row - 6, bars[i].highlight ? kHighlightFill : kBarFill, bars[i].tip);
    c.Text(left - 6, y + row / 2 + 4, Tail(bars[i].label, kNameChars), "text-anchor=\"end\"");
    c.Text(end + 4, y + row / 2 + 4, bars[i].note);
  }
  return c.Finish();
}

// An HTML table: `numeric` marks the right-aligned columns; cells are text.
std::string Table(const std::vector<std::string>& head, const std::vector<bool>& numeric,
                  const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& current = {}) {
  const auto cls = [&](size_t j) { return j < numeric.size() && numeric[j] ? " class=\"n\"" : ""; };
  std::string h = "<div class=\"wide\"><table>\n<thead><tr>";
  for (size_t j = 0; j < head.size(); ++j) h += std::string("<th") + cls(j) + ">" + Esc(head[j]) + "</th>";
  h += "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    h += i < current.size() && current[i] ? "<tr class=\"current\">" : "<tr>";
    for (size_t j = 0; j < rows[i].size(); ++j) h += std::string("<td") + cls(j) + ">" + Esc(rows[i][j]) + "</td>";
    h += "</tr>\n";
  }
  return h + "</tbody>\n</table></div>\n";
}

std::string Section(const std::string& heading, const std::string& body, const std::string& id = "") {
  return "<section" + (id.empty() ? std::string() : " id=\"" + id + "\"") + ">\n<h2>" + Esc(heading) + "</h2>\n" +
         body + "</section>\n";
}

std::string Para(const std::string& text, const char* cls = "note") {
  return std::string("<p class=\"") + cls + "\">" + Esc(text) + "</p>\n";
}

std::string Summary(const Analysis& a) {
  const size_t n = a.rows.size();
  std::string s = std::to_string(n) + (n == 1 ? " checkpoint. " : " checkpoints. ") +
                  "Changes are measured against the " +
                  (a.against == config::DeltaAgainst::kBase
                       ? "periodic base (every " + std::to_string(a.base_interval) + " checkpoints). "
                       : "previous checkpoint. ");
  s += a.tensor_filter.empty() ? "All tensors." : "Tensors selected by: " + a.tensor_filter;
  return Para(s, "meta");
}

std::string ChangeSection(const Analysis& a, const std::vector<int>& slots) {
  std::vector<std::string> x;
  std::vector<Series> shares(slots.size() + 1), update(1);
  for (size_t k = 0; k < slots.size(); ++k) shares[k].name = SlotLabel(slots[k]) + " bytes";
  shares.back().name = "parameters";
  update[0].name = "relative update";
  for (const auto& r : a.rows) {
    if (!r.reference) continue;
    x.push_back(r.label);
    for (size_t k = 0; k < slots.size(); ++k) shares[k].y.push_back(100 * r.change.GroupChangedFraction(slots[k]));
    shares.back().y.push_back(100 * r.change.ChangedFraction());
    update[0].y.push_back(r.change.RelativeUpdate());
  }
  return Section("What changed",
                 LineChart("changed-bytes", "Share of changed bytes per byte group, and of changed parameters",
                           "changed (%)", x, shares, Scale::kPercent) +
                     LineChart("relative-update", "Relative update ||W - W_ref|| / ||W_ref||", "relative update (log)",
                               x, update, Scale::kLog));
}

std::string SizeSection(const Analysis& a) {
  std::vector<std::string> x;
  std::vector<Series> s = {{"standalone auto", {}},  {"vs previous huffman", {}}, {"vs previous zstd", {}},
                           {"vs previous auto", {}}, {"vs previous bound", {}},   {"vs base auto", {}}};
  for (const codec::TransformInfo& info : codec::kTransforms)
    s.push_back({"vs previous " + std::string(info.name), {}});
  for (const auto& r : a.rows) {
    x.push_back(r.label);
    s[0].y.push_back(StoredPct(r.standalone, r.standalone.automatic, r.raw_bytes));
    s[1].y.push_back(StoredPct(r.vs_previous, r.vs_previous.huffman, r.raw_bytes));
    s[2].y.push_back(StoredPct(r.vs_previous, r.vs_previous.zstd, r.raw_bytes));
    s[3].y.push_back(StoredPct(r.vs_previous, r.vs_previous.automatic, r.raw_bytes));
    s[4].y.push_back(StoredPct(r.vs_previous, r.vs_previous.bound, r.raw_bytes));
    s[5].y.push_back(StoredPct(r.vs_base, r.vs_base.automatic, r.raw_bytes));
    for (size_t t = 0; t < codec::kTransformCount; ++t) {
      s[6 + t].y.push_back(StoredPct(r.vs_previous, r.vs_previous.by_transform[t], r.raw_bytes));
    }
  }
  return Section("Stored size", LineChart("ratios", "Stored size as a share of the raw size", "stored / raw (%)", x, s,
                                          Scale::kFromZero));
}

std::string PolicySection(const Analysis& a) {
  if (a.policies.empty()) return Section("Storage policies", Para("No storage policy was evaluated."));
  uint64_t raw_total = 0, top = 0;
  for (const auto& r : a.rows) raw_total += r.raw_bytes;
  for (const auto& p : a.policies) top = std::max(top, p.stored_bytes);
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && static_cast<double>(top) >= std::pow(1024.0, unit + 1)) ++unit;
  std::vector<Bar> bars;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> current;
  for (const auto& p : a.policies) {
    const std::string k = p.base_interval == 0 ? "inf" : std::to_string(p.base_interval);
    const std::string chain = p.max_chain == kNoChainLimit ? "unbounded" : std::to_string(p.max_chain);
    std::string label = "k=" + k + "\n" + AgainstName(p.against) + "\nnewest " + NewestName(p.newest);
    // A chain limit other than the interval's default (docs/policy.md) is
    // part of the policy's name.
    if (p.max_chain != WhatIfMaxChain(p.base_interval, p.newest))
      label += "\nchain<=" + chain;
    if (p.current) label += "\n(current)";
    bars.push_back({label, static_cast<double>(p.stored_bytes) / std::pow(1024.0, unit),
                    "chain " + std::to_string(p.worst_chain), HumanBytes(p.stored_bytes), p.current});
    rows.push_back({NewestName(p.newest), k, AgainstName(p.against), chain, std::to_string(p.bases),
                    HumanBytes(p.stored_bytes), Percent(p.stored_bytes, raw_total), HumanBytes(p.latest_bytes),
                    std::to_string(p.worst_chain), p.current ? "yes" : ""});
    current.push_back(p.current);
  }
  return Section(
      "Storage policies",
      Para("What each policy would have stored for the whole trajectory; \"latest\" is what a clone that checks "
           "out only the last checkpoint fetches, \"chain\" the most deltas one restore decodes. The current policy "
           "is highlighted.") +
          ColumnChart("policies", "Total stored bytes per storage policy", std::string("stored (") + kUnits[unit] + ")",
                      bars) +
          Table({"newest", "interval", "against", "max chain", "bases", "stored", "of raw", "latest", "worst chain",
                 "current"},
                {false, true, false, true, true, true, true, true, true, false}, rows, current));
}

std::string ThinningSection(const Analysis& a) {
  if (a.thinning.empty()) return "";
  uint64_t raw_total = 0;
  for (const auto& r : a.rows) raw_total += r.raw_bytes;
  auto share = [](uint64_t part, uint64_t whole) {
    return PctCell(whole == 0 ? kNaN : static_cast<double>(part) / static_cast<double>(whole));
  };
  std::vector<std::vector<std::string>> rows = {
      {"exact", HumanBytes(a.exact_stored), share(a.exact_stored, raw_total), "100.00%", kDash, kDash, "0", "0", ""}};
  for (const ThinningOutcome& o : a.thinning) {
    rows.push_back({o.precision.Text(), HumanBytes(o.stored_bytes), share(o.stored_bytes, raw_total),
                    share(o.stored_bytes, a.exact_stored), share(o.changed, o.values), share(o.zeroed, o.values),
                    NumCell(o.max_abs),
                    NumCell(o.max_rel),
                    NumCell(o.precision.Bound()) +
                        (o.precision.kind == codec::Precision::Kind::kAbsolute ? " absolute" : " of |x|")});
  }
  return Section(
      "Thinning",
      Para("What git zipnn retain would store if it thinned every checkpoint (float tensors rounded to the "
           "precision, every other byte exact), a base every " +
           std::to_string(a.base_interval) +
           " checkpoints and deltas against the previous, beside the same for the exact checkpoints; the errors are "
           "the largest over every float value.") +
          Table({"precision", "stored", "of raw", "of exact", "rounded", "to zero", "max abs error", "max rel error",
                 "bound"},
                {false, true, true, true, true, true, true, true, false}, rows));
}

std::string TensorSection(const Analysis& a) {
  if (a.tensors.empty()) return Section("Tensors", Para("No tensor was compared with a reference."));
  const size_t at = a.tensors.back().checkpoint;  // tensors come in row order
  const std::string label = at < a.rows.size() ? a.rows[at].label : std::to_string(at);
  std::vector<const TensorChange*> changed;
  std::vector<std::string> frozen;
  size_t others = 0;
  for (const auto& t : a.tensors) {
    if (t.checkpoint != at) continue;
    if (t.status == TensorStatus::kChanged)
      changed.push_back(&t);
    else if (t.status == TensorStatus::kFrozen)
      frozen.push_back(t.tensor.name);
    else
      ++others;
  }
  const auto key = [](const TensorChange* t) {
    const double u = t->stats.RelativeUpdate();
    return std::isfinite(u) ? u : -1.0;  // no norm: after every measured one
  };
  std::stable_sort(changed.begin(), changed.end(), [&](auto* l, auto* r) { return key(l) > key(r); });
  if (changed.size() > kTopTensors) changed.resize(kTopTensors);
  std::vector<Bar> bars;
  std::vector<std::vector<std::string>> rows;
  for (const TensorChange* t : changed) {
    const double u = t->stats.RelativeUpdate();
    bars.push_back({t->tensor.name, u, NumCell(u), t->tensor.name, false});
    rows.push_back({t->tensor.name, std::string(codec::DTypeName(t->tensor.dtype)),
                    "[" + JoinDims(t->tensor.shape, ", ") + "]", TensorStatusName(t->status),
                    PctCell(t->stats.ChangedFraction()), NumCell(u)});
  }
  std::string body = BarChart("top-tensors", "Largest relative updates at " + label,
                              "relative update ||W - W_ref|| / ||W_ref||", bars) +
                     Table({"tensor", "dtype", "shape", "status", "changed", "relative update"},
                           {false, false, false, false, true, true}, rows);
  if (!frozen.empty()) {
    std::string list;
    for (size_t i = 0; i < std::min(frozen.size(), kFrozenListed); ++i) list += (i ? ", " : "") + frozen[i];
    if (frozen.size() > kFrozenListed) list += " and " + std::to_string(frozen.size() - kFrozenListed) + " more";
    body += Para(std::to_string(frozen.size()) + " frozen (bit-identical) " +
                 (frozen.size() == 1 ? "tensor: " : "tensors: ") + list + ".");
  }
  if (others > 0) body += Para(std::to_string(others) + " added, reshaped or removed.");
  return Section("Tensors at " + label, body);
}

std::string ExponentSection(const Analysis& a) {
  if (a.histograms.empty()) return "";
  const bool several = a.histograms.size() > 1;
  const std::string at = a.histogram_at && *a.histogram_at < a.rows.size() ? a.rows[*a.histogram_at].label : "";
  std::string body;
  for (const auto& h : a.histograms) {
    const std::string dtype(codec::DTypeName(h.dtype));
    const std::string id = several ? "exponents-" + dtype : "exponents";
    std::vector<Bar> bars;
    const auto add = [&](size_t e) {
      const std::string label = e == 0                     ? "0/sub"
                                : e + 1 == h.counts.size() ? "inf/nan"
                                                           : std::to_string(static_cast<int>(e) - h.bias);
      const double share = 100.0 * static_cast<double>(h.counts[e]) / static_cast<double>(h.total);
      bars.push_back({label, share, "", label + ": " + std::to_string(h.counts[e]) + Fmt(" (%.3f%%)", share)});
    };
    // The normal exponents as one contiguous range; zeros and subnormals,
    // and infinities and NaNs, apart at its ends, so a few zeros do not
    // stretch the range over a hundred empty exponents.
    size_t lo = 1, hi = h.counts.size() >= 2 ? h.counts.size() - 2 : 0;
    while (lo <= hi && h.counts[lo] == 0) ++lo;
    while (hi >= lo && h.counts[hi] == 0) --hi;
    if (h.total > 0 && !h.counts.empty()) {
      if (h.counts[0] > 0) add(0);
      for (size_t e = lo; e <= hi; ++e) add(e);
      if (h.counts.size() >= 2 && h.counts.back() > 0) add(h.counts.size() - 1);
    }
    body += ColumnChart(id, "Unbiased exponents of the " + dtype + " elements" + (at.empty() ? "" : " at " + at),
                        "elements (%)", bars);
  }
  return Section("Exponents", body, several ? "exponents" : "");
}

std::string RowTable(const Analysis& a, const std::vector<int>& slots) {
  std::vector<std::string> head = {"checkpoint", "raw", "changed params"};
  std::vector<bool> numeric = {false, true, true};
  for (int slot : slots) head.push_back(SlotLabel(slot));
  for (const char* h : {"rel. update", "standalone", "vs previous", "vs base", "bound"}) head.push_back(h);
  numeric.resize(head.size(), true);
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : a.rows) {
    const bool compared = r.reference.has_value();
    std::vector<std::string> cells = {r.label, HumanBytes(r.raw_bytes),
                                      PctCell(compared ? r.change.ChangedFraction() : kNaN)};
    for (int slot : slots) cells.push_back(PctCell(compared ? r.change.GroupChangedFraction(slot) : kNaN));
    cells.push_back(NumCell(compared ? r.change.RelativeUpdate() : kNaN));
    for (double pct : {StoredPct(r.standalone, r.standalone.automatic, r.raw_bytes),
                       StoredPct(r.vs_previous, r.vs_previous.automatic, r.raw_bytes),
                       StoredPct(r.vs_base, r.vs_base.automatic, r.raw_bytes),
                       StoredPct(r.vs_previous, r.vs_previous.bound, r.raw_bytes)}) {
      cells.push_back(PctCell(pct / 100));
    }
    rows.push_back(std::move(cells));
  }
  return Section("Checkpoints", Para("Changed: share of the parameters, and of the bytes of each byte group, that "
                                     "differ from the reference. Stored sizes with the auto rule as a share of the "
                                     "raw size; bound: the order-0 entropy bound of the delta against the previous "
                                     "checkpoint.") +
                                    Table(head, numeric, rows));
}

}  // namespace

std::string HtmlReport(const Analysis& analysis, const std::string& title) {
  std::string h =
      "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
      "<meta charset=\"utf-8\"/>\n<title>" +
      Esc(title) + "</title>\n<style>" + kCss +
      "</style>\n"
      "</head>\n<body>\n<h1>" +
      Esc(title) + "</h1>\n" + Summary(analysis);
  if (analysis.rows.empty()) {
    h += Para("Nothing to show: the analysis has no checkpoints.", "meta");
  } else {
    const std::vector<int> slots = SlotsPresent(analysis, /*floats_only=*/true);
    h += ChangeSection(analysis, slots) + SizeSection(analysis) + PolicySection(analysis) + ThinningSection(analysis) +
         TensorSection(analysis) +
         ExponentSection(analysis) + RowTable(analysis, slots);
  }
  return h + "</body>\n</html>\n";
}

}  // namespace zipnn::analyze
