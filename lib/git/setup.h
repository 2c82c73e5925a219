// What git-zipnn writes into a repository's git set-up: the filter and
// diff-driver configuration `install` sets at a config level, and the
// .gitattributes lines `track` and `untrack` edit at the top of the work
// tree (`<pattern> filter=zipnn diff=zipnn -text`). Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace zipnn::git {

// The name of git-zipnn's filter and diff driver in git's configuration
// and in .gitattributes.
inline constexpr char kDriver[] = "zipnn";

// Sets (or removes) the filter.zipnn.* and diff.zipnn.* keys at `scope`
// (--local, --global or --system). Setting them again changes nothing.
Status InstallFilter(const std::string& scope);
Status UninstallFilter(const std::string& scope);
// Whether git, at any level, runs git-zipnn's filter process.
bool FilterInstalled();

// The .gitattributes line that tracks `pattern`, and the pattern an
// attributes line tracks with git-zipnn (nullopt for any other line).
std::string TrackLine(const std::string& pattern);
std::optional<std::string> TrackedPattern(const std::string& line);

// Which filter a .gitattributes line gives its pattern to: git-zipnn's
// (TrackLine) or Git LFS's ("<pattern> filter=lfs diff=lfs merge=lfs -text").
enum class Driver { kZipnn, kLfs };
// The patterns the lines of `text` (a .gitattributes) give to `driver`.
std::vector<std::string> PatternsOf(const std::string& text, Driver driver);
// `text` with each of `patterns` given to `to`: a line that gives one to
// the other filter becomes `to`'s line, and a pattern that no line gives
// to `to` gets its line at the end. Every other line stays byte for byte.
std::string Retracked(const std::string& text, const std::vector<std::string>& patterns, Driver to);

// A pattern that cannot be written as an attributes line (spaces, quotes,
// a leading # or !) is InvalidArgument naming it.
Status CheckPattern(const std::string& pattern);

// The patterns the work tree's top .gitattributes gives to `driver`, in
// its order.
Result<std::vector<std::string>> TrackedPatterns(Driver driver = Driver::kZipnn);

// `pattern` as given in the current folder, as the top .gitattributes
// must say it: prefixed with the folder's path from the top ('*.ckpt' in
// runs/ is 'runs/*.ckpt', which matches in runs/ only, as Git LFS writes
// it); a leading '/' anchors at the current folder.
Result<std::string> PatternFromHere(const std::string& pattern);

// Adds a line for each pattern not tracked yet; `added` and `present`
// say which was which. A pattern that cannot be written as an attributes
// line (spaces, quotes, a leading # or !) is refused before anything is
// written.
struct TrackResult {
  std::vector<std::string> added, present;
};
Result<TrackResult> Track(const std::vector<std::string>& patterns);
// Of `patterns` (tracked already: as the top .gitattributes says them),
// each that matches no file git sees in the work tree (tracked, or
// untracked and not ignored) while a pattern "*.<ext>" of such a file is
// close to its last part: a slip of the fingers ('*.safetensor' where the
// files end in .safetensors), with those close patterns ("*.<ext>"). A
// pattern tracked ahead of its files, with nothing close, is not one.
struct Unmatched {
  std::string pattern;
  std::vector<std::string> close;
};
Result<std::vector<Unmatched>> MistypedPatterns(const std::vector<std::string>& patterns);
// Removes the lines that track these patterns; the patterns removed.
Result<std::vector<std::string>> Untrack(const std::vector<std::string>& patterns);

}  // namespace zipnn::git
