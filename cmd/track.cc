// git zipnn track / untrack: lines of the work tree's .gitattributes.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/file.h"
#include "lib/git/git.h"

namespace zipnn::cmd {

namespace {

Result<std::vector<std::string>> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  if (!FileExists(path)) return lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
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

Status CheckPattern(const std::string& pattern) {
  if (pattern.empty() || pattern.find_first_of(" \t\r\n\"") != std::string::npos || pattern[0] == '#' ||
      pattern[0] == '!') {
    return InvalidArgument("pattern '" + pattern + "' cannot be tracked (no spaces, quotes, leading # or !)");
  }
  return OkStatus();
}

// Tracking without the filter makes git store the files whole: said at
// once, with the way out.
void WarnIfNotInstalled() {
  auto process = git::ConfigGet("filter.zipnn.process");
  if (process.ok() && *process) return;
  std::fprintf(stderr,
               "warning: the git-zipnn filter is not installed, so `git add` would store these files whole in git; "
               "run `git zipnn install` first (files added already: `git add --renormalize .` after it)\n");
}

}  // namespace

Action SetupTrack(CLI::App& sub) {
  auto patterns = std::make_shared<std::vector<std::string>>();
  sub.add_option("patterns", *patterns, "File patterns, as in .gitattributes (e.g. '*.safetensors')");
  return [patterns]() -> Status {
    ZIPNN_ASSIGN_OR_RETURN(std::string top, git::TopLevel());
    const std::string path = top + "/.gitattributes";
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadLines(path));
    if (patterns->empty()) {
      std::printf("Tracked patterns:\n");
      for (const std::string& line : lines) {
        if (auto p = TrackedPattern(line)) std::printf("    %s (.gitattributes)\n", p->c_str());
      }
      return OkStatus();
    }
    bool changed = false;
    for (const std::string& pattern : *patterns) {
      ZIPNN_RETURN_IF_ERROR(CheckPattern(pattern));
      bool present = false;
      for (const std::string& line : lines) present |= TrackedPattern(line) == pattern;
      if (present) {
        std::printf("\"%s\" already tracked\n", pattern.c_str());
        continue;
      }
      lines.push_back(TrackLine(pattern));
      changed = true;
      std::printf("Tracking \"%s\"\n", pattern.c_str());
    }
    if (changed) ZIPNN_RETURN_IF_ERROR(WriteLines(path, lines));
    WarnIfNotInstalled();
    return OkStatus();
  };
}

Action SetupUntrack(CLI::App& sub) {
  auto patterns = std::make_shared<std::vector<std::string>>();
  sub.add_option("patterns", *patterns, "Patterns to stop tracking")->required();
  return [patterns]() -> Status {
    ZIPNN_ASSIGN_OR_RETURN(std::string top, git::TopLevel());
    const std::string path = top + "/.gitattributes";
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadLines(path));
    std::vector<std::string> kept;
    for (const std::string& line : lines) {
      auto p = TrackedPattern(line);
      bool drop = false;
      for (const std::string& pattern : *patterns) drop |= p == pattern;
      if (drop) std::printf("Untracking \"%s\"\n", p->c_str());
      else kept.push_back(line);
    }
    return kept.size() == lines.size() ? OkStatus() : WriteLines(path, kept);
  };
}

}  // namespace zipnn::cmd
