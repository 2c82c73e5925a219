#include "lib/series/series.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>
#include <set>
#include <utility>

namespace zipnn::series {

// A pattern as a list of elements, each what one piece of its text
// matches. A run of stars ("***", "**/**", "****/") matches what "**"
// alone does and finds the same first match (the one ending furthest
// on), so it is kept as one "**"; a run of "**/" is kept as one. A
// committed .zipnn.yaml may hold a million stars.
struct Rules::Pattern {
  enum class Element : uint8_t {
    kChar,     // itself
    kAnyChar,  // '?': one character but '/'
    kStar,     // '*': any text within a folder, the longest first
    kAnyText,  // "**": any text, the longest first
    kFolders,  // "**/": nothing, then each path to a '/' inclusive, the shortest first
    kStep,     // "{step}": a run of digits, the longest first
  };
  std::vector<Element> elements;
  std::string chars;  // the character of each kChar, at its element's index
};

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsSeparator(char c) { return c == '-' || c == '_' || c == '=' || c == '.'; }

bool OneOf(const std::string& word, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(), [&](const char* w) { return word == w; });
}

// Words after which a number counts shards of one save, and words after
// which it counts saves.
bool ShardWord(const std::string& w) {
  return OneOf(w, {"rank", "shard", "part", "tp", "pp", "mp", "dp", "layer", "expert", "worker", "gpu", "device",
                   "node", "split"});
}
bool StepWord(const std::string& w) {
  return OneOf(w,
               {"step", "steps", "globalstep", "checkpoint", "ckpt", "iter", "iteration", "epoch", "update", "save"});
}

enum class Kind { kName, kStep };

// What the digits c[begin, end) of one path component are. `previous` is
// the kind of the digit run before them in the component, if any.
Kind Classify(const std::string& c, size_t begin, size_t end, bool file_name, const Kind* previous) {
  // "-00001-of-00004": both numbers belong to the shard.
  auto of_at = [&](size_t at) {
    return at + 4 <= c.size() && IsSeparator(c[at]) && c.compare(at + 1, 2, "of") == 0 && IsSeparator(c[at + 3]);
  };
  if (end + 4 < c.size() && of_at(end) && IsDigit(c[end + 4])) return Kind::kName;
  if (begin >= 5 && of_at(begin - 4) && IsDigit(c[begin - 5])) return Kind::kName;

  size_t k = begin;
  const bool separated = k > 0 && IsSeparator(c[k - 1]);
  if (separated) --k;
  // A decimal part ("1.5") is whatever the number before it is.
  if (separated && c[k] == '.' && k > 0 && IsDigit(c[k - 1]) && previous != nullptr) return *previous;
  size_t s = k;
  while (s > 0 && IsLetter(c[s - 1])) --s;
  std::string word = c.substr(s, k - s);
  std::transform(word.begin(), word.end(), word.begin(), [](unsigned char x) { return std::tolower(x); });
  if (ShardWord(word) || (word == "state" && s >= 4 && c.compare(s - 4, 4, "rng_") == 0)) return Kind::kName;
  if (StepWord(word)) return Kind::kStep;
  if (!word.empty() && !separated) return Kind::kName;  // fp16, gpt2, run1
  if (k > 0 && !separated) return Kind::kName;          // glued to something else
  if (file_name) return Kind::kStep;
  const bool plain = std::all_of(c.begin(), c.end(), [](char x) { return IsDigit(x) || IsSeparator(x); });
  return plain ? Kind::kStep : Kind::kName;
}

using Element = Rules::Pattern::Element;

Rules::Pattern Compile(const std::string& pattern) {
  Rules::Pattern c;
  for (size_t q = 0; q < pattern.size();) {
    Element e = Element::kChar;
    size_t length = 1;
    if (pattern.compare(q, 6, "{step}") == 0) {
      e = Element::kStep, length = 6;
    } else if (pattern.compare(q, 3, "**/") == 0) {
      e = Element::kFolders, length = 3;
    } else if (pattern.compare(q, 2, "**") == 0) {
      e = Element::kAnyText, length = 2;
    } else if (pattern[q] == '*') {
      e = Element::kStar;
    } else if (pattern[q] == '?') {
      e = Element::kAnyChar;
    }
    const char ch = pattern[q];
    q += length;
    if (!c.elements.empty()) {
      const Element last = c.elements.back();
      const bool wild = e == Element::kStar || e == Element::kAnyText || e == Element::kFolders;
      if (last == Element::kAnyText && wild) continue;
      if (last == Element::kFolders && e == Element::kFolders) continue;
      if (last == Element::kFolders && e == Element::kAnyText) {
        c.elements.back() = Element::kAnyText;
        continue;
      }
    }
    c.elements.push_back(e);
    c.chars.push_back(ch);
  }
  return c;
}

// Whether `path` matches `pattern`, and the step spans of the first match
// in the order each element tries its choices. A depth-first search over
// states (element, position) on a stack of its own, so that no pattern can
// exhaust the call stack; `failed` remembers the states that cannot
// match, so each state is expanded once and a match costs at most
// elements x path states (each with two choices, or one per digit for a
// step), never exponential time.
bool Match(const Rules::Pattern& pattern, const std::string& path, std::vector<std::pair<size_t, size_t>>& steps) {
  const std::vector<Element>& elements = pattern.elements;
  const size_t width = path.size() + 1;
  auto digits_end = [&](size_t p) {
    while (p < path.size() && IsDigit(path[p])) ++p;
    return p;
  };
  // The `choice`-th state that (q, p) may go on to, or q = npos when it
  // has no more.
  auto next = [&](size_t q, size_t p, size_t choice) -> std::pair<size_t, size_t> {
    constexpr std::pair<size_t, size_t> kNone{std::string::npos, 0};
    const bool more = p < path.size();
    switch (elements[q]) {
      case Element::kChar:
        return choice == 0 && more && path[p] == pattern.chars[q] ? std::make_pair(q + 1, p + 1) : kNone;
      case Element::kAnyChar:
        return choice == 0 && more && path[p] != '/' ? std::make_pair(q + 1, p + 1) : kNone;
      case Element::kStar:
      case Element::kAnyText: {
        // Take one more character first (the longest match), then stop here.
        const bool take = more && (elements[q] == Element::kAnyText || path[p] != '/');
        if (take && choice == 0) return {q, p + 1};
        return choice == (take ? 1u : 0u) ? std::make_pair(q + 1, p) : kNone;
      }
      case Element::kFolders: {
        // No folder first, then one more folder: through the next '/'.
        if (choice == 0) return {q + 1, p};
        const size_t slash = choice == 1 ? path.find('/', p) : std::string::npos;
        return slash == std::string::npos ? kNone : std::make_pair(q, slash + 1);
      }
      case Element::kStep: {
        const size_t end = digits_end(p);
        return p + choice < end ? std::make_pair(q + 1, end - choice) : kNone;
      }
    }
    return kNone;
  };
  struct State {
    size_t q, p;
    size_t tried;  // choices taken so far; the last is the one being followed
  };
  if (elements.empty()) return path.empty();
  std::vector<bool> failed(elements.size() * width);
  std::vector<State> stack{{0, 0, 0}};
  while (!stack.empty()) {
    State& s = stack.back();
    const auto [q, p] = next(s.q, s.p, s.tried++);
    if (q == std::string::npos) {
      failed[s.q * width + s.p] = true;
      stack.pop_back();
      continue;
    }
    if (q == elements.size()) {
      if (p != path.size()) continue;
      steps.clear();
      for (const State& on : stack) {
        if (elements[on.q] == Element::kStep) steps.emplace_back(on.p, digits_end(on.p) - (on.tried - 1));
      }
      return true;
    }
    if (!failed[q * width + p]) stack.push_back({q, p, 0});
  }
  return false;
}

Placed FromSpans(const std::string& path, const std::vector<std::pair<size_t, size_t>>& spans) {
  Placed placed;
  size_t at = 0;
  for (const auto& [begin, end] : spans) {
    placed.name += path.substr(at, begin - at) + "#";
    if (!placed.step.empty()) placed.step += '.';
    placed.step += path.substr(begin, end - begin);
    at = end;
  }
  placed.name += path.substr(at);
  return placed;
}

}  // namespace

bool GlobMatches(const std::string& glob, const std::string& path) {
  std::vector<std::pair<size_t, size_t>> steps;
  return Match(Compile(glob), path, steps);
}

Status CheckPattern(const std::string& pattern) {
  if (pattern.find("{step}") == std::string::npos) {
    return InvalidArgument("series pattern '" + pattern + "' has no {step}");
  }
  for (size_t at = pattern.find('{'); at != std::string::npos; at = pattern.find('{', at + 1)) {
    if (pattern.compare(at, 6, "{step}") != 0) {
      return InvalidArgument("series pattern '" + pattern + "': only {step} may stand in braces");
    }
  }
  if (pattern.find("{step}{step}") != std::string::npos) {
    return InvalidArgument("series pattern '" + pattern + "': two {step} need something between them");
  }
  return OkStatus();
}

Result<Rules> Rules::WithPatterns(const std::vector<std::string>& patterns) {
  Rules rules;
  for (const std::string& p : patterns) {
    ZIPNN_RETURN_IF_ERROR(CheckPattern(p));
    rules.patterns_.push_back(std::make_shared<const Pattern>(Compile(p)));
  }
  return rules;
}

Placed Rules::Place(const std::string& path) const {
  for (const std::shared_ptr<const Pattern>& pattern : patterns_) {
    std::vector<std::pair<size_t, size_t>> steps;
    if (Match(*pattern, path, steps)) return FromSpans(path, steps);
  }
  std::vector<std::pair<size_t, size_t>> steps;
  const size_t file_start = path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1;
  for (size_t start = 0; start < path.size();) {
    size_t stop = path.find('/', start);
    if (stop == std::string::npos) stop = path.size();
    const std::string component = path.substr(start, stop - start);
    Kind previous = Kind::kName;
    bool any = false;
    for (size_t i = 0; i < component.size();) {
      if (!IsDigit(component[i])) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < component.size() && IsDigit(component[j])) ++j;
      const Kind kind = Classify(component, i, j, start == file_start, any ? &previous : nullptr);
      if (kind == Kind::kStep) steps.emplace_back(start + i, start + j);
      previous = kind;
      any = true;
      i = j;
    }
    start = stop + 1;
  }
  return FromSpans(path, steps);
}

bool StepLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  for (;;) {
    if (i >= a.size() || j >= b.size()) return i >= a.size() && j < b.size();
    size_t ie = a.find('.', i), je = b.find('.', j);
    if (ie == std::string::npos) ie = a.size();
    if (je == std::string::npos) je = b.size();
    // Compare the numbers without their leading zeros: by length, then
    // digit by digit.
    while (i + 1 < ie && a[i] == '0') ++i;
    while (j + 1 < je && b[j] == '0') ++j;
    if (ie - i != je - j) return ie - i < je - j;
    const int c = a.compare(i, ie - i, b, j, je - j);
    if (c != 0) return c < 0;
    i = ie + 1;
    j = je + 1;
    if (ie == a.size() || je == b.size()) return ie == a.size() && je < b.size();
  }
}

bool SeriesLess(const Placed& a, const Placed& b) {
  if (a.name != b.name) return a.name < b.name;
  return StepLess(a.step, b.step);
}

std::vector<std::string> InSeriesOrder(const Rules& rules, const std::vector<std::string>& paths) {
  std::vector<std::pair<Placed, std::string>> placed;
  std::set<std::string> once;
  for (const std::string& p : paths) {
    if (once.insert(p).second) placed.emplace_back(rules.Place(p), p);
  }
  std::stable_sort(placed.begin(), placed.end(),
                   [](const auto& x, const auto& y) { return SeriesLess(x.first, y.first); });
  std::vector<std::string> sorted;
  for (auto& [where, path] : placed) sorted.push_back(std::move(path));
  return sorted;
}

namespace {

std::vector<std::string> Components(const std::string& path) {
  std::vector<std::string> parts;
  for (size_t at = 0; at <= path.size();) {
    const size_t slash = std::min(path.find('/', at), path.size());
    parts.push_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  return parts;
}

}  // namespace

std::vector<std::string> Labels(const Rules& rules, const std::vector<std::string>& paths) {
  std::vector<std::vector<std::string>> parts;
  for (const std::string& p : paths) parts.push_back(Components(p));
  std::vector<std::string> labels;
  const bool same_depth = std::all_of(
      parts.begin(), parts.end(), [&](const std::vector<std::string>& p) { return p.size() == parts.front().size(); });
  if (!same_depth) {
    // Files at different depths (compared --as-given): each is its path
    // from the folders all of them share, the file name included, since
    // a folder alone would hide which file of it is meant.
    size_t shared = 0;
    for (;; ++shared) {
      const bool all = std::all_of(parts.begin(), parts.end(), [&](const std::vector<std::string>& p) {
        return shared + 1 < p.size() && p[shared] == parts.front()[shared];
      });
      if (!all) break;
    }
    for (const std::vector<std::string>& p : parts) {
      std::string label;
      for (size_t c = shared; c < p.size(); ++c) label += (label.empty() ? "" : "/") + p[c];
      labels.push_back(label);
    }
    return labels;
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    // The first component, from the top, in which this path differs from
    // another; the file name when none does.
    size_t differs = parts[i].size() - 1;
    for (size_t c = 0; c + 1 < parts[i].size(); ++c) {
      const bool unique = std::any_of(parts.begin(), parts.end(), [&](const std::vector<std::string>& other) {
        return other.size() != parts[i].size() || other[c] != parts[i][c];
      });
      if (unique) {
        differs = c;
        break;
      }
    }
    const std::string step = rules.Place(paths[i]).step;
    if (differs + 1 < parts[i].size()) {
      labels.push_back(parts[i][differs]);
    } else {
      labels.push_back(step.empty() ? parts[i].back() : step);
    }
  }
  return labels;
}

}  // namespace zipnn::series
