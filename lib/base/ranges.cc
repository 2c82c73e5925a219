#include "lib/base/ranges.h"

#include <algorithm>
#include <sstream>

#include "lib/base/file.h"

namespace zipnn {

std::vector<Range> Uncovered(std::vector<Range> done, uint64_t size) {
  std::sort(done.begin(), done.end());
  std::vector<Range> missing;
  uint64_t at = 0;
  for (const auto& [from, to] : done) {
    if (from > at) missing.emplace_back(at, std::min(from, size));
    at = std::max(at, to);
    if (at >= size) break;
  }
  if (at < size) missing.emplace_back(at, size);
  return missing;
}

std::vector<Range> CutRanges(const std::vector<Range>& ranges, uint64_t step) {
  std::vector<Range> cut;
  for (const auto& [from, to] : ranges) {
    for (uint64_t at = from; at < to; at += step) cut.emplace_back(at, std::min(to, at + step));
  }
  return cut;
}

std::vector<Range> ReadNotedRanges(const std::string& path, uint64_t size) {
  std::vector<Range> noted;
  Result<std::vector<uint8_t>> text = ReadWholeFile(path);
  if (!text.ok()) return noted;
  std::istringstream lines(std::string(text->begin(), text->end()));
  uint64_t from = 0, to = 0;
  while (lines >> from >> to) {
    if (from < to && to <= size) noted.emplace_back(from, to);
  }
  return noted;
}

Status NoteRange(int fd, uint64_t from, uint64_t to, const std::string& name) {
  const std::string line = std::to_string(from) + " " + std::to_string(to) + "\n";
  return WriteAll(fd, line.data(), line.size(), name);
}

}  // namespace zipnn
