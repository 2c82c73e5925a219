// Tests of the zip directory reader: zip64 archives read like classic
// ones, and an empty directory.
#include <doctest/doctest.h>

#include <vector>

#include "lib/formats/formats_test_util.h"
#include "lib/formats/pytorch.h"
#include "lib/formats/zip.h"

namespace zipnn::formats {
namespace {

using codec::DType;

// The same archive in zip64 form: zip64 end-of-directory record and
// locator, 0xffff/0xffffffff in the classic record, and the first
// member's local header offset moved into a zip64 extra field.
std::vector<uint8_t> ToZip64(const std::vector<uint8_t>& zip) {
  const size_t eocd = zip.size() - 22;  // torch writes no comment
  REQUIRE(LoadLE<uint32_t>(zip.data() + eocd) == 0x06054b50);
  const uint64_t entries = LoadLE<uint16_t>(zip.data() + eocd + 10);
  const uint64_t dir_offset = LoadLE<uint32_t>(zip.data() + eocd + 16);
  std::vector<uint8_t> out(zip.begin(), zip.begin() + static_cast<ptrdiff_t>(dir_offset));
  // Directory, first entry rewritten.
  size_t pos = dir_offset;
  for (uint64_t i = 0; i < entries; ++i) {
    const uint16_t name = LoadLE<uint16_t>(zip.data() + pos + 28);
    const uint16_t extra = LoadLE<uint16_t>(zip.data() + pos + 30);
    const uint16_t comment = LoadLE<uint16_t>(zip.data() + pos + 32);
    std::vector<uint8_t> e(zip.begin() + static_cast<ptrdiff_t>(pos),
                           zip.begin() + static_cast<ptrdiff_t>(pos + 46 + name + extra + comment));
    if (i == 0) {
      const uint32_t local = LoadLE<uint32_t>(e.data() + 42);
      StoreLE<uint32_t>(e.data() + 42, 0xffffffffu);
      StoreLE<uint16_t>(e.data() + 30, static_cast<uint16_t>(extra + 12));
      std::vector<uint8_t> field(12);
      StoreLE<uint16_t>(field.data(), 0x0001);
      StoreLE<uint16_t>(field.data() + 2, 8);
      StoreLE<uint64_t>(field.data() + 4, local);
      e.insert(e.begin() + 46 + name + extra, field.begin(), field.end());
    }
    out.insert(out.end(), e.begin(), e.end());
    pos += 46 + name + extra + comment;
  }
  const uint64_t dir_size = out.size() - dir_offset;
  const uint64_t record = out.size();
  std::vector<uint8_t> z(56 + 20 + 22, 0);
  StoreLE<uint32_t>(z.data(), 0x06064b50);
  StoreLE<uint64_t>(z.data() + 4, 44);
  StoreLE<uint64_t>(z.data() + 24, entries);
  StoreLE<uint64_t>(z.data() + 32, entries);
  StoreLE<uint64_t>(z.data() + 40, dir_size);
  StoreLE<uint64_t>(z.data() + 48, dir_offset);
  StoreLE<uint32_t>(z.data() + 56, 0x07064b50);
  StoreLE<uint64_t>(z.data() + 56 + 8, record);
  StoreLE<uint32_t>(z.data() + 56 + 16, 1);
  uint8_t* e = z.data() + 76;
  StoreLE<uint32_t>(e, 0x06054b50);
  StoreLE<uint16_t>(e + 8, 0xffff);
  StoreLE<uint16_t>(e + 10, 0xffff);
  StoreLE<uint32_t>(e + 12, 0xffffffffu);
  StoreLE<uint32_t>(e + 16, 0xffffffffu);
  out.insert(out.end(), z.begin(), z.end());
  return out;
}

TEST_CASE("zip64 archives are read like classic ones") {
  const std::vector<uint8_t> classic = Load(kData + "pt-cnn/step-000040.pt");
  const std::vector<uint8_t> zip64 = ToZip64(classic);
  MemorySource a(classic.data(), classic.size(), "classic"), b(zip64.data(), zip64.size(), "zip64");
  auto ma = ReadZipDirectory(a);
  auto mb = ReadZipDirectory(b);
  REQUIRE(ma.ok());
  REQUIRE(mb.ok());
  REQUIRE(ma->size() == mb->size());
  for (size_t i = 0; i < ma->size(); ++i) {
    CHECK((*ma)[i].name == (*mb)[i].name);
    CHECK((*ma)[i].data_offset == (*mb)[i].data_offset);
    CHECK((*ma)[i].size == (*mb)[i].size);
  }
  const FileLayout layout = LayoutOf(zip64);
  CHECK(layout.format == Format::kPytorch);
  CHECK(layout.tensors.size() == LayoutOf(classic).tensors.size());
  RoundTrip(zip64, ToRegions(layout));
}

TEST_CASE("a zip whose directory is empty has no members and is raw without a warning") {
  // Like the empty safetensors header, for the zero-byte directory
  // (regressions/pytorch/empty-zip-directory-null-read).
  std::vector<uint8_t> zip(22, 0);
  StoreLE<uint32_t>(zip.data(), 0x06054b50);  // the end-of-directory record alone
  MemorySource src(zip.data(), zip.size(), "file");
  auto members = ReadZipDirectory(src);
  REQUIRE(members.ok());
  CHECK(members->empty());
  auto layout = ReadPytorch(src);
  REQUIRE(layout.ok());
  CHECK(layout->format == Format::kRaw);
  CHECK(layout->warnings.empty());
}

}  // namespace
}  // namespace zipnn::formats
