#include "lib/container/object.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <mutex>

#include "lib/base/buffer.h"
#include "lib/base/endian.h"
#include "lib/base/thread_pool.h"
#include "lib/codec/chunk_codec.h"

namespace zipnn::container {

namespace {

// A run of consecutive chunks of one region: the unit of parallel work.
struct Stripe {
  size_t first = 0;  // index into the chunk list
  size_t count = 0;
  uint64_t offset = 0;  // raw offset of the first chunk
  uint64_t length = 0;  // raw bytes in the stripe
};

const ChunkSpan& SpanOf(const ChunkSpan& s) { return s; }
const ChunkSpan& SpanOf(const ChunkRef& r) { return r.span; }

// Over the chunks to encode (ChunkSpan) or to decode (ChunkRef).
template <typename Chunk>
std::vector<Stripe> PlanStripes(const std::vector<Chunk>& chunks, uint32_t chunk_size) {
  const size_t per_stripe = std::max<size_t>(1, std::min<uint64_t>(kStripeChunks, kStripeBytes / chunk_size));
  std::vector<Stripe> stripes;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const ChunkSpan& c = SpanOf(chunks[i]);
    if (stripes.empty() || stripes.back().count == per_stripe ||
        SpanOf(chunks[stripes.back().first]).region != c.region) {
      stripes.push_back(Stripe{i, 0, c.offset, 0});
    }
    ++stripes.back().count;
    stripes.back().length += c.length;
  }
  return stripes;
}

// Reads the base bytes a region's chunks need: for a delta region the
// bytes its stripe is taken against, for a prefixed one the whole prefix.
Status ReadBase(const ByteSource& base, const Region& region, uint64_t raw_offset, size_t n, Buffer& out) {
  if (region.prefix_length > 0) {
    out.Resize(region.prefix_length);
    return base.ReadAt(region.base_offset, out.data(), region.prefix_length);
  }
  out.Resize(n);
  return base.ReadAt(region.base_offset + (raw_offset - region.offset), out.data(), n);
}

struct EncodedStripe {
  Buffer raw;
  Buffer base;
  Buffer records;
  std::vector<ChunkRef> refs;
  Buffer decoded;  // with verify
};

struct DecodedStripe {
  Buffer raw;
  Buffer records;
  Buffer base;
};

std::string ChunkName(const ByteSource& object, size_t index, const ChunkSpan& span) {
  return object.name() + ": chunk " + std::to_string(index) + " (checkpoint bytes " + std::to_string(span.offset) +
         ".." + std::to_string(span.offset + span.length) + ")";
}

// Whether the decoder checks each chunk's restored bytes against the raw
// checksum its record carries (version 5 on). A whole decode need not:
// the content id covers every byte. A partial one must.
enum class RawCheck : bool { kSkip, kCheck };

// What decoding any chunk of an object needs: the object (for messages),
// its header, and whether restored bytes are checked.
struct ObjectDecoding {
  const ByteSource& object;
  const ObjectHeader& header;
  RawCheck raw_check;
};

// One chunk of an object: its entry `ref` at `index`, its region, its
// record in memory, and `base`, what ReadBase read for its region (empty
// for a region that reads no base), a delta region's bytes starting at
// `at` in it.
struct ChunkAt {
  size_t index;
  const ChunkRef& ref;
  const Region& region;
  const uint8_t* record;
  // The base's bytes (from the chunk's place in them, `at`), or the
  // region's prefix.
  const uint8_t* base;
  size_t base_size;
  uint64_t at;
};

// Checks the chunk's record against its checksum and decodes it into `out`.
Status DecodeChunk(const ObjectDecoding& from, const ChunkAt& chunk, codec::ChunkDecoder& decoder, uint8_t* out) {
  const ChunkRef& c = chunk.ref;
  const Region& region = chunk.region;
  auto name = [&] { return ChunkName(from.object, chunk.index, c.span); };
  if (Checksum64(chunk.record, c.record_size) != c.checksum) return Corruption(name() + ": checksum mismatch");
  codec::ChunkRecord record;
  record.dtype = region.dtype;
  record.record = chunk.record;
  record.size = c.record_size;
  record.n = c.span.length;
  record.transform = c.transform;
  uint64_t raw_checksum = 0;
  const bool has_raw_checksum = HasRawChecksums(from.header);
  if (has_raw_checksum) {
    if (record.size <= kRawChecksumBytes) return Corruption(name() + ": record too short");
    raw_checksum = LoadLE<uint64_t>(record.record);
    record.record += kRawChecksumBytes;
    record.size -= kRawChecksumBytes;
  }
  if (region.delta) record.base = chunk.base + chunk.at;
  const bool prefixed = region.prefix_length > 0;
  if (prefixed) {
    record.prefix = chunk.base;
    record.prefix_size = chunk.base_size;
  }
  Status st = decoder.Decode(record, out);
  if (!st.ok()) return Annotate(st, name());
  if (from.raw_check == RawCheck::kCheck && has_raw_checksum && Checksum64(out, c.span.length) != raw_checksum) {
    return Corruption(name() + ": restored bytes do not match their checksum" +
                      (region.delta || prefixed ? " (is the base the right checkpoint?)" : ""));
  }
  return OkStatus();
}

// With EncodeOptions::verify: decodes each chunk of the stripe just
// encoded into `e` from its record, as a reader would, and compares the
// bytes with its input.
Status VerifyStripe(const ByteSource& input, const ObjectHeader& header, const Region& region, const Stripe& stripe,
                    EncodedStripe& e, codec::ChunkDecoder& decoder) {
  e.records.Reserve(e.records.size() + codec::kDecoderReadPadding);
  e.decoded.Resize(e.raw.size());
  const ObjectDecoding from{input, header, RawCheck::kCheck};
  uint64_t record = 0;
  for (size_t k = 0; k < e.refs.size(); ++k) {
    const ChunkRef& c = e.refs[k];
    const uint64_t at = c.span.offset - stripe.offset;
    ZIPNN_RETURN_IF_ERROR(DecodeChunk(
        from, ChunkAt{stripe.first + k, c, region, e.records.data() + record, e.base.data(), e.base.size(), at},
        decoder, e.decoded.data() + at));
    record += c.record_size;
  }
  if (std::memcmp(e.decoded.data(), e.raw.data(), e.raw.size()) != 0) {
    return Corruption(input.name() + ": the chunks encoded from bytes " + std::to_string(stripe.offset) + ".." +
                      std::to_string(stripe.offset + stripe.length) + " do not decode to them");
  }
  return OkStatus();
}

// A delta must be given its base and every version it references, each
// of the size its header records.
Status CheckBase(const ByteSource& object, const ObjectHeader& h, const Sources& sources) {
  if (h.kind != ObjectKind::kDelta) return OkStatus();
  const ByteSource* base = sources.base;
  if (base == nullptr) {
    return InvalidArgument(object.name() + ": is a delta against " + h.base_id.Hex() +
                           "; give that checkpoint as the base");
  }
  if (base->size() != h.base_size) {
    return InvalidArgument(object.name() + ": wrong base " + base->name() + ": it has " + std::to_string(base->size()) +
                           " bytes, the object's base " + h.base_id.Hex() + " has " + std::to_string(h.base_size));
  }
  if (sources.references.size() != h.references.size()) {
    return InvalidArgument(object.name() + ": references " + std::to_string(h.references.size()) +
                           " versions besides its base; given " + std::to_string(sources.references.size()));
  }
  for (size_t k = 0; k < h.references.size(); ++k) {
    const ByteSource* r = sources.references[k];
    if (r == nullptr || r->size() != h.references[k].size) {
      return InvalidArgument(object.name() + ": wrong version for reference " + std::to_string(k + 1) + " (" +
                             h.references[k].id.Hex() + ", " + std::to_string(h.references[k].size) + " bytes)");
    }
  }
  return OkStatus();
}

}  // namespace

Sources SourcesOf(const DeltaBase& base) {
  Sources sources{base.source, {}};
  for (const ReferenceSource& r : base.references) sources.references.push_back(r.source);
  return sources;
}

int WorkingThreads(int threads, uint32_t chunk_size) {
  const uint64_t asked = threads > 0 ? static_cast<uint64_t>(threads) : ThreadPool::DefaultThreads();
  // See object.h: two stripes in flight, each of raw, coded and base
  // bytes, and the coder's scratch: about eight stripes a thread.
  const uint64_t stripe = std::max<uint64_t>(chunk_size, kStripeBytes);
  const uint64_t fit = std::max<uint64_t>(1, kWorkingMemory / (8 * stripe));
  return static_cast<int>(std::min(asked, fit));
}

Result<EncodeResult> EncodeObject(const ByteSource& input, const Layout& layout, const DeltaBase* base,
                                  const EncodeOptions& options, ByteSink& out) {
  ZIPNN_RETURN_IF_ERROR(CheckChunkSize(options.chunk_size));
  const uint64_t base_size = base != nullptr ? base->source->size() : 0;
  const Sources sources = base != nullptr ? SourcesOf(*base) : Sources{};
  std::vector<uint64_t> source_sizes = {base_size};
  for (const ByteSource* r : sources.references) source_sizes.push_back(r->size());
  Status valid = layout.Validate(input.size(), source_sizes);
  if (!valid.ok()) return Annotate(valid, input.name() + ": layout does not fit");
  for (const Region& r : layout.regions) {
    if ((r.delta || r.prefix_length > 0) && base == nullptr) {
      return InvalidArgument(input.name() + ": delta region without a base");
    }
  }

  ObjectHeader header;
  header.version =
      base != nullptr && !base->references.empty()
          ? kReferenceVersion
          : WriteVersion(options.transform, base != nullptr, base != nullptr ? base->choice : BaseChoice::kSeries);
  const bool raw_checksums = HasRawChecksums(header);
  header.kind = base != nullptr ? ObjectKind::kDelta : ObjectKind::kBase;
  header.chunk_size = options.chunk_size;
  header.raw_size = input.size();
  header.layout = layout;
  if (base != nullptr) {
    header.base_id = base->id;
    header.base_size = base_size;
    header.choice = base->choice;
    for (const ReferenceSource& r : base->references) header.references.push_back(Reference{r.id, r.source->size()});
  }
  Buffer head;
  AppendHeader(header, head);
  ZIPNN_RETURN_IF_ERROR(out.Append(head.data(), head.size()));
  uint64_t written = head.size();

  const std::vector<ChunkSpan> chunks = PlanChunks(layout, options.chunk_size);
  const std::vector<Stripe> stripes = PlanStripes(chunks, options.chunk_size);
  std::vector<ChunkRef> refs;
  refs.reserve(chunks.size());
  Hasher hasher;
  FreeList<codec::ChunkEncoder> encoders([&options] {
    return std::make_unique<codec::ChunkEncoder>(options.policy, options.zstd_level, options.transform);
  });
  ThreadPool pool(WorkingThreads(options.threads, options.chunk_size));

  FreeList<EncodedStripe> spare([] { return std::make_unique<EncodedStripe>(); });
  FreeList<codec::ChunkDecoder> decoders(
      [&header] { return std::make_unique<codec::ChunkDecoder>(NewestCoder(header.version)); });
  using Encoded = std::unique_ptr<EncodedStripe>;

  auto produce = [&](size_t s) -> Result<Encoded> {
    const Stripe& stripe = stripes[s];
    const Region& region = layout.regions[chunks[stripe.first].region];
    Encoded e = spare.Take();
    e->raw.Resize(stripe.length);
    e->records.Clear();
    e->records.Reserve(stripe.length + 64 * stripe.count);
    e->refs.clear();
    ZIPNN_RETURN_IF_ERROR(input.ReadAt(stripe.offset, e->raw.data(), stripe.length));
    const bool prefixed = region.prefix_length > 0;
    if (region.delta || prefixed)
      ZIPNN_RETURN_IF_ERROR(ReadBase(*sources.Of(region.source), region, stripe.offset, stripe.length, e->base));
    auto encoder = encoders.Borrow();
    encoder->Reset();  // raw-skip memory never crosses a stripe
    for (size_t i = stripe.first; i < stripe.first + stripe.count; ++i) {
      const ChunkSpan& c = chunks[i];
      const uint64_t at = c.offset - stripe.offset;
      const size_t before = e->records.size();
      if (raw_checksums) {
        e->records.Extend(kRawChecksumBytes);
        StoreLE<uint64_t>(e->records.data() + before, Checksum64(e->raw.data() + at, c.length));
      }
      codec::ChunkInput chunk;
      chunk.dtype = region.dtype;
      chunk.raw = e->raw.data() + at;
      chunk.n = c.length;
      if (region.delta) chunk.base = e->base.data() + at;
      if (prefixed) {
        chunk.prefix = e->base.data();
        chunk.prefix_size = e->base.size();
      }
      ChunkRef ref;
      ref.transform = encoder->Encode(chunk, e->records);
      ref.span = c;
      ref.record_size = static_cast<uint32_t>(e->records.size() - before);
      ref.checksum = Checksum64(e->records.data() + before, ref.record_size);
      e->refs.push_back(ref);
    }
    if (options.verify) ZIPNN_RETURN_IF_ERROR(VerifyStripe(input, header, region, stripe, *e, *decoders.Borrow()));
    return e;
  };
  uint64_t encoded = 0;  // raw bytes
  auto consume = [&](size_t, Encoded& e) -> Status {
    hasher.Update(e->raw.data(), e->raw.size());
    ZIPNN_RETURN_IF_ERROR(out.Append(e->records.data(), e->records.size()));
    encoded += e->raw.size();
    if (options.progress) options.progress(encoded, input.size());
    for (ChunkRef& ref : e->refs) {
      ref.record_offset = written;
      written += ref.record_size;
      refs.push_back(ref);
    }
    spare.Give(std::move(e));
    return OkStatus();
  };
  ZIPNN_RETURN_IF_ERROR(RunOrdered<Encoded>(pool, stripes.size(), produce, consume));

  EncodeResult result;
  result.content_id = hasher.Finish();
  result.raw_size = input.size();
  Buffer tail;
  AppendIndexAndTrailer(refs, result.content_id, tail);
  ZIPNN_RETURN_IF_ERROR(out.Append(tail.data(), tail.size()));
  result.object_size = written + tail.size();
  result.header = std::move(header);
  result.chunks = std::move(refs);
  result.verified = options.verify;
  return result;
}

Result<ObjectInfo> CheckWritten(const ByteSource& object, const EncodeResult& encoded) {
  if (!encoded.verified) return InvalidArgument(object.name() + ": was not verified as it was encoded");
  auto differs = [&](const std::string& what) {
    return Corruption(object.name() + ": " + what + " is not what was encoded");
  };
  if (object.size() != encoded.object_size) return differs("its size");
  Buffer expected, found;
  AppendHeader(encoded.header, expected);
  found.Resize(expected.size());
  ZIPNN_RETURN_IF_ERROR(object.ReadAt(0, found.data(), found.size()));
  if (std::memcmp(found.data(), expected.data(), expected.size()) != 0) return differs("its header");
  expected.Clear();
  AppendIndexAndTrailer(encoded.chunks, encoded.content_id, expected);
  if (expected.size() > object.size()) return differs("its chunk map");
  found.Resize(expected.size());
  ZIPNN_RETURN_IF_ERROR(object.ReadAt(object.size() - expected.size(), found.data(), found.size()));
  if (std::memcmp(found.data(), expected.data(), expected.size()) != 0) return differs("its chunk map");
  // Read back as a reader reads it, the object describes the same chunks.
  ZIPNN_ASSIGN_OR_RETURN(ObjectInfo info, ReadObjectInfo(object));
  if (info.content_id != encoded.content_id || info.chunks.size() != encoded.chunks.size()) {
    return differs("what it reads back as");
  }
  for (size_t i = 0; i < info.chunks.size(); ++i) {
    const ChunkRef& a = info.chunks[i];
    const ChunkRef& b = encoded.chunks[i];
    if (a.span.offset != b.span.offset || a.span.length != b.span.length || a.span.region != b.span.region ||
        a.record_offset != b.record_offset || a.record_size != b.record_size || a.checksum != b.checksum ||
        a.transform != b.transform) {
      return differs("chunk " + std::to_string(i) + " as read back");
    }
  }
  ZIPNN_RETURN_IF_ERROR(CheckRecords(object, info));
  return info;
}

Status DecodeObject(const ByteSource& object, const ObjectInfo& info, const Sources& sources,
                    const DecodeOptions& options, ByteSink& out) {
  const ObjectHeader& h = info.header;
  ZIPNN_RETURN_IF_ERROR(CheckBase(object, h, sources));
  std::vector<ChunkRef> chunks;
  size_t first_index = 0;
  if (options.only_region) {
    if (*options.only_region >= h.layout.regions.size()) {
      return InvalidArgument(object.name() + ": has no region " + std::to_string(*options.only_region));
    }
    for (size_t i = 0; i < info.chunks.size(); ++i) {
      if (info.chunks[i].span.region != *options.only_region) continue;
      if (chunks.empty()) first_index = i;
      chunks.push_back(info.chunks[i]);
    }
  }
  const std::vector<ChunkRef>& todo = options.only_region ? chunks : info.chunks;
  const std::vector<Stripe> stripes = PlanStripes(todo, h.chunk_size);
  Hasher hasher;
  FreeList<codec::ChunkDecoder> decoders(
      [&h] { return std::make_unique<codec::ChunkDecoder>(NewestCoder(h.version)); });
  ThreadPool pool(WorkingThreads(options.threads, h.chunk_size));
  const ObjectDecoding from{object, h, options.only_region ? RawCheck::kCheck : RawCheck::kSkip};

  FreeList<DecodedStripe> spare([] { return std::make_unique<DecodedStripe>(); });
  using Decoded = std::unique_ptr<DecodedStripe>;
  // Where the sink allows, workers write their stripes in place and the
  // in-order thread only hashes.
  const bool positional = out.CanWriteAt();
  const uint64_t out_start = todo.empty() ? 0 : todo.front().span.offset;
  uint64_t out_size = 0;
  for (const ChunkRef& c : todo) out_size += c.span.length;
  if (positional) ZIPNN_RETURN_IF_ERROR(out.Presize(out_size));

  auto produce = [&](size_t s) -> Result<Decoded> {
    const Stripe& stripe = stripes[s];
    const ChunkRef& first = todo[stripe.first];
    const ChunkRef& last = todo[stripe.first + stripe.count - 1];
    const Region& region = h.layout.regions[first.span.region];
    const uint64_t records_size = last.record_offset + last.record_size - first.record_offset;
    Decoded d = spare.Take();
    d->records.Resize(records_size + codec::kDecoderReadPadding);
    ZIPNN_RETURN_IF_ERROR(object.ReadAt(first.record_offset, d->records.data(), records_size));
    const bool prefixed = region.prefix_length > 0;
    if (region.delta || prefixed) {
      ZIPNN_RETURN_IF_ERROR(ReadBase(*sources.Of(region.source), region, stripe.offset, stripe.length, d->base));
    }
    d->raw.Resize(stripe.length);
    auto decoder = decoders.Borrow();
    for (size_t i = stripe.first; i < stripe.first + stripe.count; ++i) {
      const ChunkRef& c = todo[i];
      const uint8_t* record = d->records.data() + (c.record_offset - first.record_offset);
      const uint64_t at = c.span.offset - stripe.offset;
      ZIPNN_RETURN_IF_ERROR(DecodeChunk(from,
                                        ChunkAt{first_index + i, c, region, record, d->base.data(), d->base.size(), at},
                                        *decoder, d->raw.data() + at));
    }
    if (positional) ZIPNN_RETURN_IF_ERROR(out.WriteAt(stripe.offset - out_start, d->raw.data(), d->raw.size()));
    return d;
  };
  auto consume = [&](size_t, Decoded& d) -> Status {
    if (!options.only_region) hasher.Update(d->raw.data(), d->raw.size());
    Status st = positional ? OkStatus() : out.Append(d->raw.data(), d->raw.size());
    spare.Give(std::move(d));
    return st;
  };
  ZIPNN_RETURN_IF_ERROR(RunOrdered<Decoded>(pool, stripes.size(), produce, consume));
  if (!options.only_region) {
    const ContentId got = hasher.Finish();
    if (got != info.content_id) {
      return Corruption(object.name() + ": decoded bytes hash to " + got.Hex() + ", not the object's content id " +
                        info.content_id.Hex() +
                        (h.kind == ObjectKind::kDelta ? " (is the base the right checkpoint?)" : ""));
    }
  }
  return OkStatus();
}

struct ObjectReader::Work {
  explicit Work(uint16_t version) : decoder(NewestCoder(version)) {}
  codec::ChunkDecoder decoder;
  Buffer record;
  Buffer base;
};

ObjectReader::ObjectReader(const ByteSource& object, ObjectInfo info, Sources sources, bool check_raw,
                           uint64_t cache_bytes)
    : object_(object),
      info_(std::move(info)),
      sources_(std::move(sources)),
      check_raw_(check_raw),
      capacity_(std::max<uint64_t>(2, cache_bytes / info_.header.chunk_size)),
      spare_([this] { return std::make_unique<Work>(info_.header.version); }) {}

ObjectReader::~ObjectReader() = default;

Result<std::unique_ptr<ObjectReader>> ObjectReader::Open(const ByteSource& object, ObjectInfo info, Sources sources,
                                                         bool check_raw, uint64_t cache_bytes) {
  ZIPNN_RETURN_IF_ERROR(CheckBase(object, info.header, sources));
  return std::unique_ptr<ObjectReader>(
      new ObjectReader(object, std::move(info), std::move(sources), check_raw, cache_bytes));
}

Status ObjectReader::ReadAt(uint64_t offset, void* out, size_t n) const {
  if (offset > size() || n > size() - offset) return IoError(name() + ": read past the end");
  // The chunk holding `offset`: the last that starts at or before it.
  const std::vector<ChunkRef>& chunks = info_.chunks;
  size_t i = std::upper_bound(chunks.begin(), chunks.end(), offset,
                              [](uint64_t at, const ChunkRef& c) { return at < c.span.offset; }) -
             chunks.begin();
  auto* to = static_cast<uint8_t*>(out);
  for (; n > 0; ++i) {
    const ChunkSpan& span = chunks[i - 1].span;
    ZIPNN_ASSIGN_OR_RETURN(std::shared_ptr<const uint8_t[]> raw, Chunk(i - 1));
    const uint64_t from = offset - span.offset;
    const size_t k = static_cast<size_t>(std::min<uint64_t>(n, span.length - from));
    std::memcpy(to, raw.get() + from, k);
    to += k;
    offset += k;
    n -= k;
  }
  return OkStatus();
}

// The cache holds futures, so a chunk that one thread is decoding is
// waited for, not decoded again by another.
ObjectReader::Decoded ObjectReader::Chunk(size_t index) const {
  std::shared_future<Decoded> ready;
  std::promise<Decoded> mine;
  bool decode = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Slot& slot : cache_) {
      if (slot.index == index) ready = slot.ready;
    }
    if (!ready.valid()) {
      decode = true;
      ready = mine.get_future().share();
      cache_.push_back(Slot{index, ready});
      if (cache_.size() > capacity_) cache_.pop_front();
    }
  }
  if (decode) mine.set_value(DecodeChunkAt(index));
  return ready.get();
}

ObjectReader::Decoded ObjectReader::DecodeChunkAt(size_t index) const {
  const ChunkRef& c = info_.chunks[index];
  const Region& region = info_.header.layout.regions[c.span.region];
  const ByteSource* against = sources_.Of(region.source);
  auto work = spare_.Borrow();
  work->record.Resize(c.record_size + codec::kDecoderReadPadding);
  ZIPNN_RETURN_IF_ERROR(object_.ReadAt(c.record_offset, work->record.data(), c.record_size));
  if (region.delta && region.prefix_length == 0) {
    Decoded same = UnchangedChunk(index, work->record.data());
    if (!same.ok() || *same) return same;
  }
  const ObjectDecoding from{object_, info_.header, check_raw_ ? RawCheck::kCheck : RawCheck::kSkip};
  // The base's range where the level below holds it as one decoded chunk:
  // taken and decoded into in place when nobody else needs it (no copy,
  // and a patch touches only what changed), else shared, else read.
  std::shared_ptr<const uint8_t[]> shared;
  if (region.delta && region.prefix_length == 0) {
    const uint64_t at = region.base_offset + (c.span.offset - region.offset);
    if (std::shared_ptr<uint8_t[]> taken = against->Take(at, c.span.length)) {
      ZIPNN_RETURN_IF_ERROR(DecodeChunk(from,
                                        ChunkAt{index, c, region, work->record.data(), taken.get(), c.span.length, 0},
                                        work->decoder, taken.get()));
      return std::shared_ptr<const uint8_t[]>(std::move(taken));
    }
    shared = against->Shared(at, c.span.length);
  }
  work->base.Clear();
  if (!shared && (region.delta || region.prefix_length > 0)) {
    ZIPNN_RETURN_IF_ERROR(ReadBase(*against, region, c.span.offset, c.span.length, work->base));
  }
  const uint8_t* base = shared ? shared.get() : work->base.data();
  const size_t base_size = shared ? c.span.length : work->base.size();
  std::shared_ptr<uint8_t[]> raw(new uint8_t[c.span.length]);  // exactly a chunk, not a grown Buffer
  ZIPNN_RETURN_IF_ERROR(
      DecodeChunk(from, ChunkAt{index, c, region, work->record.data(), base, base_size, 0}, work->decoder, raw.get()));
  return std::shared_ptr<const uint8_t[]>(std::move(raw));
}

ObjectReader::Decoded ObjectReader::UnchangedChunk(size_t index, const uint8_t* record) const {
  const ChunkRef& c = info_.chunks[index];
  const Region& region = info_.header.layout.regions[c.span.region];
  const ByteSource* against = sources_.Of(region.source);
  // The group table first (a few bytes; a changed chunk, the common
  // case, is then checksummed once, by its decode), then the checksum of
  // a record that reads as unchanged. One that fails it is decoded the
  // usual way, which names the damage.
  const bool has_raw_checksum = HasRawChecksums(info_.header);
  const size_t skip = has_raw_checksum ? kRawChecksumBytes : 0;
  if (c.record_size <= skip || !codec::InfoOf(c.transform).from_base ||
      !codec::IsUnchangedDelta(region.dtype, record + skip, c.record_size - skip, c.span.length) ||
      Checksum64(record, c.record_size) != c.checksum) {
    return std::shared_ptr<const uint8_t[]>();
  }
  const uint64_t at = region.base_offset + (c.span.offset - region.offset);
  std::shared_ptr<const uint8_t[]> same = against->Take(at, c.span.length);
  if (!same) same = against->Shared(at, c.span.length);
  if (!same) return same;
  if (check_raw_ && has_raw_checksum && Checksum64(same.get(), c.span.length) != LoadLE<uint64_t>(record)) {
    return Corruption(ChunkName(object_, index, c.span) +
                      ": restored bytes do not match their checksum (is the base the right checkpoint?)");
  }
  return same;
}

std::optional<size_t> ObjectReader::ChunkAtRange(uint64_t offset, size_t n) const {
  const auto& chunks = info_.chunks;
  auto it = std::lower_bound(chunks.begin(), chunks.end(), offset,
                             [](const ChunkRef& c, uint64_t at) { return c.span.offset < at; });
  if (it == chunks.end() || it->span.offset != offset || it->span.length != n) return std::nullopt;
  return static_cast<size_t>(it - chunks.begin());
}

std::shared_ptr<const uint8_t[]> ObjectReader::Shared(uint64_t offset, size_t n) const {
  const std::optional<size_t> index = ChunkAtRange(offset, n);
  if (!index) return nullptr;
  Decoded chunk = Chunk(*index);
  return chunk.ok() ? *chunk : nullptr;
}

std::shared_ptr<uint8_t[]> ObjectReader::Take(uint64_t offset, size_t n) const {
  const std::optional<size_t> index = ChunkAtRange(offset, n);
  if (!index) return nullptr;
  std::shared_future<Decoded> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto slot = std::find_if(cache_.begin(), cache_.end(), [&](const Slot& s) { return s.index == *index; });
    if (slot != cache_.end()) {
      // A cached chunk leaves the cache only when decoded and held by the
      // cache alone; otherwise it stays, for Shared.
      if (slot->ready.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return nullptr;
      const Decoded& held = slot->ready.get();
      if (!held.ok() || !*held || held->use_count() != 1) return nullptr;
      ready = std::move(slot->ready);
      cache_.erase(slot);
    }
  }
  // Not cached: decoded for the caller alone.
  Decoded chunk = ready.valid() ? ready.get() : DecodeChunkAt(*index);
  ready = std::shared_future<Decoded>();  // the cache's hold on it goes too
  // Checked again now that no future holds it: another thread that had
  // the slot before it left, or a chunk shared up the chain (an unchanged
  // delta's), keeps it from being given away.
  if (!chunk.ok() || !*chunk || chunk->use_count() != 1) return nullptr;
  // Allocated writable (DecodeChunkAt); const only while shared.
  return std::const_pointer_cast<uint8_t[]>(std::move(*chunk));
}

Status CheckRecords(const ByteSource& object, const ObjectInfo& info) {
  Buffer records;
  // Consecutive records are read in runs of about 1 MiB.
  for (size_t i = 0; i < info.chunks.size();) {
    const uint64_t start = info.chunks[i].record_offset;
    size_t end = i;
    uint64_t bytes = 0;
    while (end < info.chunks.size() && (end == i || bytes + info.chunks[end].record_size <= (1u << 20))) {
      bytes += info.chunks[end].record_size;
      ++end;
    }
    records.Resize(bytes);
    ZIPNN_RETURN_IF_ERROR(object.ReadAt(start, records.data(), bytes));
    for (uint64_t at = 0; i < end; at += info.chunks[i].record_size, ++i) {
      const ChunkRef& c = info.chunks[i];
      if (Checksum64(records.data() + at, c.record_size) != c.checksum) {
        return Corruption(ChunkName(object, i, c.span) + ": checksum mismatch");
      }
    }
  }
  return OkStatus();
}

Result<std::vector<RegionStats>> ScanObject(const ByteSource& object, const ObjectInfo& info) {
  const ObjectHeader& h = info.header;
  std::vector<RegionStats> stats(h.layout.regions.size());
  Buffer record;
  for (size_t i = 0; i < info.chunks.size(); ++i) {
    const ChunkRef& c = info.chunks[i];
    record.Resize(c.record_size);
    ZIPNN_RETURN_IF_ERROR(object.ReadAt(c.record_offset, record.data(), c.record_size));
    if (Checksum64(record.data(), c.record_size) != c.checksum) {
      return Corruption(ChunkName(object, i, c.span) + ": checksum mismatch");
    }
    const codec::DType dtype = h.layout.regions[c.span.region].dtype;
    const size_t skip = HasRawChecksums(h) ? kRawChecksumBytes : 0;
    if (c.record_size <= skip) return Corruption(ChunkName(object, i, c.span) + ": record too short");
    auto groups = codec::ParseChunkRecord(dtype, record.data() + skip, c.record_size - skip, c.span.length,
                                          NewestCoder(h.version));
    if (!groups.ok()) return Annotate(groups.status(), ChunkName(object, i, c.span));
    RegionStats& r = stats[c.span.region];
    r.record_bytes += c.record_size;
    ++r.chunks_by_transform[static_cast<size_t>(c.transform)];
    std::vector<GroupStats>& by_group = r.groups[static_cast<size_t>(c.transform)];
    if (by_group.size() < static_cast<size_t>(groups->count)) by_group.resize(groups->count);
    for (int g = 0; g < groups->count; ++g) {
      const codec::GroupEntry& e = groups->group[g];
      by_group[g].raw_bytes += e.raw;
      by_group[g].stored_bytes += e.stored;
      ++by_group[g].chunks_by_coder[static_cast<size_t>(e.coder)];
    }
  }
  return stats;
}

}  // namespace zipnn::container
