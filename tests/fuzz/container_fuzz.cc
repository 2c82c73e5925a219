// libFuzzer target: the object container decoder (lib/container) on
// arbitrary bytes: ReadObjectInfo, then DecodeObject into a sink that only
// counts, and ScanObject. The harness limits nothing; the decoder must
// refuse what it cannot honour (a raw size the object cannot back, an
// index past the end) before it allocates for it.
//
// Mutated bytes nearly always fail a checksum first, which would leave the
// chunk decoders unreached. So each input is decoded twice: as given, and
// with its header, chunk and index checksums recomputed over the mutated
// bytes (RepairChecksums), so that the fuzzer explores what lies behind
// them. A delta is decoded against a base of zeros of the size its header
// claims, served without allocating it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "lib/base/content_id.h"
#include "lib/base/io.h"
#include "lib/container/format.h"
#include "lib/container/object.h"

namespace zipnn::container {
namespace {

// A checkpoint of `size` zero bytes that exists only as a size.
class ZeroSource : public ByteSource {
 public:
  explicit ZeroSource(uint64_t size) : size_(size) {}
  uint64_t size() const override { return size_; }
  Status ReadAt(uint64_t offset, void* out, size_t n) const override {
    if (offset > size_ || n > size_ - offset) return IoError(name_ + ": read past the end");
    std::memset(out, 0, n);
    return OkStatus();
  }
  const std::string& name() const override { return name_; }

 private:
  uint64_t size_;
  std::string name_ = "zero base";
};

void Decode(const ByteSource& object, const ObjectInfo& info, const Sources& base) {
  DecodeOptions options;
  options.threads = 1;  // one core: the fuzzer runs its own processes
  CountingSink sink;
  if (DecodeObject(object, info, base, options, sink).ok() && sink.bytes() != info.header.raw_size) {
    std::fprintf(stderr, "a decode succeeded with %llu bytes, not the raw size %llu\n",
                 static_cast<unsigned long long>(sink.bytes()), static_cast<unsigned long long>(info.header.raw_size));
    std::abort();
  }
  if (!info.header.layout.regions.empty()) {
    options.only_region = info.header.layout.regions.size() - 1;
    CountingSink part;
    (void)DecodeObject(object, info, base, options, part);
  }
  // A part read through a reader that checks raw checksums (format 5).
  auto reader = ObjectReader::Open(object, info, base, /*check_raw=*/true);
  if (reader.ok()) {
    uint8_t head[4096];
    const size_t n = static_cast<size_t>(std::min<uint64_t>(sizeof head, info.header.raw_size));
    (void)(*reader)->ReadAt(info.header.raw_size - n, head, n);
  }
}

void Exercise(const uint8_t* data, size_t size) {
  MemorySource object(data, size, "fuzz.zipnn");
  Result<ObjectInfo> info = ReadObjectInfo(object);
  if (!info.ok()) return;
  Decode(object, *info, Sources{});
  if (info->header.kind == ObjectKind::kDelta) {
    ZeroSource base(info->header.base_size);
    std::vector<std::unique_ptr<ZeroSource>> references;  // format 8: the versions referenced
    Sources sources{&base, {}};
    for (const Reference& r : info->header.references) {
      references.push_back(std::make_unique<ZeroSource>(r.size));
      sources.references.push_back(references.back().get());
    }
    Decode(object, *info, sources);
  }
  (void)ScanObject(object, *info);
}

// Recomputes, where the mutated bytes still say where they are, the header
// checksum, each chunk record's checksum in the index, and the index
// checksum in the trailer (docs/format.md), through the format's own
// section encoders. Returns whether any changed.
bool RepairChecksums(std::vector<uint8_t>& b) {
  const uint64_t size = b.size();
  if (size < kHeaderBytes + kTrailerBytes) return false;
  const std::vector<uint8_t> before = b;
  uint8_t* p = b.data();
  HeaderFields header = DecodeHeader(p);
  if (TableEntries(header) > (size - kHeaderBytes - kTrailerBytes) / kRegionEntryBytes) return false;
  header.checksum = HeaderChecksum(p, p + kHeaderBytes, TableEntries(header));
  EncodeHeader(header, p);

  uint8_t* t = p + size - kTrailerBytes;
  TrailerFields trailer = DecodeTrailer(t);
  const uint64_t chunks = trailer.chunk_count;
  const uint64_t records = kHeaderBytes + kRegionEntryBytes * TableEntries(header);
  if (chunks <= (size - kTrailerBytes - records) / kIndexEntryBytes) {
    const uint64_t index = size - kTrailerBytes - kIndexEntryBytes * chunks;
    uint64_t at = records;
    for (uint64_t i = 0; i < chunks; ++i) {
      uint8_t* e = p + index + kIndexEntryBytes * i;
      IndexEntry entry = DecodeIndexEntry(e);
      if (entry.record_size == 0 || entry.record_size > index - at) break;
      entry.checksum = Checksum64(p + at, entry.record_size);
      EncodeIndexEntry(entry, e);
      at += entry.record_size;
    }
    trailer.checksum = IndexChecksum(p + index, chunks, t);
    EncodeTrailer(trailer, t);
  }
  return b != before;
}

}  // namespace
}  // namespace zipnn::container

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zipnn::container::Exercise(data, size);
  std::vector<uint8_t> repaired(data, data + size);
  if (zipnn::container::RepairChecksums(repaired)) zipnn::container::Exercise(repaired.data(), repaired.size());
  return 0;
}
