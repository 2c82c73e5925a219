// Prefix and suffix tests on strings (std::string has them only from
// C++20), counts with their nouns, decimal numbers read strictly, and the
// lines of a text.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zipnn {

inline bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "1 tensor", "2 tensors": `n` and `noun`, with an s unless n is 1
// (nouns whose plural is not noun + "s", such as "series", give both).
inline std::string Counted(uint64_t n, std::string_view noun, std::string_view plural = {}) {
  std::string out = std::to_string(n) + " ";
  if (n == 1) return out.append(noun);
  return plural.empty() ? out.append(noun).append("s") : out.append(plural);
}

// `digits` as a number, when it is nothing but ASCII digits (no sign,
// no spaces) and at most `max`; else nullopt, also on overflow.
inline std::optional<uint64_t> DecimalAtMost(std::string_view digits, uint64_t max) {
  if (digits.empty()) return std::nullopt;
  uint64_t n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (n > (max - digit) / 10) return std::nullopt;
    n = n * 10 + digit;
  }
  return n;
}

// The lines of `text` (a command's output), without their newlines;
// empty lines left out.
inline std::vector<std::string> LinesOf(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (end > at) lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

}  // namespace zipnn
