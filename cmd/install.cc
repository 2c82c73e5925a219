// git zipnn install: the filter configuration, at the chosen level, and
// inside a repository its pre-push hook.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cmd/command.h"
#include "lib/git/hook.h"
#include "lib/git/setup.h"

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
    ZIPNN_RETURN_IF_ERROR(git::InstallFilter(flag));
    std::printf("git-zipnn filter installed (%s)\n", flag.c_str() + 2);
    return Say(git::InstallHook());  // inside a repository
  };
}

Action SetupUninstall(CLI::App& sub) {
  auto level = std::make_shared<Level>();
  sub.add_flag("--local", level->local, "From this repository's .git/config");
  sub.add_flag("--global", level->global, "From your ~/.gitconfig (the default)");
  sub.add_flag("--system", level->system, "From the machine's configuration");
  return [level]() -> Status {
    ZIPNN_ASSIGN_OR_RETURN(std::string flag, level->Flag());
    ZIPNN_RETURN_IF_ERROR(git::UninstallFilter(flag));
    std::printf("git-zipnn filter uninstalled (%s)\n", flag.c_str() + 2);
    return Say(git::UninstallHook());
  };
}

}  // namespace zipnn::cmd
