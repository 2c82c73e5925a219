#include "lib/store/restore.h"

#include <map>
#include <optional>
#include <set>
#include <vector>

#include "lib/container/object.h"
#include "lib/store/chain.h"

namespace zipnn::store {

Result<const ByteSource*> ReferencedVersions::Open(const ContentId& id, size_t depth) {
  auto [it, fresh] = opened_.try_emplace(id);
  if (!fresh) {
    if (it->second.source == nullptr) {
      return Corruption("chain of object " + top_.Hex() + " loops: object " + id.Hex() +
                        " references a version that needs it (a damaged store)");
    }
    return it->second.source;
  }
  if (opened_.size() > kMaxChainObjects) {
    return Corruption("chain of object " + top_.Hex() + " needs more than " + std::to_string(kMaxChainObjects) +
                      " objects");
  }
  if (depth > static_cast<size_t>(kMaxChainDepth)) {
    return Corruption("chain of object " + top_.Hex() + " is longer than " + std::to_string(kMaxChainDepth));
  }
  Opened& opened = it->second;
  if (find_copy_) {
    if (std::optional<ReadFile> copy = find_copy_(id)) opened.whole.emplace(std::move(*copy));
  }
  if (!opened.whole) {
    Result<std::unique_ptr<VersionReader>> reader = VersionReader::Open(store_, id, depth, this);
    if (reader.ok()) {
      opened.reader = std::move(*reader);
    } else if (reader.status().code() == StatusCode::kUnsupported) {
      // No raw checksums to read it by parts: restored whole, then read.
      ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint whole, formats::Checkpoint::Spool(store_.temp_dir, [&](ByteSink& out) {
                               return Restore(store_, id, out, find_copy_);
                             }));
      opened.whole.emplace(std::move(whole));
    } else {
      return reader.status();
    }
  }
  opened.source = opened.whole ? static_cast<const ByteSource*>(&opened.whole->file()) : opened.reader.get();
  return opened.source;
}

Result<std::vector<const ByteSource*>> ReferencedVersions::Of(const container::ObjectInfo& info, size_t depth) {
  std::vector<const ByteSource*> sources;
  for (const container::Reference& r : info.header.references) {
    ZIPNN_ASSIGN_OR_RETURN(const ByteSource* source, Open(r.id, depth + 1));
    sources.push_back(source);
  }
  return sources;
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

// Links of a chain of bases, opened and checked, the top first, `above`
// links below the version restored; the copy (a version's bytes known
// otherwise) stands in for the base of the last.
struct Chain {
  std::vector<Link> links;
  std::optional<formats::Checkpoint> copy;
  size_t above = 0;
};
using CopyOf = std::function<std::optional<formats::Checkpoint>(const ContentId&)>;

// The links from `id` (at depth `above` in the chain of `top`, which
// errors name) down to a base, to a link whose base `copy_of` gives a
// copy of, or to kLevelsAtOnce - 1 links; then `*next` is the base of the
// last link, where the chain goes on.
Result<Chain> OpenLinks(const Store& store, const ContentId& top, const ContentId& id, size_t above,
                        std::vector<ContentId>& passed, const CopyOf& copy_of, std::optional<ContentId>* next) {
  Chain chain;
  chain.above = above + passed.size();
  next->reset();
  for (ContentId at = id;;) {
    ZIPNN_ASSIGN_OR_RETURN(Link link, OpenLink(store, top, at, passed, above));
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

Status DecodeChain(const Store& store, Chain& chain, ReferencedVersions& references, ByteSink& out);

// Every link of the chain of bases of `id` to decode, opened and checked
// before anything is decoded (so a missing, looping or too deep base
// fails before a byte is written): the top first, the base (or the link
// above a copy) last. Of a chain deeper than kLevelsAtOnce, the first
// kLevelsAtOnce - 1 links, standing on the version below them restored
// into a scratch file: that one stands on the version kLevelsAtOnce - 1
// links further down, and so on, restored from the deepest up, one at a
// time, with nothing else held open but the versions they reference.
Result<Chain> OpenChain(const Store& store, const ContentId& id, size_t above, const FindCopy& find_copy,
                        ReferencedVersions& references) {
  auto found = [&](const ContentId& at) -> std::optional<formats::Checkpoint> {
    if (find_copy) {
      if (std::optional<ReadFile> copy = find_copy(at)) return formats::Checkpoint(std::move(*copy));
    }
    return std::nullopt;
  };
  std::vector<ContentId> passed;
  std::optional<ContentId> next;
  ZIPNN_ASSIGN_OR_RETURN(Chain chain, OpenLinks(store, id, id, above, passed, found, &next));
  if (!next) return chain;
  chain.links.clear();  // let go of its files and chunk maps meanwhile
  // Where each part below starts, and at what depth; checked whole first.
  struct Stage {
    ContentId id;
    size_t depth;
  };
  std::vector<Stage> stages;
  while (next) {
    stages.push_back(Stage{*next, above + passed.size()});
    ZIPNN_RETURN_IF_ERROR(OpenLinks(store, id, *next, above, passed, found, &next).status());
  }
  std::optional<formats::Checkpoint> below;  // the part restored last
  // Opens the part from `from` down to the part below it (or to the end).
  auto open_part = [&](const ContentId& from, size_t depth, const std::optional<ContentId>& on) -> Result<Chain> {
    std::vector<ContentId> seen;
    std::optional<ContentId> more;
    ZIPNN_ASSIGN_OR_RETURN(Chain part, OpenLinks(
                                           store, id, from, depth, seen,
                                           [&](const ContentId& at) -> std::optional<formats::Checkpoint> {
                                             if (!on) return found(at);
                                             if (at == *on) return std::move(below);
                                             return std::nullopt;
                                           },
                                           &more));
    if (more) {
      return Corruption("the chain of object " + id.Hex() +
                        " changed while it was restored (a repack running?); "
                        "try again");
    }
    return part;
  };
  for (size_t i = stages.size(); i-- > 0;) {
    const std::optional<ContentId> on =
        i + 1 < stages.size() ? std::optional<ContentId>(stages[i + 1].id) : std::nullopt;
    ZIPNN_ASSIGN_OR_RETURN(Chain part, open_part(stages[i].id, stages[i].depth, on));
    ZIPNN_ASSIGN_OR_RETURN(formats::Checkpoint restored, formats::Checkpoint::Spool(store.temp_dir, [&](ByteSink& out) {
                             return DecodeChain(store, part, references, out);
                           }));
    below = std::move(restored);
  }
  return open_part(id, above, stages[0].id);
}

// What link `i` of `chain` decodes against: `base`, and the versions it
// references.
Result<container::Sources> SourcesAt(Chain& chain, size_t i, const ByteSource* base, ReferencedVersions& references) {
  container::Sources sources{base, {}};
  ZIPNN_ASSIGN_OR_RETURN(sources.references, references.Of(chain.links[i].info, chain.above + i));
  return sources;
}

// An ObjectReader for each link of `chain` below the top one, from the
// base up, each keeping up to `cache_bytes` of decoded chunks; each delta
// reads its base through the one below. The last one (or the copy, or
// nothing) is what the top link reads its base through.
Result<const ByteSource*> StackReaders(Chain& chain, uint64_t cache_bytes, ReferencedVersions& references,
                                       std::vector<std::unique_ptr<container::ObjectReader>>& readers) {
  const ByteSource* below = chain.copy ? &chain.copy->file() : nullptr;
  for (size_t i = chain.links.size(); i-- > 1;) {
    ZIPNN_ASSIGN_OR_RETURN(container::Sources sources, SourcesAt(chain, i, below, references));
    ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<container::ObjectReader> reader,
                           container::ObjectReader::Open(chain.links[i].file, std::move(chain.links[i].info),
                                                         std::move(sources), /*check_raw=*/false, cache_bytes));
    below = reader.get();
    readers.push_back(std::move(reader));
  }
  return below;
}

// One pass over the chunks of the whole chain: each delta reads its base
// through the ObjectReader of the link below it, and decoding the top
// object pulls each chunk up through the levels, applied onto the one
// below. A whole decode checks the content id.
Status DecodeChain(const Store& store, Chain& chain, ReferencedVersions& references, ByteSink& out) {
  std::vector<std::unique_ptr<container::ObjectReader>> readers;
  ZIPNN_ASSIGN_OR_RETURN(const ByteSource* below,
                         StackReaders(chain, container::kReaderCacheBytes, references, readers));
  ZIPNN_ASSIGN_OR_RETURN(container::Sources sources, SourcesAt(chain, 0, below, references));
  container::DecodeOptions options;
  options.threads = store.policy.threads;
  return container::DecodeObject(chain.links[0].file, chain.links[0].info, sources, options, out);
}

}  // namespace

Status Restore(const Store& store, const ContentId& id, ByteSink& out, const FindCopy& find_copy) {
  ReferencedVersions references(store, id, find_copy);
  ZIPNN_ASSIGN_OR_RETURN(Chain chain, OpenChain(store, id, 0, find_copy, references));
  return DecodeChain(store, chain, references, out);
}

struct VersionReader::Levels {
  std::unique_ptr<ReferencedVersions> own;  // those of a version opened on its own; the readers below read them
  Chain chain;                              // its files stay put: the readers refer to them
  std::vector<std::unique_ptr<container::ObjectReader>> readers;
};

VersionReader::VersionReader() = default;
VersionReader::~VersionReader() = default;
uint64_t VersionReader::size() const { return top_->size(); }
Status VersionReader::ReadAt(uint64_t offset, void* out, size_t n) const { return top_->ReadAt(offset, out, n); }
const std::string& VersionReader::name() const { return top_->name(); }

Result<std::unique_ptr<VersionReader>> VersionReader::Open(const Store& store, const ContentId& id, size_t above,
                                                           ReferencedVersions* references) {
  std::unique_ptr<ReferencedVersions> own;
  if (references == nullptr) {
    own = std::make_unique<ReferencedVersions>(store, id, nullptr);
    references = own.get();
  }
  ZIPNN_ASSIGN_OR_RETURN(Chain chain, OpenChain(store, id, above, nullptr, *references));
  const Link& top = chain.links[0];
  if (!container::HasRawChecksums(top.info.header)) {
    return Unsupported(top.file.name() + ": object format " + std::to_string(top.info.header.version) +
                       " has no raw checksums; a part of it is checked only by restoring it whole");
  }
  std::unique_ptr<VersionReader> version(new VersionReader());
  version->levels_ = std::make_unique<VersionReader::Levels>();
  VersionReader::Levels& levels = *version->levels_;
  levels.own = std::move(own);
  levels.chain = std::move(chain);
  // One reader reads each level below the top, chunk by chunk at the
  // offsets the top asks for: two chunks each (one that straddles a
  // boundary of the level below needs both) keep memory small however deep
  // the chain.
  ZIPNN_ASSIGN_OR_RETURN(const ByteSource* below,
                         StackReaders(levels.chain, /*cache_bytes=*/0, *references, levels.readers));
  ZIPNN_ASSIGN_OR_RETURN(container::Sources sources, SourcesAt(levels.chain, 0, below, *references));
  Link& link = levels.chain.links[0];
  ZIPNN_ASSIGN_OR_RETURN(std::unique_ptr<container::ObjectReader> reader,
                         container::ObjectReader::Open(link.file, std::move(link.info), std::move(sources),
                                                       /*check_raw=*/true));
  version->top_ = reader.get();
  levels.readers.push_back(std::move(reader));
  return version;
}

Result<std::unique_ptr<VersionReader>> OpenVersion(const Store& store, const ContentId& id) {
  return VersionReader::Open(store, id, 0, nullptr);
}

Status RestoreFile(const Store& store, const Pointer& pointer, const std::string& path, ByteSink& out,
                   const FindCopy& find_copy) {
  Status s = Restore(store, pointer.id, out, find_copy);
  if (s.code() != StatusCode::kNotFound) return s;
  return MissingObject(store, pointer, path);
}

Status MissingObject(const Store& store, const Pointer& pointer, const std::string& path) {
  // Which object of the chain is missing: the version's own, or one it
  // needs (a base, or a version it references) that the walk did not meet.
  ContentId missing = pointer.id;
  std::string of;  // how the version needs it
  std::set<ContentId> met;
  std::vector<std::pair<ContentId, bool>> needed;  // (object, whether as a base)
  (void)VisitChain(store, pointer.id, [&](const ChainLink& link) {
    met.insert(link.id);
    for (const ContentId& next : link.needs()) needed.emplace_back(next, next == link.base);
  });
  for (const auto& [next, as_base] : needed) {
    if (met.count(next) == 0 && !store.objects.Has(next)) {
      missing = next;
      of = as_base ? " (a base of " + pointer.id.Hex() + ")"
                   : " (a version " + pointer.id.Hex() + " takes tensors from)";
      break;
    }
  }
  return NotFound("object " + missing.Hex() + of + " for " + path + " is not in the store " + store.objects.root() +
                  " (fetch it, or restore the store)");
}

Result<formats::Checkpoint> RestoreToScratch(const Store& store, const ContentId& id) {
  return formats::Checkpoint::Spool(store.temp_dir, [&](ByteSink& out) { return Restore(store, id, out); });
}

Result<formats::Checkpoint> RestoreFileToScratch(const Store& store, const Pointer& pointer, const std::string& path,
                                                 const FindCopy& find_copy) {
  return formats::Checkpoint::Spool(store.temp_dir,
                                    [&](ByteSink& out) { return RestoreFile(store, pointer, path, out, find_copy); });
}

Status CheckStored(const Store& store, const Pointer& pointer, bool decode) {
  uint64_t raw_size = 0;
  if (decode) {
    CountingSink counted;
    ZIPNN_RETURN_IF_ERROR(Restore(store, pointer.id, counted));
    raw_size = counted.bytes();
  } else {
    ZIPNN_RETURN_IF_ERROR(VisitChain(store, pointer.id, [&](const ChainLink& link) {
      if (link.depth == 0) raw_size = link.raw_size;
    }));
  }
  if (raw_size != pointer.size) {
    return Corruption("object " + pointer.id.Hex() + " holds " + std::to_string(raw_size) +
                      " bytes; its pointer says " + std::to_string(pointer.size));
  }
  return OkStatus();
}

}  // namespace zipnn::store
