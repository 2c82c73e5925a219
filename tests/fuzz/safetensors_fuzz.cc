// libFuzzer target: the safetensors reader (lib/formats/safetensors.h).
// Whatever the header claims, the reader must return (a layout or raw
// bytes with a warning), and a layout it returns must keep FileLayout's
// contract: tensors sorted, apart, inside the file, so that the regions
// made from it are a valid container layout.
#include <cstddef>
#include <cstdint>

#include "lib/base/io.h"
#include "lib/formats/safetensors.h"
#include "tests/fuzz/layout_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zipnn::MemorySource file(data, size, "fuzz.safetensors");
  auto layout = zipnn::formats::ReadSafetensors(file);
  if (layout.ok()) zipnn::fuzz::CheckLayout(*layout, size);
  return 0;
}
