// What every format reader promises about the FileLayout it returns
// (lib/formats/file_layout.h), checked by the format fuzz targets: the
// tensors are sorted by offset, do not overlap, lie inside the file, and
// the regions made from them are a valid container layout. A broken
// promise aborts, which libFuzzer reports as a crash.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "lib/formats/file_layout.h"

namespace zipnn::fuzz {

inline void Fail(const char* what) {
  std::fprintf(stderr, "layout broken: %s\n", what);
  std::abort();
}

inline void CheckLayout(const formats::FileLayout& layout, uint64_t file_size) {
  if (layout.size != file_size) Fail("size is not the file's");
  uint64_t end = 0;
  for (const formats::Tensor& t : layout.tensors) {
    if (t.offset < end) Fail("tensors overlap or are out of order");
    if (t.offset > file_size || t.length > file_size - t.offset) Fail("a tensor runs past the end of the file");
    end = t.offset + t.length;
  }
  Status regions = formats::ToRegions(layout).Validate(file_size, 0);
  if (!regions.ok()) Fail(regions.message().c_str());
}

}  // namespace zipnn::fuzz
