// Prefix and suffix tests on strings (std::string has them only from
// C++20). Pure functions; thread-safe.
#pragma once

#include <string_view>

namespace zipnn {

inline bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace zipnn
