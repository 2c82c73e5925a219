// The git-zipnn command line: CLI11 parses it (its exceptions stop here),
// the chosen command runs, and its error is one line on stderr.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cmd/command.h"
#include "lib/base/closest.h"

namespace zipnn::cmd {

std::optional<std::string> UnknownCommand(const std::string& word) {
  std::vector<std::string> names;
  for (const auto& spec : Commands()) {
    if (word == spec.name) return std::nullopt;
    names.push_back(spec.name);
  }
  std::string message = "git-zipnn: '" + word + "' is not a git-zipnn command.";
  const std::vector<std::string> closest = ClosestWords(word, names);
  if (closest.empty()) return message + " See 'git zipnn --help'.";
  std::string list;
  for (size_t i = 0; i < closest.size(); ++i) list += (i == 0 ? "" : i + 1 == closest.size() ? " or " : ", ") + closest[i];
  return message + " Did you mean " + list + "?";
}

int Main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--list-commands") == 0) {
    // For the man page generator and shell completion: name TAB summary.
    for (const auto& spec : Commands()) std::printf("%s\t%s\n", spec.name, spec.summary);
    return 0;
  }
  if (argc >= 2 && argv[1][0] != '-') {
    if (std::optional<std::string> unknown = UnknownCommand(argv[1])) {
      std::fprintf(stderr, "%s\n", unknown->c_str());
      return 1;
    }
  }
  CLI::App app("git-zipnn: version control for model checkpoints", "git-zipnn");
  app.require_subcommand(1);
  app.footer("Run 'git zipnn <command> --help' for a command's options.");
  std::vector<std::pair<CLI::App*, Action>> actions;
  for (const auto& spec : Commands()) {
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
    Status status = action();
    if (!status.ok()) {
      std::fprintf(stderr, "error: %s\n", status.message().c_str());
      return 1;
    }
    return 0;
  }
  return 2;
}

}  // namespace zipnn::cmd
