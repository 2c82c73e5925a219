// git zipnn clean / smudge / filter-process: what git runs through the
// filter configuration. Single-file clean and smudge work on stdin and
// stdout; filter-process serves git's long-running protocol. Errors go to
// stderr; a failing file makes git report it, never a crash.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "cmd/command.h"
#include "cmd/util.h"
#include "filters/checkpoint_filter.h"
#include "filters/pkt_line.h"
#include "lib/base/file.h"
#include "lib/ops/fetch.h"
#include "lib/ops/filter_start.h"

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

filters::SmudgeOptions SmudgeFor(const ops::FilterStart& start) {
  filters::SmudgeOptions options;
  options.leave_pointers = EnvFlag("GIT_ZIPNN_SKIP_SMUDGE");
  options.keep_pointer_on_error = EnvFlag("GIT_ZIPNN_SKIP_SMUDGE_ERRORS") || start.skip_smudge_errors;
  options.fetch_missing = true;
  options.outside_above = start.checkout_outside_above;
  options.outside_list = [] { return ops::LeftOutsideList(); };
  return options;
}

// What a filter starts from (lib/ops/filter_start.h), with what it has to
// say on stderr.
Result<ops::FilterStart> StartFilter() {
  ops::Context context;
  ZIPNN_ASSIGN_OR_RETURN(ops::FilterStart start, ops::StartFilter(context, [](const std::string& said) {
                           std::fprintf(stderr, "git-zipnn: %s\n", said.c_str());
                         }));
  // Without the series every version is stored standalone; that must not
  // stop git.
  if (!start.series_error.ok()) {
    std::fprintf(stderr, "git-zipnn: cannot read this repository's series (%s); checkpoints are stored standalone\n",
                 start.series_error.message().c_str());
  }
  return start;
}

// Clean lists what it stores for git's textconv cache when git keeps one
// (lib/git/textconv_cache.h).
// The parent a caller named for what this process stores (the Python
// module's commit_checkpoint(parent=...)), from the top of the work tree.
void NameParent(filters::CheckpointFilter& filter) {
  const char* parent = std::getenv("GIT_ZIPNN_PARENT");
  if (parent != nullptr && *parent != '\0') filter.NameParent(parent);
}

void KeepListings(filters::CheckpointFilter& filter, const ops::FilterStart& start) {
  if (auto cache = ops::ListingsCache(start)) filter.KeepListings(std::move(*cache));
}

// What a checkout that could not reach the remote left to do, once it
// ends (CheckpointFilter::left_unfetched).
void SayUnfetched(const filters::CheckpointFilter& filter) {
  const size_t left = filter.left_unfetched();
  if (left == 0) return;
  const bool one = left == 1;
  std::fprintf(stderr,
               "git-zipnn: %zu checkpoint%s left as %s pointer%s because the remote could not give %s objects "
               "(see above); once it can, `git zipnn pull` writes %s (`git zipnn status` lists %s)\n",
               left, one ? " is" : "s are", one ? "its" : "their", one ? "" : "s", one ? "its" : "their",
               one ? "it" : "them", one ? "it" : "them");
}

// The listings go to git's cache as the process ends; failing to write
// them costs a later `git log -p` time, nothing else. A checkout that left
// pointers (GIT_ZIPNN_SKIP_SMUDGE) fetched no object, and with it no
// listings (lib/git/listings.h): it takes them now, so that `git log -p`
// in such a clone restores nothing either.
Status Finished(filters::CheckpointFilter& filter, Status served) {
  const Status written = filter.Finish();
  if (!written.ok()) {
    std::fprintf(stderr, "git-zipnn: warning: the tensor listings for git log -p were not kept: %s\n",
                 written.message().c_str());
  }
  if (filter.pointers_left() > 0) {
    ops::TakeListingsFromDefaultRemote();
  }
  SayUnfetched(filter);
  return served;
}

// The pipes to and from git hold 64 KiB, a packet, unless asked for more:
// each packet of a checkpoint would wait for the other side to be
// scheduled. Holding a pipe's worth of packets, each side runs on while the
// other catches up. Not pipes (a test's files), or a limit below the size
// asked: they stay as they are.
void WidenPipes() {
  for (int fd : {0, 1}) (void)::fcntl(fd, F_SETPIPE_SZ, static_cast<int>(filters::PktLineReader::kReadAhead));
}

template <bool kClean>
Action SingleFile(CLI::App& sub) {
  auto path = std::make_shared<std::string>();
  sub.add_option("path", *path, "The file's path in the work tree (git's %f)")->required();
  return [path]() -> Status {
    ZIPNN_ASSIGN_OR_RETURN(ops::FilterStart start, StartFilter());
    filters::SmudgeOptions smudge = SmudgeFor(start);
    filters::CheckpointFilter filter(std::move(start.store), std::move(start.series), std::move(smudge));
    FdReader in(0);
    StdoutSink out;
    if (!kClean) {
      const Status smudged = filter.Smudge(*path, in, out);
      SayUnfetched(filter);
      return Annotate(smudged, *path);
    }
    KeepListings(filter, start);
    NameParent(filter);
    return Finished(filter, Annotate(filter.Clean(*path, in, out), *path));
  };
}

}  // namespace

Action SetupClean(CLI::App& sub) { return SingleFile<true>(sub); }
Action SetupSmudge(CLI::App& sub) { return SingleFile<false>(sub); }

Action SetupFilterProcess(CLI::App&) {
  return []() -> Status {
    ZIPNN_ASSIGN_OR_RETURN(ops::FilterStart start, StartFilter());
    filters::SmudgeOptions smudge = SmudgeFor(start);
    // Content read ahead of an answer (a large plain file passing through
    // smudge) waits beside the other scratch files, not in memory.
    const filters::ReadAhead read_ahead{start.store.temp_dir};
    filters::CheckpointFilter filter(std::move(start.store), std::move(start.series), std::move(smudge));
    KeepListings(filter, start);
    NameParent(filter);
    WidenPipes();
    FdReader in(0);
    StdoutSink out;
    StderrSink errors;
    return Finished(filter, filters::ServeFilterProcess(in, out, filter, &errors, read_ahead));
  };
}

}  // namespace zipnn::cmd
