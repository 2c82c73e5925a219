// The command table of the git-zipnn binary. Each command lives in its own
// file and contributes one CommandSpec: its name, the one-line summary that
// `git zipnn --help` lists, and a function that declares its options on a
// CLI11 subcommand and returns the action to run once parsing succeeded.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/base/status.h"

namespace zipnn::cmd {

using Action = std::function<Status()>;

struct CommandSpec {
  const char* name;
  const char* summary;
  Action (*setup)(CLI::App& sub);
};

// In the order --help lists them.
const std::vector<CommandSpec>& Commands();

// The whole command line: parses it, runs the command, and returns the
// exit code (0 done, 1 the command failed, 2 a usage error).
int Main(int argc, char** argv);

// What to say when the first word names no command (which command was
// probably meant); nullopt when it names one. CLI11 alone would call it an
// unexpected argument.
std::optional<std::string> UnknownCommand(const std::string& word);

Action SetupAnalyze(CLI::App& sub);
Action SetupCat(CLI::App& sub);
Action SetupClean(CLI::App& sub);
Action SetupCommit(CLI::App& sub);
Action SetupCompress(CLI::App& sub);
Action SetupDu(CLI::App& sub);
Action SetupEnv(CLI::App& sub);
Action SetupFetch(CLI::App& sub);
Action SetupFilterProcess(CLI::App& sub);
Action SetupFsck(CLI::App& sub);
Action SetupGc(CLI::App& sub);
Action SetupInstall(CLI::App& sub);
Action SetupLog(CLI::App& sub);
Action SetupLsFiles(CLI::App& sub);
Action SetupMigrate(CLI::App& sub);
Action SetupRetain(CLI::App& sub);
Action SetupPrePush(CLI::App& sub);
Action SetupPreCommit(CLI::App& sub);
Action SetupWriteLeftOutside(CLI::App& sub);
Action SetupPull(CLI::App& sub);
Action SetupPush(CLI::App& sub);
Action SetupRepack(CLI::App& sub);
Action SetupRestore(CLI::App& sub);
Action SetupServeStore(CLI::App& sub);
Action SetupShow(CLI::App& sub);
Action SetupSmudge(CLI::App& sub);
Action SetupStatus(CLI::App& sub);
Action SetupTextconv(CLI::App& sub);
Action SetupTrack(CLI::App& sub);
Action SetupUninstall(CLI::App& sub);
Action SetupUntrack(CLI::App& sub);
Action SetupDecompress(CLI::App& sub);
Action SetupDiff(CLI::App& sub);
Action SetupInspect(CLI::App& sub);
Action SetupVersion(CLI::App& sub);

}  // namespace zipnn::cmd
