// git zipnn clean / smudge / filter-process: what git runs through the
// filter configuration. Single-file clean and smudge work on stdin and
// stdout; filter-process serves git's long-running protocol. Errors go to
// stderr; a failing file makes git report it, never a crash.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cmd/command.h"
#include "cmd/util.h"
#include "filters/checkpoint_filter.h"
#include "lib/base/file.h"
#include "lib/git/discover.h"
#include "lib/git/git.h"
#include "lib/git/hook.h"
#include "lib/git/setup.h"
#include "lib/git/textconv_cache.h"

namespace zipnn::cmd {

namespace {

class StderrSink : public ByteSink {
 public:
  Status Append(const void* data, size_t n) override {
    return ::write(2, data, n) == static_cast<ssize_t>(n) ? OkStatus() : IoError("cannot write to stderr");
  }
};

// Smudge leaves pointers in place under GIT_ZIPNN_SKIP_SMUDGE=1, and
// otherwise fetches missing objects from the default remote; with
// zipnn.skipSmudgeErrors (or GIT_ZIPNN_SKIP_SMUDGE_ERRORS=1) one it cannot
// restore is left as its pointer instead of failing the checkout.
bool EnvFlag(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' && std::string(value) != "0";
}

filters::SmudgeOptions SmudgeFor() {
  filters::SmudgeOptions options;
  options.leave_pointers = EnvFlag("GIT_ZIPNN_SKIP_SMUDGE");
  options.keep_pointer_on_error = EnvFlag("GIT_ZIPNN_SKIP_SMUDGE_ERRORS") || git::ConfigFlag("zipnn.skipsmudgeerrors");
  options.fetch_missing = true;
  return options;
}

// The series git holds; none (every version stored standalone) when the
// repository cannot be read in-process, which must not stop git.
std::unique_ptr<git::SeriesVersions> SeriesOrNone(const store::Store& repo) {
  auto series = git::OpenSeries(repo);
  if (series.ok()) return std::move(*series);
  std::fprintf(stderr, "git-zipnn: cannot read this repository's series (%s); checkpoints are stored standalone\n",
               series.status().message().c_str());
  return nullptr;
}

// The pre-push hook, written when a repository has none (lib/git/hook.h).
void SayHook() {
  const std::string said = git::EnsureHook();
  if (!said.empty()) std::fprintf(stderr, "git-zipnn: %s\n", said.c_str());
}

// Clean lists what it stores for git's textconv cache when git keeps one
// (lib/git/textconv_cache.h).
void KeepListings(filters::CheckpointFilter& filter) {
  auto cache = git::TextconvCache::Open(git::kDriver);
  if (cache.ok() && *cache) filter.KeepListings(std::move(**cache));
}

// The listings go to git's cache as the process ends; failing to write
// them costs a later `git log -p` time, nothing else.
Status Finished(filters::CheckpointFilter& filter, Status served) {
  const Status written = filter.Finish();
  if (!written.ok()) {
    std::fprintf(stderr, "git-zipnn: warning: the tensor listings for git log -p were not kept: %s\n",
                 written.message().c_str());
  }
  return served;
}

template <bool kClean>
Action SingleFile(CLI::App& sub) {
  auto path = std::make_shared<std::string>();
  sub.add_option("path", *path, "The file's path in the work tree (git's %f)")->required();
  return [path]() -> Status {
    SayHook();
    ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
    filters::SmudgeOptions smudge = SmudgeFor();
    std::unique_ptr<git::SeriesVersions> series = SeriesOrNone(repo);
    filters::CheckpointFilter filter(std::move(repo), std::move(series), std::move(smudge));
    FdReader in(0);
    StdoutSink out;
    if (!kClean) return Annotate(filter.Smudge(*path, in, out), *path);
    KeepListings(filter);
    return Finished(filter, Annotate(filter.Clean(*path, in, out), *path));
  };
}

}  // namespace

Action SetupClean(CLI::App& sub) { return SingleFile<true>(sub); }
Action SetupSmudge(CLI::App& sub) { return SingleFile<false>(sub); }

Action SetupFilterProcess(CLI::App&) {
  return []() -> Status {
    SayHook();
    ZIPNN_ASSIGN_OR_RETURN(store::Store repo, OpenRepository());
    filters::SmudgeOptions smudge = SmudgeFor();
    std::unique_ptr<git::SeriesVersions> series = SeriesOrNone(repo);
    // Content read ahead of an answer (a large plain file passing through
    // smudge) waits beside the other scratch files, not in memory.
    const filters::ReadAhead read_ahead{repo.temp_dir};
    filters::CheckpointFilter filter(std::move(repo), std::move(series), std::move(smudge));
    KeepListings(filter);
    FdReader in(0);
    StdoutSink out;
    StderrSink errors;
    return Finished(filter, filters::ServeFilterProcess(in, out, filter, &errors, read_ahead));
  };
}

}  // namespace zipnn::cmd
