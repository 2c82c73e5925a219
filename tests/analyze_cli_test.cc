// Runs `git-zipnn analyze` on real trajectories and on a hand-made pair of
// checkpoints, then has tests/analyze_check.py recompute every statistic
// from the files with numpy and compare it with the CSV and JSON the tool
// wrote. The hand-made pair's figures are also checked here, cell by cell,
// and the checker is shown to fail on output that does not match its input.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/browser_check.h"
#include "tests/test_util.h"

namespace zipnn {
namespace {

using testing::BrowserCheck;
using testing::BrowserExpect;
using testing::Run;
using testing::Slurp;

std::string Tmp() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t != nullptr ? t : "/tmp";
}

// A fresh folder under the test's temporary directory.
std::string Folder(const std::string& name) {
  const std::string path = Tmp() + "/" + name;
  ::mkdir(path.c_str(), 0755);
  return path;
}

// Runs a shell line (our own literals and temp paths only).
Run Sh(const std::string& line) {
  const std::string out = Tmp() + "/sh.out", err = Tmp() + "/sh.err";
  const int status = std::system((line + " >'" + out + "' 2>'" + err + "'").c_str());
  return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out), Slurp(err)};
}

// `git-zipnn analyze <files> <options>` writing <stem>.csv (and the tables
// beside it) and <stem>.json.
Run Analyze(const std::string& files, const std::string& options, const std::string& stem) {
  return Sh("cmd/git-zipnn analyze " + files + " " + options + " --csv '" + stem + ".csv' --json '" + stem + ".json'");
}

// The independent recomputation; exit code 0 when everything matches.
Run Check(const std::string& files, const std::string& options, const std::string& stem,
          const std::string& check_options = "") {
  return Sh("/usr/bin/python3 tests/analyze_check.py " + files + " " + options + " " + check_options + " --csv '" +
            stem + ".csv' --json '" + stem + ".json'");
}

// Analyses `files` and requires the checker to agree with every figure.
void AnalyzeAndCheck(const std::string& files, const std::string& options, const std::string& stem,
                     const std::string& check_options = "") {
  const Run a = Analyze(files, options, stem);
  INFO("analyze stderr: ", a.err);
  REQUIRE(a.code == 0);
  const Run c = Check(files, options, stem, check_options);
  INFO("analyze_check.py output:\n", c.out, c.err);
  CHECK(c.code == 0);
}

// --- a CSV table as the tool writes it (no quoted fields in our cases) ---

using Row = std::map<std::string, std::string>;

std::vector<std::string> Split(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

std::vector<Row> ReadCsv(const std::string& path) {
  std::istringstream in(Slurp(path));
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = Split(line);
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    REQUIRE(line.find('"') == std::string::npos);
    const std::vector<std::string> fields = Split(line);
    REQUIRE(fields.size() == header.size());
    Row row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = fields[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

Row Find(const std::vector<Row>& rows, const std::string& column, const std::string& value) {
  for (const Row& r : rows) {
    if (r.count(column) != 0 && r.at(column) == value) return r;
  }
  FAIL("no row with ", column, " = ", value);
  return {};
}

void WriteCsv(const std::string& path, const std::vector<std::string>& header, const std::vector<Row>& rows) {
  std::ofstream out(path, std::ios::binary);
  for (size_t i = 0; i < header.size(); ++i) out << (i ? "," : "") << header[i];
  out << "\n";
  for (const Row& r : rows) {
    for (size_t i = 0; i < header.size(); ++i) out << (i ? "," : "") << r.at(header[i]);
    out << "\n";
  }
}

// --- hand-made safetensors files ---

struct RawTensor {
  std::string name, dtype;  // dtype as safetensors spells it
  std::vector<uint64_t> shape;
  std::string bytes;
};

template <typename T>
std::string Bytes(std::initializer_list<T> values) {
  std::string s(values.size() * sizeof(T), '\0');
  size_t at = 0;
  for (T v : values) {
    std::memcpy(&s[at], &v, sizeof v);  // the host is little-endian, as the format
    at += sizeof v;
  }
  return s;
}

void WriteSafetensors(const std::string& path, const std::vector<RawTensor>& tensors) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  std::string data;
  for (const RawTensor& t : tensors) {
    header += ",\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) header += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(data.size()) + "," +
              std::to_string(data.size() + t.bytes.size()) + "]}";
    data += t.bytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  const uint64_t n = header.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << data;
}

const std::string kFp32 = "tests/data/cnn-fp32/*.safetensors";
const std::string kBf16Twelve = "tests/data/cnn12-bf16/*.safetensors";
const std::string kFp16 = "tests/data/cnn-fp16/*.safetensors";

TEST_CASE("fp32 trajectory against the previous checkpoint matches an independent recomputation") {
  AnalyzeAndCheck(kFp32, "--against previous --base-interval 10", Folder("fp32") + "/out");
}

TEST_CASE("bf16 trajectory against a periodic base every 5 matches an independent recomputation") {
  AnalyzeAndCheck(kBf16Twelve, "--against base --base-interval 5", Folder("bf16") + "/out");
}

// fp16's top byte holds five exponent bits and two mantissa bits, close to
// 6 bits of entropy. There zstd's literal Huffman comes out 0.1-0.3% smaller
// than ours, and the auto rule, which tries zstd only on long zero runs,
// stores 0.06-0.08% more than zstd alone. The figures are exact; the
// property holds within 0.2% (docs/analyze.md).
TEST_CASE("fp16 pair matches an independent recomputation; auto within 0.2% of the better coder") {
  AnalyzeAndCheck(kFp16, "--against previous --base-interval 10", Folder("fp16") + "/out", "--auto-slack 0.002");
}

// Reference and target differ in known ways:
//   w       f32 [2,4]  3 elements changed: one sign only (man0 after the
//                      rotation), one mantissa bit (man2), one exponent bit
//   frozen  bf16 [3]   identical
//   odd     f32 [3]    NaN and inf unchanged, 1 -> 2 (non-finite pairs: 2)
//   steps   i64 [1]    10 -> 11 (byte b0 only)
//   shape   f32 [4] -> [2,2]  reshaped
//   gone    f32 [2]    only in the reference: removed
//   new     f16 [2]    only in the target: added
void WriteHandMadePair(const std::string& dir) {
  const float nan = std::nanf(""), inf = HUGE_VALF;
  const std::string frozen = Bytes<uint16_t>({0x3F00, 0xBF80, 0x4000});  // 0.5, -1, 2
  WriteSafetensors(dir + "/step-000001.safetensors",
                   {{"w", "F32", {2, 4}, Bytes<float>({1.0f, -2.0f, 0.5f, 3.0f, 0.25f, -1.5f, 4.0f, 8.0f})},
                    {"frozen", "BF16", {3}, frozen},
                    {"odd", "F32", {3}, Bytes<float>({nan, 1.0f, inf})},
                    {"steps", "I64", {1}, Bytes<int64_t>({10})},
                    {"shape", "F32", {4}, Bytes<float>({1, 2, 3, 4})},
                    {"gone", "F32", {2}, Bytes<float>({5, 6})}});
  WriteSafetensors(dir + "/step-000002.safetensors",
                   {{"w", "F32", {2, 4}, Bytes<float>({-1.0f, -2.0f, 0.5f, 3.5f, 0.25f, -1.5f, 16.0f, 8.0f})},
                    {"frozen", "BF16", {3}, frozen},
                    {"new", "F16", {2}, Bytes<uint16_t>({0x3C00, 0x0000})},  // 1, 0
                    {"odd", "F32", {3}, Bytes<float>({nan, 2.0f, inf})},
                    {"steps", "I64", {1}, Bytes<int64_t>({11})},
                    {"shape", "F32", {2, 2}, Bytes<float>({1, 2, 3, 4})}});
}

double Number(const Row& row, const std::string& column) {
  INFO("column ", column);
  REQUIRE(!row.at(column).empty());
  return std::stod(row.at(column));
}

TEST_CASE("hand-made pair: three changed elements, one only in the sign, and every tensor status") {
  const std::string dir = Folder("hand"), stem = dir + "/out";
  WriteHandMadePair(dir);
  const std::string files = dir + "/step-000001.safetensors " + dir + "/step-000002.safetensors";
  AnalyzeAndCheck(files, "--against previous --base-interval 10", stem);

  const std::vector<Row> tensors = ReadCsv(stem + ".tensors.csv");
  CHECK(tensors.size() == 7);
  const Row w = Find(tensors, "tensor", "w");
  CHECK(w.at("status") == "changed");
  CHECK(w.at("elements") == "8");
  CHECK(w.at("changed") == "3");
  CHECK(Number(w, "changed_fraction") == 0.375);
  CHECK(Number(w, "changed_man0") == 0.125);  // the sign flip, rotated into bit 0
  CHECK(Number(w, "changed_man1") == 0);
  CHECK(Number(w, "changed_man2") == 0.125);  // 3 -> 3.5
  CHECK(Number(w, "changed_exp") == 0.125);   // 4 -> 16
  CHECK(w.at("changed_b0").empty());          // not a group of fp32
  // Differences -2, 0.5, 12 against the squares of all eight values.
  CHECK(Number(w, "update_norm") == doctest::Approx(std::sqrt(148.25)).epsilon(1e-9));
  CHECK(Number(w, "reference_norm") == doctest::Approx(std::sqrt(96.5625)).epsilon(1e-9));
  CHECK(Number(w, "relative_update") == doctest::Approx(std::sqrt(148.25 / 96.5625)).epsilon(1e-9));
  CHECK(w.at("non_finite") == "0");

  const Row frozen = Find(tensors, "tensor", "frozen");
  CHECK(frozen.at("status") == "frozen");
  CHECK(frozen.at("changed") == "0");
  CHECK(Number(frozen, "update_norm") == 0);

  const Row odd = Find(tensors, "tensor", "odd");
  CHECK(odd.at("status") == "changed");
  CHECK(odd.at("changed") == "1");
  CHECK(odd.at("non_finite") == "2");
  CHECK(Number(odd, "relative_update") == 1);

  const Row steps = Find(tensors, "tensor", "steps");
  CHECK(steps.at("status") == "changed");
  CHECK(steps.at("dtype") == "i64");
  CHECK(Number(steps, "changed_b0") == 1);
  CHECK(Number(steps, "changed_b1") == 0);
  CHECK(steps.at("relative_update").empty());

  const Row added = Find(tensors, "tensor", "new");
  CHECK(added.at("status") == "added");
  CHECK(added.at("changed") == "2");
  CHECK(added.at("relative_update").empty());
  const Row reshaped = Find(tensors, "tensor", "shape");
  CHECK(reshaped.at("status") == "reshaped");
  CHECK(reshaped.at("shape") == "2x2");
  CHECK(reshaped.at("changed") == "4");
  const Row removed = Find(tensors, "tensor", "gone");
  CHECK(removed.at("status") == "removed");
  CHECK(removed.at("elements").empty());
  CHECK(removed.at("changed").empty());

  const Row second = Find(ReadCsv(stem + ".csv"), "index", "1");
  CHECK(second.at("tensors") == "6");
  CHECK(second.at("parameters") == "21");
  CHECK(Number(second, "changed_params") == doctest::Approx(11.0 / 21).epsilon(1e-9));
  CHECK(second.at("changed_tensors") == "3");
  CHECK(second.at("frozen_tensors") == "1");
  CHECK(second.at("added_tensors") == "1");
  CHECK(second.at("removed_tensors") == "1");
  CHECK(second.at("reshaped_tensors") == "1");
  CHECK(second.at("non_finite") == "2");
  // w and odd move; frozen adds 0.25 + 1 + 4 to the reference's squares.
  CHECK(Number(second, "relative_update") == doctest::Approx(std::sqrt(149.25 / 102.8125)).epsilon(1e-9));

  // The target's fp16 values are 1 (biased exponent 15) and 0.
  const std::vector<Row> exponents = ReadCsv(stem + ".exponents.csv");
  const Row zero = Find(exponents, "kind", "zero/subnormal");
  CHECK(zero.at("dtype") == "fp16");
  CHECK(zero.at("count") == "1");
  CHECK(zero.at("exponent").empty());
  const Row fp16_one = Find(exponents, "biased_exponent", "15");
  CHECK(fp16_one.at("exponent") == "0");
  CHECK(fp16_one.at("count") == "1");
}

TEST_CASE("a file holding the reference's tensors under other names is said to share them, and counted") {
  const std::string stem = Tmp() + "/shared";
  // The adapter fixture: step 200's 25 tensors under a prefix, and one of its own.
  Run run =
      Analyze("--as-given tests/data/cnn-bf16/step-000200.safetensors tests/data/shared/adapter.safetensors", "", stem);
  REQUIRE_MESSAGE(run.code == 0, run.err);
  CHECK(run.out.find("\nshared: 25 tensors (113.2 KiB) are cnn-bf16's bytes under other names\n") != std::string::npos);
  const Row second = Find(ReadCsv(stem + ".csv"), "index", "1");
  CHECK(second.at("added_tensors") == "26");
  CHECK(second.at("shared_tensors") == "25");
  CHECK(second.at("shared_bytes") == "115884");  // all of step 200's tensor bytes
  CHECK(Find(ReadCsv(stem + ".csv"), "index", "0").at("shared_tensors").empty());
  // Against itself nothing is added, and nothing is said.
  Run same = Analyze(
      "--as-given tests/data/cnn-bf16/step-000160.safetensors tests/data/cnn-bf16/step-000200.safetensors", "", stem);
  REQUIRE(same.code == 0);
  CHECK(same.out.find("under other names") == std::string::npos);
  CHECK(Find(ReadCsv(stem + ".csv"), "index", "1").at("shared_tensors") == "0");
}

TEST_CASE("the checker fails when given the files in another order than the tool read them") {
  const std::string stem = Folder("order") + "/out";
  REQUIRE(Analyze(kFp32, "--base-interval 10", stem).code == 0);
  const std::string d = "tests/data/cnn-fp32/step-000";
  const std::string reversed = d + "200.safetensors " + d + "160.safetensors " + d + "120.safetensors " + d +
                               "080.safetensors " + d + "040.safetensors";
  const Run c = Check(reversed, "--against previous --base-interval 10", stem);
  INFO("analyze_check.py output:\n", c.out, c.err);
  CHECK(c.code == 1);
  CHECK(c.out.find("MISMATCH") != std::string::npos);
}

TEST_CASE("files of one series are analysed by step and labelled by their folder; other series are refused") {
  const std::string dir = Folder("trainer");
  std::string given;
  // The shell lists checkpoint-120 before checkpoint-40.
  for (const char* step : {"120", "160", "200", "40", "80"}) {
    const std::string folder = dir + "/out/checkpoint-" + step;
    const std::string from = std::string("tests/data/cnn-fp32/step-000") + (std::strlen(step) == 2 ? "0" : "") + step;
    REQUIRE(Sh("mkdir -p '" + folder + "' && cp " + from + ".safetensors '" + folder + "/model.safetensors'").code ==
            0);
    given += " '" + folder + "/model.safetensors'";
  }
  const Run a = Sh("cmd/git-zipnn analyze" + given + " --json '" + dir + "/out.json'");
  REQUIRE(a.code == 0);
  const std::string labels[] = {"checkpoint-40", "checkpoint-80", "checkpoint-120", "checkpoint-160", "checkpoint-200"};
  size_t at = 0;
  for (const std::string& label : labels) {
    CAPTURE(label);
    const size_t found = a.out.find("\n  " + label + " ", at);
    REQUIRE(found != std::string::npos);
    at = found + 1;
  }
  // The same numbers as the step-numbered files in their order.
  REQUIRE(Analyze(kFp32, "--base-interval 10", dir + "/steps").code == 0);
  const std::string json = Slurp(dir + "/out.json"), steps = Slurp(dir + "/steps.json");
  CHECK(json.find("\"changed_params\"") != std::string::npos);
  CHECK(json.substr(json.find("\"changed_params\"")).substr(0, 200) ==
        steps.substr(steps.find("\"changed_params\"")).substr(0, 200));

  // Two shards of each step are two series.
  const Run shards = Sh("d='" + dir +
                        "'; for s in 40 80; do mkdir -p $d/sh/checkpoint-$s; for k in 1 2; do "
                        "cp tests/data/cnn-fp32/step-0000$s.safetensors "
                        "$d/sh/checkpoint-$s/model-0000$k-of-00002.safetensors; done; done; "
                        "cmd/git-zipnn analyze $d/sh/checkpoint-*/*.safetensors");
  CHECK(shards.code != 0);
  CHECK(shards.err.find("error: these 4 files are not versions of one checkpoint: they make 2 series (") == 0);
  CHECK(shards.err.find("model-00001-of-00002.safetensors") != std::string::npos);
  CHECK(shards.err.find("--as-given") != std::string::npos);
  CHECK(Sh("cmd/git-zipnn analyze --as-given " + dir + "/sh/checkpoint-40/*.safetensors").code == 0);
}

TEST_CASE("the checker names the checkpoint, tensor and column of a single altered count") {
  const std::string dir = Folder("altered"), stem = dir + "/out", bad = dir + "/bad";
  WriteHandMadePair(dir);
  const std::string files = dir + "/step-000001.safetensors " + dir + "/step-000002.safetensors";
  REQUIRE(Analyze(files, "--base-interval 10", stem).code == 0);
  for (const char* table : {".csv", ".exponents.csv", ".policies.csv", ".thinning.csv", ".json"}) {
    REQUIRE(Sh("cp '" + stem + table + "' '" + bad + table + "'").code == 0);
  }
  std::vector<Row> tensors = ReadCsv(stem + ".tensors.csv");
  std::istringstream text(Slurp(stem + ".tensors.csv"));
  std::string header;
  std::getline(text, header);
  for (Row& r : tensors) {
    if (r.at("tensor") == "w") r["changed"] = "4";
  }
  WriteCsv(bad + ".tensors.csv", Split(header), tensors);

  const Run c = Check(files, "--against previous --base-interval 10", bad);
  INFO("analyze_check.py output:\n", c.out, c.err);
  CHECK(c.code == 1);
  CHECK(c.out.find("MISMATCH csv, checkpoint 1, tensor 'w', column changed: tool wrote 4, recomputed 3") !=
        std::string::npos);

  // The thinning table too: one rounded value more than numpy counts is
  // caught, and named by its row.
  REQUIRE(Sh("cp '" + stem + ".tensors.csv' '" + bad + ".tensors.csv'").code == 0);
  std::vector<Row> thinning = ReadCsv(stem + ".thinning.csv");
  std::istringstream thinning_text(Slurp(stem + ".thinning.csv"));
  std::getline(thinning_text, header);
  bool altered = false;
  for (Row& r : thinning) {
    if (r.at("precision") != "relative 3 mantissa bits") continue;
    r["rounded_values"] = std::to_string(std::stoull(r.at("rounded_values")) + 1);
    altered = true;
  }
  REQUIRE(altered);
  WriteCsv(bad + ".thinning.csv", Split(header), thinning);
  const Run t = Check(files, "--against previous --base-interval 10", bad);
  INFO("analyze_check.py output:\n", t.out, t.err);
  CHECK(t.code == 1);
  CHECK(t.out.find("MISMATCH csv, thinning, relative 3 mantissa bits, column rounded_values") != std::string::npos);
}

TEST_CASE("the HTML report of a real trajectory renders in a browser with every chart") {
  const std::string dir = Folder("html");
  const Run a =
      Sh("cmd/git-zipnn analyze " + kBf16Twelve + " --against base --base-interval 5 --html '" + dir + "/report.html'");
  REQUIRE(a.code == 0);
  CHECK(a.out.find("wrote " + dir + "/report.html") != std::string::npos);
  BrowserExpect expect;
  expect.ids = {"changed-bytes", "ratios", "relative-update", "policies", "top-tensors", "exponents"};
  // One chart each, the exponents of the one float dtype (bf16) included.
  expect.svg_elements = 6;
  CHECK(BrowserCheck(dir + "/report.html", dir, expect) == "");
}

}  // namespace
}  // namespace zipnn
