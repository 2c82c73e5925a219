// git-zipnn: one binary, so that `git zipnn <command>` works once it is on
// PATH. Parses the command line with CLI11 (its exceptions stop here) and
// runs the chosen command; errors are one line on stderr.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cmd/command.h"
#include "lib/base/closest.h"

namespace {

// A first word that names no command: CLI11 would call it an unexpected
// argument; say what it is, and which command was probably meant.
bool RefuseUnknownCommand(const char* word) {
  std::vector<std::string> names;
  for (const auto& spec : zipnn::cmd::Commands()) {
    if (word == std::string(spec.name)) return false;
    names.push_back(spec.name);
  }
  std::fprintf(stderr, "git-zipnn: '%s' is not a git-zipnn command.", word);
  const std::vector<std::string> closest = zipnn::ClosestWords(word, names);
  if (closest.empty()) {
    std::fprintf(stderr, " See 'git zipnn --help'.\n");
    return true;
  }
  std::string list;
  for (size_t i = 0; i < closest.size(); ++i) list += (i == 0 ? "" : i + 1 == closest.size() ? " or " : ", ") + closest[i];
  std::fprintf(stderr, " Did you mean %s?\n", list.c_str());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using zipnn::cmd::Action;
  if (argc == 2 && std::strcmp(argv[1], "--list-commands") == 0) {
    // For the man page generator and shell completion: name TAB summary.
    for (const auto& spec : zipnn::cmd::Commands()) std::printf("%s\t%s\n", spec.name, spec.summary);
    return 0;
  }
  if (argc >= 2 && argv[1][0] != '-' && RefuseUnknownCommand(argv[1])) return 1;
  CLI::App app("git-zipnn: version control for model checkpoints", "git-zipnn");
  app.require_subcommand(1);
  app.footer("Run 'git zipnn <command> --help' for a command's options.");
  std::vector<std::pair<CLI::App*, Action>> actions;
  for (const auto& spec : zipnn::cmd::Commands()) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.summary);
    actions.emplace_back(sub, spec.setup(*sub));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    std::fprintf(stderr, "Run 'git zipnn --help' for usage.\n");
    return 2;
  }
  for (auto& [sub, action] : actions) {
    if (!sub->parsed()) continue;
    zipnn::Status status = action();
    if (!status.ok()) {
      std::fprintf(stderr, "error: %s\n", status.message().c_str());
      return 1;
    }
    return 0;
  }
  return 2;
}
