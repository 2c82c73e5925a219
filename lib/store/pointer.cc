#include "lib/store/pointer.h"

#include <algorithm>
#include <vector>

#include "lib/base/file.h"

namespace zipnn::store {

namespace {

// Lines of the text, each ending in '\n'; nullopt if the last has none.
std::optional<std::vector<std::string_view>> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;
    lines.push_back(text.substr(0, nl));
    text.remove_prefix(nl + 1);
  }
  return lines;
}

bool TakePrefix(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// Decimal without sign, spaces or leading zeros ("0" itself is fine), up
// to 2^64 - 1 (20 digits), as FormatPointer writes any size.
std::optional<uint64_t> ParseSize(std::string_view s) {
  if (s.empty() || s.size() > 20 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return std::nullopt;  // past 2^64 - 1
    v = v * 10 + digit;
  }
  return v;
}

bool ValidFormat(std::string_view s) {
  if (s.empty() || s.size() > 16 || s[0] < 'a' || s[0] > 'z') return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace

std::string FormatPointer(const Pointer& p) {
  return std::string(kPointerFirstLine) + "id xxh3-128:" + p.id.Hex() + "\nsize " + std::to_string(p.size) +
         "\nformat " + p.format + "\n";
}

bool LooksLikePointer(std::string_view text) {
  const std::string_view first = kPointerFirstLine;
  return text.size() <= kMaxPointerBytes && text.substr(0, first.size() - 2) == first.substr(0, first.size() - 2);
}

Result<Pointer> ParsePointer(std::string_view text) {
  if (text.size() > kMaxPointerBytes) return InvalidArgument("pointer is longer than 200 bytes");
  std::optional<std::vector<std::string_view>> lines = Lines(text);
  if (!lines) return InvalidArgument("pointer does not end with a newline");
  if (lines->size() != 4) return InvalidArgument("pointer has " + std::to_string(lines->size()) + " lines, not 4");
  const std::string_view first = kPointerFirstLine;
  if ((*lines)[0] != first.substr(0, first.size() - 1)) {
    const std::string_view version = (*lines)[0].substr(std::min<size_t>(18, (*lines)[0].size()));
    if ((*lines)[0].substr(0, 18) == "git-zipnn pointer " && ParseSize(version)) {
      return Unsupported("pointer version '" + std::string(version) +
                         "' is newer than this git-zipnn reads (1); upgrade git-zipnn");
    }
    return InvalidArgument("pointer does not start with 'git-zipnn pointer 1'");
  }
  Pointer p;
  std::string_view id = (*lines)[1];
  if (!TakePrefix(id, "id xxh3-128:")) return InvalidArgument("pointer line 2 is not 'id xxh3-128:<32 hex digits>'");
  std::optional<ContentId> parsed = ContentId::FromHex(id);
  if (!parsed) return InvalidArgument("pointer id is not 32 lowercase hex digits");
  p.id = *parsed;
  std::string_view size = (*lines)[2];
  if (!TakePrefix(size, "size ")) return InvalidArgument("pointer line 3 is not 'size <bytes>'");
  std::optional<uint64_t> bytes = ParseSize(size);
  if (!bytes) return InvalidArgument("pointer size is not a plain decimal number");
  p.size = *bytes;
  std::string_view format = (*lines)[3];
  if (!TakePrefix(format, "format ") || !ValidFormat(format)) {
    return InvalidArgument("pointer line 4 is not 'format <name>'");
  }
  p.format = std::string(format);
  return p;
}

Result<std::optional<Pointer>> PointerInFile(const std::string& path) {
  ZIPNN_ASSIGN_OR_RETURN(ReadFile in, ReadFile::Open(path));
  if (in.size() > kMaxPointerBytes) return std::optional<Pointer>();
  std::string text(in.size(), '\0');
  ZIPNN_RETURN_IF_ERROR(in.ReadAt(0, text.data(), text.size()));
  if (!LooksLikePointer(text)) return std::optional<Pointer>();
  ZIPNN_ASSIGN_OR_RETURN(Pointer pointer, ParsePointer(text));
  return std::optional<Pointer>(pointer);
}

}  // namespace zipnn::store
