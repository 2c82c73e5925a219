#include "lib/git/object_map.h"

#include <sstream>

#include "lib/git/listings.h"
#include "lib/git/union_ref.h"

namespace zipnn::git {

namespace {

std::set<std::string> LinesOf(const std::string& text) {
  std::set<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.insert(line);
  }
  return lines;
}

std::string TextOf(const std::set<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

// Every line of both, sorted, each once.
std::string MergeLines(const std::string& ours, const std::string& theirs) {
  std::set<std::string> all = LinesOf(ours);
  for (const std::string& line : LinesOf(theirs)) all.insert(line);
  return TextOf(all);
}

}  // namespace

const UnionRef kObjectMap = {kObjectMapRef, "objects", "object map", MergeLines};

Result<MapLines> ReadObjectMap() {
  ZIPNN_ASSIGN_OR_RETURN(const RefFiles files, ReadUnionRef(kObjectMap, /*remotes=*/true));
  MapLines lines;
  for (const auto& [id, text] : files) lines[id] = LinesOf(text);
  return lines;
}

Status AddToObjectMap(const MapLines& lines) {
  RefFiles files;
  for (const auto& [id, wanted] : lines) files[id] = TextOf(wanted);
  return AddToUnionRef(kObjectMap, files);
}

// With the listings: a clone that needs the map will want them too, and
// one fetch costs less than two (listings.h takes them from there).
Status FetchObjectMap(const std::string& remote, bool prompt) {
  return FetchUnionRefs({&kObjectMap, &kListings}, remote, prompt);
}

Status PushObjectMap(const std::string& remote) { return PushUnionRefs({&kObjectMap, &kListings}, remote); }

Status MergeObjectMap(const std::string& remote) { return MergeUnionRef(kObjectMap, remote); }

}  // namespace zipnn::git
