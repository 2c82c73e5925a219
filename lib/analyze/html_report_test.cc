// Tests of the HTML report: every chart is there, names from user files are
// escaped, the page is well-formed XML, no NaN reaches the SVG, and a real
// headless browser renders it into a picture that is not blank.
#include "lib/analyze/html_report.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "tests/browser_check.h"

namespace zipnn::analyze {
namespace {

constexpr uint64_t kMiB = 1 << 20;
const char* const kChartIds[] = {"changed-bytes", "relative-update", "ratios",        "policies",
                                 "top-tensors",   "exponents-bf16",  "exponents-fp32"};
constexpr int kCharts = 7;

std::string TmpDir(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(t != nullptr ? t : "/tmp") + "/" + name;
  REQUIRE(std::system(("mkdir -p " + testing::ShellQuote(dir)).c_str()) == 0);
  return dir;
}

std::string WriteFile(const std::string& dir, const std::string& text) {
  const std::string path = dir + "/report.html";
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Parses the file with python's XML parser; the number of <svg> elements,
// or -1 with the parser's complaint in `error`.
int SvgCountParsedAsXml(const std::string& path, std::string& error) {
  const std::string cmd =
      "/usr/bin/python3 -c 'import sys,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); "
      "ns={\"s\":\"http://www.w3.org/2000/svg\"}; print(len(r.findall(\".//s:svg\",ns)))' " +
      testing::ShellQuote(path) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  if (status != 0) {
    error = out;
    return -1;
  }
  return std::atoi(out.c_str());
}

ChangeStats Stats(uint64_t elements, double changed, double relative_update) {
  ChangeStats s;
  s.elements = s.float_elements = elements;
  s.changed = static_cast<uint64_t>(changed * elements);
  // bf16: the exponent byte and one mantissa byte per element.
  s.group_bytes[GroupSlot(codec::DType::kBF16, 1)] = elements;
  s.group_bytes[GroupSlot(codec::DType::kBF16, 0)] = elements;
  s.group_changed[GroupSlot(codec::DType::kBF16, 1)] = static_cast<uint64_t>(changed * 0.3 * elements);
  s.group_changed[GroupSlot(codec::DType::kBF16, 0)] = static_cast<uint64_t>(changed * 0.95 * elements);
  s.ref_sq = 1000;
  s.diff_sq = relative_update * relative_update * s.ref_sq;
  return s;
}

Sizes Measured(uint64_t raw, double huffman, double zstd, double automatic, double bound) {
  Sizes s;
  s.measured = true;
  s.huffman = static_cast<uint64_t>(huffman * raw);
  s.zstd = static_cast<uint64_t>(zstd * raw);
  s.automatic = static_cast<uint64_t>(automatic * raw);
  s.bound = bound * raw;
  return s;
}

// Seven checkpoints of a run that settles down: fewer changed bytes and
// smaller updates at each step, deltas against the previous one, a base
// every fifth.
Analysis Synthetic() {
  Analysis a;
  a.against = config::DeltaAgainst::kPrevious;
  a.base_interval = 5;
  a.tensor_filter = "layers.*";
  for (size_t i = 0; i < 7; ++i) {
    CheckpointRow r;
    r.index = i;
    r.label = "step-" + std::to_string(1000 * (i + 1));
    r.raw_bytes = 48 * kMiB;
    r.tensors = 27;
    r.parameters = 24 * kMiB;
    r.standalone = Measured(r.raw_bytes, 0.67, 0.78, 0.66, 0.645);
    if (i > 0) {
      const double changed = 0.9 - 0.1 * i, update = 0.02 / (i * i);
      r.reference = i - 1;
      r.change = Stats(r.parameters, changed, update);
      r.changed_tensors = 25;
      r.frozen_tensors = 1;
      r.vs_previous = Measured(r.raw_bytes, 0.55 - 0.04 * i, 0.6 - 0.04 * i, 0.5 - 0.04 * i, 0.45 - 0.04 * i);
      r.base = i / 5 * 5;
      if (i % 5 != 0) r.vs_base = Measured(r.raw_bytes, 0.6, 0.65, 0.52 + 0.01 * i, 0.5);
      for (int t = 0; t < 25; ++t) {
        TensorChange c;
        c.checkpoint = i;
        c.tensor = {"model.layers." + std::to_string(t) + ".mlp.up_proj.weight", codec::DType::kBF16, {1024, 256}};
        c.stats = Stats(1024 * 256, changed, update * (1 + 0.1 * t));
        a.tensors.push_back(c);
      }
      TensorChange odd;
      odd.checkpoint = i;
      odd.tensor = {"head.weird<&\"'>name", codec::DType::kF32, {10}};
      odd.stats = Stats(10, 1.0, update * 5);
      a.tensors.push_back(odd);
      TensorChange frozen;
      frozen.checkpoint = i;
      frozen.tensor = {"model.embed_tokens.weight", codec::DType::kBF16, {32000, 256}};
      frozen.status = TensorStatus::kFrozen;
      a.tensors.push_back(frozen);
    }
    a.rows.push_back(r);
  }
  a.histogram_at = 6;
  for (auto dtype : {codec::DType::kBF16, codec::DType::kF32}) {
    ExponentHistogram h;
    h.dtype = dtype;
    h.bias = 127;
    h.counts.assign(256, 0);
    h.counts[0] = 40;  // zeros
    for (int e = 110; e <= 126; ++e) h.counts[e] = static_cast<uint64_t>(1000 * std::exp(-(126 - e) / 3.0));
    for (uint64_t c : h.counts) h.total += c;
    a.histograms.push_back(h);
  }
  for (uint32_t k : {0u, 2u, 5u, 10u, 20u, 50u}) {
    for (auto against : {config::DeltaAgainst::kPrevious, config::DeltaAgainst::kBase}) {
      PolicyOutcome p;
      p.base_interval = k;
      p.against = against;
      p.max_chain = k == 0 ? kNoChainLimit : k - 1;
      p.current = k == 5 && against == config::DeltaAgainst::kPrevious;
      p.bases = k == 0 ? 1 : (7 + k - 1) / k;
      p.stored_bytes = (p.bases * 32 + (7 - p.bases) * (against == config::DeltaAgainst::kBase ? 26 : 20)) * kMiB;
      p.worst_chain = against == config::DeltaAgainst::kBase ? 1 : k == 0 ? 6 : std::min(6, static_cast<int>(k) - 1);
      a.policies.push_back(p);
    }
  }
  a.exact_stored = 150 * kMiB;
  ThinningOutcome thin;
  thin.precision = codec::Precision{codec::Precision::Kind::kRelative, 5};
  thin.stored_bytes = 120 * kMiB;
  thin.max_abs = 0.0078125;
  thin.max_rel = 0.0154;
  thin.changed = 750;
  thin.values = 1000;
  a.thinning.push_back(thin);
  return a;
}

TEST_CASE("the report holds every chart, escapes names and parses as XML") {
  const std::string html = HtmlReport(Synthetic(), "Run <A&B>");
  for (const std::string id : kChartIds) CHECK_MESSAGE(html.find("id=\"" + id + "\"") != std::string::npos, id);
  CHECK(html.find("<section id=\"exponents\">") != std::string::npos);
  CHECK(html.find("head.weird&lt;&amp;&quot;&#39;&gt;name") != std::string::npos);
  CHECK(html.find("weird<") == std::string::npos);
  CHECK(html.find("<h1>Run &lt;A&amp;B&gt;</h1>") != std::string::npos);
  CHECK(html.find("layers.*") != std::string::npos);  // the filter
  CHECK(html.find("1 frozen (bit-identical) tensor") != std::string::npos);
  // The thinning what-if: 120 of the exact 150 MiB, 750 of 1000 values rounded.
  CHECK(html.find("<td>relative 5 mantissa bits</td><td class=\"n\">120.0 MiB</td>") != std::string::npos);
  CHECK(html.find("<td class=\"n\">80.00%</td><td class=\"n\">75.00%</td>") != std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("http://") == html.find("http://www.w3.org/"));  // namespaces only, no links
  std::string error;
  CHECK_MESSAGE(SvgCountParsedAsXml(WriteFile(TmpDir("full"), html), error) == kCharts, error);
}

TEST_CASE("the same analysis gives the same bytes") {
  CHECK(HtmlReport(Synthetic(), "run") == HtmlReport(Synthetic(), "run"));
}

TEST_CASE("an empty analysis gives a valid page saying there is nothing to show") {
  const std::string html = HtmlReport(Analysis{}, "empty");
  CHECK(html.find("Nothing to show") != std::string::npos);
  std::string error;
  CHECK_MESSAGE(SvgCountParsedAsXml(WriteFile(TmpDir("empty"), html), error) == 0, error);
}

TEST_CASE("a single histogram is the chart named exponents") {
  Analysis a = Synthetic();
  a.histograms.pop_back();
  const std::string html = HtmlReport(a, "one dtype");
  CHECK(html.find("<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"exponents\"") != std::string::npos);
  CHECK(html.find("exponents-bf16") == std::string::npos);
  CHECK(html.find(">0/sub<") != std::string::npos);
  CHECK(html.find(">-1<") != std::string::npos);  // biased 126
}

TEST_CASE("stray bytes and control characters in labels still give parsable XML") {
  Analysis a = Synthetic();
  a.rows[3].label = "step\xff\xc3(\x01\xed\xa0\x80";
  a.tensors.back().tensor.name = "bad\x7f\x1bname\xf5";
  const std::string html = HtmlReport(a, "bytes \xc0\xaf");
  std::string error;
  CHECK_MESSAGE(SvgCountParsedAsXml(WriteFile(TmpDir("bytes"), html), error) == kCharts, error);
}

TEST_CASE("NaN and infinite values never reach an SVG coordinate") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  Analysis a = Synthetic();
  a.rows[1].change.diff_sq = inf;
  a.rows[2].change.ref_sq = nan;
  a.rows[3].change.diff_sq = nan;
  a.rows[4].raw_bytes = 0;  // no ratio
  a.rows[5].vs_previous.bound = inf;
  a.rows[6].vs_previous.bound = nan;
  a.tensors[0].stats.diff_sq = inf;
  for (auto& t : a.tensors) {
    if (t.checkpoint == 6) t.stats.ref_sq = nan;
  }
  a.histograms[1].total = 0;
  const std::string html = HtmlReport(a, "non-finite");
  const std::regex coordinate(R"re(\s(x|y|x1|y1|x2|y2|cx|cy|r|width|height|points|viewBox|transform)="([^"]*)")re");
  int checked = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    const std::string svg = html.substr(at, html.find("</svg>", at) - at);
    for (std::sregex_iterator m(svg.begin(), svg.end(), coordinate), end; m != end; ++m, ++checked) {
      std::string value = (*m)[2];
      for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      INFO((*m)[0].str());
      CHECK(value.find("nan") == std::string::npos);
      CHECK(value.find("inf") == std::string::npos);
    }
  }
  CHECK(checked > 100);
  std::string error;
  CHECK_MESSAGE(SvgCountParsedAsXml(WriteFile(TmpDir("nonfinite"), html), error) == kCharts, error);
}

TEST_CASE("a headless browser renders every chart into a picture that is not blank") {
  const std::string dir = TmpDir("browser");
  const std::string path = WriteFile(dir, HtmlReport(Synthetic(), "browser"));
  const std::string missing = testing::ChromiumMissing();
  REQUIRE_MESSAGE(missing.empty(), missing);
  testing::BrowserExpect expect;
  expect.ids.assign(std::begin(kChartIds), std::end(kChartIds));
  expect.ids.push_back("exponents");
  expect.svg_elements = kCharts;
  expect.min_colours = 64;
  const std::string error = testing::BrowserCheck(path, dir, expect);
  CHECK_MESSAGE(error.empty(), error);
}

}  // namespace
}  // namespace zipnn::analyze
