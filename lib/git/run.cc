#include "lib/git/run.h"

#include <utility>

namespace zipnn::git {

namespace {

// `git <args>` run through env(1) when `env` (NAME=value) is not empty.
Result<GitRun> RunGitIn(const std::string& env, const std::vector<std::string>& args, const std::string& cwd,
                        const std::string& input) {
  std::vector<std::string> argv;
  if (!env.empty()) argv = {"env", env};
  argv.push_back("git");
  if (!cwd.empty()) argv.insert(argv.end(), {"-C", cwd});
  argv.insert(argv.end(), args.begin(), args.end());
  Result<GitRun> run = RunCapture(argv, input);
  // A git that cannot be started is a git failure: callers tell it apart
  // from a read error by its code (a missing pointer is no reason to stop,
  // a missing git is).
  if (!run.ok()) return Status(StatusCode::kGit, run.status().message());
  return run;
}

// The whole standard output of `git <args>`; a non-zero exit is a Git
// error quoting git's message.
Result<std::string> Succeeded(const std::vector<std::string>& args, const std::string& cwd,
                              const std::string& env = "") {
  ZIPNN_ASSIGN_OR_RETURN(GitRun run, RunGitIn(env, args, cwd, ""));
  if (run.exit_code != 0) {
    std::string message = run.err;
    while (!message.empty() && message.back() == '\n') message.pop_back();
    std::string command = "git";
    for (const std::string& a : args) command += " " + a;
    return Status(StatusCode::kGit, command + " failed" + (message.empty() ? "" : ": " + message));
  }
  return std::move(run.out);
}

}  // namespace

Result<GitRun> RunGit(const std::vector<std::string>& args, const std::string& cwd, const std::string& input) {
  return RunGitIn("", args, cwd, input);
}

Result<GitRun> RunGitWith(const std::string& env, const std::vector<std::string>& args, const std::string& cwd,
                          const std::string& input) {
  return RunGitIn(env, args, cwd, input);
}

Result<std::unique_ptr<Process>> StartGit(const std::vector<std::string>& args, const std::string& cwd) {
  std::vector<std::string> argv = {"git"};
  if (!cwd.empty()) argv.insert(argv.end(), {"-C", cwd});
  argv.insert(argv.end(), args.begin(), args.end());
  auto started = Process::Start(argv);
  if (!started.ok()) return Status(StatusCode::kGit, started.status().message());
  return started;
}

Result<std::string> GitOutput(const std::vector<std::string>& args, const std::string& cwd) {
  ZIPNN_ASSIGN_OR_RETURN(std::string out, Succeeded(args, cwd));
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

Result<std::string> GitOutputOnIndex(const std::string& index, const std::vector<std::string>& args) {
  return Succeeded(args, "", "GIT_INDEX_FILE=" + index);
}

Result<std::vector<std::string>> GitPaths(const std::vector<std::string>& args, const std::string& cwd) {
  ZIPNN_ASSIGN_OR_RETURN(std::string out, Succeeded(args, cwd));
  std::vector<std::string> paths;
  for (size_t at = 0; at < out.size();) {
    size_t end = out.find('\0', at);
    if (end == std::string::npos) end = out.size();  // git ends the last one too; be lenient
    if (end > at) paths.push_back(out.substr(at, end - at));
    at = end + 1;
  }
  return paths;
}

}  // namespace zipnn::git
