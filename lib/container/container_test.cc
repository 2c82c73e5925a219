// Tests of the object container: round trips through the whole pipeline,
// identical bytes for any thread count, single-region decode, and every
// corruption a decoder must reject with an error, never with wrong bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "lib/container/object.h"

namespace zipnn::container {
namespace {

using codec::DType;

std::vector<uint8_t> Weights(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 0.05f);
  std::vector<uint8_t> v(count * 4);
  for (size_t i = 0; i < count; ++i) {
    float f = dist(rng);
    std::memcpy(&v[4 * i], &f, 4);
  }
  return v;
}

// A checkpoint-like file: a text header, then fp32 weights, then a tail.
struct Checkpoint {
  std::vector<uint8_t> bytes;
  Layout layout;
};

Checkpoint MakeCheckpoint(uint32_t seed, size_t weights = 300000) {
  Checkpoint c;
  std::string header = "{\"weight\":{\"dtype\":\"F32\"}}  ";
  c.bytes.assign(header.begin(), header.end());
  std::vector<uint8_t> w = Weights(weights, seed);
  c.bytes.insert(c.bytes.end(), w.begin(), w.end());
  for (int i = 0; i < 13; ++i) c.bytes.push_back(static_cast<uint8_t>(i));
  c.layout.regions = {
      Region{DType::kBytes, 0, header.size(), false, 0},
      Region{DType::kF32, header.size(), w.size(), false, 0},
      Region{DType::kU8, header.size() + w.size(), 13, false, 0},
  };
  return c;
}

std::vector<uint8_t> Encode(const std::vector<uint8_t>& data, const Layout& layout, int threads,
                            const std::vector<uint8_t>* base = nullptr, uint32_t chunk = 65536,
                            codec::TransformPolicy transform = codec::kAutoTransform,
                            codec::CoderPolicy policy = codec::CoderPolicy::kAuto) {
  MemorySource src(data.data(), data.size(), "input");
  MemorySource base_src(base ? base->data() : nullptr, base ? base->size() : 0, "base");
  DeltaBase db{&base_src, base ? HashBytes(base->data(), base->size()) : ContentId{}};
  EncodeOptions o;
  o.threads = threads;
  o.chunk_size = chunk;
  o.transform = transform;
  o.policy = policy;
  MemorySink sink;
  auto r = EncodeObject(src, layout, base ? &db : nullptr, o, sink);
  REQUIRE(r.ok());
  CHECK(r->content_id == HashBytes(data.data(), data.size()));
  CHECK(r->object_size == sink.buffer().size());
  return sink.ToVector();
}

Result<std::vector<uint8_t>> Decode(const std::vector<uint8_t>& object, int threads,
                                    const std::vector<uint8_t>* base = nullptr,
                                    std::optional<size_t> region = std::nullopt) {
  MemorySource src(object.data(), object.size(), "obj");
  MemorySource base_src(base ? base->data() : nullptr, base ? base->size() : 0, "base");
  ZIPNN_ASSIGN_OR_RETURN(ObjectInfo info, ReadObjectInfo(src));
  DecodeOptions o;
  o.threads = threads;
  o.only_region = region;
  MemorySink sink;
  ZIPNN_RETURN_IF_ERROR(DecodeObject(src, info, base ? &base_src : nullptr, o, sink));
  return sink.ToVector();
}

TEST_CASE("objects round-trip, and their bytes are the same for any thread count") {
  Checkpoint c = MakeCheckpoint(1);
  std::vector<uint8_t> one = Encode(c.bytes, c.layout, 1);
  for (int threads : {2, 3, 8}) {
    CAPTURE(threads);
    CHECK(Encode(c.bytes, c.layout, threads) == one);
  }
  for (int threads : {1, 2, 5}) {
    auto back = Decode(one, threads);
    REQUIRE(back.ok());
    CHECK(*back == c.bytes);
  }
  CHECK(one.size() < c.bytes.size());
}

TEST_CASE("encoding reports the raw bytes done as each stripe is written, up to the whole, and writes the same bytes") {
  Checkpoint c = MakeCheckpoint(1);
  const std::vector<uint8_t> plain = Encode(c.bytes, c.layout, 2, nullptr, 4096);
  MemorySource src(c.bytes.data(), c.bytes.size(), "input");
  EncodeOptions o;
  o.threads = 2;
  o.chunk_size = 4096;
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  o.progress = [&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); };
  MemorySink sink;
  REQUIRE(EncodeObject(src, c.layout, nullptr, o, sink).ok());
  CHECK(sink.ToVector() == plain);
  REQUIRE(calls.size() > 2);
  for (size_t i = 0; i < calls.size(); ++i) {
    CHECK(calls[i].second == c.bytes.size());
    if (i > 0) CHECK(calls[i].first > calls[i - 1].first);
  }
  CHECK(calls.back().first == c.bytes.size());
}

TEST_CASE("threads are lowered so that large chunks stay within the working memory") {
  // Small chunks: what is asked for, far beyond any machine's cores.
  CHECK(WorkingThreads(2, 256 << 10) == 2);
  CHECK(WorkingThreads(200, 4096) == 200);
  CHECK(WorkingThreads(0, 256 << 10) >= 1);
  // The most a .zipnn.yaml may ask: 4096 threads of 64 MiB chunks.
  CHECK(WorkingThreads(4096, 64u << 20) == 2);
  CHECK(WorkingThreads(4096, 256 << 10) == 256);
  CHECK(WorkingThreads(1, 64u << 20) == 1);
  for (uint32_t chunk : {4096u, 1u << 20, 16u << 20, 64u << 20}) {
    CAPTURE(chunk);
    const uint64_t stripe = std::max<uint64_t>(chunk, kStripeBytes);
    CHECK(WorkingThreads(4096, chunk) * 8 * stripe <= kWorkingMemory);
  }
}

TEST_CASE("a delta object needs its base and restores the target exactly") {
  Checkpoint base = MakeCheckpoint(2);
  Checkpoint target = base;
  std::mt19937 rng(3);
  for (size_t i = 40; i < target.bytes.size() - 13; i += 4 * 97) target.bytes[i] ^= static_cast<uint8_t>(1 + rng() % 7);
  Layout delta = target.layout.AsDeltaOfSameLayout();
  std::vector<uint8_t> obj = Encode(target.bytes, delta, 2, &base.bytes);
  std::vector<uint8_t> alone = Encode(target.bytes, target.layout, 2);
  CHECK(obj.size() * 4 < alone.size());
  CHECK(Encode(target.bytes, delta, 1, &base.bytes) == obj);

  auto back = Decode(obj, 2, &base.bytes);
  REQUIRE(back.ok());
  CHECK(*back == target.bytes);

  CHECK(Decode(obj, 1).status().message() == "obj: is a delta against " +
                                                 HashBytes(base.bytes.data(), base.bytes.size()).Hex() +
                                                 "; give that checkpoint as the base");
  // A base of the right size but the wrong content: the content id check
  // refuses the result.
  Checkpoint other = MakeCheckpoint(4);
  auto wrong = Decode(obj, 1, &other.bytes);
  REQUIRE(!wrong.ok());
  CHECK(wrong.status().code() == StatusCode::kCorruption);
  CHECK(wrong.status().message().find("is the base the right checkpoint?") != std::string::npos);
}

TEST_CASE("a delta chunk whose record holds no payload is one of bytes unchanged from its base") {
  Checkpoint base = MakeCheckpoint(2);
  Checkpoint target = base;
  // The weights' second half changes, by a flipped low bit now and then.
  const Region& w = target.layout.regions[1];
  const uint64_t changed = w.offset + w.length / 2;
  for (uint64_t i = changed; i < w.offset + w.length; i += 4 * 31) target.bytes[i] ^= 1;
  const std::vector<uint8_t> obj = Encode(target.bytes, target.layout.AsDeltaOfSameLayout(), 2, &base.bytes);
  MemorySource src(obj.data(), obj.size(), "obj");
  auto info = ReadObjectInfo(src);
  REQUIRE(info.ok());
  size_t unchanged = 0, other = 0;
  for (size_t k = 0; k < info->chunks.size(); ++k) {
    const ChunkSpan& span = info->chunks[k].span;
    CAPTURE(k);
    const bool same = span.offset + span.length <= changed || span.offset >= w.offset + w.length;  // the tail too
    CHECK(ChunkUnchanged(*info, k) == same);
    (same ? unchanged : other) += 1;
  }
  CHECK(unchanged >= 3);
  CHECK(other >= 3);
  CHECK_FALSE(ChunkUnchanged(*info, info->chunks.size()));
  // Nothing of an object stored alone is unchanged from anything.
  const std::vector<uint8_t> alone = Encode(base.bytes, base.layout, 2);
  MemorySource alone_src(alone.data(), alone.size(), "alone");
  auto alone_info = ReadObjectInfo(alone_src);
  REQUIRE(alone_info.ok());
  for (size_t k = 0; k < alone_info->chunks.size(); ++k) CHECK_FALSE(ChunkUnchanged(*alone_info, k));
}

// Version v of a trajectory whose header grows by 12 bytes each version,
// so that a delta reads its base at offsets that cut across the base's
// chunks; a few weights change each version.
Checkpoint ShiftedVersion(int v) {
  Checkpoint c = MakeCheckpoint(7, 200000);
  std::mt19937 rng(100 + v);
  for (int k = 1; k <= v; ++k) {
    for (size_t i = 40; i < c.bytes.size() - 13; i += 4 * (50 + k)) c.bytes[i] ^= static_cast<uint8_t>(1 + rng() % 7);
  }
  const std::string pad(12 * v, ' ');
  const size_t header = c.layout.regions[0].length;
  c.bytes.insert(c.bytes.begin() + header, pad.begin(), pad.end());
  c.layout.regions[0].length += pad.size();
  for (size_t r = 1; r < c.layout.regions.size(); ++r) c.layout.regions[r].offset += pad.size();
  return c;
}

// Against `base`: the weights XORed with the base's weights, the rest alone.
Layout ShiftedDelta(const Checkpoint& target, const Checkpoint& base) {
  Layout l = target.layout;
  l.regions[1].delta = true;
  l.regions[1].base_offset = base.layout.regions[1].offset;
  return l;
}

TEST_CASE("a chain of deltas decodes in one pass through object readers, from any thread") {
  constexpr int kLevels = 5;  // a base and four deltas, each against the one before
  std::vector<Checkpoint> versions;
  std::vector<std::vector<uint8_t>> objects;
  for (int v = 0; v < kLevels; ++v) {
    versions.push_back(ShiftedVersion(v));
    // Levels alternate the transforms: one chain restore undoes both.
    const codec::TransformPolicy transform = v % 2 == 0 ? codec::Transform::kDifference : codec::Transform::kXor;
    objects.push_back(v == 0 ? Encode(versions[0].bytes, versions[0].layout, 2, nullptr, 16384)
                             : Encode(versions[v].bytes, ShiftedDelta(versions[v], versions[v - 1]), 2,
                                      &versions[v - 1].bytes, 16384, transform));
  }
  CHECK(DecodeHeader(objects[1].data()).version == 2);
  CHECK(DecodeHeader(objects[2].data()).version == kRawChecksumVersion);
  std::vector<MemorySource> sources;
  for (int v = 0; v < kLevels; ++v) sources.emplace_back(objects[v].data(), objects[v].size(), "v" + std::to_string(v));
  std::vector<std::unique_ptr<ObjectReader>> readers;  // readers[v] holds version v
  for (int v = 0; v < kLevels; ++v) {
    auto info = ReadObjectInfo(sources[v]);
    REQUIRE(info.ok());
    auto reader = ObjectReader::Open(sources[v], *info, v == 0 ? nullptr : readers.back().get());
    REQUIRE(reader.ok());
    readers.push_back(std::move(*reader));
  }

  SUBCASE("the top decodes whole, checked against its id") {
    for (int threads : {1, 2, 4}) {
      auto info = ReadObjectInfo(sources.back());
      REQUIRE(info.ok());
      DecodeOptions o;
      o.threads = threads;
      MemorySink sink;
      REQUIRE(DecodeObject(sources.back(), *info, readers[kLevels - 2].get(), o, sink).ok());
      CHECK(sink.ToVector() == versions.back().bytes);
    }
  }
  SUBCASE("any range of any level reads exactly, from several threads at once") {
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 rng(t);
        std::vector<uint8_t> got;
        for (int i = 0; i < 200; ++i) {
          const int v = static_cast<int>(rng() % kLevels);
          const std::vector<uint8_t>& want = versions[v].bytes;
          const size_t at = rng() % (want.size() + 1);
          const size_t n = std::min<size_t>(want.size() - at, rng() % 70000);
          got.assign(n, 0);
          if (!readers[v]->ReadAt(at, got.data(), n).ok() || !std::equal(got.begin(), got.end(), want.begin() + at)) {
            ++wrong;
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    CHECK(wrong == 0);
    uint8_t byte = 0;
    CHECK(readers[1]->ReadAt(versions[1].bytes.size(), &byte, 1).message() == "v1: read past the end");
    CHECK(readers[1]->ReadAt(versions[1].bytes.size(), nullptr, 0).ok());
  }
  SUBCASE("damage in a middle link is named, and no wrong bytes come out") {
    std::vector<uint8_t>& middle = objects[2];
    auto info = ReadObjectInfo(sources[2]);
    REQUIRE(info.ok());
    const ChunkRef& c = info->chunks[info->chunks.size() / 2];
    middle[c.record_offset + c.record_size / 2] ^= 0x10;
    std::vector<uint8_t> got(versions[4].bytes.size());
    const Status st = readers[4]->ReadAt(0, got.data(), got.size());
    CHECK(st.code() == StatusCode::kCorruption);
    CHECK(st.message().rfind("v2: chunk " + std::to_string(info->chunks.size() / 2) + " (checkpoint bytes ", 0) == 0);
  }
  SUBCASE("a delta reader needs its base, of the right size") {
    auto info = ReadObjectInfo(sources[3]);
    REQUIRE(info.ok());
    CHECK(ObjectReader::Open(sources[3], *info, nullptr).status().code() == StatusCode::kInvalidArgument);
    CHECK(ObjectReader::Open(sources[3], *info, readers[1].get()).status().message().find("wrong base v1") !=
          std::string::npos);
  }
}

TEST_CASE("one region decodes without the rest") {
  Checkpoint c = MakeCheckpoint(5);
  std::vector<uint8_t> obj = Encode(c.bytes, c.layout, 2);
  for (size_t r = 0; r < c.layout.regions.size(); ++r) {
    auto part = Decode(obj, 2, nullptr, r);
    REQUIRE(part.ok());
    const Region& reg = c.layout.regions[r];
    CHECK(*part == std::vector<uint8_t>(c.bytes.begin() + reg.offset, c.bytes.begin() + reg.offset + reg.length));
  }
  CHECK(!Decode(obj, 1, nullptr, 3).ok());
}

TEST_CASE("empty input and chunk-size edge cases round-trip") {
  std::vector<uint8_t> empty;
  auto obj = Encode(empty, Layout::Single(DType::kBF16, 0), 1);
  auto back = Decode(obj, 1);
  REQUIRE(back.ok());
  CHECK(back->empty());

  std::vector<uint8_t> w = Weights(8193, 6);  // not a multiple of the chunk
  w.push_back(1);                             // nor of the element size
  for (uint32_t chunk : {4096u, 8200u, 65536u}) {
    auto o = Encode(w, Layout::Single(DType::kF32, w.size()), 2, nullptr, chunk);
    auto b = Decode(o, 2);
    REQUIRE(b.ok());
    CHECK(*b == w);
  }
}

TEST_CASE("encoder rejects layouts that do not fit the input") {
  std::vector<uint8_t> data(100, 7);
  MemorySource src(data.data(), data.size(), "in.bin");
  MemorySink sink;
  EncodeOptions o;
  auto r = EncodeObject(src, Layout::Single(DType::kF32, 99), nullptr, o, sink);
  CHECK(r.status().message() == "in.bin: layout does not fit: regions cover 99 bytes, expected 100");
  auto d = EncodeObject(src, Layout::Single(DType::kF32, 100).AsDeltaOfSameLayout(), nullptr, o, sink);
  CHECK(!d.ok());
  o.chunk_size = 1000;
  CHECK(!EncodeObject(src, Layout::Single(DType::kF32, 100), nullptr, o, sink).ok());
}

// ---- corruption: every damaged object is refused ----

struct Damaged {
  std::vector<uint8_t> object;
  std::vector<uint8_t> raw;
};

Damaged Sample() {
  Checkpoint c = MakeCheckpoint(7, 60000);
  return Damaged{Encode(c.bytes, c.layout, 1), c.bytes};
}

Status DecodeStatus(const std::vector<uint8_t>& object) {
  auto r = Decode(object, 2);
  return r.ok() ? OkStatus() : r.status();
}

TEST_CASE("rejects an empty, truncated or foreign object") {
  Damaged d = Sample();
  CHECK(DecodeStatus({}).message() == "obj: truncated object (shorter than header and trailer)");
  std::vector<uint8_t> text(200, 'x');
  CHECK(DecodeStatus(text).message() == "obj: not a git-zipnn object (bad magic)");
  for (size_t keep : {size_t{8}, size_t{63}, size_t{100}, d.object.size() / 2, d.object.size() - 1}) {
    CAPTURE(keep);
    std::vector<uint8_t> cut(d.object.begin(), d.object.begin() + keep);
    CHECK(!DecodeStatus(cut).ok());
  }
}

TEST_CASE("rejects a future format version with a clear message") {
  Damaged d = Sample();
  HeaderFields header = DecodeHeader(d.object.data());
  header.version = kFormatVersion + 1;
  // A damaged version field: the header's checksum no longer holds.
  std::vector<uint8_t> flipped = d.object;
  EncodeHeader(header, flipped.data());
  Status damaged = DecodeStatus(flipped);
  CHECK(damaged.code() == StatusCode::kUnsupported);
  CHECK(damaged.message() == "obj: object format version " + std::to_string(kFormatVersion + 1) +
                                 " is newer than this git-zipnn reads (" + std::to_string(kFormatVersion) +
                                 "); upgrade git-zipnn, or, if no newer git-zipnn wrote it, the object is damaged "
                                 "(its header checksum does not hold)");
  // Written so (its checksum holds): only the upgrade is said.
  header.checksum = HeaderChecksum(flipped.data(), flipped.data() + kHeaderBytes, TableEntries(header));
  EncodeHeader(header, d.object.data());
  Status s = DecodeStatus(d.object);
  CHECK(s.code() == StatusCode::kUnsupported);
  CHECK(s.message() == "obj: object format version " + std::to_string(kFormatVersion + 1) +
                           " is newer than this git-zipnn reads (" + std::to_string(kFormatVersion) +
                           "); upgrade git-zipnn");
}

TEST_CASE("a flipped bit anywhere in the object is caught") {
  Damaged d = Sample();
  // Every byte of the header, region table, index and trailer, and a
  // spread of bytes through the chunk records.
  std::vector<size_t> positions;
  const size_t records = kHeaderBytes + 3 * kRegionEntryBytes;
  for (size_t i = 0; i < records; ++i) positions.push_back(i);
  for (size_t i = records; i < d.object.size() - kTrailerBytes - 200; i += 97) positions.push_back(i);
  for (size_t i = d.object.size() - kTrailerBytes - 200; i < d.object.size(); ++i) positions.push_back(i);
  for (size_t pos : positions) {
    for (uint8_t bit : {uint8_t{0x01}, uint8_t{0x80}}) {
      std::vector<uint8_t> bad = d.object;
      bad[pos] ^= bit;
      auto r = Decode(bad, 1);
      CAPTURE(pos);
      CHECK(!r.ok());
    }
  }
}

TEST_CASE("chunk damage names the chunk and the checkpoint bytes it holds") {
  Damaged d = Sample();
  std::vector<uint8_t> bad = d.object;
  bad[kHeaderBytes + 3 * kRegionEntryBytes + 10] ^= 0x40;
  CHECK(DecodeStatus(bad).message() == "obj: chunk 0 (checkpoint bytes 0..28): checksum mismatch");
}

TEST_CASE("CheckRecords finds a flipped bit in any chunk record without decoding") {
  Damaged d = Sample();
  auto checked = [](const std::vector<uint8_t>& object) -> Status {
    MemorySource src(object.data(), object.size(), "obj");
    ZIPNN_ASSIGN_OR_RETURN(ObjectInfo info, ReadObjectInfo(src));
    return CheckRecords(src, info);
  };
  CHECK(checked(d.object).ok());
  const size_t records = kHeaderBytes + 3 * kRegionEntryBytes;
  MemorySource whole(d.object.data(), d.object.size(), "obj");
  auto info = ReadObjectInfo(whole);
  REQUIRE(info.ok());
  REQUIRE(info->chunks.size() > 2);
  const size_t end = info->chunks.back().record_offset + info->chunks.back().record_size;
  for (size_t pos = records; pos < end; pos += 131) {
    std::vector<uint8_t> bad = d.object;
    bad[pos] ^= 0x10;
    CAPTURE(pos);
    const Status s = checked(bad);
    CHECK(s.code() == StatusCode::kCorruption);
    CHECK(s.message().find(": checksum mismatch") != std::string::npos);
  }
}

// The header and region table of an object, as stored, to be changed
// field by field.
struct Head {
  HeaderFields fields;
  std::vector<RegionEntry> regions;
};

Head ReadHead(const std::vector<uint8_t>& obj) {
  Head head{DecodeHeader(obj.data()), {}};
  for (uint32_t i = 0; i < head.fields.region_count; ++i) {
    head.regions.push_back(DecodeRegionEntry(obj.data() + kHeaderBytes + kRegionEntryBytes * i));
  }
  return head;
}

// Writes `head` back and fixes the header checksum, so that only the
// fields' meaning can make the decoder refuse them.
void WriteHead(const Head& head, std::vector<uint8_t>& obj) {
  uint8_t* table = obj.data() + kHeaderBytes;
  for (size_t i = 0; i < head.regions.size(); ++i) EncodeRegionEntry(head.regions[i], table + kRegionEntryBytes * i);
  HeaderFields fields = head.fields;
  EncodeHeader(fields, obj.data());
  // (Tables claimed past the end are refused before the checksum is read.)
  if (kHeaderBytes + kRegionEntryBytes * TableEntries(fields) <= obj.size()) {
    fields.checksum = HeaderChecksum(obj.data(), table, TableEntries(fields));
  }
  EncodeHeader(fields, obj.data());
}

TEST_CASE("rejects lengths that lie, overflow or claim huge sizes, before allocating") {
  Damaged d = Sample();
  SUBCASE("raw size claims a terabyte") {
    auto bad = d.object;
    const uint64_t huge = uint64_t{1} << 40;
    Head head = ReadHead(bad);
    head.regions[2].length = huge;
    head.fields.raw_size = huge + d.raw.size() - 13;
    WriteHead(head, bad);
    Status s = DecodeStatus(bad);
    CHECK(s.message().find("chunks, the layout needs") != std::string::npos);
  }
  SUBCASE("region lengths overflow 64 bits") {
    auto bad = d.object;
    Head head = ReadHead(bad);
    head.regions[0].length = UINT64_MAX - 5;
    WriteHead(head, bad);
    CHECK(!DecodeStatus(bad).ok());
  }
  SUBCASE("region count larger than the file") {
    auto bad = d.object;
    HeaderFields header = DecodeHeader(bad.data());
    header.region_count = 0xFFFFFFFFu;  // refused before the checksum is read
    EncodeHeader(header, bad.data());
    CHECK(DecodeStatus(bad).message() == "obj: region table runs past the end (truncated?)");
  }
  SUBCASE("unknown dtype") {
    auto bad = d.object;
    Head head = ReadHead(bad);
    head.regions[0].dtype = 200;
    WriteHead(head, bad);
    CHECK(DecodeStatus(bad).message() == "obj: region 0 has unknown dtype 200");
  }
  SUBCASE("chunk size out of range") {
    auto bad = d.object;
    Head head = ReadHead(bad);
    head.fields.chunk_size = 12;
    WriteHead(head, bad);
    CHECK(DecodeStatus(bad).message() == "obj: invalid chunk size 12");
  }
  SUBCASE("a base object that names a base") {
    auto bad = d.object;
    Head head = ReadHead(bad);
    head.fields.base_id.bytes[0] = 0x34;
    WriteHead(head, bad);
    CHECK(DecodeStatus(bad).message() == "obj: a base object names a base");
  }
  SUBCASE("unknown kind and reserved bits") {
    auto bad = d.object;
    Head head = ReadHead(bad);
    head.fields.kind = 7;
    WriteHead(head, bad);
    CHECK(DecodeStatus(bad).message() == "obj: unknown object kind 7");
    bad = d.object;
    head = ReadHead(bad);
    head.fields.flags = 1;
    WriteHead(head, bad);
    CHECK(DecodeStatus(bad).message() == "obj: reserved header bits are set");
  }
}

TEST_CASE("rejects an index whose records do not fill the object") {
  Damaged d = Sample();
  // Shrink the first record size in the index and re-sign index and trailer.
  MemorySource src(d.object.data(), d.object.size(), "obj");
  auto info = ReadObjectInfo(src);
  REQUIRE(info.ok());
  const size_t count = info->chunks.size();
  const size_t index = d.object.size() - kTrailerBytes - kIndexEntryBytes * count;
  auto bad = d.object;
  IndexEntry first = DecodeIndexEntry(bad.data() + index);
  --first.record_size;
  EncodeIndexEntry(first, bad.data() + index);
  uint8_t* t = bad.data() + bad.size() - kTrailerBytes;
  TrailerFields trailer = DecodeTrailer(t);
  trailer.checksum = IndexChecksum(bad.data() + index, count, t);
  EncodeTrailer(trailer, t);
  CHECK(DecodeStatus(bad).message() == "obj: chunk records do not fill the space before the chunk index");
}

// Tests and the fuzzer change one field of a damaged object by decoding a
// section and encoding it back, so this must hold for any bytes.
template <typename Fields>
void CheckSectionRoundTrips(size_t bytes, Fields (*decode)(const uint8_t*), void (*encode)(const Fields&, uint8_t*)) {
  std::mt19937 rng(static_cast<uint32_t>(bytes));
  std::vector<uint8_t> in(bytes), out(bytes);
  for (int round = 0; round < 200; ++round) {
    for (uint8_t& b : in) b = static_cast<uint8_t>(rng() % 3 == 0 ? 0 : rng());
    encode(decode(in.data()), out.data());
    CHECK(out == in);
  }
}

TEST_CASE("every section encodes back to the bytes it was decoded from, valid or not") {
  CheckSectionRoundTrips(kHeaderBytes, DecodeHeader, EncodeHeader);
  CheckSectionRoundTrips(kRegionEntryBytes, DecodeRegionEntry, EncodeRegionEntry);
  CheckSectionRoundTrips(kIndexEntryBytes, DecodeIndexEntry, EncodeIndexEntry);
  CheckSectionRoundTrips(kTrailerBytes, DecodeTrailer, EncodeTrailer);
}

TEST_CASE("a written object's sections decode to what was written") {
  Damaged d = Sample();
  MemorySource src(d.object.data(), d.object.size(), "obj");
  auto info = ReadObjectInfo(src);
  REQUIRE(info.ok());
  const uint8_t* o = d.object.data();
  const HeaderFields h = DecodeHeader(o);
  CHECK(h.magic == kObjectMagic);
  CHECK(h.version == kRawChecksumVersion);
  CHECK(h.kind == static_cast<uint8_t>(ObjectKind::kBase));
  CHECK(h.chunk_size == 65536);
  CHECK(h.region_count == 3);
  CHECK(h.raw_size == d.raw.size());
  CHECK(h.checksum == HeaderChecksum(o, o + kHeaderBytes, 3));
  const RegionEntry weights = DecodeRegionEntry(o + kHeaderBytes + kRegionEntryBytes);
  CHECK(weights.dtype == static_cast<uint8_t>(DType::kF32));
  CHECK(weights.flags == 0);
  CHECK(weights.length == info->header.layout.regions[1].length);

  const uint8_t* t = o + d.object.size() - kTrailerBytes;
  const TrailerFields trailer = DecodeTrailer(t);
  CHECK(trailer.magic == kTrailerMagic);
  CHECK(trailer.chunk_count == info->chunks.size());
  CHECK(trailer.content_id == HashBytes(d.raw.data(), d.raw.size()));
  const uint8_t* index = t - kIndexEntryBytes * info->chunks.size();
  CHECK(trailer.checksum == IndexChecksum(index, info->chunks.size(), t));
  const IndexEntry last = DecodeIndexEntry(t - kIndexEntryBytes);
  CHECK(last.record_size == info->chunks.back().record_size);
  CHECK(last.checksum == info->chunks.back().checksum);
}

}  // namespace
}  // namespace zipnn::container

namespace zipnn::container {
namespace {

// `base` with every fp32 weight moved by up to 20 units in the last
// place, as a training step moves them.
Checkpoint Stepped(const Checkpoint& base, uint32_t seed) {
  Checkpoint c = base;
  std::mt19937 rng(seed);
  const Region& w = c.layout.regions[1];
  for (uint64_t i = w.offset; i < w.offset + w.length; i += 4) {
    uint32_t v;
    std::memcpy(&v, &c.bytes[i], 4);
    v += static_cast<uint32_t>(static_cast<int>(rng() % 41) - 20);
    std::memcpy(&c.bytes[i], &v, 4);
  }
  return c;
}

std::vector<codec::Transform> Transforms(const std::vector<uint8_t>& object, size_t region) {
  MemorySource src(object.data(), object.size(), "obj");
  auto info = ReadObjectInfo(src);
  REQUIRE(info.ok());
  std::vector<codec::Transform> t;
  for (const ChunkRef& c : info->chunks) {
    if (c.span.region == region) t.push_back(c.transform);
  }
  return t;
}

uint16_t VersionOf(const std::vector<uint8_t>& object) { return DecodeHeader(object.data()).version; }

TEST_CASE("each delta chunk is taken by the cheaper transform, recorded in the index, and decodes exactly") {
  using codec::kAutoTransform;
  using codec::Transform;
  using codec::TransformPolicy;
  const Checkpoint base = MakeCheckpoint(11);
  const Checkpoint stepped = Stepped(base, 12);
  const Layout delta = stepped.layout.AsDeltaOfSameLayout();
  const std::vector<uint8_t> chosen = Encode(stepped.bytes, delta, 2, &base.bytes);
  const std::vector<uint8_t> xored = Encode(stepped.bytes, delta, 2, &base.bytes, 65536, Transform::kXor);
  const std::vector<uint8_t> differenced = Encode(stepped.bytes, delta, 2, &base.bytes, 65536, Transform::kDifference);
  CHECK(Encode(stepped.bytes, delta, 1, &base.bytes) == chosen);
  CHECK(VersionOf(chosen) == kStandaloneChunkVersion);
  CHECK(VersionOf(differenced) == kRawChecksumVersion);  // no standalone chunk: what 0.5 on read
  CHECK(VersionOf(xored) == 2);  // what readers before 0.4 read

  // Steps of a few ulps: every weight chunk is a difference, and the
  // object is over 10% smaller than the XOR one.
  const std::vector<Transform> weights = Transforms(chosen, 1);
  REQUIRE(weights.size() == 19);
  CHECK(std::count(weights.begin(), weights.end(), Transform::kDifference) == 19);
  CHECK(Transforms(chosen, 0) == std::vector<Transform>{Transform::kXor});  // bytes: never a difference
  CHECK(chosen.size() * 10 < xored.size() * 9);
  for (const auto* object : {&chosen, &xored, &differenced}) {
    for (int threads : {1, 2}) {
      auto back = Decode(*object, threads, &base.bytes);
      REQUIRE(back.ok());
      CHECK(*back == stepped.bytes);
    }
  }

  // The lowest bit of every weight flipped: XOR is one constant, the
  // difference a coin toss between +1 and -1, so every chunk stays XOR.
  Checkpoint flipped = base;
  for (uint64_t i = 0; i < flipped.layout.regions[1].length; i += 4)
    flipped.bytes[flipped.layout.regions[1].offset + i] ^= 1;
  const std::vector<uint8_t> kept = Encode(flipped.bytes, delta, 2, &base.bytes);
  const std::vector<Transform> all = Transforms(kept, 1);
  CHECK(std::count(all.begin(), all.end(), Transform::kXor) == 19);
  // The same records, each after its raw checksum.
  const uint64_t chunks = DecodeTrailer(kept.data() + kept.size() - kTrailerBytes).chunk_count;
  CHECK(kept.size() ==
        Encode(flipped.bytes, delta, 2, &base.bytes, 65536, Transform::kXor).size() + kRawChecksumBytes * chunks);
  CHECK(*Decode(kept, 2, &base.bytes) == flipped.bytes);

  // A standalone object is the same bytes under auto and difference; under
  // xor it is format 2, for older readers.
  const std::vector<uint8_t> alone = Encode(base.bytes, base.layout, 2, nullptr, 65536, kAutoTransform);
  CHECK(alone == Encode(base.bytes, base.layout, 2, nullptr, 65536, Transform::kDifference));
  const std::vector<uint8_t> old = Encode(base.bytes, base.layout, 2, nullptr, 65536, Transform::kXor);
  CHECK(VersionOf(old) == 2);
  CHECK(*Decode(old, 2) == base.bytes);
}

TEST_CASE("an encode that verifies each chunk writes the same object, which CheckWritten proves or faults") {
  const Checkpoint base = MakeCheckpoint(2);
  const Checkpoint target = Stepped(base, 5);
  const Layout delta = target.layout.AsDeltaOfSameLayout();
  MemorySource src(target.bytes.data(), target.bytes.size(), "input");
  MemorySource base_src(base.bytes.data(), base.bytes.size(), "base");
  const DeltaBase db{&base_src, HashBytes(base.bytes.data(), base.bytes.size())};
  auto encode = [&](const DeltaBase* against, bool verify, int threads, std::vector<uint8_t>& out) {
    EncodeOptions o;
    o.threads = threads;
    o.chunk_size = 65536;
    o.verify = verify;
    MemorySink sink;
    auto r = EncodeObject(src, against != nullptr ? delta : target.layout, against, o, sink);
    REQUIRE(r.ok());
    CHECK(r->verified == verify);
    out = sink.ToVector();
    return std::move(*r);
  };
  std::vector<uint8_t> plain, obj;
  (void)encode(&db, false, 2, plain);
  EncodeResult r;
  for (int threads : {1, 3}) {
    CAPTURE(threads);
    r = encode(&db, true, threads, obj);
    CHECK(obj == plain);
  }
  MemorySource written(obj.data(), obj.size(), "obj");
  auto info = CheckWritten(written, r);
  REQUIRE_MESSAGE(info.ok(), info.status().ToString());
  CHECK(info->content_id == HashBytes(target.bytes.data(), target.bytes.size()));
  CHECK(info->chunks.size() == r.chunks.size());
  CHECK(info->header.kind == ObjectKind::kDelta);

  // A standalone object too.
  std::vector<uint8_t> alone;
  const EncodeResult standalone = encode(nullptr, true, 2, alone);
  MemorySource alone_src(alone.data(), alone.size(), "alone");
  CHECK(CheckWritten(alone_src, standalone).ok());
  // The other object's result does not prove this one.
  CHECK(!CheckWritten(alone_src, r).ok());

  // A byte changed anywhere (header, a record, the chunk map, the
  // trailer), or one missing, is caught and said.
  const uint64_t record = r.chunks[r.chunks.size() / 2].record_offset + 3;
  for (uint64_t at : {uint64_t{0}, uint64_t{12}, record, obj.size() - 40, obj.size() - 1}) {
    CAPTURE(at);
    std::vector<uint8_t> bad = obj;
    bad[at] ^= 0x10;
    MemorySource bad_src(bad.data(), bad.size(), "obj");
    auto checked = CheckWritten(bad_src, r);
    REQUIRE(!checked.ok());
    CHECK(checked.status().code() == StatusCode::kCorruption);
  }
  std::vector<uint8_t> damaged = obj;
  damaged[record] ^= 1;
  MemorySource damaged_src(damaged.data(), damaged.size(), "obj");
  CHECK(CheckWritten(damaged_src, r).status().message().find("checksum mismatch") != std::string::npos);
  std::vector<uint8_t> shorter(obj.begin(), obj.end() - 1);
  MemorySource shorter_src(shorter.data(), shorter.size(), "obj");
  CHECK(CheckWritten(shorter_src, r).status().message() == "obj: its size is not what was encoded");
  // An encode that did not verify its chunks proves nothing.
  EncodeResult unverified = encode(&db, false, 1, obj);
  CHECK(CheckWritten(written, unverified).status().code() == StatusCode::kInvalidArgument);
}

// Rewrites index entry `i` of `object` by `change` and signs the index again.
void ChangeIndexEntry(std::vector<uint8_t>& object, size_t i, const std::function<void(IndexEntry&)>& change) {
  const uint64_t count = DecodeTrailer(object.data() + object.size() - kTrailerBytes).chunk_count;
  uint8_t* index = object.data() + object.size() - kTrailerBytes - kIndexEntryBytes * count;
  IndexEntry e = DecodeIndexEntry(index + kIndexEntryBytes * i);
  change(e);
  EncodeIndexEntry(e, index + kIndexEntryBytes * i);
  uint8_t* t = object.data() + object.size() - kTrailerBytes;
  TrailerFields trailer = DecodeTrailer(t);
  trailer.checksum = IndexChecksum(index, count, t);
  EncodeTrailer(trailer, t);
}

TEST_CASE("rejects a transform the object may not name; a swapped one fails the content id") {
  const Checkpoint base = MakeCheckpoint(11, 60000);
  const Checkpoint stepped = Stepped(base, 13);
  const Layout delta = stepped.layout.AsDeltaOfSameLayout();
  const std::vector<uint8_t> v3 = Encode(stepped.bytes, delta, 1, &base.bytes);
  REQUIRE(VersionOf(v3) >= kDifferenceVersion);
  auto rejected = [&](std::vector<uint8_t> object, size_t chunk, uint8_t transform) {
    ChangeIndexEntry(object, chunk, [&](IndexEntry& e) { e.transform = transform; });
    auto r = Decode(object, 1, &base.bytes);
    REQUIRE(!r.ok());
    CHECK(r.status().code() == StatusCode::kCorruption);
    return r.status().message();
  };
  CHECK(rejected(v3, 1, 3) == "obj: chunk 1 names unknown delta transform 3");
  CHECK(rejected(v3, 0, 1) == "obj: chunk 0 is a difference in a region that cannot be one (bytes)");
  CHECK(rejected(Encode(stepped.bytes, delta, 1, &base.bytes, 65536, codec::Transform::kXor), 1, 1) ==
        "obj: chunk index entry 1 has reserved bits set");
  // A format 2 base object, made format 3 with its checksum signed again.
  std::vector<uint8_t> alone = Encode(stepped.bytes, stepped.layout, 1, nullptr, 65536, codec::Transform::kXor);
  HeaderFields h = DecodeHeader(alone.data());
  h.version = 3;
  EncodeHeader(h, alone.data());
  h.checksum = HeaderChecksum(alone.data(), alone.data() + kHeaderBytes, h.region_count);
  EncodeHeader(h, alone.data());
  {
    auto fine = Decode(alone, 1);
    REQUIRE(fine.ok());
    CHECK(*fine == stepped.bytes);
  }
  ChangeIndexEntry(alone, 1, [](IndexEntry& e) { e.transform = 1; });
  CHECK(DecodeStatus(alone).message() == "obj: chunk 1 is a difference in a region that is not a delta");
  // Undone the other way, a chunk names a coder only a difference may
  // hold; coded without it (Huffman), it decodes to other bytes, which the
  // object's content id refuses.
  const std::vector<uint8_t> lanes = Encode(stepped.bytes, delta, 1, &base.bytes, 65536, codec::kAutoTransform,
                                            codec::CoderPolicy::Only(codec::Coder::kClassedRans));
  REQUIRE(Transforms(lanes, 1)[0] == codec::Transform::kDifference);
  CHECK(rejected(lanes, 1, 0) ==
        "obj: chunk 1 (checkpoint bytes 28..65564): group 0 is rans-classed in a chunk that is not a difference");
  const std::vector<uint8_t> huffman = Encode(stepped.bytes, delta, 1, &base.bytes, 65536, codec::kAutoTransform,
                                              codec::CoderPolicy::Only(codec::Coder::kHuffman));
  REQUIRE(Transforms(huffman, 1)[0] == codec::Transform::kDifference);
  CHECK(rejected(huffman, 1, 0).find("not the object's content id") != std::string::npos);
  std::vector<uint8_t> reserved = v3;
  ChangeIndexEntry(reserved, 1, [](IndexEntry& e) { e.reserved = 1u << 16; });
  CHECK(DecodeStatus(reserved).message() == "obj: chunk index entry 1 has reserved bits set");
}

// Reads `object` (a delta against `base`) whole through an ObjectReader.
Status ReadThrough(const std::vector<uint8_t>& object, const std::vector<uint8_t>& base, bool check_raw,
                   std::vector<uint8_t>& got) {
  MemorySource src(object.data(), object.size(), "obj");
  MemorySource base_src(base.data(), base.size(), "base");
  ZIPNN_ASSIGN_OR_RETURN(ObjectInfo info, ReadObjectInfo(src));
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<ObjectReader> reader, ObjectReader::Open(src, info, &base_src, check_raw));
  got.assign(reader->size(), 0);
  return reader->ReadAt(0, got.data(), got.size());
}

TEST_CASE("a renewed chunk of a delta region is coded standalone, and its zeros stay zeros") {
  const Checkpoint base = MakeCheckpoint(11, 262144);
  Checkpoint target = Stepped(base, 12);
  const Region& w = target.layout.regions[1];
  // The second quarter renewed (other weights), the third all zero where
  // the base is not: neither is its base's bytes plus a small step.
  const Checkpoint other = MakeCheckpoint(99, 262144);
  const uint64_t quarter = w.length / 4;
  std::copy(other.bytes.begin() + static_cast<std::ptrdiff_t>(w.offset + quarter),
            other.bytes.begin() + static_cast<std::ptrdiff_t>(w.offset + 2 * quarter),
            target.bytes.begin() + static_cast<std::ptrdiff_t>(w.offset + quarter));
  std::fill(target.bytes.begin() + static_cast<std::ptrdiff_t>(w.offset + 2 * quarter),
            target.bytes.begin() + static_cast<std::ptrdiff_t>(w.offset + 3 * quarter), 0);
  const Layout delta = target.layout.AsDeltaOfSameLayout();
  const std::vector<uint8_t> object = Encode(target.bytes, delta, 2, &base.bytes);
  CHECK(VersionOf(object) == kStandaloneChunkVersion);
  CHECK(Encode(target.bytes, delta, 1, &base.bytes) == object);  // any thread count
  const std::vector<codec::Transform> t = Transforms(object, 1);
  REQUIRE(t.size() == 16);  // 65536-byte chunks of 1 MiB of weights
  for (size_t i = 4; i < 8; ++i) CHECK(t[i] == codec::Transform::kStandalone);
  for (size_t i : {0, 1, 2, 3, 12, 13, 14, 15}) CHECK(t[i] != codec::Transform::kStandalone);
  auto whole = Decode(object, 2, &base.bytes);
  REQUIRE(whole.ok());
  CHECK(*whole == target.bytes);
  std::vector<uint8_t> got;
  REQUIRE(ReadThrough(object, base.bytes, true, got).ok());
  CHECK(got == target.bytes);
  // Smaller than the same delta with every chunk taken from the base.
  CHECK(object.size() < Encode(target.bytes, delta, 1, &base.bytes, 65536, codec::Transform::kDifference).size());
}

TEST_CASE("a standalone chunk is refused in a format 5 object and in a region that is not a delta") {
  const Checkpoint base = MakeCheckpoint(11, 60000);
  const Checkpoint stepped = Stepped(base, 13);
  const Layout delta = stepped.layout.AsDeltaOfSameLayout();
  // Format 5: differences only, then a chunk made to name the standalone.
  std::vector<uint8_t> v5 = Encode(stepped.bytes, delta, 1, &base.bytes, 65536, codec::Transform::kDifference);
  REQUIRE(VersionOf(v5) == kRawChecksumVersion);
  ChangeIndexEntry(v5, 1, [](IndexEntry& e) { e.transform = 2; });
  auto r = Decode(v5, 1, &base.bytes);
  REQUIRE(!r.ok());
  CHECK(r.status().message() == "obj: chunk 1 is a standalone, which object format 5 cannot hold");
  std::vector<uint8_t> alone = Encode(stepped.bytes, stepped.layout, 1);
  HeaderFields h = DecodeHeader(alone.data());
  h.version = kStandaloneChunkVersion;
  EncodeHeader(h, alone.data());
  h.checksum = HeaderChecksum(alone.data(), alone.data() + kHeaderBytes, h.region_count);
  EncodeHeader(h, alone.data());
  ChangeIndexEntry(alone, 1, [](IndexEntry& e) { e.transform = 2; });
  CHECK(DecodeStatus(alone).message() == "obj: chunk 1 is a standalone in a region that is not a delta");
}

TEST_CASE("format 6 records why a delta's base was taken; older formats and bases may not") {
  const Checkpoint base = MakeCheckpoint(11, 60000);
  const Checkpoint stepped = Stepped(base, 13);
  const Layout delta = stepped.layout.AsDeltaOfSameLayout();
  // The header's byte 13 set to `choice`, its checksum signed again.
  auto with_choice = [](std::vector<uint8_t> object, uint8_t choice, std::optional<uint16_t> version = {}) {
    HeaderFields h = DecodeHeader(object.data());
    h.choice = choice;
    if (version) h.version = *version;
    EncodeHeader(h, object.data());
    h.checksum = HeaderChecksum(object.data(), object.data() + kHeaderBytes, h.region_count);
    EncodeHeader(h, object.data());
    return object;
  };
  const std::vector<uint8_t> v6 = Encode(stepped.bytes, delta, 1, &base.bytes);
  REQUIRE(VersionOf(v6) == kBaseChoiceVersion);
  {
    const std::vector<uint8_t> twin = with_choice(v6, 2);
    MemorySource src(twin.data(), twin.size(), "obj");
    auto info = ReadObjectInfo(src);
    REQUIRE(info.ok());
    CHECK(info->header.choice == BaseChoice::kTwin);
    auto decoded = Decode(twin, 1, &base.bytes);
    REQUIRE(decoded.ok());
    CHECK(*decoded == stepped.bytes);
  }
  CHECK(DecodeStatus(with_choice(v6, 4)).message() == "obj: base choice 4 in an object of format 6 (it is 7's)");
  CHECK(DecodeStatus(with_choice(v6, 5, kSharedChoiceVersion)).message() == "obj: unknown base choice 5");
  {
    // Format 7: a base found by shared tensors, written so by the encoder.
    MemorySource base_src(base.bytes.data(), base.bytes.size(), "base");
    DeltaBase shared{&base_src, HashBytes(base.bytes.data(), base.bytes.size()), BaseChoice::kShared};
    MemorySource src(stepped.bytes.data(), stepped.bytes.size(), "in");
    MemorySink out;
    EncodeOptions options;
    REQUIRE(EncodeObject(src, delta, &shared, options, out).ok());
    const std::vector<uint8_t> v7 = out.ToVector();
    CHECK(VersionOf(v7) == kSharedChoiceVersion);
    MemorySource obj(v7.data(), v7.size(), "obj");
    auto info = ReadObjectInfo(obj);
    REQUIRE(info.ok());
    CHECK(info->header.choice == BaseChoice::kShared);
    auto decoded = Decode(v7, 1, &base.bytes);
    REQUIRE(decoded.ok());
    CHECK(*decoded == stepped.bytes);
    // Under delta_transform: difference (format 5) the choice is not written.
    options.transform = codec::Transform::kDifference;
    MemorySink five;
    REQUIRE(EncodeObject(src, delta, &shared, options, five).ok());
    CHECK(VersionOf(five.ToVector()) == kRawChecksumVersion);
  }
  const std::vector<uint8_t> v5 = Encode(stepped.bytes, delta, 1, &base.bytes, 65536, codec::Transform::kDifference);
  CHECK(DecodeStatus(with_choice(v5, 1)).message() == "obj: reserved header bits are set");
  const std::vector<uint8_t> alone = Encode(stepped.bytes, stepped.layout, 1);
  CHECK(DecodeStatus(with_choice(alone, 1, kBaseChoiceVersion)).message() ==
        "obj: a base object says why its base was taken");
}

TEST_CASE("a part read is checked against the raw checksum of each chunk it touches") {
  const Checkpoint base = MakeCheckpoint(21, 60000);
  const Checkpoint stepped = Stepped(base, 22);
  const Layout delta = stepped.layout.AsDeltaOfSameLayout();
  const std::vector<uint8_t> object = Encode(stepped.bytes, delta, 1, &base.bytes);
  REQUIRE(VersionOf(object) == kStandaloneChunkVersion);
  std::vector<uint8_t> got;
  REQUIRE(ReadThrough(object, base.bytes, true, got).ok());
  CHECK(got == stepped.bytes);

  // A base of the right size but one weight off: every record is intact,
  // so only the raw checksum tells the chunk came out wrong.
  std::vector<uint8_t> wrong_base = base.bytes;
  const Region& weights = delta.regions[1];
  wrong_base[weights.offset + 70000] ^= 0x40;  // in chunk 2 (65536-byte chunks)
  const Status st = ReadThrough(object, wrong_base, true, got);
  CHECK(st.code() == StatusCode::kCorruption);
  CHECK(st.message() ==
        "obj: chunk 2 (checkpoint bytes 65564..131100): restored bytes do not match their checksum "
        "(is the base the right checkpoint?)");
  // Unchecked, the reader hands the wrong bytes on (a level below the top
  // of a chain may; the top's checks catch it there).
  REQUIRE(ReadThrough(object, wrong_base, false, got).ok());
  CHECK(got != stepped.bytes);
  // A region decoded alone is checked too.
  auto region = Decode(object, 2, &wrong_base, 1);
  CHECK(region.status().message() == st.message());
  // A whole decode checks the content id instead.
  CHECK(Decode(object, 2, &wrong_base).status().message().find("not the object's content id") != std::string::npos);

  // Format 2 objects have no raw checksums: their records start with the
  // group count.
  const std::vector<uint8_t> old = Encode(stepped.bytes, delta, 1, &base.bytes, 65536, codec::Transform::kXor);
  REQUIRE(ReadThrough(old, base.bytes, true, got).ok());
  CHECK(got == stepped.bytes);
}

TEST_CASE("rejects a format 5 record too short to hold its raw checksum") {
  const Checkpoint c = MakeCheckpoint(23, 60000);
  std::vector<uint8_t> object = Encode(c.bytes, c.layout, 1);
  MemorySource src(object.data(), object.size(), "obj");
  auto info = ReadObjectInfo(src);
  REQUIRE(info.ok());
  // Record 0 shrunk to its raw checksum; record 1 takes the rest, both
  // signed again so that only the length is wrong.
  const ChunkRef& first = info->chunks[0];
  const uint32_t moved = first.record_size - static_cast<uint32_t>(kRawChecksumBytes);
  const uint8_t* records = object.data() + first.record_offset;
  ChangeIndexEntry(object, 0, [&](IndexEntry& e) {
    e.record_size = kRawChecksumBytes;
    e.checksum = Checksum64(records, kRawChecksumBytes);
  });
  ChangeIndexEntry(object, 1, [&](IndexEntry& e) {
    e.record_size += moved;
    e.checksum = Checksum64(records + kRawChecksumBytes, e.record_size);
  });
  CHECK(Decode(object, 1).status().message() == "obj: chunk 0 (checkpoint bytes 0..28): record too short");
}

TEST_CASE("prefixed regions round-trip and their fields are checked") {
  std::string header_a = R"({"w":{"dtype":"F32","shape":[100],"data_offsets":[0,400]},"__metadata__":{"step":"100"}})";
  std::string header_b =
      R"({"w":{"dtype":"F32","shape":[100],"data_offsets":[0,400]},"__metadata__":{"step":"200","note":"x"}})";
  std::vector<uint8_t> base(header_a.begin(), header_a.end());
  std::vector<uint8_t> target(header_b.begin(), header_b.end());
  Layout layout;
  layout.regions.push_back(Region{DType::kBytes, 0, target.size(), false, 0, base.size()});
  const std::vector<uint8_t> obj = Encode(target, layout, 2, &base);
  auto back = Decode(obj, 2, &base);
  REQUIRE(back.ok());
  CHECK(*back == target);

  Layout bad = layout;
  bad.regions[0].dtype = DType::kF32;
  CHECK(bad.Validate(target.size(), base.size()).message() == "region 0 is prefixed but not opaque bytes");
  bad = layout;
  bad.regions[0].delta = true;
  CHECK(bad.Validate(target.size(), base.size()).message() == "region 0 is both XORed and prefixed");
  bad = layout;
  bad.regions[0].prefix_length = base.size() + 1;
  CHECK(bad.Validate(target.size(), base.size()).message() == "region 0 takes a prefix past the end of its base");
  bad.regions[0].prefix_length = kMaxPrefixBytes + 1;
  CHECK(bad.Validate(target.size(), 1u << 22).message() == "region 0 has a prefix over 1 MiB");
}

}  // namespace
}  // namespace zipnn::container

// Inputs the fuzz targets found (tests/fuzz/regressions/), each reduced to
// the case it stands for.
namespace zipnn::container {
namespace {

TEST_CASE("rejects a region too long to count its chunks without wrapping, before allocating") {
  // One region of 2^64 - 1 bytes: rounding its chunk count up wrapped to
  // 0, which matched a trailer of 0 chunks, and planning the chunks then
  // ran out of memory (regressions/container/chunk-count-wraps).
  ObjectHeader h;
  h.chunk_size = kMinChunkSize;
  h.raw_size = UINT64_MAX;
  h.layout = Layout::Single(DType::kBytes, UINT64_MAX);
  Buffer object;
  AppendHeader(h, object);
  AppendIndexAndTrailer({}, ContentId{}, object);
  CHECK(CountChunks(h.layout, kMinChunkSize) == uint64_t{1} << 52);
  MemorySource src(object.data(), object.size(), "obj");
  auto info = ReadObjectInfo(src);
  REQUIRE(!info.ok());
  CHECK(info.status().message() == "obj: trailer counts 0 chunks, the layout needs 4503599627370496");
}

TEST_CASE("format 8: a delta takes regions against versions it references besides its base") {
  // A file holding the first half of one checkpoint's weights and the
  // second half of another's, bit for bit (tensors of two stored versions).
  const Checkpoint base = MakeCheckpoint(31, 60000), other = MakeCheckpoint(32, 60000);
  const Region& w = base.layout.regions[1];
  const uint64_t half = w.length / 2;
  Checkpoint target = base;
  std::copy(other.bytes.begin() + w.offset + half, other.bytes.begin() + w.offset + w.length,
            target.bytes.begin() + w.offset + half);
  Layout layout = base.layout.AsDeltaOfSameLayout();
  layout.regions[1].length = half;
  layout.regions.insert(layout.regions.begin() + 2,
                        Region{DType::kF32, w.offset + half, w.length - half, true, w.offset + half, 0, /*source=*/1});
  MemorySource base_src(base.bytes.data(), base.bytes.size(), "base");
  MemorySource other_src(other.bytes.data(), other.bytes.size(), "other");
  const ContentId other_id = HashBytes(other.bytes.data(), other.bytes.size());
  DeltaBase db{&base_src,
               HashBytes(base.bytes.data(), base.bytes.size()),
               BaseChoice::kShared,
               {ReferenceSource{&other_src, other_id}}};
  auto encode = [&](int threads) {
    MemorySource src(target.bytes.data(), target.bytes.size(), "in");
    EncodeOptions o;
    o.threads = threads;
    o.chunk_size = 65536;
    MemorySink sink;
    REQUIRE(EncodeObject(src, layout, &db, o, sink).ok());
    return sink.ToVector();
  };
  const std::vector<uint8_t> object = encode(1);
  CHECK(encode(2) == object);
  CHECK(VersionOf(object) == kReferenceVersion);
  // Every region is its source's bytes: next to nothing is stored.
  CHECK(object.size() * 100 < target.bytes.size());
  MemorySource obj(object.data(), object.size(), "obj");
  auto info = ReadObjectInfo(obj);
  REQUIRE(info.ok());
  REQUIRE(info->header.references.size() == 1);
  CHECK(info->header.references[0].id == other_id);
  CHECK(info->header.references[0].size == other.bytes.size());
  CHECK(info->header.layout.regions[2].source == 1);
  CHECK(info->header.layout.regions[1].source == 0);

  // Decoded whole, and read by parts through a reader checking raw
  // checksums, with each source given.
  const Sources sources{&base_src, {&other_src}};
  for (int threads : {1, 2}) {
    DecodeOptions o;
    o.threads = threads;
    MemorySink out;
    REQUIRE(DecodeObject(obj, *info, sources, o, out).ok());
    CHECK(out.ToVector() == target.bytes);
  }
  auto reader = ObjectReader::Open(obj, *info, sources, /*check_raw=*/true);
  REQUIRE(reader.ok());
  std::vector<uint8_t> part(w.length);
  REQUIRE((*reader)->ReadAt(w.offset, part.data(), part.size()).ok());
  CHECK(std::equal(part.begin(), part.end(), target.bytes.begin() + w.offset));

  // Without the referenced version, or with one of another size, nothing
  // decodes; one of the right size but other bytes fails its checks.
  DecodeOptions o;
  MemorySink out;
  CHECK(DecodeObject(obj, *info, Sources{&base_src, {}}, o, out).message() ==
        "obj: references 1 versions besides its base; given 0");
  MemorySource short_src(other.bytes.data(), other.bytes.size() - 1, "short");
  CHECK(DecodeObject(obj, *info, Sources{&base_src, {&short_src}}, o, out).message() ==
        "obj: wrong version for reference 1 (" + other_id.Hex() + ", " + std::to_string(other.bytes.size()) +
            " bytes)");
  CHECK(DecodeObject(obj, *info, Sources{&base_src, {&base_src}}, o, out).code() == StatusCode::kCorruption);

  // What a decoder must reject.
  auto refused = [&](const std::function<void(Head&, std::vector<uint8_t>&)>& change) {
    std::vector<uint8_t> bad = object;
    Head head = ReadHead(bad);
    change(head, bad);
    WriteHead(head, bad);
    return DecodeStatus(bad).message();
  };
  const size_t reference_at = kHeaderBytes + kRegionEntryBytes * info->header.layout.regions.size();
  CHECK(refused([](Head& h, std::vector<uint8_t>&) { h.fields.version = kSharedChoiceVersion; }) ==
        "obj: reserved header bits are set");
  CHECK(refused([](Head& h, std::vector<uint8_t>&) { h.regions[2].prefix_length = 2; }) ==
        "obj: region 2 is taken against reference 2 of 1");
  CHECK(refused([](Head& h, std::vector<uint8_t>&) { h.regions[2].prefix_length = 0; }) ==
        "obj: reference 1 is the source of no region");
  CHECK(refused([&](Head& h, std::vector<uint8_t>& bad) {
          EncodeReferenceEntry(Reference{h.fields.base_id, base.bytes.size()}, bad.data() + reference_at);
        }) == "obj: reference 1 names the base");
  CHECK(refused([&](Head&, std::vector<uint8_t>& bad) {
          EncodeReferenceEntry(Reference{info->content_id, target.bytes.size()}, bad.data() + reference_at);
        }) == "obj: reference 1 names the object itself");
  CHECK(refused([&](Head&, std::vector<uint8_t>& bad) {
          EncodeReferenceEntry(Reference{other_id, 1000}, bad.data() + reference_at);
        }) == "obj: region 2 reads past the end of reference 1");
  CHECK(refused([](Head& h, std::vector<uint8_t>&) { h.fields.kind = 0; }) == "obj: a base object references versions");
  CHECK(refused([](Head& h, std::vector<uint8_t>&) { h.fields.reference_count = kMaxReferences + 1; }) ==
        "obj: region and reference tables run past the end (truncated?)");
}

}  // namespace
}  // namespace zipnn::container
