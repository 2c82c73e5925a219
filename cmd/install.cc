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
#include "cmd/hook.h"

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

}  // namespace


Action SetupInstall(CLI::App& sub) {
  auto level = std::make_shared<Level>();
  sub.add_flag("--local", level->local, "In this repository's .git/config");
  sub.add_flag("--global", level->global, "In your ~/.gitconfig (the default)");
  sub.add_flag("--system", level->system, "For every user of this machine");
  return [level]() -> Status {
    ZIPNN_ASSIGN_OR_RETURN(std::string flag, level->Flag());
    // Setting a key again to the same value changes nothing: idempotent.
    for (const ConfigEntry& e : kFilterConfig) {
      ZIPNN_ASSIGN_OR_RETURN(std::string ignored, git::GitOutput({"config", flag, e.key, e.value}));
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
    ZIPNN_ASSIGN_OR_RETURN(std::string flag, level->Flag());
    for (const ConfigEntry& e : kFilterConfig) {
      ZIPNN_ASSIGN_OR_RETURN(git::GitRun run, git::RunGit({"config", flag, "--unset-all", e.key}));
      if (run.exit_code != 0 && run.exit_code != 5) {  // 5: it was not set
        return Status(StatusCode::kGit, "git config " + flag + " --unset-all " + e.key + " failed: " + run.err);
      }
    }
    std::printf("git-zipnn filter uninstalled (%s)\n", flag.c_str() + 2);
    return UninstallHook();
  };
}

}  // namespace zipnn::cmd
