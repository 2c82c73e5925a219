// git zipnn restore: one version of a tracked checkpoint, written straight
// to a file (not through git, which would hold it all in memory),
// verified against its content id.
#include <sys/stat.h>

#include <cstdio>
#include <optional>
#include <memory>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/access/versions.h"
#include "lib/base/file.h"
#include "lib/remote/transfer.h"

namespace zipnn::cmd {

namespace {

struct RestoreArgs {
  std::string path;
  std::string rev = "HEAD";
  std::string output;
  bool force = false;
  bool approximate = false;
  int threads = 0;
};

// The pointer the index holds for `path`, if any.
std::optional<store::Pointer> Staged(const std::string& path) {
  auto staged = ops::PointerAt(":./" + path);
  return staged.ok() ? std::optional<store::Pointer>(*staged) : std::nullopt;
}

// Refuses to write over bytes nobody else holds: with -o, any existing
// file; in the work tree, a file that is neither a pointer nor the
// checkpoint the index (or this restore) names.
Status CheckOverwrite(const RestoreArgs& a, const store::Pointer& restoring,
                      const std::optional<store::Pointer>& staged) {
  const std::string& target = a.output.empty() ? a.path : a.output;
  struct stat st;
  if (a.force || ::stat(target.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return OkStatus();
  if (!a.output.empty()) {
    return InvalidArgument(target + " exists; restore does not write over it (pass --force to replace it)");
  }
  ZIPNN_ASSIGN_OR_RETURN(std::optional<store::Pointer> pointer, store::PointerInFile(target));
  if (pointer) return OkStatus();  // a checkpoint not restored yet
  ZIPNN_ASSIGN_OR_RETURN(ReadFile file, ReadFile::Open(target));
  ZIPNN_ASSIGN_OR_RETURN(ContentId held, HashSource(file));
  if (held == restoring.id || (staged && held == staged->id)) return OkStatus();
  return InvalidArgument(target + " is not the version in the index, and may be work not saved anywhere; restoring " +
                         "would replace it. Commit or stash it first, restore to another file with -o, or pass " +
                         "--force");
}

Status RunRestore(const RestoreArgs& a) {
  ops::Context context(ops::Context::Options{a.threads});
  ZIPNN_ASSIGN_OR_RETURN(store::Store * opened, context.Store());
  store::Store& store = *opened;
  // "./path" makes git resolve the path from the current folder.
  ZIPNN_ASSIGN_OR_RETURN(store::Pointer pointer, ops::PointerAt(a.rev + ":./" + a.path));
  access::Options options;
  options.approximate = a.approximate;
  const access::Versions versions(store, options);
  if (a.approximate) {
    // Approximate bytes never take the place of the committed file.
    if (a.output.empty()) {
      return InvalidArgument("--approximate writes a version's approximate bytes, which are not the committed file: "
                             "name another file with -o (such as -o " + a.path + ".approx)");
    }
    ZIPNN_RETURN_IF_ERROR(ops::RefuseTrackedOutput(a.output));
  }
  const std::optional<store::Pointer> staged = a.output.empty() ? Staged(a.path) : std::nullopt;
  ZIPNN_RETURN_IF_ERROR(CheckOverwrite(a, pointer, staged));
  const std::string target = a.output.empty() ? a.path : a.output;
  // A tracked file's folder may be gone (a trainer removing old saves);
  // git would make it again on checkout, and so does restore.
  if (a.output.empty() && a.path.find('/') != std::string::npos) {
    ZIPNN_RETURN_IF_ERROR(MakeDirectories(a.path.substr(0, a.path.rfind('/'))));
  }
  // A work-tree file is written out of git's sight until it is whole.
  ZIPNN_ASSIGN_OR_RETURN(AtomicFile out, a.output.empty() ? AtomicFile::CreateInWorkTree(target, store.temp_dir)
                                                          : AtomicFile::Create(target, /*overwrite=*/true));
  Status restored;
  {
    Progress progress("git-zipnn: " + target, pointer.size);  // its line is cleared when done
    progress.Update("restoring", 0);
    ProgressSink sink(out, progress, "restoring");
    restored = versions.Write(pointer, a.path, sink);
  }
  ZIPNN_RETURN_IF_ERROR(restored);
  ZIPNN_RETURN_IF_ERROR(out.Commit());  // only verified bytes reach the name
  if (a.approximate) ZIPNN_RETURN_IF_ERROR(SayIfApproximate(versions, pointer, a.path));
  // The index never takes other content; when the restored bytes are
  // what it names, its record of the file is brought up to date so that
  // git status need not read the file again.
  if (staged && staged->id == pointer.id) ops::RestageUnchanged({a.path});
  auto retained = versions.Retention(pointer.id);
  const bool approximate = a.approximate && retained.ok() && *retained && !(*retained)->dropped;
  std::printf("%s: restored %s%s (%llu bytes) from %s\n", target.c_str(), approximate ? "the approximate version of " : "",
              pointer.id.Hex().c_str(), static_cast<unsigned long long>(pointer.size), a.rev.c_str());
  return OkStatus();
}

}  // namespace

Action SetupRestore(CLI::App& sub) {
  auto a = std::make_shared<RestoreArgs>();
  sub.add_option("path", a->path, "Tracked checkpoint, relative to the current folder")->required();
  sub.add_option("--rev", a->rev, "Revision to take it from (default HEAD)");
  sub.add_option("-o,--output", a->output, "Write here instead of replacing the work-tree file");
  sub.add_flag("-f,--force", a->force,
               "Write over a work-tree file with changes git does not hold, or an existing -o file");
  sub.add_flag("--approximate", a->approximate,
               "For a version retention thinned: write its approximate values to the -o file (the error bound is "
               "printed)");
  AddThreadsOption(sub, a->threads);
  return [a] { return RunRestore(*a); };
}

}  // namespace zipnn::cmd
