#include "lib/git/setup.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "lib/base/closest.h"
#include "lib/base/file.h"
#include "lib/git/git.h"
#include "lib/git/repository.h"
#include "lib/git/rewrite.h"
#include "lib/git/run.h"

namespace zipnn::git {

namespace {

struct ConfigEntry {
  const char* key;
  const char* value;
};
constexpr ConfigEntry kFilterConfig[] = {
    {"filter.zipnn.process", "git-zipnn filter-process"},
    {"filter.zipnn.clean", "git-zipnn clean -- %f"},
    {"filter.zipnn.smudge", "git-zipnn smudge -- %f"},
    {"filter.zipnn.required", "true"},
    // `--` before what git appends: a path may start with '-'.
    {"diff.zipnn.command", "git-zipnn diff --driver --"},
    {"diff.zipnn.textconv", "git-zipnn textconv --"},
    // git keeps the listings (clean makes them ahead of time), so that
    // `git log -p` does not restore every version to list it.
    {"diff.zipnn.cachetextconv", "true"},
};

Result<std::string> AttributesFile() {
  ZIPNN_ASSIGN_OR_RETURN(std::string top, TopLevel());
  return top + "/.gitattributes";
}

Result<std::vector<std::string>> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  if (!FileExists(path)) return lines;
  std::ifstream in(path);
  if (!in) return IoError(path + ": cannot be read");
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

Status WriteLines(const std::string& path, const std::vector<std::string>& lines) {
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(path, /*overwrite=*/true));
  for (const std::string& line : lines) {
    ZIPNN_RETURN_IF_ERROR(out.Append(line.data(), line.size()));
    ZIPNN_RETURN_IF_ERROR(out.Append("\n", 1));
  }
  return out.Commit();
}

}  // namespace

Status InstallFilter(const std::string& scope) {
  for (const ConfigEntry& e : kFilterConfig) ZIPNN_RETURN_IF_ERROR(ConfigSet(scope, e.key, e.value));
  return OkStatus();
}

Status UninstallFilter(const std::string& scope) {
  for (const ConfigEntry& e : kFilterConfig) ZIPNN_RETURN_IF_ERROR(ConfigUnset(scope, e.key));
  return OkStatus();
}

bool FilterInstalled() {
  auto process = ConfigGet("filter.zipnn.process");
  return process.ok() && *process;
}

Status CheckPattern(const std::string& pattern) {
  if (pattern.empty() || pattern.find_first_of(" \t\r\n\"") != std::string::npos || pattern[0] == '#' ||
      pattern[0] == '!') {
    return InvalidArgument("pattern '" + pattern + "' cannot be tracked (no spaces, quotes, leading # or !)");
  }
  return OkStatus();
}

namespace {

// The pattern of an attributes line and the filter it names ("" when none).
std::pair<std::string, std::string> PatternAndFilter(const std::string& line) {
  std::istringstream words(line);
  std::string pattern, word, filter;
  if (!(words >> pattern) || pattern[0] == '#') return {};
  while (words >> word) {
    if (word.rfind("filter=", 0) == 0) filter = word.substr(7);
  }
  return {pattern, filter};
}

const char* DriverName(Driver d) { return d == Driver::kZipnn ? kDriver : "lfs"; }

// `text` cut after each newline (a last line without one kept).
std::vector<std::string> LinesWithEnds(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    end = end == std::string::npos ? text.size() : end + 1;
    lines.push_back(text.substr(at, end - at));
    at = end;
  }
  return lines;
}

}  // namespace

std::string TrackLine(const std::string& pattern) { return pattern + " filter=zipnn diff=zipnn -text"; }

std::optional<std::string> TrackedPattern(const std::string& line) {
  auto [pattern, filter] = PatternAndFilter(line);
  if (filter != kDriver) return std::nullopt;
  return pattern;
}

namespace {

std::string LineFor(const std::string& pattern, Driver d) {
  return d == Driver::kZipnn ? TrackLine(pattern) : pattern + " filter=lfs diff=lfs merge=lfs -text";
}

}  // namespace

std::vector<std::string> PatternsOf(const std::string& text, Driver driver) {
  std::vector<std::string> patterns;
  for (const std::string& line : LinesWithEnds(text)) {
    auto [pattern, filter] = PatternAndFilter(line);
    if (filter == DriverName(driver)) patterns.push_back(pattern);
  }
  return patterns;
}

std::string Retracked(const std::string& text, const std::vector<std::string>& patterns, Driver to) {
  const Driver from = to == Driver::kZipnn ? Driver::kLfs : Driver::kZipnn;
  std::string out;
  std::set<std::string> given;  // patterns a line gives to `to`
  for (const std::string& line : LinesWithEnds(text)) {
    auto [pattern, filter] = PatternAndFilter(line);
    const bool asked = std::find(patterns.begin(), patterns.end(), pattern) != patterns.end();
    if (asked && filter == DriverName(from)) {
      const size_t body = line.find_last_not_of("\r\n") + 1;
      out += LineFor(pattern, to) + line.substr(body);  // its line end as it was
      given.insert(pattern);
      continue;
    }
    if (asked && filter == DriverName(to)) given.insert(pattern);
    out += line;
  }
  for (const std::string& pattern : patterns) {
    if (given.count(pattern)) continue;
    if (!out.empty() && out.back() != '\n') out += '\n';
    out += LineFor(pattern, to) + "\n";
    given.insert(pattern);
  }
  return out;
}

Result<std::vector<std::string>> TrackedPatterns(Driver driver) {
  ZIPNN_ASSIGN_OR_RETURN(std::string path, AttributesFile());
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadLines(path));
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return PatternsOf(text, driver);
}

Result<std::string> PatternFromHere(const std::string& pattern) {
  ZIPNN_ASSIGN_OR_RETURN(const std::string top, TopLevel());
  std::error_code error;
  const std::filesystem::path here = std::filesystem::canonical(std::filesystem::current_path(), error);
  if (error) return IoError("the current folder cannot be read: " + error.message());
  const std::filesystem::path from_top = here.lexically_relative(top);
  const std::string prefix = from_top.empty() || from_top == "." ? "" : from_top.generic_string() + "/";
  if (prefix.rfind("../", 0) == 0) return pattern;  // not in the work tree (inside .git, say)
  return prefix + (!pattern.empty() && pattern[0] == '/' ? pattern.substr(1) : pattern);
}

Result<TrackResult> Track(const std::vector<std::string>& patterns) {
  for (const std::string& pattern : patterns) ZIPNN_RETURN_IF_ERROR(CheckPattern(pattern));
  ZIPNN_ASSIGN_OR_RETURN(std::string path, AttributesFile());
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadLines(path));
  TrackResult result;
  for (const std::string& pattern : patterns) {
    const bool present = std::any_of(lines.begin(), lines.end(),
                                     [&](const std::string& line) { return TrackedPattern(line) == pattern; });
    if (present) {
      result.present.push_back(pattern);
      continue;
    }
    lines.push_back(TrackLine(pattern));
    result.added.push_back(pattern);
  }
  if (!result.added.empty()) ZIPNN_RETURN_IF_ERROR(WriteLines(path, lines));
  return result;
}

Result<std::vector<Unmatched>> MistypedPatterns(const std::vector<std::string>& patterns) {
  std::vector<Unmatched> mistyped;
  if (patterns.empty()) return mistyped;
  ZIPNN_ASSIGN_OR_RETURN(const std::string top, TopLevel());
  ZIPNN_ASSIGN_OR_RETURN(
      const std::vector<std::string> files,
      GitPaths({"ls-files", "-z", "--full-name", "--cached", "--others", "--exclude-standard"}, top));
  std::set<std::string> endings;
  for (const std::string& f : files) {
    const size_t slash = f.rfind('/'), dot = f.rfind('.');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) endings.insert("*" + f.substr(dot));
  }
  if (endings.empty()) return mistyped;
  ZIPNN_ASSIGN_OR_RETURN(Repository repo, Repository::Discover(top));
  const std::set<std::string> all(files.begin(), files.end());
  const std::vector<std::string> candidates(endings.begin(), endings.end());
  for (const std::string& pattern : patterns) {
    const std::string last = pattern.substr(pattern.rfind('/') + 1);
    if (endings.count(last) != 0) continue;
    std::vector<std::string> close = ClosestWords(last, candidates);
    if (close.empty()) continue;
    ZIPNN_ASSIGN_OR_RETURN(const std::set<std::string> matched, MatchingPaths(repo, all, {pattern}, {}));
    if (matched.empty()) mistyped.push_back(Unmatched{pattern, std::move(close)});
  }
  return mistyped;
}

Result<std::vector<std::string>> Untrack(const std::vector<std::string>& patterns) {
  ZIPNN_ASSIGN_OR_RETURN(std::string path, AttributesFile());
  ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadLines(path));
  std::vector<std::string> kept, removed;
  for (const std::string& line : lines) {
    const std::optional<std::string> p = TrackedPattern(line);
    if (p && std::find(patterns.begin(), patterns.end(), *p) != patterns.end()) {
      removed.push_back(*p);
    } else {
      kept.push_back(line);
    }
  }
  if (!removed.empty()) ZIPNN_RETURN_IF_ERROR(WriteLines(path, kept));
  return removed;
}

}  // namespace zipnn::git
