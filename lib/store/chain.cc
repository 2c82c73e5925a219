#include "lib/store/chain.h"

#include <algorithm>
#include <string>

namespace zipnn::store {

std::vector<ContentId> ChainLink::needs() const {
  std::vector<ContentId> all;
  if (!delta) return all;
  all.push_back(base);
  all.insert(all.end(), references.begin(), references.end());
  return all;
}

Result<Link> OpenLink(const Store& store, const ContentId& top, const ContentId& id, std::vector<ContentId>& passed,
                      size_t above) {
  if (std::find(passed.begin(), passed.end(), id) != passed.end()) {
    return Corruption("chain of object " + top.Hex() + " loops: object " + id.Hex() + " comes back at depth " +
                      std::to_string(above + passed.size()) + " (a damaged store)");
  }
  if (above + passed.size() > static_cast<size_t>(kMaxChainDepth)) {
    return Corruption("chain of object " + top.Hex() + " is longer than " + std::to_string(kMaxChainDepth));
  }
  passed.push_back(id);
  ZIPNN_ASSIGN_OR_RETURN(ReadFile file, store.objects.Open(id));
  ZIPNN_ASSIGN_OR_RETURN(container::ObjectInfo info, container::ReadObjectInfo(file));
  if (info.content_id != id) return Corruption(file.name() + ": holds " + info.content_id.Hex() + ", not " + id.Hex());
  return Link{std::move(file), std::move(info)};
}

namespace {

ChainLink LinkOf(const ContentId& id, const Link& link, int depth) {
  ChainLink shown;
  shown.id = id;
  shown.depth = depth;
  shown.delta = link.info.header.kind == container::ObjectKind::kDelta;
  shown.base = link.info.header.base_id;
  for (const container::Reference& r : link.info.header.references) shown.references.push_back(r.id);
  shown.raw_size = link.info.header.raw_size;
  shown.object_size = link.file.size();
  shown.format = link.info.header.version;
  shown.choice = link.info.header.choice;
  return shown;
}

// Opens every object `id` needs, each once, depth first: `enter` is
// called with each as it is opened (the object that needs it first is
// entered before it), and says whether to go on below it. `passed` is
// the way down from `id`, which OpenLink checks for loops and depth.
class Walk {
 public:
  Walk(const Store& store, const ContentId& top, std::function<bool(const Link&, const ChainLink&)> enter)
      : store_(store), top_(top), enter_(std::move(enter)) {}

  Status From(const ContentId& id) {
    // Met before and not on the way down to it: seen whole already. On
    // the way down: OpenLink says it loops.
    const bool on_way = std::find(passed_.begin(), passed_.end(), id) != passed_.end();
    if (!met_.insert(id).second && !on_way) return OkStatus();
    if (met_.size() > kMaxChainObjects) {
      return Corruption("chain of object " + top_.Hex() + " needs more than " + std::to_string(kMaxChainObjects) +
                        " objects");
    }
    std::vector<ContentId> below;
    {
      // Closed before going down, so that a deep chain holds no file open.
      ZIPNN_ASSIGN_OR_RETURN(Link link, OpenLink(store_, top_, id, passed_));
      const ChainLink shown = LinkOf(id, link, static_cast<int>(passed_.size()) - 1);
      if (enter_(link, shown)) below = shown.needs();
    }
    for (const ContentId& next : below) ZIPNN_RETURN_IF_ERROR(From(next));
    passed_.pop_back();
    return OkStatus();
  }

 private:
  const Store& store_;
  const ContentId top_;
  const std::function<bool(const Link&, const ChainLink&)> enter_;
  std::vector<ContentId> passed_;
  std::set<ContentId> met_;
};

}  // namespace

Status VisitChain(const Store& store, const ContentId& id, const std::function<void(const ChainLink&)>& visit) {
  return Walk(store, id,
              [&](const Link&, const ChainLink& link) {
                visit(link);
                return true;
              })
      .From(id);
}

Result<ChainLink> ReadLink(const Store& store, const ContentId& id) {
  std::vector<ContentId> passed;
  ZIPNN_ASSIGN_OR_RETURN(Link link, OpenLink(store, id, id, passed));
  return LinkOf(id, link, 0);
}

namespace {

// Describe of `id`, at `above` links below the version asked about
// (`top`); `known` holds what is described already (the caller's memo
// first, then what this walk found).
Result<StoredInfo> DescribeFrom(const Store& store, const ContentId& top, const ContentId& id,
                                std::vector<ContentId>& passed, const ChainMemo* memo, ChainMemo& found) {
  // The memo answers for the objects below the one asked about.
  if (memo != nullptr && id != top) {
    if (auto it = memo->find(id); it != memo->end()) return it->second;
  }
  if (auto it = found.find(id); it != found.end()) return it->second;
  if (found.size() >= kMaxChainObjects) {
    return Corruption("chain of object " + top.Hex() + " needs more than " + std::to_string(kMaxChainObjects) +
                      " objects");
  }
  ChainLink shown;
  {
    ZIPNN_ASSIGN_OR_RETURN(Link link, OpenLink(store, top, id, passed));
    shown = LinkOf(id, link, 0);
  }
  StoredInfo info;
  info.delta = shown.delta;
  info.base = shown.base;
  info.references = shown.references;
  info.object_size = shown.object_size;
  info.format = shown.format;
  info.choice = shown.choice;
  if (!shown.delta) {
    info.last_base = id;
    if (shown.raw_size > 0)
      info.base_ratio = static_cast<double>(shown.object_size) / static_cast<double>(shown.raw_size);
  }
  for (const ContentId& next : shown.needs()) {
    ZIPNN_ASSIGN_OR_RETURN(const StoredInfo below, DescribeFrom(store, top, next, passed, memo, found));
    info.depth = std::max(info.depth, below.depth + 1);
    if (next == shown.base) {
      info.last_base = below.last_base;
      info.base_ratio = below.base_ratio;
    }
  }
  passed.pop_back();
  if (static_cast<size_t>(info.depth) + passed.size() > static_cast<size_t>(kMaxChainDepth)) {
    return Corruption("chain of object " + top.Hex() + " is longer than " + std::to_string(kMaxChainDepth));
  }
  found[id] = info;
  return info;
}

}  // namespace

Result<StoredInfo> Describe(const Store& store, const ContentId& id, const ChainMemo* memo) {
  std::vector<ContentId> passed;
  ChainMemo found;
  return DescribeFrom(store, id, id, passed, memo, found);
}

Status TouchChain(const Store& store, const ContentId& id, std::set<ContentId>* done) {
  std::vector<ContentId> checked;
  Status bad;
  ZIPNN_RETURN_IF_ERROR(Walk(store, id, [&](const Link& link, const ChainLink& shown) {
                          if (!bad.ok() || (done != nullptr && done->count(shown.id) != 0)) return false;
                          bad = container::CheckRecords(link.file, link.info);
                          checked.push_back(shown.id);
                          return bad.ok();
                        }).From(id));
  ZIPNN_RETURN_IF_ERROR(bad);
  for (const ContentId& link : checked) {
    ZIPNN_RETURN_IF_ERROR(store.objects.Touch(link));
    if (done != nullptr) done->insert(link);
  }
  return OkStatus();
}

}  // namespace zipnn::store
