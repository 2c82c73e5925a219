#include "lib/store/checkpoints.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <vector>

#include "lib/base/file.h"
#include "lib/container/object.h"
#include "lib/formats/detect.h"
#include "lib/container/estimate.h"
#include "lib/series/series.h"
#include "lib/store/raw_cache.h"
#include "lib/store/storing.h"

namespace zipnn::store {

void SortSeries(std::vector<Version>& versions) {
  std::stable_sort(versions.begin(), versions.end(),
                   [](const Version& a, const Version& b) { return series::StepLess(a.step, b.step); });
  std::vector<Version> once;
  std::set<ContentId> seen;
  for (Version& v : versions) {
    if (seen.insert(v.id).second) once.push_back(std::move(v));
  }
  versions = std::move(once);
}

std::string BaseReasonText(BaseReason reason, const config::Policy& policy) {
  switch (reason) {
    case BaseReason::kNotBase: return "a delta";
    case BaseReason::kFirst: return "first of its series";
    case BaseReason::kNotStored: return "no earlier version of its series in the store";
    case BaseReason::kDue: return "due every " + std::to_string(policy.base_interval);
    case BaseReason::kChain: return "chain at max_chain " + std::to_string(policy.max_chain);
    case BaseReason::kNoGain:
      return "delta did not pay, min_gain " + std::to_string(static_cast<int>(policy.min_gain * 100 + 0.5)) + "%";
    case BaseReason::kDamagedBase: return "the version before it is damaged in the store";
    case BaseReason::kNoGainOrPolicy:
      return "delta did not pay (min_gain " + std::to_string(static_cast<int>(policy.min_gain * 100 + 0.5)) +
             "%), or stored under another policy";
  }
  return "";
}

namespace {

// One object of the chain of `top`, opened and checked: in the store,
// holding the content it is filed under, and neither met before on the
// way down from `top` (`passed`) nor deeper than kMaxChainDepth.
struct Link {
  ReadFile file;
  container::ObjectInfo info;
};
Result<Link> OpenLink(const Repository& repo, const ContentId& top, const ContentId& id,
                      std::vector<ContentId>& passed, size_t above = 0) {
  if (std::find(passed.begin(), passed.end(), id) != passed.end()) {
    return Corruption("chain of object " + top.Hex() + " loops: object " + id.Hex() + " comes back at depth " +
                      std::to_string(above + passed.size()) + " (a damaged store)");
  }
  if (above + passed.size() > static_cast<size_t>(kMaxChainDepth)) {
    return Corruption("chain of object " + top.Hex() + " is longer than " + std::to_string(kMaxChainDepth));
  }
  passed.push_back(id);
  ZIPNN_ASSIGN_OR_RETURN(ReadFile file, repo.objects.Open(id));
  ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(file));
  if (info.content_id != id) return Corruption(file.name() + ": holds " + info.content_id.Hex() + ", not " + id.Hex());
  return Link{std::move(file), std::move(info)};
}

// Encodes `input` standalone, or as a delta against `base`, into `out`;
// the object's size in `*size`.
Status EncodeTo(const Repository& repo, const formats::CheckpointView& input, const formats::CheckpointView* base,
                AtomicFile& out,
                uint64_t* size) {
  const container::Layout regions =
      base != nullptr ? formats::ToDeltaRegions(*input.layout, *base->layout) : formats::ToRegions(*input.layout);
  std::optional<container::DeltaBase> delta;
  if (base != nullptr) delta = container::DeltaBase{base->source, base->id};
  container::EncodeOptions options;
  options.chunk_size = repo.policy.chunk_size;
  options.threads = repo.policy.threads;
  options.zstd_level = repo.policy.zstd_level;
  options.transform = repo.policy.delta_transform;
  ZIPNN_ASSIGN_OR_RETURN(container::EncodeResult r,
                         container::EncodeObject(*input.source, regions, delta ? &*delta : nullptr, options, out));
  if (r.content_id != input.id) return Corruption(input.source->name() + " changed while it was stored");
  *size = r.object_size;
  return OkStatus();
}

Result<Candidate> EncodeCandidateAs(const Repository& repo, const formats::CheckpointView& input,
                                    const formats::CheckpointView* base) {
  ZIPNN_ASSIGN_OR_RETURN(TempFile file, TempFile::Create(repo.temp_dir + "/candidates", "object"));
  Candidate c{std::move(file), base != nullptr, 0};
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(c.file.path(), /*overwrite=*/true));
  ZIPNN_RETURN_IF_ERROR(EncodeTo(repo, input, base, out, &c.size));
  ZIPNN_RETURN_IF_ERROR(out.Commit());
  return c;
}

}  // namespace

namespace {

// VisitChain, ending early when `visit` returns false.
Status WalkChain(const Repository& repo, const ContentId& id, const std::function<bool(const ChainLink&)>& visit) {
  std::vector<ContentId> passed;
  for (ContentId at = id;;) {
    ZIPNN_ASSIGN_OR_RETURN(Link link, OpenLink(repo, id, at, passed));
    ChainLink shown;
    shown.id = at;
    shown.depth = static_cast<int>(passed.size()) - 1;
    shown.delta = link.info.header.kind == container::ObjectKind::kDelta;
    shown.base = link.info.header.base_id;
    shown.raw_size = link.info.header.raw_size;
    shown.object_size = link.file.size();
    shown.format = link.info.header.version;
    if (!visit(shown) || !shown.delta) return OkStatus();
    at = shown.base;
  }
}

}  // namespace

Status VisitChain(const Repository& repo, const ContentId& id, const std::function<void(const ChainLink&)>& visit) {
  return WalkChain(repo, id, [&](const ChainLink& link) {
    visit(link);
    return true;
  });
}

Result<ChainLink> ReadLink(const Repository& repo, const ContentId& id) {
  ChainLink top;
  ZIPNN_RETURN_IF_ERROR(WalkChain(repo, id, [&](const ChainLink& link) {
    top = link;
    return false;
  }));
  return top;
}

Status CheckStored(const Repository& repo, const Pointer& pointer, bool decode) {
  uint64_t raw_size = 0;
  if (decode) {
    CountingSink counted;
    ZIPNN_RETURN_IF_ERROR(Restore(repo, pointer.id, counted));
    raw_size = counted.bytes();
  } else {
    ZIPNN_RETURN_IF_ERROR(VisitChain(repo, pointer.id, [&](const ChainLink& link) {
      if (link.depth == 0) raw_size = link.raw_size;
    }));
  }
  if (raw_size != pointer.size) {
    return Corruption("object " + pointer.id.Hex() + " holds " + std::to_string(raw_size) + " bytes; its pointer says " +
                      std::to_string(pointer.size));
  }
  return OkStatus();
}

Result<StoredInfo> Describe(const Repository& repo, const ContentId& id, const ChainMemo* memo) {
  std::vector<ChainLink> links;
  const StoredInfo* known = nullptr;  // what `memo` says of the last link's base
  ZIPNN_RETURN_IF_ERROR(WalkChain(repo, id, [&](const ChainLink& link) {
    links.push_back(link);
    if (!link.delta || memo == nullptr) return true;
    auto it = memo->find(link.base);
    if (it != memo->end()) known = &it->second;
    return known == nullptr;
  }));
  StoredInfo info;
  info.delta = links.front().delta;
  info.base = links.front().base;
  info.object_size = links.front().object_size;
  info.format = links.front().format;
  info.depth = static_cast<int>(links.size()) - 1 + (known != nullptr ? known->depth + 1 : 0);
  if (info.depth > kMaxChainDepth) {
    return Corruption("chain of object " + id.Hex() + " is longer than " + std::to_string(kMaxChainDepth));
  }
  if (known != nullptr) {
    info.last_base = known->last_base;
    info.base_ratio = known->base_ratio;
  } else {
    const ChainLink& base = links.back();
    info.last_base = base.id;
    if (base.raw_size > 0) info.base_ratio = static_cast<double>(base.object_size) / static_cast<double>(base.raw_size);
  }
  return info;
}

namespace {

// A restore decodes at most this many objects of a chain at once: each
// level keeps up to kReaderCacheBytes of decoded chunks and its decoders'
// buffers (a few MB), so a deeper chain has its lower part restored first,
// into a scratch file checked against its id, which then stands in for
// it. Memory thus stays within kLevelsAtOnce levels whatever the depth,
// for one more write of the checkpoint every kLevelsAtOnce - 1 levels
// (never for the chains of the default policy, at most 10 objects).
constexpr size_t kLevelsAtOnce = 16;

// Links of a chain, opened and checked, the top first; the copy (a
// version's bytes known otherwise) stands in for the base of the last.
struct Chain {
  std::vector<Link> links;
  std::optional<formats::Checkpoint> copy;
};
using CopyOf = std::function<std::optional<formats::Checkpoint>(const ContentId&)>;

// The links from `id` (at depth `above` in the chain of `top`, which
// errors name) down to a base, to a link whose base `copy_of` gives a
// copy of, or to kLevelsAtOnce - 1 links; then `*next` is the base of the
// last link, where the chain goes on.
Result<Chain> OpenLinks(const Repository& repo, const ContentId& top, const ContentId& id, size_t above,
                        std::vector<ContentId>& passed, const CopyOf& copy_of, std::optional<ContentId>* next) {
  Chain chain;
  next->reset();
  for (ContentId at = id;;) {
    ZIPNN_ASSIGN_OR_RETURN(Link link, OpenLink(repo, top, at, passed, above));
    const bool delta = link.info.header.kind == container::ObjectKind::kDelta;
    at = link.info.header.base_id;
    chain.links.push_back(std::move(link));
    if (!delta) return chain;
    if ((chain.copy = copy_of(at))) return chain;
    if (chain.links.size() == kLevelsAtOnce - 1) {
      *next = at;
      return chain;
    }
  }
}

Status DecodeChain(const Repository& repo, Chain& chain, ByteSink& out);

// Every link of the chain of `id` to decode, opened and checked before
// anything is decoded (so a missing, looping or too deep base fails
// before a byte is written): the top first, the base (or the link above a
// copy) last. Of a chain deeper than kLevelsAtOnce, the first
// kLevelsAtOnce - 1 links, standing on the version below them restored
// into a scratch file: that one stands on the version kLevelsAtOnce - 1
// links further down, and so on, restored from the deepest up, one at a
// time, with nothing else held open.
Result<Chain> OpenChain(const Repository& repo, const ContentId& id, const FindCopy& find_copy) {
  auto found = [&](const ContentId& at) -> std::optional<formats::Checkpoint> {
    if (find_copy) {
      if (std::optional<ReadFile> copy = find_copy(at)) return formats::Checkpoint(std::move(*copy));
    }
    return std::nullopt;
  };
  std::vector<ContentId> passed;
  std::optional<ContentId> next;
  ZIPNN_ASSIGN_OR_RETURN(Chain chain, OpenLinks(repo, id, id, 0, passed, found, &next));
  if (!next) return chain;
  chain.links.clear();  // let go of its files and chunk maps meanwhile
  // Where each part below starts, and at what depth; checked whole first.
  struct Stage {
    ContentId id;
    size_t depth;
  };
  std::vector<Stage> stages;
  while (next) {
    stages.push_back(Stage{*next, passed.size()});
    ZIPNN_RETURN_IF_ERROR(OpenLinks(repo, id, *next, 0, passed, found, &next).status());
  }
  std::optional<formats::Checkpoint> below;  // the part restored last
  // Opens the part from `from` down to the part below it (or to the end).
  auto open_part = [&](const ContentId& from, size_t depth, const std::optional<ContentId>& on) -> Result<Chain> {
    std::vector<ContentId> seen;
    std::optional<ContentId> more;
    ZIPNN_ASSIGN_OR_RETURN(Chain part,
                           OpenLinks(repo, id, from, depth, seen,
                                     [&](const ContentId& at) -> std::optional<formats::Checkpoint> {
                                       if (!on) return found(at);
                                       if (at == *on) return std::move(below);
                                       return std::nullopt;
                                     },
                                     &more));
    if (more) {
      return Corruption("the chain of object " + id.Hex() + " changed while it was restored (a repack running?); "
                        "try again");
    }
    return part;
  };
  for (size_t i = stages.size(); i-- > 0;) {
    const std::optional<ContentId> on = i + 1 < stages.size() ? std::optional<ContentId>(stages[i + 1].id) : std::nullopt;
    ZIPNN_ASSIGN_OR_RETURN(Chain part, open_part(stages[i].id, stages[i].depth, on));
    ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint restored,
                           formats::Checkpoint::Spool(repo.temp_dir,
                                                      [&](ByteSink& out) { return DecodeChain(repo, part, out); }));
    below = std::move(restored);
  }
  return open_part(id, 0, stages[0].id);
}

// An ObjectReader for each link of `chain` below the top one, from the
// base up, each keeping up to `cache_bytes` of decoded chunks; each delta
// reads its base through the one below. The last one (or the copy, or
// nothing) is what the top link reads its base through.
Result<const ByteSource*> StackReaders(Chain& chain, uint64_t cache_bytes,
                                       std::vector<std::unique_ptr<container::ObjectReader>>& readers) {
  const ByteSource* below = chain.copy ? &chain.copy->file() : nullptr;
  for (size_t i = chain.links.size(); i-- > 1;) {
    ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<container::ObjectReader> reader,
                           container::ObjectReader::Open(chain.links[i].file, std::move(chain.links[i].info), below,
                                                         /*check_raw=*/false, cache_bytes));
    below = reader.get();
    readers.push_back(std::move(reader));
  }
  return below;
}

// One pass over the chunks of the whole chain: each delta reads its base
// through the ObjectReader of the link below it, and decoding the top
// object pulls each chunk up through the levels, applied onto the one
// below. A whole decode checks the content id.
Status DecodeChain(const Repository& repo, Chain& chain, ByteSink& out) {
  std::vector<std::unique_ptr<container::ObjectReader>> readers;
  ZIPNN_ASSIGN_OR_RETURN(const ByteSource* below, StackReaders(chain, container::kReaderCacheBytes, readers));
  container::DecodeOptions options;
  options.threads = repo.policy.threads;
  return container::DecodeObject(chain.links[0].file, chain.links[0].info, below, options, out);
}

}  // namespace

Status Restore(const Repository& repo, const ContentId& id, ByteSink& out, const FindCopy& find_copy) {
  ZIPNN_ASSIGN_OR_RETURN(Chain chain, OpenChain(repo, id, find_copy));
  return DecodeChain(repo, chain, out);
}

struct VersionReader::Levels {
  Chain chain;  // its files stay put: the readers refer to them
  std::vector<std::unique_ptr<container::ObjectReader>> readers;
};

VersionReader::VersionReader() = default;
VersionReader::~VersionReader() = default;
uint64_t VersionReader::size() const { return top_->size(); }
Status VersionReader::ReadAt(uint64_t offset, void* out, size_t n) const { return top_->ReadAt(offset, out, n); }
const std::string& VersionReader::name() const { return top_->name(); }

Result<std::unique_ptr<VersionReader>> OpenVersion(const Repository& repo, const ContentId& id) {
  ZIPNN_ASSIGN_OR_RETURN(Chain chain, OpenChain(repo, id, nullptr));
  const Link& top = chain.links[0];
  if (!container::HasRawChecksums(top.info.header)) {
    return Unsupported(top.file.name() + ": object format " + std::to_string(top.info.header.version) +
                       " has no raw checksums; a part of it is checked only by restoring it whole");
  }
  std::unique_ptr<VersionReader> version(new VersionReader());
  version->levels_ = std::make_unique<VersionReader::Levels>();
  VersionReader::Levels& levels = *version->levels_;
  levels.chain = std::move(chain);
  // One reader reads each level below the top, chunk by chunk at the
  // offsets the top asks for: two chunks each (one that straddles a
  // boundary of the level below needs both) keep memory small however deep
  // the chain.
  ZIPNN_ASSIGN_OR_RETURN(const ByteSource* below, StackReaders(levels.chain, /*cache_bytes=*/0, levels.readers));
  Link& link = levels.chain.links[0];
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<container::ObjectReader> reader,
                         container::ObjectReader::Open(link.file, std::move(link.info), below, /*check_raw=*/true));
  version->top_ = reader.get();
  levels.readers.push_back(std::move(reader));
  return version;
}

Status RestoreFile(const Repository& repo, const Pointer& pointer, const std::string& path, ByteSink& out,
                   const FindCopy& find_copy) {
  Status s = Restore(repo, pointer.id, out, find_copy);
  if (s.code() != StatusCode::kNotFound) return s;
  return MissingObject(repo, pointer, path);
}

Status MissingObject(const Repository& repo, const Pointer& pointer, const std::string& path) {
  // Which object of the chain is missing: the version's own, or a base.
  ContentId missing = pointer.id;
  (void)VisitChain(repo, pointer.id, [&](const ChainLink& link) {
    if (link.delta) missing = link.base;
  });
  const std::string of = missing == pointer.id ? "" : " (a base of " + pointer.id.Hex() + ")";
  return NotFound("object " + missing.Hex() + of + " for " + path + " is not in the store " + repo.objects.root() +
                  " (fetch it, or restore the store)");
}

Result<formats::Checkpoint> RestoreToScratch(const Repository& repo, const ContentId& id) {
  return formats::Checkpoint::Spool(repo.temp_dir, [&](ByteSink& out) { return Restore(repo, id, out); });
}

Result<formats::Checkpoint> RestoreToScratch(const Repository& repo, const Pointer& pointer, const std::string& path,
                                             const FindCopy& find_copy) {
  return formats::Checkpoint::Spool(repo.temp_dir,
                                    [&](ByteSink& out) { return RestoreFile(repo, pointer, path, out, find_copy); });
}

Result<Candidate> EncodeCandidate(const Repository& repo, const formats::CheckpointView& input,
                                  const formats::CheckpointView* base, double base_ratio) {
  if (base == nullptr) return EncodeCandidateAs(repo, input, nullptr);
  ZIPNN_ASSIGN_OR_RETURN(Candidate delta, EncodeCandidateAs(repo, input, base));
  const double keep = 1 - repo.policy.min_gain;
  // Versions of one series store alone at nearly the same share of their
  // size (within about 1% between saves); a delta far below the last
  // base's share needs no second look.
  const double raw = static_cast<double>(input.source->size());
  if (static_cast<double>(delta.size) <= base_ratio * raw * keep * kHintMargin) return delta;
  // The bound is below any standalone coding of weights, so a delta that
  // pays against it pays against the real thing.
  ThreadPool pool(container::WorkingThreads(repo.policy.threads, repo.policy.chunk_size));
  ZIPNN_ASSIGN_OR_RETURN(double bound, container::EntropyBound(*input.source, formats::ToRegions(*input.layout), nullptr,
                                                               repo.policy.chunk_size, pool));
  if (static_cast<double>(delta.size) <= bound * keep) return delta;
  ZIPNN_ASSIGN_OR_RETURN(Candidate standalone, EncodeCandidateAs(repo, input, nullptr));
  if (static_cast<double>(delta.size) <= static_cast<double>(standalone.size) * keep) return delta;
  return standalone;
}

Status TouchChain(const Repository& repo, const ContentId& id, std::set<ContentId>* done) {
  std::vector<ContentId> passed, checked;
  for (ContentId at = id; done == nullptr || done->count(at) == 0;) {
    ZIPNN_ASSIGN_OR_RETURN(Link link, OpenLink(repo, id, at, passed));
    ZIPNN_RETURN_IF_ERROR(container::CheckRecords(link.file, link.info));
    checked.push_back(at);
    if (link.info.header.kind != container::ObjectKind::kDelta) break;
    at = link.info.header.base_id;
  }
  for (const ContentId& link : checked) {
    ZIPNN_RETURN_IF_ERROR(repo.objects.Touch(link));
    if (done != nullptr) done->insert(link);
  }
  return OkStatus();
}

std::optional<Placement> PlaceVersion(const Repository& repo, const std::vector<Version>& series, size_t position,
                                      bool complete, const ChainMemo* memo, uint32_t max_chain) {
  Placement placed;
  // The nearest earlier version whose chain the store holds whole.
  std::optional<StoredInfo> chain;
  size_t previous = position;
  for (size_t i = position; i-- > 0;) {
    auto described = Describe(repo, series[i].id, memo);
    if (described.ok()) {
      chain = *described;
      previous = i;
      break;
    }
  }
  if (!chain) {
    if (!complete) return std::nullopt;  // history may hold earlier versions
    placed.reason = position == 0 ? BaseReason::kFirst : BaseReason::kNotStored;
    return placed;
  }
  placed.base_ratio = chain->base_ratio;
  // Versions since the last base, counted in the series (so a version
  // whose object is missing here still counts, as it did where it was
  // stored).
  const ContentId& last_base = chain->last_base;
  size_t since = 0;
  for (size_t j = previous + 1; j-- > 0;) {
    if (series[j].id == last_base) {
      since = position - j;
      break;
    }
  }
  if (since == 0) {
    if (!complete) return std::nullopt;
    // The base is not in the series: count its chain.
    since = static_cast<size_t>(chain->depth) + 1 + (position - previous - 1);
  }
  if (since >= repo.policy.base_interval) {
    placed.reason = BaseReason::kDue;
    return placed;
  }
  const bool against_base = repo.policy.delta_against == config::DeltaAgainst::kBase;
  // Of the version the delta is made against.
  const size_t depth = against_base ? 0 : static_cast<size_t>(chain->depth);
  // A policy built in code may ask for more than restore follows.
  if (depth + 1 > std::min({repo.policy.max_chain, max_chain, config::kMaxChainLimit})) {
    placed.reason = BaseReason::kChain;
    return placed;
  }
  placed.base = against_base ? last_base : series[previous].id;
  return placed;
}

BaseReason WhyBase(const Repository& repo, const std::vector<Version>& series, size_t position) {
  const Placement placed = *PlaceVersion(repo, series, position, /*complete=*/true);
  return placed.base ? BaseReason::kNoGainOrPolicy : placed.reason;
}

namespace {

// Where the new version goes: after every version whose step is not
// greater (so a path overwritten in place follows the order git got its
// versions in, and step-numbered files the order of their numbers).
size_t PositionOf(const std::vector<Version>& series, const std::string& step) {
  return std::upper_bound(series.begin(), series.end(), step,
                          [](const std::string& s, const Version& v) { return series::StepLess(s, v.step); }) -
         series.begin();
}

// The raw bytes of `base` (a version of `series`): the work-tree file git
// holds it at when that still hashes to it, a kept raw copy, or its chain
// decoded (always, with `decode`). A copy is read through
// ReadFile::OpenHolding, so a copy rewritten while a delta is built on it
// fails the encoding rather than feeding it other bytes; `copy` and
// `from_work_tree` say where the bytes came from.
struct BaseBytes {
  std::optional<formats::Checkpoint> bytes;
  bool copy = false;
  bool from_work_tree = false;
};
Result<BaseBytes> ReadBase(const Repository& repo, const std::vector<Version>& series, const ContentId& base,
                           bool decode) {
  BaseBytes bytes;
  if (!repo.work_dir.empty() && !decode) {
    for (const Version& v : series) {
      if (v.id != base || v.path.empty()) continue;
      if (auto file = ReadFile::OpenHolding(repo.work_dir + "/" + v.path, base)) {
        bytes.bytes.emplace(std::move(*file));
        bytes.copy = bytes.from_work_tree = true;
        return bytes;
      }
      break;
    }
  }
  const RawCache cache(repo.cache_dir, repo.policy.raw_cache);
  if (auto copy = decode ? std::nullopt : cache.Find(base)) {
    bytes.bytes.emplace(std::move(*copy));
    bytes.copy = true;
    return bytes;
  }
  ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint decoded, RestoreToScratch(repo, base));
  bytes.bytes.emplace(std::move(decoded));
  return bytes;
}

}  // namespace

Result<CheckedIn> CheckIn(const Repository& repo, const NewVersion& version, const EarlierVersions& earlier) {
  ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint input, formats::Checkpoint::Open(version.file));
  ZIPNN_RETURN_IF_ERROR(input.ReadLayout());
  CheckedIn result;
  result.pointer = Pointer{version.id, input.file().size(), formats::FormatName(input.layout().format)};
  // Already stored: its chain is marked as used, so that a gc running now
  // keeps it. If gc took the object meanwhile, it is stored again below;
  // if it lost a base, it is stored again in its place.
  const bool present = repo.objects.Has(version.id);
  if (present) {
    const Status whole = TouchChain(repo, version.id);
    if (whole.ok()) return result;
    if (whole.code() == StatusCode::kCorruption) result.damaged = whole.message();
  }
  result.stored = true;

  // The versions git holds may include this one (a commit whose object
  // this store lacks): it is placed among the others, as where it was
  // first stored.
  auto others = [&](bool deep) -> Result<std::vector<Version>> {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<Version> versions, earlier(deep));
    versions.erase(std::remove_if(versions.begin(), versions.end(), [&](const Version& v) { return v.id == version.id; }),
                   versions.end());
    return versions;
  };
  ZIPNN_ASSIGN_OR_RETURN(std::vector<Version> series, others(false));
  std::optional<Placement> placed = PlaceVersion(repo, series, PositionOf(series, version.step), false);
  if (!placed) {
    ZIPNN_ASSIGN_OR_RETURN(series, others(true));
    placed = PlaceVersion(repo, series, PositionOf(series, version.step), true);
  }
  // The base's chain must outlive this delta: marked as used before it is
  // read (a gc that took part of it meanwhile makes this version a base).
  if (placed->base) {
    const Status whole = TouchChain(repo, *placed->base);
    if (whole.code() == StatusCode::kCorruption) {
      if (result.damaged.empty()) result.damaged = whole.message();
      *placed = Placement{std::nullopt, BaseReason::kDamagedBase};
    } else if (!whole.ok()) {
      *placed = Placement{std::nullopt, BaseReason::kNotStored};
    }
  }

  const formats::CheckpointView raw = input.View(version.id);
  std::optional<BaseBytes> bytes;
  // Encodes against `bytes` (nothing when there is no base) and links the
  // result in.
  auto store = [&]() -> Status {
    if (!placed->base && !present) {
      uint64_t size = 0;
      return repo.objects.Put(version.id, [&](AtomicFile& out) { return EncodeTo(repo, raw, nullptr, out, &size); });
    }
    std::optional<formats::CheckpointView> base;
    if (placed->base) {
      ZIPNN_RETURN_IF_ERROR(bytes->bytes->ReadLayout());
      base = bytes->bytes->View(*placed->base);
    }
    ZIPNN_ASSIGN_OR_RETURN(Candidate c, EncodeCandidate(repo, raw, base ? &*base : nullptr, placed->base_ratio));
    if (base && !c.delta) placed->reason = BaseReason::kNoGain;
    if (c.delta) placed->reason = BaseReason::kNotBase;
    return present ? repo.objects.Replace(version.id, c.file.path()) : repo.objects.Adopt(version.id, c.file.path());
  };
  auto read_base = [&](bool decode) -> Status {
    auto read = ReadBase(repo, series, *placed->base, decode);
    if (read.ok()) {
      bytes.emplace(std::move(*read));
    } else if (read.status().code() == StatusCode::kNotFound) {
      *placed = Placement{std::nullopt, BaseReason::kNotStored};  // gc took it after all
    } else {
      return read.status();
    }
    return OkStatus();
  };
  if (placed->base) ZIPNN_RETURN_IF_ERROR(read_base(/*decode=*/false));
  Status stored = store();
  if (!stored.ok() && bytes && bytes->copy) {
    // The copy changed while the delta was built on it (a work-tree file
    // rewritten in place): build it again on the base decoded from the
    // store, which nobody else writes.
    bytes.reset();
    ZIPNN_RETURN_IF_ERROR(read_base(/*decode=*/true));
    stored = store();
  }
  ZIPNN_RETURN_IF_ERROR(stored);
  result.reason = placed->reason;
  // The next version makes its delta against this one. A path overwritten
  // in place will not hold these bytes then, nor will a series whose
  // earlier files were gone from the work tree (a trainer deleting old
  // saves): keep a raw copy for it.
  const bool gone_from_work_tree = bytes && !bytes->from_work_tree;
  if (version.step.empty() || gone_from_work_tree) {
    RawCache(repo.cache_dir, repo.policy.raw_cache).Keep(version.series, version.id, version.file);
  }
  return result;
}

}  // namespace zipnn::store
