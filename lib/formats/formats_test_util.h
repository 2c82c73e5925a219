// Helpers shared by the format tests (lib/formats/*_test.cc): loading
// the checkpoints under tests/data (made by make_trajectory.py), reading a
// layout that must succeed, exact round trips through the container, a
// safetensors file with a header of our choosing, and finding zip members
// by hand. Test-only; every helper fails the running test case on error.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <memory>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/endian.h"
#include "lib/base/file.h"
#include "lib/container/object.h"
#include "lib/formats/detect.h"

namespace zipnn::formats {

inline const std::string kData = "tests/data/";

inline std::vector<uint8_t> Load(const std::string& path) {
  auto data = ReadWholeFile(path);
  REQUIRE(data.ok());
  return *data;
}

inline FileLayout LayoutOf(const std::vector<uint8_t>& bytes, FormatChoice choice = kAutoFormat) {
  MemorySource src(bytes.data(), bytes.size(), "file");
  auto layout = ReadLayout(src, choice);
  REQUIRE(layout.ok());
  return *layout;
}

// Encodes with `layout` (and `base`), decodes, and returns the object.
inline std::vector<uint8_t> RoundTrip(const std::vector<uint8_t>& bytes, const container::Layout& layout,
                                      const std::vector<uint8_t>* base = nullptr,
                                      const std::vector<const std::vector<uint8_t>*>& references = {}) {
  MemorySource src(bytes.data(), bytes.size(), "file");
  MemorySource base_src(base ? base->data() : nullptr, base ? base->size() : 0, "base");
  container::DeltaBase db{&base_src, base ? HashBytes(base->data(), base->size()) : ContentId{}};
  std::vector<std::unique_ptr<MemorySource>> held;  // the references, as sources
  for (const std::vector<uint8_t>* r : references) {
    held.push_back(std::make_unique<MemorySource>(r->data(), r->size(), "reference"));
    db.references.push_back(container::ReferenceSource{held.back().get(), HashBytes(r->data(), r->size())});
  }
  MemorySink object;
  container::EncodeOptions options;
  options.threads = 2;
  auto r = container::EncodeObject(src, layout, base ? &db : nullptr, options, object);
  REQUIRE(r.ok());
  const std::vector<uint8_t> obj = object.ToVector();
  MemorySource obj_src(obj.data(), obj.size(), "object");
  auto info = container::ReadObjectInfo(obj_src);
  REQUIRE(info.ok());
  MemorySink out;
  REQUIRE(
      container::DecodeObject(obj_src, *info, base ? container::SourcesOf(db) : container::Sources{}, {}, out).ok());
  CHECK(out.ToVector() == bytes);
  return obj;
}

// A safetensors file: the header `json` (its length given, or
// `claimed_length` when that is not 0), then `data_bytes` bytes.
inline std::vector<uint8_t> Broken(const std::string& json, size_t data_bytes, uint64_t claimed_length = 0) {
  std::vector<uint8_t> out(8);
  StoreLE<uint64_t>(out.data(), claimed_length != 0 ? claimed_length : json.size());
  out.insert(out.end(), json.begin(), json.end());
  for (size_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<uint8_t>(i * 7));
  return out;
}

// Offset of the central directory entry of the member whose name ends in `tail`.
inline size_t CentralEntry(const std::vector<uint8_t>& zip, const std::string& tail) {
  for (size_t i = 0; i + 46 < zip.size(); ++i) {
    if (LoadLE<uint32_t>(zip.data() + i) != 0x02014b50) continue;
    const uint16_t n = LoadLE<uint16_t>(zip.data() + i + 28);
    const std::string name(reinterpret_cast<const char*>(zip.data() + i + 46), n);
    if (name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0) return i;
  }
  FAIL("no such member");
  return 0;
}

// Offset of the stored bytes of the member whose name ends in `tail`.
inline size_t MemberData(const std::vector<uint8_t>& zip, const std::string& tail) {
  const uint32_t local = LoadLE<uint32_t>(zip.data() + CentralEntry(zip, tail) + 42);
  return local + 30 + LoadLE<uint16_t>(zip.data() + local + 26) + LoadLE<uint16_t>(zip.data() + local + 28);
}

}  // namespace zipnn::formats
