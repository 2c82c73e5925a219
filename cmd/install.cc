// git zipnn install: the filter configuration, at the chosen level, and
// inside a repository its pre-push hook.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cmd/command.h"
#include "cmd/util.h"
#include "lib/base/file.h"
#include "lib/git/git.h"

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

// The pre-push hook: git-zipnn sends the objects first, then the hook that
// was there before install (kept beside it) runs with the same input.
constexpr char kHookMarker[] = "# git-zipnn pre-push hook";
constexpr char kChained[] = "pre-push.before-zipnn";
constexpr char kHook[] = R"hook(#!/bin/sh
# git-zipnn pre-push hook (written by `git zipnn install`).
# Sends the checkpoint objects that the pushed commits need to the
# remote's object store before git sends the pointers, then runs the hook
# that was here before (pre-push.before-zipnn), if there was one.
command -v git-zipnn >/dev/null 2>&1 || {
  echo >&2 "git-zipnn is not on PATH; it is needed to push checkpoints (docs/remotes.md)"
  exit 2
}
input=$(mktemp) || exit 1
trap 'rm -f "$input"' EXIT
cat >"$input"
git-zipnn pre-push "$@" <"$input" || exit $?
chained="$(dirname "$0")/pre-push.before-zipnn"
if [ -x "$chained" ]; then
  "$chained" "$@" <"$input" || exit $?
fi
)hook";

bool IsOurHook(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return false;
  return std::string(text->begin(), text->end()).find(kHookMarker) != std::string::npos;
}

// The repository's hooks folder (core.hooksPath respected), or nothing
// outside a repository.
std::optional<std::string> HooksFolder() {
  auto dir = git::GitOutput({"rev-parse", "--path-format=absolute", "--git-path", "hooks"});
  if (!dir.ok()) return std::nullopt;
  return *dir;
}

Status InstallHook() {
  std::optional<std::string> dir = HooksFolder();
  if (!dir) return OkStatus();
  RETURN_IF_ERROR(MakeDirectories(*dir));
  const std::string hook = *dir + "/pre-push", chained = *dir + "/" + kChained;
  if (FileExists(hook) && !IsOurHook(hook)) {
    if (FileExists(chained)) {
      return InvalidArgument(hook + " is not git-zipnn's and " + chained +
                             " exists too; merge them by hand, then run install again");
    }
    if (::rename(hook.c_str(), chained.c_str()) != 0) return IoError(hook + ": cannot move it aside");
    std::printf("kept the pre-push hook that was there as %s; it runs after git-zipnn's\n", chained.c_str());
  }
  ASSIGN_OR_RETURN(AtomicFile out, AtomicFile::Create(hook, /*overwrite=*/true));
  RETURN_IF_ERROR(out.Append(kHook, sizeof kHook - 1));
  RETURN_IF_ERROR(out.Commit());
  if (::chmod(hook.c_str(), 0755) != 0) return IoError(hook + ": cannot make it executable");
  std::printf("pre-push hook installed in %s\n", dir->c_str());
  return OkStatus();
}

Status UninstallHook() {
  std::optional<std::string> dir = HooksFolder();
  if (!dir) return OkStatus();
  const std::string hook = *dir + "/pre-push", chained = *dir + "/" + kChained;
  if (!IsOurHook(hook)) return OkStatus();
  if (::unlink(hook.c_str()) != 0) return IoError(hook + ": cannot remove it");
  if (FileExists(chained) && ::rename(chained.c_str(), hook.c_str()) != 0) {
    return IoError(chained + ": cannot put it back as " + hook);
  }
  std::printf("pre-push hook removed from %s\n", dir->c_str());
  return OkStatus();
}

}  // namespace


Action SetupInstall(CLI::App& sub) {
  auto level = std::make_shared<Level>();
  sub.add_flag("--local", level->local, "In this repository's .git/config");
  sub.add_flag("--global", level->global, "In your ~/.gitconfig (the default)");
  sub.add_flag("--system", level->system, "For every user of this machine");
  return [level]() -> Status {
    ASSIGN_OR_RETURN(std::string flag, level->Flag());
    // Setting a key again to the same value changes nothing: idempotent.
    for (const ConfigEntry& e : kFilterConfig) {
      ASSIGN_OR_RETURN(std::string ignored, git::GitOutput({"config", flag, e.key, e.value}));
      (void)ignored;
    }
    std::printf("git-zipnn filter installed (%s)\n", flag.c_str() + 2);
    return InstallHook();  // inside a repository
  };
}

Action SetupUninstall(CLI::App& sub) {
  auto level = std::make_shared<Level>();
  sub.add_flag("--local", level->local, "From this repository's .git/config");
  sub.add_flag("--global", level->global, "From your ~/.gitconfig (the default)");
  sub.add_flag("--system", level->system, "From the machine's configuration");
  return [level]() -> Status {
    ASSIGN_OR_RETURN(std::string flag, level->Flag());
    for (const ConfigEntry& e : kFilterConfig) {
      ASSIGN_OR_RETURN(git::GitRun run, git::RunGit({"config", flag, "--unset-all", e.key}));
      if (run.exit_code != 0 && run.exit_code != 5) {  // 5: it was not set
        return Status(StatusCode::kGit, "git config " + flag + " --unset-all " + e.key + " failed: " + run.err);
      }
    }
    std::printf("git-zipnn filter uninstalled (%s)\n", flag.c_str() + 2);
    return UninstallHook();
  };
}

}  // namespace zipnn::cmd
