// Tests of format detection: by content, never by name, and the formats
// a user may choose.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "lib/formats/formats_test_util.h"
#include "lib/formats/detect.h"

namespace zipnn::formats {
namespace {

using codec::DType;

TEST_CASE("files are told apart by content, and unknown dtypes stay opaque") {
  std::vector<uint8_t> text(300, 'x');
  CHECK(LayoutOf(text).format == Format::kRaw);
  CHECK(LayoutOf(text).warnings.empty());
  CHECK(LayoutOf(Load(kData + "cnn-bf16/step-000040.safetensors"), Format::kRaw).format == Format::kRaw);
  const FileLayout odd = LayoutOf(Broken(R"({"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", 8));
  CHECK(odd.format == Format::kSafetensors);
  REQUIRE(odd.tensors.size() == 1);
  CHECK(odd.tensors[0].dtype == DType::kBytes);
}

TEST_CASE("every format of the table is a --format choice, by the name its listings and pointers use") {
  for (const FormatInfo& f : kFormats) {
    CAPTURE(f.name);
    const Result<FormatChoice> parsed = ParseFormatChoice(f.name);
    REQUIRE(parsed.ok());
    CHECK(*parsed == f.format);
    CHECK(std::string(FormatName(f.format)) == f.name);
  }
  CHECK(ParseFormatChoice("auto").ok());
  CHECK(!ParseFormatChoice("auto").value().has_value());
  const Result<FormatChoice> zip = ParseFormatChoice("zip");
  REQUIRE(!zip.ok());
  CHECK(zip.status().message() == "unknown format 'zip' (one of: auto, raw, safetensors, pytorch)");
}

}  // namespace
}  // namespace zipnn::formats
