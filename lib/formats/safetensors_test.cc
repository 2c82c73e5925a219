// Tests of the safetensors reader on real checkpoints and on headers that
// lie, each of which must leave the file raw with a warning naming the
// problem, and restore it exactly.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "lib/formats/formats_test_util.h"
#include "lib/formats/safetensors.h"

namespace zipnn::formats {
namespace {

using codec::DType;

TEST_CASE("reads the tensors of real safetensors checkpoints in bf16, fp16 and fp32") {
  for (const auto& [case_dir, dtype] : {std::pair<std::string, DType>{"cnn-bf16", DType::kBF16},
                                        {"cnn-fp16", DType::kF16},
                                        {"cnn-fp32", DType::kF32}}) {
    const std::string dir = case_dir;  // a structured binding cannot be captured (clang)
    CAPTURE(dir);
    const std::vector<uint8_t> file = Load(kData + dir + "/step-000040.safetensors");
    const FileLayout layout = LayoutOf(file);
    CHECK(layout.format == Format::kSafetensors);
    CHECK(layout.warnings.empty());
    REQUIRE(layout.tensors.size() == 25);  // 4 convs/linears + 3 batch norms x 5 + 2 more linears
    const uint64_t header = LoadLE<uint64_t>(file.data());
    CHECK(layout.tensors.front().offset == 8 + header);
    CHECK(layout.tensors.front().name == "c1.weight");
    CHECK(layout.tensors.front().dtype == dtype);
    CHECK(layout.tensors.front().shape == std::vector<uint64_t>{16, 1, 3, 3});
    // Tensors are contiguous to the end of the file; counters are I64.
    for (size_t i = 1; i < layout.tensors.size(); ++i) {
      CHECK(layout.tensors[i].offset == layout.tensors[i - 1].offset + layout.tensors[i - 1].length);
    }
    CHECK(layout.tensors.back().offset + layout.tensors.back().length == file.size());
    size_t counters = 0;
    for (const Tensor& t : layout.tensors) {
      if (t.name.find("num_batches_tracked") != std::string::npos) {
        ++counters;
        CHECK(t.dtype == DType::kI64);
        CHECK(t.shape.empty());
      } else {
        CHECK(t.dtype == dtype);
      }
    }
    CHECK(counters == 3);
    RoundTrip(file, ToRegions(layout));
  }
}

TEST_CASE("lying safetensors headers are stored as raw bytes with a warning, and restored exactly") {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  struct Case {
    std::vector<uint8_t> file;
    std::string problem;
  };
  const std::vector<Case> cases = {
      {Broken(ok, 8, 1u << 20), "length 1048576 runs past the end of the file"},
      {Broken(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", 8), "is not valid JSON"},
      {Broken(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", 8),
       "entry 'a' has offsets outside the data"},
      {Broken(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,4]}})", 8),
       "entry 'a' has offsets outside the data"},
      {Broken(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8),
       "entry 'a' holds 8 bytes, not dtype x shape"},
      {Broken(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
       "entry 'a' holds 8 bytes, not dtype x shape"},
      {Broken(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8),
       "entry 'a' has a shape that is not a list of sizes"},
      {Broken(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           8),
       "has overlapping tensors 'a' and 'b'"},
      {Broken(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", 8), "entry 'a' has no dtype"},
      {Broken(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8), "entry 'a' has no valid data_offsets"},
      {Broken(R"({"a":7})", 8), "entry 'a' is not an object"},
      {Broken(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8, uint64_t{1} << 62),
       "length 4611686018427387904 runs past the end of the file"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.problem);
    const FileLayout layout = LayoutOf(c.file);
    CHECK(layout.format == Format::kRaw);
    CHECK(layout.tensors.empty());  // too small for a dtype guess
    REQUIRE(layout.warnings.size() == 1);
    CHECK(layout.warnings[0] == "file: safetensors header " + c.problem + "; stored as raw bytes");
    RoundTrip(c.file, ToRegions(layout));
  }
  // The same header, honest, is read as a tensor.
  const FileLayout good = LayoutOf(Broken(ok, 8));
  CHECK(good.format == Format::kSafetensors);
  CHECK(good.tensors.size() == 1);
}

// Inputs the fuzz targets found (tests/fuzz/regressions/), each reduced to
// the case it stands for.

TEST_CASE("rejects a safetensors header of length 0 as not valid JSON") {
  // The empty header was read into an empty buffer: a copy to a null
  // pointer (regressions/safetensors/empty-header-null-read).
  const std::vector<uint8_t> file = Broken("", 8);
  MemorySource src(file.data(), file.size(), "file");
  auto layout = ReadSafetensors(src);
  REQUIRE(layout.ok());
  CHECK(layout->format == Format::kRaw);
  REQUIRE(layout->warnings.size() == 1);
  CHECK(layout->warnings[0] == "file: safetensors header is not valid JSON; stored as raw bytes");
}

TEST_CASE("a safetensors header with more JSON values or nesting than any checkpoint is raw, before it is built") {
  // 100 MiB of "[{},{},...]" made the parsed tree take over 4 GB.
  std::string many = "{\"a\":[";
  for (size_t i = 0; i <= (1u << 20); ++i) many += i == 0 ? "0" : ",0";
  many += "]}";
  const std::string deep = "{\"a\":" + std::string(64, '[') + std::string(64, ']') + "}";
  const std::string fine = "{\"a\":" + std::string(63, '[') + std::string(63, ']') + "}";
  const struct {
    const std::string& header;
    const char* warning;
  } kCases[] = {
      {many, "file: safetensors header has more than 1048576 JSON values; stored as raw bytes"},
      {deep, "file: safetensors header nests deeper than 64; stored as raw bytes"},
      {fine, "file: safetensors header entry 'a' is not an object; stored as raw bytes"},
  };
  for (const auto& c : kCases) {
    CAPTURE(c.warning);
    const std::vector<uint8_t> file = Broken(c.header, 8);
    MemorySource src(file.data(), file.size(), "file");
    auto layout = ReadSafetensors(src);
    REQUIRE(layout.ok());
    CHECK(layout->format == Format::kRaw);
    REQUIRE(layout->warnings.size() == 1);
    CHECK(layout->warnings[0] == c.warning);
  }
}

}  // namespace
}  // namespace zipnn::formats
