// Small helpers shared by the commands: output naming, number formatting,
// a sink for standard output, and the common --threads option.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/analyze/analysis.h"
#include "lib/base/file.h"
#include "lib/base/io.h"
#include "lib/base/progress.h"  // HumanBytes, Percent
#include "lib/base/status.h"
#include "lib/git/pointers.h"
#include "lib/git/series_versions.h"
#include "lib/store/checkpoints.h"

namespace zipnn::cmd {

// Where pointers are found (lib/git/pointers.h), as the commands name them.
using git::FoundPointers;
using git::Place;

inline constexpr char kObjectSuffix[] = ".zipnn";

// Writes to file descriptor 1.
class StdoutSink : public ByteSink {
 public:
  Status Append(const void* data, size_t n) override;
};

void AddThreadsOption(CLI::App& sub, int& threads);

// The filter and diff-driver configuration `install` writes and `uninstall`
// removes.
struct ConfigEntry {
  const char* key;
  const char* value;
};
extern const ConfigEntry kFilterConfig[6];

// The repository around the current folder: its object store (git config
// zipnn.storepath, or .git/zipnn/objects), temp and raw cache folders,
// work tree, and the policy of its .zipnn.yaml.
Result<store::Repository> OpenRepository();

// The series of the repository around the current folder, as git holds
// them, by the rules of `repo`'s policy.
Result<std::unique_ptr<git::SeriesVersions>> OpenSeries(const store::Repository& repo);

// Why the stored version `id` is a base, found among the versions of the
// series of `path` (HEAD's history and the index): "first of its series",
// "due every 10", ...; empty when it is not a base or not in that series.
std::string WhyBase(const store::Repository& repo, git::SeriesVersions& series, const std::string& path,
                    const ContentId& id);

// The pointer git holds at `spec` ("<rev>:<path>"; a path starting with
// "./" is relative to the current folder), read in-process (git is run
// only for specs such as ":<path>" or "../"). NotFound when git has no
// such revision or file there, InvalidArgument when the file is not a
// git-zipnn pointer.
Result<store::Pointer> PointerAt(const std::string& spec);

// A checkpoint to read: a file as it is, or a version restored from the
// store (verified) into a scratch file that goes away with it.
struct Checkpoint {
  std::string path;
  std::optional<TempFile> scratch;
};

// The checkpoint git holds at <rev>:<path>: the version its pointer names,
// or the file itself when git holds it unfiltered.
Result<Checkpoint> CheckpointAt(const store::Repository& repo, const std::string& rev, const std::string& path);

// The pointer `file` holds; nothing when it holds something else, an
// error when it starts like a pointer and is not a valid one.
Result<std::optional<store::Pointer>> PointerInFile(const std::string& file);

// Brings git's record of work-tree files up to date after they were
// rewritten behind its back with exactly the content their index entries
// name (a pointer restored as its checkpoint), so that `git status` stays
// quiet. They are added again: clean gives the same pointers, so only the
// times and sizes git keeps change (a refresh cannot do it: git takes a
// changed size for changed content without asking the filter). Callers
// must not pass a path whose content differs from its index entry.
// `top`: the work tree's top folder (empty: the current folder).
void RestageUnchanged(const std::vector<std::string>& paths, const std::string& top = "");

// The checkpoint in `file`: the file itself, or the version it names when
// it holds a git-zipnn pointer (as the files git hands to diff drivers may).
Result<Checkpoint> CheckpointInFile(const std::string& file);

// The non-empty lines of git's output.
std::vector<std::string> Lines(const std::string& text);

// The checkpoint opened for reading: its file and layout, keeping the
// scratch file it may live in (labels left empty).
Result<std::shared_ptr<analyze::Input>> OpenCheckpoint(Checkpoint checkpoint);

// Paths in the index whose filter attribute is zipnn, in the whole tree,
// byte for byte as the files are named (whatever core.quotePath says).
Result<std::vector<std::string>> TrackedPaths();

// The path from the top of the work tree of the file in the index that
// `given` (relative to the current folder) names; of a folder, its first
// file. A Git error quoting git when the index holds no such file.
Result<std::string> TrackedPath(const std::string& given);

// inspect's report on one object file: header, layout, coders (also the
// second half of `show`).
Status PrintObjectReport(const std::string& path);

// .gitattributes lines: `<pattern> filter=zipnn diff=zipnn -text`.
std::string TrackLine(const std::string& pattern);
// Whether an attributes line tracks a pattern with git-zipnn, and which.
std::optional<std::string> TrackedPattern(const std::string& line);

}  // namespace zipnn::cmd
