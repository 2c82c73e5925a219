// "Did you mean ...?": the words of a fixed list closest to one that was
// mistyped, by edit distance where swapping two neighbouring letters
// counts as one edit ("lgo" is one edit from "log"). Pure functions,
// thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace zipnn {

// Edits (insert, delete, replace, swap of neighbours) from `a` to `b`.
size_t EditDistance(const std::string& a, const std::string& b);

// The candidates fewest edits from `word`, in their given order, when
// that is few enough to be a slip of the fingers: one edit for words of up
// to four letters, one more for each further three. Without one that
// close, the candidates that start with `word` (of two letters or more).
// Empty when nothing is close.
std::vector<std::string> ClosestWords(const std::string& word, const std::vector<std::string>& candidates);

// `words` as a sentence lists them, each between `quote` marks: "a",
// "a or b", "a, b or c"; past `most` of them, "a, b, c or 4 more".
std::string Alternatives(const std::vector<std::string>& words, const std::string& quote = "",
                         size_t most = static_cast<size_t>(-1));

}  // namespace zipnn
