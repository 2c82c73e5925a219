// libFuzzer target: the pointer parser (lib/store/pointer.h). Beyond not
// crashing, it holds the pointer format to its promise of exactly one
// valid encoding: text that parses must be what FormatPointer writes for
// the result, byte for byte, and must be recognised as a pointer by
// LooksLikePointer (or clean would store a pointer as content).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "lib/store/pointer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool looks = zipnn::store::LooksLikePointer(text);
  zipnn::Result<zipnn::store::Pointer> p = zipnn::store::ParsePointer(text);
  if (!p.ok()) return 0;
  if (zipnn::store::FormatPointer(*p) != text) {
    std::fprintf(stderr, "a second encoding of a pointer parses: FormatPointer gives\n%s",
                 zipnn::store::FormatPointer(*p).c_str());
    std::abort();
  }
  if (!looks) {
    std::fprintf(stderr, "a valid pointer is not recognised by LooksLikePointer\n");
    std::abort();
  }
  return 0;
}
