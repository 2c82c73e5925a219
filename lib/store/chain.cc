#include "lib/store/chain.h"

#include <algorithm>
#include <string>

namespace zipnn::store {

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
  // The versions a format 8 delta references besides its base are not
  // followed by the store's walks yet: such an object is refused whole,
  // never decoded without them.
  if (!info.header.references.empty()) {
    return Unsupported(file.name() + ": takes tensors from " + std::to_string(info.header.references.size()) +
                       " more stored version(s) besides its base (object format 8), which this git-zipnn reads "
                       "but does not restore from a store; upgrade git-zipnn");
  }
  return Link{std::move(file), std::move(info)};
}

namespace {

// VisitChain, ending early when `visit` returns false.
Status WalkChain(const Store& store, const ContentId& id, const std::function<bool(const ChainLink&)>& visit) {
  std::vector<ContentId> passed;
  for (ContentId at = id;;) {
    ZIPNN_ASSIGN_OR_RETURN(Link link, OpenLink(store, id, at, passed));
    ChainLink shown;
    shown.id = at;
    shown.depth = static_cast<int>(passed.size()) - 1;
    shown.delta = link.info.header.kind == container::ObjectKind::kDelta;
    shown.base = link.info.header.base_id;
    shown.raw_size = link.info.header.raw_size;
    shown.object_size = link.file.size();
    shown.format = link.info.header.version;
    shown.choice = link.info.header.choice;
    if (!visit(shown) || !shown.delta) return OkStatus();
    at = shown.base;
  }
}

}  // namespace

Status VisitChain(const Store& store, const ContentId& id, const std::function<void(const ChainLink&)>& visit) {
  return WalkChain(store, id, [&](const ChainLink& link) {
    visit(link);
    return true;
  });
}

Result<ChainLink> ReadLink(const Store& store, const ContentId& id) {
  ChainLink top;
  ZIPNN_RETURN_IF_ERROR(WalkChain(store, id, [&](const ChainLink& link) {
    top = link;
    return false;
  }));
  return top;
}

Result<StoredInfo> Describe(const Store& store, const ContentId& id, const ChainMemo* memo) {
  std::vector<ChainLink> links;
  const StoredInfo* known = nullptr;  // what `memo` says of the last link's base
  ZIPNN_RETURN_IF_ERROR(WalkChain(store, id, [&](const ChainLink& link) {
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
  info.choice = links.front().choice;
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

Status TouchChain(const Store& store, const ContentId& id, std::set<ContentId>* done) {
  std::vector<ContentId> passed, checked;
  for (ContentId at = id; done == nullptr || done->count(at) == 0;) {
    ZIPNN_ASSIGN_OR_RETURN(Link link, OpenLink(store, id, at, passed));
    ZIPNN_RETURN_IF_ERROR(container::CheckRecords(link.file, link.info));
    checked.push_back(at);
    if (link.info.header.kind != container::ObjectKind::kDelta) break;
    at = link.info.header.base_id;
  }
  for (const ContentId& link : checked) {
    ZIPNN_RETURN_IF_ERROR(store.objects.Touch(link));
    if (done != nullptr) done->insert(link);
  }
  return OkStatus();
}

}  // namespace zipnn::store
