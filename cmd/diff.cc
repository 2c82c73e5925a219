// git zipnn diff and git zipnn textconv: what changed between two
// checkpoints, tensor by tensor. `install` registers both with git as the
// "zipnn" diff driver (.gitattributes `diff=zipnn`): `git diff` runs
// `diff --driver` (an external diff command, which sees both sides), and
// `git log -p` and `git show`, which run no external commands unless
// told to, diff the textconv listings of the two sides instead.
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/strings.h"
#include "lib/analyze/report.h"
#include "lib/analyze/scan.h"
#include "lib/formats/detect.h"
#include "lib/access/versions.h"

namespace zipnn::cmd {

namespace {

struct DiffArgs {
  std::vector<std::string> args;
  bool driver = false;
  bool all = false;
  int threads = 0;
};

using Opened = formats::Checkpoint;

// "<rev>:<path>" unless a file of that name exists.
bool IsRevisionSpec(const std::string& arg) { return arg.find(':') != std::string::npos && !FileExists(arg); }

Result<Opened> Resolve(ops::Context& context, const std::string& arg) {
  if (!IsRevisionSpec(arg)) return ops::WithLayout(ops::CheckpointInFile(context, arg));
  ZIPNN_ASSIGN_OR_RETURN(store::Store * store, context.Store());
  const size_t colon = arg.find(':');
  return ops::WithLayout(
      access::Versions(*store, access::Copies::kAll).OpenAt(arg.substr(0, colon), "./" + arg.substr(colon + 1)));
}

std::string Describe(const Opened& o) {
  return HumanBytes(o.file().size()) + ", " + formats::FormatName(o.layout().format) + ", " +
         Counted(o.layout().tensors.size(), "tensor");
}

Status PrintChanges(const Opened& before, const Opened& after, const DiffArgs& a) {
  ThreadPool pool(a.threads > 0 ? a.threads : ThreadPool::DefaultThreads());
  ZIPNN_ASSIGN_OR_RETURN(analyze::ScanResult scan, analyze::ScanTensors(after.file(), after.layout(), &before.file(),
                                                                        &before.layout(), nullptr, false, pool));
  std::fputs(analyze::DiffText(scan.tensors, a.all).c_str(), stdout);
  return OkStatus();
}

// git's external diff interface: path old-file old-hex old-mode new-file
// new-hex new-mode; a side that does not exist is /dev/null.
Status RunDriver(ops::Context& context, const DiffArgs& a) {
  // `git diff | head` closes the pipe early: the rest of the output is not
  // wanted, which is no failure of the diff (git would otherwise say the
  // external diff died).
  std::signal(SIGPIPE, SIG_IGN);
  if (a.args.size() == 1) {
    std::printf("* Unmerged path %s\n", a.args[0].c_str());
    return OkStatus();
  }
  if (a.args.size() != 7) return InvalidArgument("--driver takes the 7 arguments git passes to a diff command");
  const std::string& path = a.args[0];
  std::printf("diff --git-zipnn a/%s b/%s\n", path.c_str(), path.c_str());
  std::optional<Opened> sides[2];
  for (int s = 0; s < 2; ++s) {
    const std::string& file = a.args[1 + 3 * s];
    if (file == "/dev/null") continue;
    Result<Opened> o = ops::WithLayout(ops::CheckpointInFile(context, file));
    if (!o.ok()) {
      // Shown in the diff rather than stopping git at this file.
      std::printf("%s side cannot be read: %s\n", s == 0 ? "old" : "new", o.status().message().c_str());
      return OkStatus();
    }
    sides[s].emplace(std::move(*o));
  }
  if (!sides[0] && sides[1]) {
    if (std::optional<ops::PreviousVersion> previous = ops::PreviousInSeries(context, path)) {
      std::printf("new file, compared with the version before it in its series: %s\n", previous->version.path.c_str());
      std::printf("--- a/%s (%s)\n+++ b/%s (%s)\n", previous->version.path.c_str(),
                  Describe(previous->checkpoint).c_str(), path.c_str(), Describe(*sides[1]).c_str());
      return PrintChanges(previous->checkpoint, *sides[1], a);
    }
  }
  std::printf("--- %s\n+++ %s\n", sides[0] ? ("a/" + path + " (" + Describe(*sides[0]) + ")").c_str() : "/dev/null",
              sides[1] ? ("b/" + path + " (" + Describe(*sides[1]) + ")").c_str() : "/dev/null");
  if (!sides[0] || !sides[1]) return OkStatus();
  return PrintChanges(*sides[0], *sides[1], a);
}

Status RunDiff(const DiffArgs& a) {
  ops::Context context;
  if (a.driver) return RunDriver(context, a);
  std::optional<Opened> sides[2];
  if (a.args.size() == 3) {
    ZIPNN_ASSIGN_OR_RETURN(store::Store * store, context.Store());
    for (int s = 0; s < 2; ++s) {
      ZIPNN_ASSIGN_OR_RETURN(
          Opened o, ops::WithLayout(access::Versions(*store, access::Copies::kAll).OpenAt(a.args[s], "./" + a.args[2])));
      sides[s].emplace(std::move(o));
    }
  } else if (a.args.size() == 2) {
    for (int s = 0; s < 2; ++s) {
      ZIPNN_ASSIGN_OR_RETURN(Opened o, Resolve(context, a.args[s]));
      sides[s].emplace(std::move(o));
    }
  } else {
    return InvalidArgument("give two checkpoints (files or <rev>:<path>), or two revisions and a path");
  }
  const std::string suffix = a.args.size() == 3 ? ":" + a.args[2] : "";
  std::printf("--- %s (%s)\n+++ %s (%s)\n", (a.args[0] + suffix).c_str(), Describe(*sides[0]).c_str(),
              (a.args[1] + suffix).c_str(), Describe(*sides[1]).c_str());
  return PrintChanges(*sides[0], *sides[1], a);
}

// One line per tensor, stable for unchanged tensors, so that a text diff
// of two listings shows exactly the tensors that changed.
Status RunTextconv(const std::string& file, int threads) {
  ops::Context context;
  auto checkpoint = ops::CheckpointInFile(context, file);
  if (!checkpoint.ok()) {
    std::fputs(ops::ListingFailure(checkpoint.status().message()).c_str(), stdout);
    return OkStatus();
  }
  ZIPNN_ASSIGN_OR_RETURN(Opened o, ops::WithLayout(std::move(*checkpoint)));
  // The version a pointer names was checked against its id as it was
  // read; only a file given as it is must be hashed.
  ZIPNN_ASSIGN_OR_RETURN(std::optional<store::Pointer> pointer, store::PointerInFile(file));
  ZIPNN_ASSIGN_OR_RETURN(const ContentId id, pointer ? Result<ContentId>(pointer->id) : HashSource(o.file()));
  ThreadPool pool(threads > 0 ? threads : ThreadPool::DefaultThreads());
  ZIPNN_ASSIGN_OR_RETURN(const std::string listing, analyze::TextconvListing(id, o.file(), o.layout(), pool));
  std::fputs(listing.c_str(), stdout);
  return OkStatus();
}

}  // namespace

Action SetupDiff(CLI::App& sub) {
  auto a = std::make_shared<DiffArgs>();
  sub.add_option("checkpoints", a->args,
                 "Two checkpoints (files, or <rev>:<path>), or two revisions and a tracked path");
  sub.add_flag("--all", a->all, "List unchanged tensors too");
  sub.add_flag("--driver", a->driver, "Run as git's diff command (diff.zipnn.command; git passes 7 arguments)");
  AddThreadsOption(sub, a->threads);
  return [a] { return RunDiff(*a); };
}

Action SetupTextconv(CLI::App& sub) {
  auto file = std::make_shared<std::string>();
  auto threads = std::make_shared<int>(0);
  sub.add_option("file", *file, "A checkpoint, or a git-zipnn pointer to one")->required();
  AddThreadsOption(sub, *threads);
  return [file, threads] { return RunTextconv(*file, *threads); };
}

}  // namespace zipnn::cmd
