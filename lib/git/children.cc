#include "lib/git/children.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace zipnn::git {

const UnionRef kChildren = {"refs/zipnn/children", "children", "children of versions in other series", UnionOfLines};

Status KeepChildren(const std::string& remote, const std::vector<ChildOf>& children) {
  if (!CanTrack(remote) || children.empty()) return OkStatus();
  ZIPNN_ASSIGN_OR_RETURN(const RefFiles held, ReadUnionRef(kChildren, /*remotes=*/false));
  std::map<std::string, std::set<std::string>> wanted;
  for (const auto& [parent, child] : children) wanted[parent.Hex()].insert(child.Hex());
  RefFiles files;
  for (auto& [parent, lines] : wanted) {
    const auto it = held.find(parent);
    const std::set<std::string> have = it == held.end() ? std::set<std::string>() : LineSet(it->second);
    if (std::includes(have.begin(), have.end(), lines.begin(), lines.end())) continue;
    files[parent] = LineSetText(lines);
  }
  if (files.empty()) return OkStatus();
  ZIPNN_RETURN_IF_ERROR(MergeUnionRef(kChildren, remote));
  return AddToUnionRef(kChildren, files);
}

Result<std::vector<ChildOf>> ChildrenInGit() {
  ZIPNN_ASSIGN_OR_RETURN(const RefFiles files, ReadUnionRef(kChildren, /*remotes=*/true));
  std::vector<ChildOf> children;
  for (const auto& [key, text] : files) {
    const std::optional<ContentId> parent = ContentId::FromHex(key);
    if (!parent) continue;
    for (const std::string& line : LineSet(text)) {
      if (const std::optional<ContentId> child = ContentId::FromHex(line)) children.emplace_back(*parent, *child);
    }
  }
  return children;
}

}  // namespace zipnn::git
