// git zipnn track / untrack: lines of the work tree's .gitattributes
// (lib/git/setup.h).
#include <algorithm>
#include <cstdio>
#include <memory>

#include "cmd/command.h"
#include "lib/git/setup.h"

namespace zipnn::cmd {

Action SetupTrack(CLI::App& sub) {
  auto patterns = std::make_shared<std::vector<std::string>>();
  sub.add_option("patterns", *patterns, "File patterns, as in .gitattributes (e.g. '*.safetensors')");
  return [patterns]() -> Status {
    if (patterns->empty()) {
      ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> tracked, git::TrackedPatterns());
      std::printf("Tracked patterns:\n");
      for (const std::string& p : tracked) std::printf("    %s (.gitattributes)\n", p.c_str());
      return OkStatus();
    }
    ZIPNN_ASSIGN_OR_RETURN(git::TrackResult result, git::Track(*patterns));
    for (const std::string& p : *patterns) {
      const bool added = std::find(result.added.begin(), result.added.end(), p) != result.added.end();
      std::printf(added ? "Tracking \"%s\"\n" : "\"%s\" already tracked\n", p.c_str());
    }
    // Tracking without the filter makes git store the files whole: said
    // at once, with the way out.
    if (!git::FilterInstalled()) {
      std::fprintf(stderr,
                   "warning: the git-zipnn filter is not installed, so `git add` would store these files whole in "
                   "git; run `git zipnn install` first (files added already: `git add --renormalize .` after it)\n");
    }
    return OkStatus();
  };
}

Action SetupUntrack(CLI::App& sub) {
  auto patterns = std::make_shared<std::vector<std::string>>();
  sub.add_option("patterns", *patterns, "Patterns to stop tracking")->required();
  return [patterns]() -> Status {
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> removed, git::Untrack(*patterns));
    for (const std::string& p : removed) std::printf("Untracking \"%s\"\n", p.c_str());
    return OkStatus();
  };
}

}  // namespace zipnn::cmd
