// git-zipnn: one binary, so that `git zipnn <command>` works once it is on
// PATH. Parses the command line with CLI11 (its exceptions stop here) and
// runs the chosen command; errors are one line on stderr.
#include <cstdio>
#include <string>

#include "cmd/command.h"

int main(int argc, char** argv) {
  using zipnn::cmd::Action;
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
