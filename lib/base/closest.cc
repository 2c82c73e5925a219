#include "lib/base/closest.h"

#include <algorithm>

namespace zipnn {

size_t EditDistance(const std::string& a, const std::string& b) {
  // Three rows of the table: the one two back is what a swap reaches.
  std::vector<size_t> before(b.size() + 1), last(b.size() + 1), row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) last[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      row[j] = std::min({last[j] + 1, row[j - 1] + 1, last[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) row[j] = std::min(row[j], before[j - 2] + 1);
    }
    std::swap(before, last);
    std::swap(last, row);
  }
  return last[b.size()];
}

std::vector<std::string> ClosestWords(const std::string& word, const std::vector<std::string>& candidates) {
  const size_t allowed = word.size() <= 4 ? 1 : 1 + (word.size() - 2) / 3;
  size_t best = allowed;
  std::vector<std::string> closest;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d > best) continue;
    if (d < best) closest.clear();
    best = d;
    closest.push_back(c);
  }
  if (!closest.empty() || word.size() < 2) return closest;
  for (const std::string& c : candidates) {
    if (c.compare(0, word.size(), word) == 0) closest.push_back(c);
  }
  return closest;
}

std::string Alternatives(const std::vector<std::string>& words, const std::string& quote, size_t most) {
  const size_t shown = std::min(words.size(), most);
  std::string list;
  for (size_t i = 0; i < shown; ++i) {
    const bool last = i + 1 == shown && shown == words.size();
    list += (i == 0 ? "" : last ? " or " : ", ") + quote + words[i] + quote;
  }
  if (shown < words.size()) list += " or " + std::to_string(words.size() - shown) + " more";
  return list;
}

}  // namespace zipnn
