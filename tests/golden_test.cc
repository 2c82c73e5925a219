// Every golden object of every released format version keeps decoding to
// the exact bytes of the checkpoint it was made from (tests/golden/README.md).
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <string>

#include "lib/base/endian.h"
#include "lib/base/file.h"
#include "lib/codec/chunk_codec.h"
#include "lib/container/object.h"

namespace zipnn {
namespace {

struct Golden {
  const char* object;
  const char* raw;
  const char* base;  // for deltas
  container::ObjectKind kind;
  uint64_t chunks;
  uint64_t differences = 0;  // chunks taken as a difference (format 3)
  // Groups coded rans-classed (format 4) with one model, and with classes.
  uint64_t one_model = 0;
  uint64_t by_class = 0;
  uint64_t standalone = 0;  // delta chunks coded on their own (format 6)
  const char* reference = nullptr;  // the version a format 8 delta references
};

constexpr Golden kGolden[] = {
    {"v1/cnn-bf16-step40.zipnn", "cnn-bf16/step-000040.safetensors", nullptr, container::ObjectKind::kBase, 1},
    {"v1/cnn-bf16-step80-delta40.zipnn", "cnn-bf16/step-000080.safetensors", "cnn-bf16/step-000040.safetensors",
     container::ObjectKind::kDelta, 1},
    {"v1/cnn-bf16-step120-delta80-rans.zipnn", "cnn-bf16/step-000120.safetensors", "cnn-bf16/step-000080.safetensors",
     container::ObjectKind::kDelta, 1},
    {"v1/pt-cnn-step80-delta40.zipnn", "pt-cnn/step-000080.pt", "pt-cnn/step-000040.pt", container::ObjectKind::kDelta,
     10},
    {"v1/cnn-fp32-step200-chunk16k.zipnn", "cnn-fp32/step-000200.safetensors", nullptr, container::ObjectKind::kBase,
     15},
    {"v1/cnn-fp32-step160-zstd19.zipnn", "cnn-fp32/step-000160.safetensors", nullptr, container::ObjectKind::kBase, 1},
    {"v1/cnn-fp32-step120-bytes.zipnn", "cnn-fp32/step-000120.safetensors", nullptr, container::ObjectKind::kBase, 1},
    {"v2/cnn-bf16-step200.zipnn", "cnn-bf16/step-000200.safetensors", nullptr, container::ObjectKind::kBase, 5},
    {"v2/cnn-bf16-step200-delta160.zipnn", "cnn-bf16/step-000200.safetensors", "cnn-bf16/step-000160.safetensors",
     container::ObjectKind::kDelta, 5},
    {"v2/cnn-bf16-step200-delta160-sparse.zipnn", "cnn-bf16/step-000200.safetensors",
     "cnn-bf16/step-000160.safetensors", container::ObjectKind::kDelta, 5},
    {"v2/cnn12-bf16-step120-delta110.zipnn", "cnn12-bf16/step-000120.safetensors", "cnn12-bf16/step-000110.safetensors",
     container::ObjectKind::kDelta, 3},
    {"v3/cnn-bf16-step200-delta160.zipnn", "cnn-bf16/step-000200.safetensors", "cnn-bf16/step-000160.safetensors",
     container::ObjectKind::kDelta, 5, 4},
    {"v3/cnn-fp32-step200-delta160-chunk16k.zipnn", "cnn-fp32/step-000200.safetensors",
     "cnn-fp32/step-000160.safetensors", container::ObjectKind::kDelta, 18, 17},
    {"v3/cnn-fp16-step80-delta40-difference.zipnn", "cnn-fp16/step-000080.safetensors",
     "cnn-fp16/step-000040.safetensors", container::ObjectKind::kDelta, 5, 4},
    {"v3/pt-cnn-step80-delta40.zipnn", "pt-cnn/step-000080.pt", "pt-cnn/step-000040.pt", container::ObjectKind::kDelta,
     10, 4},
    {"v4/cnn-bf16-step200-delta160.zipnn", "cnn-bf16/step-000200.safetensors", "cnn-bf16/step-000160.safetensors",
     container::ObjectKind::kDelta, 5, 4, 0, 2},
    {"v4/cnn-fp32-step200-delta160.zipnn", "cnn-fp32/step-000200.safetensors", "cnn-fp32/step-000160.safetensors",
     container::ObjectKind::kDelta, 5, 4, 0, 2},
    {"v4/cnn-fp16-step80-delta40-classed.zipnn", "cnn-fp16/step-000080.safetensors", "cnn-fp16/step-000040.safetensors",
     container::ObjectKind::kDelta, 5, 4, 0, 6},
    {"v4/cnn-bf16-step200-delta160-i16-classed.zipnn", "cnn-bf16/step-000200.safetensors",
     "cnn-bf16/step-000160.safetensors", container::ObjectKind::kDelta, 1, 1, 2, 0},
    {"v5/cnn-bf16-step200.zipnn", "cnn-bf16/step-000200.safetensors", nullptr, container::ObjectKind::kBase, 5},
    {"v5/cnn-bf16-step200-delta160.zipnn", "cnn-bf16/step-000200.safetensors", "cnn-bf16/step-000160.safetensors",
     container::ObjectKind::kDelta, 5, 4, 0, 2},
    {"v5/pt-cnn-step80-delta40.zipnn", "pt-cnn/step-000080.pt", "pt-cnn/step-000040.pt", container::ObjectKind::kDelta,
     10, 4},
    {"v6/cnn12-bf16-step120-delta-cnn-bf16-step40.zipnn", "cnn12-bf16/step-000120.safetensors",
     "cnn-bf16/step-000040.safetensors", container::ObjectKind::kDelta, 9, 0, 0, 0, 1},
    {"v7/shared-adapter-delta-cnn-bf16-step200.zipnn", "shared/adapter.safetensors", "cnn-bf16/step-000200.safetensors",
     container::ObjectKind::kDelta, 27},
    {"v8/resharded-delta-cnn-bf16-step200-ref160.zipnn", "shared/resharded.safetensors",
     "cnn-bf16/step-000200.safetensors", container::ObjectKind::kDelta, 9, 0, 0, 0, 0,
     "cnn-bf16/step-000160.safetensors"},
};

// The rans-classed groups of an object: with one model, and with classes.
std::pair<uint64_t, uint64_t> ClassedGroups(const ByteSource& object, const container::ObjectInfo& info) {
  std::pair<uint64_t, uint64_t> counts;
  Buffer record;
  const size_t skip = container::HasRawChecksums(info.header) ? container::kRawChecksumBytes : 0;
  for (const container::ChunkRef& c : info.chunks) {
    record.Resize(c.record_size);
    REQUIRE(object.ReadAt(c.record_offset, record.data(), c.record_size).ok());
    auto groups = codec::ParseChunkRecord(info.header.layout.regions[c.span.region].dtype, record.data() + skip,
                                          c.record_size - skip, c.span.length);
    REQUIRE(groups.ok());
    size_t at = skip + groups->payload_start;
    for (int g = 0; g < groups->count; ++g) {
      const codec::GroupEntry& e = groups->group[g];
      if (e.coder == codec::Coder::kClassedRans) ++(record.data()[at] == 1 ? counts.first : counts.second);
      at += e.stored;
    }
  }
  return counts;
}

TEST_CASE("golden objects of every format version decode byte for byte") {
  for (const Golden& g : kGolden) {
    CAPTURE(g.object);
    auto object = ReadFile::Open(std::string("tests/golden/") + g.object);
    REQUIRE(object.ok());
    auto raw = ReadWholeFile(std::string("tests/data/") + g.raw);
    REQUIRE(raw.ok());
    std::optional<ReadFile> base;
    if (g.base != nullptr) {
      auto b = ReadFile::Open(std::string("tests/data/") + g.base);
      REQUIRE(b.ok());
      base.emplace(std::move(*b));
    }
    std::optional<ReadFile> reference;
    if (g.reference != nullptr) {
      auto r = ReadFile::Open(std::string("tests/data/") + g.reference);
      REQUIRE(r.ok());
      reference.emplace(std::move(*r));
    }
    const container::Sources sources{base ? &*base : nullptr, reference ? std::vector<const ByteSource*>{&*reference}
                                                                        : std::vector<const ByteSource*>{}};
    auto info = container::ReadObjectInfo(*object);
    REQUIRE(info.ok());
    CHECK(info->header.kind == g.kind);
    CHECK(info->header.references.size() == (reference ? 1u : 0u));
    CHECK(info->chunks.size() == g.chunks);
    const auto differences = std::count_if(info->chunks.begin(), info->chunks.end(), [](const container::ChunkRef& c) {
      return c.transform == codec::Transform::kDifference;
    });
    CHECK(static_cast<uint64_t>(differences) == g.differences);
    const auto standalone = std::count_if(info->chunks.begin(), info->chunks.end(), [](const container::ChunkRef& c) {
      return c.transform == codec::Transform::kStandalone;
    });
    CHECK(static_cast<uint64_t>(standalone) == g.standalone);
    const auto [one_model, by_class] = ClassedGroups(*object, *info);
    CHECK(one_model == g.one_model);
    CHECK(by_class == g.by_class);
    CHECK(info->content_id == HashBytes(raw->data(), raw->size()));
    for (int threads : {1, 2}) {
      MemorySink out;
      container::DecodeOptions o;
      o.threads = threads;
      Status s = container::DecodeObject(*object, *info, sources, o, out);
      REQUIRE(s.ok());
      CHECK(out.ToVector() == *raw);
    }
    // Read by parts, each chunk checked against its raw checksum (format 5
    // on; older objects have none to check).
    auto reader = container::ObjectReader::Open(*object, *info, sources, /*check_raw=*/true);
    REQUIRE(reader.ok());
    std::vector<uint8_t> parts(raw->size());
    const size_t half = parts.size() / 2;
    REQUIRE((*reader)->ReadAt(half, parts.data() + half, parts.size() - half).ok());
    REQUIRE((*reader)->ReadAt(0, parts.data(), half).ok());
    CHECK(parts == *raw);
  }
}

TEST_CASE("golden objects of format 5 on carry the raw checksum of every chunk") {
  for (const Golden& g : kGolden) {
    const std::string folder = std::string(g.object).substr(0, 3);
    if (folder < "v5/") continue;
    CAPTURE(g.object);
    auto object = ReadFile::Open(std::string("tests/golden/") + g.object);
    REQUIRE(object.ok());
    auto raw = ReadWholeFile(std::string("tests/data/") + g.raw);
    REQUIRE(raw.ok());
    auto info = container::ReadObjectInfo(*object);
    REQUIRE(info.ok());
    REQUIRE(container::HasRawChecksums(info->header));
    for (const container::ChunkRef& c : info->chunks) {
      uint8_t stored[container::kRawChecksumBytes];
      REQUIRE(object->ReadAt(c.record_offset, stored, sizeof stored).ok());
      CHECK(LoadLE<uint64_t>(stored) == Checksum64(raw->data() + c.span.offset, c.span.length));
    }
  }
}

TEST_CASE("the golden object of format 7 says its base holds its tensors under other names") {
  auto object = ReadFile::Open("tests/golden/v7/shared-adapter-delta-cnn-bf16-step200.zipnn");
  REQUIRE(object.ok());
  auto info = container::ReadObjectInfo(*object);
  REQUIRE(info.ok());
  CHECK(info->header.version == 7);
  CHECK(info->header.choice == container::BaseChoice::kShared);
  // The model's tensors, under a prefix and in reverse order, each start
  // at its own bytes in the base: the delta is a small part of the file.
  CHECK(object->size() * 10 < info->header.raw_size);
}

TEST_CASE("the golden object of format 8 takes tensors from a version it references besides its base") {
  auto object = ReadFile::Open("tests/golden/v8/resharded-delta-cnn-bf16-step200-ref160.zipnn");
  REQUIRE(object.ok());
  auto info = container::ReadObjectInfo(*object);
  REQUIRE(info.ok());
  CHECK(info->header.version == 8);
  auto reference = ReadWholeFile("tests/data/cnn-bf16/step-000160.safetensors");
  REQUIRE(reference.ok());
  REQUIRE(info->header.references.size() == 1);
  CHECK(info->header.references[0].id == HashBytes(reference->data(), reference->size()));
  // The two tensors of step 160 come from it, the model's from the base:
  // every byte but the header's is an unchanged delta.
  const auto from_reference = std::count_if(info->header.layout.regions.begin(), info->header.layout.regions.end(),
                                            [](const container::Region& r) { return r.delta && r.source == 1; });
  CHECK(from_reference == 2);
  CHECK(object->size() * 100 < info->header.raw_size);
}

}  // namespace
}  // namespace zipnn
