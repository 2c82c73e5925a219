// git zipnn install: the filter configuration, at the chosen level, and
// inside a repository its pre-push hook.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cmd/command.h"
#include "lib/ops/context.h"
#include "lib/ops/setup.h"
#include "lib/ops/status.h"
#include "lib/ops/workspace.h"
#include "lib/base/strings.h"
#include "lib/store/pointer.h"

namespace zipnn::cmd {

namespace {

struct Level {
  bool local = false, global = false, system = false;
  // git config's option for the level; --global unless told otherwise.
  Result<std::string> Flag() const {
    if (local + global + system > 1) return InvalidArgument("choose one of --local, --global, --system");
    return std::string(local ? "--local" : system ? "--system" : "--global");
  }
};

// Inside a work tree: how many tracked files in it are pointers still (a
// clone made before install, or with smudge skipped); 0 elsewhere.
size_t PointersInWorkTree() {
  auto top = ops::TopLevel();
  auto paths = ops::TrackedPaths();
  if (!top.ok() || !paths.ok()) return 0;
  size_t pointers = 0;
  for (const std::string& path : *paths) {
    auto pointer = store::PointerInFile(*top + "/" + path);
    if (pointer.ok() && *pointer) ++pointers;
  }
  return pointers;
}

Status Say(const Result<std::vector<std::string>>& said) {
  if (!said.ok()) return said.status();
  for (const std::string& line : *said) std::printf("%s\n", line.c_str());
  return OkStatus();
}

}  // namespace

Action SetupInstall(CLI::App& sub) {
  auto level = std::make_shared<Level>();
  sub.add_flag("--local", level->local, "In this repository's .git/config");
  sub.add_flag("--global", level->global, "In your ~/.gitconfig (the default)");
  sub.add_flag("--system", level->system, "For every user of this machine");
  return [level]() -> Status {
    ZIPNN_ASSIGN_OR_RETURN(std::string flag, level->Flag());
    ZIPNN_RETURN_IF_ERROR(ops::InstallFilter(flag));
    std::printf("git-zipnn filter installed (%s)\n", flag.c_str() + 2);
    ZIPNN_RETURN_IF_ERROR(Say(ops::InstallHook()));  // inside a repository
    if (const size_t pointers = PointersInWorkTree(); pointers > 0) {
      std::printf("%s in this work tree %s (checked out before the filter was installed): run `git zipnn pull` to "
                  "write the checkpoints\n",
                  Counted(pointers, "tracked file").c_str(), pointers == 1 ? "is still a pointer" : "are still pointers");
    }
    // Files added before it (`track` first): git holds them whole until
    // they are added again through the filter.
    ops::Context context;
    if (const auto whole = ops::HeldWholeInIndex(context); whole.ok() && !whole->empty()) {
      std::printf(
          "%s of tracked patterns %s whole in git (added before the filter was installed): `git add "
          "--renormalize .` and a commit store %s as checkpoints\n",
          Counted(whole->size(), "file").c_str(), whole->size() == 1 ? "is" : "are",
          whole->size() == 1 ? "it" : "them");
    }
    return OkStatus();
  };
}

Action SetupUninstall(CLI::App& sub) {
  auto level = std::make_shared<Level>();
  sub.add_flag("--local", level->local, "From this repository's .git/config");
  sub.add_flag("--global", level->global, "From your ~/.gitconfig (the default)");
  sub.add_flag("--system", level->system, "From the machine's configuration");
  return [level]() -> Status {
    ZIPNN_ASSIGN_OR_RETURN(std::string flag, level->Flag());
    ZIPNN_RETURN_IF_ERROR(ops::UninstallFilter(flag));
    std::printf("git-zipnn filter uninstalled (%s)\n", flag.c_str() + 2);
    // As Git LFS's uninstall: your configuration unless told otherwise,
    // which reaches every repository of yours; said where it surprises.
    if (flag == "--global" && ops::TopLevel().ok()) {
      std::printf("note: that was your global configuration: no repository of yours runs the filter now (unless "
                  "installed there with --local), so `git add` stores tracked checkpoints whole in git and a checkout "
                  "writes pointers; `git zipnn install` puts it back\n");
    }
    return Say(ops::UninstallHook());
  };
}

}  // namespace zipnn::cmd
