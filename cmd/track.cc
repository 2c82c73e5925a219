// git zipnn track / untrack: lines of the work tree's .gitattributes
// (lib/git/setup.h).
#include <algorithm>
#include <cstdio>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/closest.h"
#include "lib/base/strings.h"
#include "lib/ops/context.h"
#include "lib/ops/setup.h"
#include "lib/ops/status.h"

namespace zipnn::cmd {

namespace {

// The patterns as the top .gitattributes says them (ops::PatternFromHere).
Result<std::vector<std::string>> FromHere(const std::vector<std::string>& patterns) {
  std::vector<std::string> written;
  for (const std::string& p : patterns) {
    ZIPNN_ASSIGN_OR_RETURN(std::string w, ops::PatternFromHere(p));
    written.push_back(std::move(w));
  }
  return written;
}

}  // namespace

Action SetupTrack(CLI::App& sub) {
  auto patterns = std::make_shared<std::vector<std::string>>();
  sub.add_option("patterns", *patterns, "File patterns, as in .gitattributes (e.g. '*.safetensors')");
  return [patterns]() -> Status {
    if (patterns->empty()) {
      ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> tracked, ops::TrackedPatterns());
      std::printf("Tracked patterns:\n");
      for (const std::string& p : tracked) std::printf("    %s (.gitattributes)\n", p.c_str());
      return OkStatus();
    }
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> written, FromHere(*patterns));
    ZIPNN_ASSIGN_OR_RETURN(ops::TrackResult result, ops::Track(written));
    for (const std::string& p : written) {
      const bool added = std::find(result.added.begin(), result.added.end(), p) != result.added.end();
      std::printf(added ? "Tracking \"%s\"\n" : "\"%s\" already tracked\n", p.c_str());
    }
    // A pattern that matches no file where one close to it would (a
    // slip of the fingers) is said, with the pattern meant.
    if (Result<std::vector<ops::Unmatched>> mistyped = ops::MistypedPatterns(result.added); mistyped.ok()) {
      for (const ops::Unmatched& m : *mistyped) {
        // Said as the user gave it, in the folder it was given in.
        const size_t at = std::find(written.begin(), written.end(), m.pattern) - written.begin();
        const std::string& given = at < patterns->size() ? (*patterns)[at] : m.pattern;
        const std::string folder = given.substr(0, given.rfind('/') + 1);
        std::vector<std::string> meant;
        for (const std::string& c : m.close) meant.push_back(folder + c);
        std::fprintf(stderr,
                     "warning: \"%s\" matches no file here (did you mean %s? `git zipnn untrack \"%s\"` takes it "
                     "back)\n",
                     given.c_str(), Alternatives(meant, "\"").c_str(), given.c_str());
      }
    }
    // Tracking without the filter makes git store the files whole: said
    // at once, with the way out.
    if (!ops::FilterInstalled()) {
      std::fprintf(stderr,
                   "warning: the git-zipnn filter is not installed, so `git add` would store these files whole in "
                   "git; run `git zipnn install` first (files added already: `git add --renormalize .` after it)\n");
    } else if (!result.added.empty()) {
      // Files git-add'ed before the pattern matched them: git holds them
      // whole until they are added again through the filter.
      ops::Context context;
      if (const auto whole = ops::HeldWholeInIndex(context); whole.ok() && !whole->empty()) {
        std::string paths;
        for (const std::string& path : *whole) paths += " " + ForShell(path);
        std::fprintf(stderr,
                     "note: %s of tracked patterns %s whole in git's index (added before a pattern matched): git "
                     "add --renormalize --%s stores %s as checkpoints\n",
                     Counted(whole->size(), "file").c_str(), whole->size() == 1 ? "is" : "are", paths.c_str(),
                     whole->size() == 1 ? "it" : "them");
      }
    }
    return OkStatus();
  };
}

Action SetupUntrack(CLI::App& sub) {
  auto patterns = std::make_shared<std::vector<std::string>>();
  sub.add_option("patterns", *patterns, "Patterns to stop tracking")->required();
  return [patterns]() -> Status {
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> tracked, ops::TrackedPatterns());
    ZIPNN_ASSIGN_OR_RETURN(const std::vector<std::string> asked, FromHere(*patterns));
    ZIPNN_ASSIGN_OR_RETURN(std::vector<std::string> removed, ops::Untrack(asked));
    for (const std::string& p : removed) std::printf("Untracking \"%s\"\n", p.c_str());
    // A pattern that is no line of .gitattributes (a typo, or a file name
    // where a pattern was tracked) is said, with the patterns there are.
    size_t unknown = 0;
    for (const std::string& p : asked) {
      if (std::find(removed.begin(), removed.end(), p) != removed.end()) continue;
      ++unknown;
      const std::vector<std::string> close = ClosestWords(p, tracked);
      const std::string hint = close.empty() ? "" : " (did you mean " + Alternatives(close, "\"") + "?)";
      std::fprintf(stderr, "git-zipnn: \"%s\" is not a tracked pattern%s\n", p.c_str(), hint.c_str());
    }
    if (unknown > 0) {
      std::string list;
      for (const std::string& t : tracked) list += (list.empty() ? "" : ", ") + ("\"" + t + "\"");
      std::fprintf(stderr, "git-zipnn: the tracked patterns are %s (`git zipnn track` lists them)\n",
                   list.empty() ? "none" : list.c_str());
    }
    if (removed.empty()) return NotFound("nothing untracked: .gitattributes is unchanged");
    return OkStatus();
  };
}

}  // namespace zipnn::cmd
