// Byte ranges of a file written in ranges (an object moved on several
// connections at once), and the record of them a writer keeps beside it:
// a line "<from> <to>" for each range once its bytes are in, so that a
// try cut short is taken up where it stopped. A record is not trusted:
// lines that do not parse, or name bytes past the end, are skipped, and
// what the ranges hold is proven by whoever uses the file.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lib/base/status.h"

namespace zipnn {

// Bytes [first, second).
using Range = std::pair<uint64_t, uint64_t>;

// What of [0, size) none of `done` covers, in order.
std::vector<Range> Uncovered(std::vector<Range> done, uint64_t size);
// What of [0, size) `done` covers, merged, in order.
inline std::vector<Range> Covered(const std::vector<Range>& done, uint64_t size) {
  return Uncovered(Uncovered(done, size), size);
}
// How many bytes of [0, size) `done` covers.
inline uint64_t CoveredBytes(const std::vector<Range>& done, uint64_t size) {
  uint64_t n = 0;
  for (const Range& r : Covered(done, size)) n += r.second - r.first;
  return n;
}
// `ranges` cut into ranges of at most `step` bytes.
std::vector<Range> CutRanges(const std::vector<Range>& ranges, uint64_t step);

// The ranges a record at `path` notes within [0, size); none when it
// cannot be read.
std::vector<Range> ReadNotedRanges(const std::string& path, uint64_t size);
// Appends [from, to) to the record open as `fd` (O_APPEND), `name` in
// errors.
Status NoteRange(int fd, uint64_t from, uint64_t to, const std::string& name);

}  // namespace zipnn
