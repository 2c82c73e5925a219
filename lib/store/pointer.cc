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
  if (p.version == 1) {
    return std::string(kPointerPrefix) + "1\nid xxh3-128:" + p.id.Hex() + "\nsize " + std::to_string(p.size) +
           "\nformat " + p.format + "\n";
  }
  // One line, the id between size and format: git's rename detection
  // compares files in pieces of a line or of 64 bytes, and every piece of
  // this line holds part of the id (for any size of 100 bytes or more),
  // so two pointers never look alike.
  return std::string(kPointerPrefix) + "2 " + std::to_string(p.size) + " xxh3-128:" + p.id.Hex() + " " + p.format +
         "\n";
}

bool LooksLikePointer(std::string_view text) {
  const std::string_view prefix = kPointerPrefix;
  return text.size() <= kMaxPointerBytes && text.substr(0, prefix.size()) == prefix;
}

namespace {

Status ParseId(std::string_view hex, Pointer& p) {
  std::optional<ContentId> parsed = ContentId::FromHex(hex);
  if (!parsed) return InvalidArgument("pointer id is not 32 lowercase hex digits");
  p.id = *parsed;
  return OkStatus();
}

Status ParseSizeField(std::string_view size, Pointer& p) {
  std::optional<uint64_t> bytes = ParseSize(size);
  if (!bytes) return InvalidArgument("pointer size is not a plain decimal number");
  p.size = *bytes;
  return OkStatus();
}

// Version 1: four lines after the first.
Result<Pointer> ParseVersion1(const std::vector<std::string_view>& lines) {
  if (lines.size() != 4) return InvalidArgument("pointer has " + std::to_string(lines.size()) + " lines, not 4");
  Pointer p;
  p.version = 1;
  std::string_view id = lines[1];
  if (!TakePrefix(id, "id xxh3-128:")) return InvalidArgument("pointer line 2 is not 'id xxh3-128:<32 hex digits>'");
  ZIPNN_RETURN_IF_ERROR(ParseId(id, p));
  std::string_view size = lines[2];
  if (!TakePrefix(size, "size ")) return InvalidArgument("pointer line 3 is not 'size <bytes>'");
  ZIPNN_RETURN_IF_ERROR(ParseSizeField(size, p));
  std::string_view format = lines[3];
  if (!TakePrefix(format, "format ") || !ValidFormat(format)) {
    return InvalidArgument("pointer line 4 is not 'format <name>'");
  }
  p.format = std::string(format);
  return p;
}

// Version 2: "<size> xxh3-128:<id> <format>" after "git-zipnn pointer 2 ",
// on the one line.
Result<Pointer> ParseVersion2(const std::vector<std::string_view>& lines, std::string_view fields) {
  if (lines.size() != 1)
    return InvalidArgument("pointer version 2 has " + std::to_string(lines.size()) + " lines, not 1");
  Pointer p;
  p.version = 2;
  const size_t space = fields.find(' ');
  ZIPNN_RETURN_IF_ERROR(ParseSizeField(fields.substr(0, space), p));
  if (space == std::string_view::npos) return InvalidArgument("pointer has no id after its size");
  fields.remove_prefix(space + 1);
  const size_t next = fields.find(' ');
  std::string_view id = fields.substr(0, next);
  if (!TakePrefix(id, "xxh3-128:")) return InvalidArgument("pointer id does not start with 'xxh3-128:'");
  ZIPNN_RETURN_IF_ERROR(ParseId(id, p));
  if (next == std::string_view::npos) return InvalidArgument("pointer has no format after its id");
  const std::string_view format = fields.substr(next + 1);
  if (!ValidFormat(format)) return InvalidArgument("pointer format is not a name of a-z, 0-9 and _");
  p.format = std::string(format);
  return p;
}

}  // namespace

Result<Pointer> ParsePointer(std::string_view text) {
  if (text.size() > kMaxPointerBytes) return InvalidArgument("pointer is longer than 200 bytes");
  std::optional<std::vector<std::string_view>> lines = Lines(text);
  if (!lines) return InvalidArgument("pointer does not end with a newline");
  std::string_view first = lines->empty() ? std::string_view() : (*lines)[0];
  if (!TakePrefix(first, kPointerPrefix)) return InvalidArgument("pointer does not start with 'git-zipnn pointer '");
  const std::string_view version = first.substr(0, first.find(' '));
  if (version == "1" && first.size() == 1) return ParseVersion1(*lines);
  if (version == "2" && first.size() > 1) return ParseVersion2(*lines, first.substr(2));
  if (ParseSize(version) && version != "0" && version != "1" && version != "2") {
    return Unsupported("pointer version '" + std::string(version) + "' is newer than this git-zipnn reads (" +
                       std::to_string(kPointerVersion) + "); upgrade git-zipnn");
  }
  return InvalidArgument("pointer does not start with 'git-zipnn pointer 1' or 'git-zipnn pointer 2 '");
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
