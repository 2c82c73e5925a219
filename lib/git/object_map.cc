#include "lib/git/object_map.h"

#include "lib/git/children.h"
#include "lib/git/listings.h"
#include "lib/git/union_ref.h"

namespace zipnn::git {

const UnionRef kObjectMap = {kObjectMapRef, "objects", "object map", UnionOfLines};

Result<MapLines> ReadObjectMap() {
  ZIPNN_ASSIGN_OR_RETURN(const RefFiles files, ReadUnionRef(kObjectMap, /*remotes=*/true));
  MapLines lines;
  for (const auto& [id, text] : files) lines[id] = LineSet(text);
  return lines;
}

Status AddToObjectMap(const MapLines& lines) {
  RefFiles files;
  for (const auto& [id, wanted] : lines) files[id] = LineSetText(wanted);
  return AddToUnionRef(kObjectMap, files);
}

// With the listings and the children: a clone that needs the map will
// want them too, and one fetch costs less than three (listings.h and
// children.h take them from there).
Status FetchObjectMap(const std::string& remote, bool prompt) {
  return FetchUnionRefs({&kObjectMap, &kListings, &kChildren}, remote, prompt);
}

Status PushObjectMap(const std::string& remote) { return PushUnionRefs({&kObjectMap, &kListings, &kChildren}, remote); }

Status MergeObjectMap(const std::string& remote) { return MergeUnionRef(kObjectMap, remote); }

}  // namespace zipnn::git
