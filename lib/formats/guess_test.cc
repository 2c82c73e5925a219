// Tests of the dtype guess for files of no known format: it is taken only
// when it makes the object smaller.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "lib/formats/formats_test_util.h"

namespace zipnn::formats {
namespace {

using codec::DType;

// The tensor bytes of a real checkpoint, without its header.
std::vector<uint8_t> TensorBytes(const std::string& path) {
  const std::vector<uint8_t> file = Load(path);
  const uint64_t start = 8 + LoadLE<uint64_t>(file.data());
  return std::vector<uint8_t>(file.begin() + static_cast<ptrdiff_t>(start), file.end());
}

TEST_CASE("unknown files get a dtype from a sample only when it pays") {
  for (const auto& [case_dir, dtype] : {std::pair<std::string, DType>{"cnn-bf16", DType::kBF16},
                                        {"cnn-fp16", DType::kBF16},  // 16-bit floats group alike
                                        {"cnn-fp32", DType::kF32}}) {
    const std::string dir = case_dir;  // a structured binding cannot be captured (clang)
    CAPTURE(dir);
    const std::vector<uint8_t> weights = TensorBytes(kData + dir + "/step-000040.safetensors");
    const FileLayout layout = LayoutOf(weights);
    CHECK(layout.format == Format::kRaw);
    REQUIRE(layout.tensors.size() == 1);
    CHECK(layout.tensors[0].dtype == dtype);
    CHECK(layout.tensors[0].length == weights.size());
    // It pays: smaller than the bytes stored untyped.
    FileLayout untyped = layout;
    untyped.tensors.clear();
    CHECK(RoundTrip(weights, ToRegions(layout)).size() < RoundTrip(weights, ToRegions(untyped)).size());
  }
  // Text compresses better with zstd than any grouping: no guess.
  std::string text;
  for (int i = 0; i < 400; ++i) text += "step " + std::to_string(i) + " loss " + std::to_string(1.0 / (i + 1)) + "\n";
  CHECK(LayoutOf(std::vector<uint8_t>(text.begin(), text.end())).tensors.empty());
  // Noise: nothing pays.
  std::vector<uint8_t> noise(100000);
  uint32_t x = 1;
  for (auto& b : noise) b = static_cast<uint8_t>((x = x * 1664525u + 1013904223u) >> 24);
  CHECK(LayoutOf(noise).tensors.empty());
  // A forced raw read never guesses.
  CHECK(LayoutOf(TensorBytes(kData + "cnn-fp32/step-000040.safetensors"), Format::kRaw).tensors.empty());
}

TEST_CASE("a lying safetensors file large enough to sample still gets its dtype guessed") {
  std::vector<uint8_t> file = Load(kData + "cnn-fp32/step-000040.safetensors");
  file.resize(file.size() / 2);  // the header now points past the end
  const FileLayout layout = LayoutOf(file);
  CHECK(layout.format == Format::kRaw);
  CHECK(layout.warnings.size() == 1);
  REQUIRE(layout.tensors.size() == 1);
  CHECK(layout.tensors[0].dtype == DType::kF32);
  RoundTrip(file, ToRegions(layout));
}

}  // namespace
}  // namespace zipnn::formats
