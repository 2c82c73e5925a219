// libFuzzer target: torch.save zips (lib/formats/pytorch.h) and the format
// detection in front of every reader (lib/formats/detect.h, auto choice).
// An input that is not a zip also goes to the pickle interpreter directly
// (lib/formats/torch_pickle.h): inside a zip, mutations seldom reach
// data.pkl intact, so the corpus holds bare pickles too.
#include <cstddef>
#include <cstdint>

#include "lib/base/io.h"
#include "lib/formats/detect.h"
#include "lib/formats/pytorch.h"
#include "lib/formats/torch_pickle.h"
#include "lib/formats/zip.h"
#include "tests/fuzz/layout_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zipnn::formats;  // NOLINT: a harness of one namespace
  zipnn::MemorySource file(data, size, "fuzz.pt");
  auto zip = ReadPytorch(file);
  if (zip.ok()) zipnn::fuzz::CheckLayout(*zip, size);
  auto detected = ReadLayout(file, kAutoFormat);
  if (detected.ok()) zipnn::fuzz::CheckLayout(*detected, size);
  if (!LooksLikeZip(data, size)) (void)ReadTorchPickle(data, size);
  return 0;
}
