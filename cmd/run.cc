// The git-zipnn command line: CLI11 parses it (its exceptions stop here),
// the chosen command runs, and its error is one line on stderr.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cmd/command.h"
#include "lib/base/closest.h"
#include "lib/base/file.h"
#include "lib/base/redact.h"

namespace zipnn::cmd {

std::optional<std::string> UnknownCommand(const std::string& word) {
  std::vector<std::string> names;
  for (const auto& spec : Commands()) {
    if (word == spec.name) return std::nullopt;
    names.push_back(spec.name);
  }
  std::string message = "git-zipnn: '" + word + "' is not a git-zipnn command.";
  // Git LFS's name for a command that has another name here.
  if (word == "prune") return message + " 'git zipnn gc' removes the objects no version needs (Git LFS's prune).";
  const std::vector<std::string> closest = ClosestWords(word, names);
  if (closest.empty()) return message + " See 'git zipnn --help'.";
  return message + " Did you mean " + Alternatives(closest) + "?";
}

namespace {

// The words of CLI11's "The following argument(s) was/were not expected:
// ..." (none for another error).
std::vector<std::string> UnexpectedWords(const std::string& error, size_t* listed_at = nullptr) {
  const std::string marker = "not expected: ";
  const size_t colon = error.find(marker);
  if (colon == std::string::npos) return {};
  if (listed_at != nullptr) *listed_at = colon + marker.size();
  std::vector<std::string> words;
  const std::string listed = error.substr(colon + marker.size());
  for (size_t at = 0; at < listed.size();) {
    const size_t space = std::min(listed.find(' ', at), listed.size());
    words.push_back(listed.substr(at, space - at));
    at = space + 1;
  }
  return words;
}

// For an unexpected word that looks like an option, the command's
// options closest to it.
std::optional<std::string> OptionHint(const CLI::App& sub, const std::string& error) {
  std::vector<std::string> names;
  for (const CLI::Option* o : sub.get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
  }
  std::string hint;
  for (const std::string& word : UnexpectedWords(error)) {
    // Long options only: a one-letter one is too short to guess from.
    if (word.rfind("--", 0) != 0) continue;
    const std::string name = word.substr(0, word.find('='));
    std::vector<std::string> closest = ClosestWords(name, names);
    // Or an option the word spells out (--revision for --rev).
    for (size_t i = 0; closest.empty() && i < names.size(); ++i) {
      if (names[i].size() >= 5 && name.rfind(names[i], 0) == 0) closest.push_back(names[i]);
    }
    if (closest.empty()) continue;
    hint += (hint.empty() ? "" : "\n") + ("git zipnn " + sub.get_name() + " has no option " + word + "; did you mean " +
                                          Alternatives(closest) + "?");
  }
  if (hint.empty()) return std::nullopt;
  return hint;
}

// CLI11 lists the words it did not expect last first ("not expected:
// three two one"); they read as the command line gave them.
std::string InCommandLineOrder(const std::string& error, const std::vector<const char*>& args) {
  size_t listed_at = 0;
  const std::vector<std::string> words = UnexpectedWords(error, &listed_at);
  std::multiset<std::string> unexpected(words.begin(), words.end());
  if (unexpected.empty()) return error;
  std::string ordered;
  for (size_t i = 1; i < args.size(); ++i) {
    const auto found = unexpected.find(args[i]);
    if (found == unexpected.end()) continue;
    ordered += (ordered.empty() ? "" : " ") + *found;
    unexpected.erase(found);
  }
  // A word not found as given (CLI11 split or changed it) keeps its list.
  if (!unexpected.empty()) return error;
  return error.substr(0, listed_at) + ordered;
}

}  // namespace

int Main(int argc, char** argv) {
  // Ctrl-C in a `git add` of a large checkpoint must not leave its copy in
  // scratch.
  RemoveScratchOnSignals();
  if (argc == 2 && std::strcmp(argv[1], "--list-commands") == 0) {
    // For the man page generator and shell completion: name TAB summary.
    for (const auto& spec : Commands()) std::printf("%s\t%s\n", spec.name, spec.summary);
    return 0;
  }
  // `git-zipnn --version`, as git and Git LFS take it: the version command.
  std::vector<const char*> args(argv, argv + argc);
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) args[1] = "version";
  // A `--` between the revisions and the paths, as git's commands take it
  // (`diff A B -- path`): dropped when no word after it could be read as
  // an option, since the command line parser takes no more positional
  // words after it once some came before. Kept where it protects a word.
  for (size_t i = 2; i < args.size(); ++i) {
    if (std::strcmp(args[i], "--") != 0) continue;
    if (std::none_of(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end(),
                     [](const char* word) { return word[0] == '-'; })) {
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
    }
    break;
  }
  if (argc >= 2 && args[1][0] != '-') {
    if (std::optional<std::string> unknown = UnknownCommand(args[1])) {
      std::fprintf(stderr, "%s\n", unknown->c_str());
      return 1;
    }
  }
  CLI::App app("git-zipnn: version control for model checkpoints", "git-zipnn");
  app.require_subcommand(1);
  app.footer("Run 'git zipnn <command> --help' for a command's options.");
  std::vector<std::pair<CLI::App*, Action>> actions;
  // When the first word names the command, only its options are declared:
  // declaring every command's took half of a `git zipnn version`'s time,
  // which every hook and filter start pays.
  const bool named = argc >= 2 && args[1][0] != '-';
  for (const auto& spec : Commands()) {
    if (named && std::strcmp(args[1], spec.name) != 0) continue;
    CLI::App* sub = app.add_subcommand(spec.name, spec.summary);
    actions.emplace_back(sub, spec.setup(*sub));
  }
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string message = InCommandLineOrder(e.what(), args);
    std::fprintf(stderr, "error: %s\n", message.c_str());
    CLI::App* sub = nullptr;
    for (auto& [s, action] : actions) {
      if (s->parsed()) sub = s;
    }
    if (sub != nullptr) {
      // An option the command does not have: the ones it has that are
      // closest (a typo of --all, --rev).
      if (std::optional<std::string> hint = OptionHint(*sub, message)) std::fprintf(stderr, "%s\n", hint->c_str());
      std::fprintf(stderr, "Run 'git zipnn %s --help' for its options.\n", sub->get_name().c_str());
    } else {
      std::fprintf(stderr, "Run 'git zipnn --help' for usage.\n");
    }
    return 2;
  }
  for (auto& [sub, action] : actions) {
    if (!sub->parsed()) continue;
    Status status;
    // An allocation refused (or a library's throw) ends the command with
    // its reason, not an abort.
    try {
      status = action();
    } catch (const std::bad_alloc&) {
      status = Status(StatusCode::kIoError,
                      "out of memory: this machine refused an allocation (fewer threads need less: `-T 1` where the "
                      "command takes it, `threads: 1` in .zipnn.yaml otherwise)");
    } catch (const std::exception& e) {
      status = Status(StatusCode::kIoError, std::string("unexpected failure: ") + e.what());
    }
    if (!status.ok()) {
      std::fprintf(stderr, "error: %s\n", RedactSecrets(status.message()).c_str());
      return 1;
    }
    return 0;
  }
  return 2;
}

}  // namespace zipnn::cmd
