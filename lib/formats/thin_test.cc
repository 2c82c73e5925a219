// Tests of thinning whole checkpoints: what ThinnedSource reads, from any
// offset and of any length, is what Thin writes, for safetensors in each
// float dtype and for a torch.save file with its optimizer state.
#include <doctest/doctest.h>

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

}  // namespace
}  // namespace zipnn::formats
