// Tests of thinning whole checkpoints: what ThinnedSource reads, from any
// offset and of any length, is what Thin writes, for safetensors in each
// float dtype and for a torch.save file with its optimizer state.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lib/formats/formats_test_util.h"
#include "lib/formats/thin.h"

namespace zipnn::formats {
namespace {

std::vector<uint8_t> Thinned(const CheckpointView& in, const codec::Precision& p) {
  MemorySink out;
  const Result<std::vector<TensorError>> errors = Thin(in, p, out);
  REQUIRE(errors.ok());
  return out.ToVector();
}

TEST_CASE("a thinned source reads, anywhere and of any length, what Thin writes") {
  for (const char* file : {"cnn-fp32/step-000040.safetensors", "cnn-bf16/step-000040.safetensors",
                           "cnn-fp16/step-000040.safetensors", "pt-gpt/step-000040.pt"}) {
    const std::vector<uint8_t> bytes = Load(kData + file);
    const FileLayout layout = LayoutOf(bytes);
    const MemorySource source(bytes.data(), bytes.size(), file);
    const CheckpointView view{&source, &layout, {}};
    for (const codec::Precision p : {codec::Precision{codec::Precision::Kind::kAbsolute, 10},
                                     codec::Precision{codec::Precision::Kind::kRelative, 2}}) {
      CAPTURE(file);
      CAPTURE(p.Text());
      const std::vector<uint8_t> want = Thinned(view, p);
      REQUIRE(want.size() == bytes.size());
      CHECK(want != bytes);  // the precision is coarse enough to change values
      const ThinnedSource thinned(view, p);
      REQUIRE(thinned.size() == bytes.size());
      std::vector<uint8_t> whole(bytes.size());
      REQUIRE(thinned.ReadAt(0, whole.data(), whole.size()).ok());
      CHECK(whole == want);
      // Reads that start and end inside elements, and reads of one byte.
      std::mt19937_64 rng(7);
      for (int i = 0; i < 300; ++i) {
        const size_t at = rng() % bytes.size();
        const size_t n = i % 3 == 0 ? 1 : rng() % std::min<size_t>(bytes.size() - at, 4099);
        std::vector<uint8_t> got(n);
        REQUIRE(thinned.ReadAt(at, got.data(), n).ok());
        CAPTURE(at);
        CAPTURE(n);
        CHECK(std::equal(got.begin(), got.end(), want.begin() + static_cast<std::ptrdiff_t>(at)));
      }
      std::vector<uint8_t> past(2);
      CHECK(!thinned.ReadAt(bytes.size() - 1, past.data(), 2).ok());
    }
  }
}

TEST_CASE("a tensor of one element (an optimizer's step) stays exact; the others are rounded") {
  std::vector<uint8_t> bytes = Broken(R"({"step":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
                                      R"("w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                      12);
  const size_t data = bytes.size() - 12;
  const std::vector<float> values = {190.0f, 190.0f, 0.3f};
  std::memcpy(bytes.data() + data, values.data(), 12);
  const FileLayout layout = LayoutOf(bytes);
  REQUIRE(layout.tensors.size() == 2);
  const MemorySource source(bytes.data(), bytes.size(), "file");
  const codec::Precision p{codec::Precision::Kind::kRelative, 5};
  MemorySink out;
  const Result<std::vector<TensorError>> errors = Thin(CheckpointView{&source, &layout, {}}, p, out);
  REQUIRE(errors.ok());
  REQUIRE(errors->size() == 1);
  CHECK((*errors)[0].name == "w");
  CHECK((*errors)[0].changed == 2);
  std::vector<float> after(3);
  std::memcpy(after.data(), out.ToVector().data() + data, 12);
  CHECK(after[0] == 190.0f);  // 1.0111110b x 2^7, which 5 mantissa bits make 192
  CHECK(after[1] == 192.0f);
  CHECK(after[2] != 0.3f);
  std::vector<uint8_t> read(bytes.size());
  REQUIRE(ThinnedSource(CheckpointView{&source, &layout, {}}, p).ReadAt(0, read.data(), read.size()).ok());
  CHECK(read == out.ToVector());
}

}  // namespace
}  // namespace zipnn::formats
