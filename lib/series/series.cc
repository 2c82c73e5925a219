#include "lib/series/series.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace zipnn::series {

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
  return OneOf(w, {"step", "steps", "globalstep", "checkpoint", "ckpt", "iter", "iteration", "epoch", "update",
                   "save"});
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
  if (k > 0 && !separated) return Kind::kName;           // glued to something else
  if (file_name) return Kind::kStep;
  const bool plain = std::all_of(c.begin(), c.end(), [](char x) { return IsDigit(x) || IsSeparator(x); });
  return plain ? Kind::kStep : Kind::kName;
}

// Glob matching with "{step}" captures: whether `path` from `p` matches
// `pattern` from `q`, appending the step digits to `steps`. `failed`
// remembers the (q, p) pairs that cannot match, so that a pattern of many
// stars costs at most pattern x path steps, never exponential time.
struct Matcher {
  const std::string& pattern;
  const std::string& path;
  std::vector<std::pair<size_t, size_t>>& steps;
  std::vector<bool> failed;

  bool Match(size_t q, size_t p) {
    const size_t at = q * (path.size() + 1) + p;
    if (failed[at]) return false;
    const size_t kept = steps.size();
    if (MatchFrom(q, p)) return true;
    steps.resize(kept);
    failed[at] = true;
    return false;
  }
  bool MatchFrom(size_t q, size_t p);
};

bool Matcher::MatchFrom(size_t q, size_t p) {
  while (q < pattern.size()) {
    if (pattern.compare(q, 6, "{step}") == 0) {
      size_t e = p;
      while (e < path.size() && IsDigit(path[e])) ++e;
      // The longest run first, then shorter ones ("{step}0" must work too).
      for (size_t end = e; end > p; --end) {
        steps.emplace_back(p, end);
        if (Match(q + 6, end)) return true;
        steps.pop_back();
      }
      return false;
    }
    if (pattern.compare(q, 3, "**/") == 0) {
      // Zero or more whole folders.
      for (size_t at = p;; ++at) {
        if ((at == p || path[at - 1] == '/') && Match(q + 3, at)) return true;
        if (at >= path.size()) return false;
      }
    }
    if (pattern.compare(q, 2, "**") == 0) {
      for (size_t at = path.size() + 1; at-- > p;) {
        if (Match(q + 2, at)) return true;
      }
      return false;
    }
    if (pattern[q] == '*') {
      size_t limit = path.find('/', p);
      if (limit == std::string::npos) limit = path.size();
      for (size_t at = limit + 1; at-- > p;) {
        if (Match(q + 1, at)) return true;
      }
      return false;
    }
    if (p >= path.size()) return false;
    if (pattern[q] == '?' ? path[p] == '/' : pattern[q] != path[p]) return false;
    ++q;
    ++p;
  }
  return p == path.size();
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
  for (const std::string& p : patterns) ZIPNN_RETURN_IF_ERROR(CheckPattern(p));
  Rules rules;
  rules.patterns_ = patterns;
  return rules;
}

Placed Rules::Place(const std::string& path) const {
  for (const std::string& pattern : patterns_) {
    std::vector<std::pair<size_t, size_t>> steps;
    Matcher m{pattern, path, steps, std::vector<bool>((pattern.size() + 1) * (path.size() + 1))};
    if (m.Match(0, 0)) return FromSpans(path, steps);
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

}  // namespace zipnn::series
