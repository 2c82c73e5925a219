#include "lib/git/git.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

extern char** environ;

namespace zipnn::git {

Result<GitRun> RunGit(const std::vector<std::string>& args, const std::string& cwd, const std::string& input) {
  int out_pipe[2], err_pipe[2], in_pipe[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 ||
      (!input.empty() && pipe2(in_pipe, O_CLOEXEC) != 0)) {
    return IoError(std::string("cannot run git: ") + std::strerror(errno));
  }
  std::vector<std::string> argv_store = {"git"};
  if (!cwd.empty()) argv_store.insert(argv_store.end(), {"-C", cwd});
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  if (input.empty()) {
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  } else {
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  }
  pid_t pid;
  const int spawned = posix_spawnp(&pid, "git", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (in_pipe[0] >= 0) ::close(in_pipe[0]);
  if (spawned != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    if (in_pipe[1] >= 0) ::close(in_pipe[1]);
    return Status(StatusCode::kGit, std::string("cannot run git: ") + std::strerror(spawned));
  }
  // git may exit before it read all its input: the write then fails with
  // EPIPE instead of killing us (SIGPIPE blocked meanwhile, and taken
  // back if it arrived).
  sigset_t pipe_signal, old_mask;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &old_mask);
  if (in_pipe[1] >= 0) ::fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);

  // All pipes are served as they become ready, so that neither side can
  // fill one and block the other.
  GitRun run;
  pollfd fds[3] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}, {in_pipe[1], POLLOUT, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  size_t written = 0;
  int open = in_pipe[1] >= 0 ? 3 : 2;
  char buf[65536];
  while (open > 0) {
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
    if (fds[2].fd >= 0 && (fds[2].revents & (POLLOUT | POLLHUP | POLLERR)) != 0) {
      const ssize_t n = ::write(fds[2].fd, input.data() + written, std::min<size_t>(input.size() - written, 65536));
      if (n > 0) written += static_cast<size_t>(n);
      if (written == input.size() || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        ::close(fds[2].fd);
        fds[2].fd = -1;
        --open;
      }
    }
  }
  timespec now = {0, 0};
  while (sigtimedwait(&pipe_signal, nullptr, &now) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return run;
}

namespace {

// The whole standard output of `git <args>`; a non-zero exit is a Git
// error quoting git's message.
Result<std::string> Succeeded(const std::vector<std::string>& args, const std::string& cwd) {
  ASSIGN_OR_RETURN(GitRun run, RunGit(args, cwd));
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

Result<std::string> GitOutput(const std::vector<std::string>& args, const std::string& cwd) {
  ASSIGN_OR_RETURN(std::string out, Succeeded(args, cwd));
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

Result<std::vector<std::string>> GitPaths(const std::vector<std::string>& args, const std::string& cwd) {
  ASSIGN_OR_RETURN(std::string out, Succeeded(args, cwd));
  std::vector<std::string> paths;
  for (size_t at = 0; at < out.size();) {
    size_t end = out.find('\0', at);
    if (end == std::string::npos) end = out.size();  // git ends the last one too; be lenient
    if (end > at) paths.push_back(out.substr(at, end - at));
    at = end + 1;
  }
  return paths;
}

Result<std::string> TopLevel(const std::string& cwd) {
  auto top = GitOutput({"rev-parse", "--show-toplevel"}, cwd);
  if (!top.ok()) return NotFound("not inside a git work tree (" + top.status().message() + ")");
  return top;
}

Result<std::string> GitDir(const std::string& cwd) {
  // The common folder: linked worktrees share one store with their main
  // repository.
  auto dir = GitOutput({"rev-parse", "--path-format=absolute", "--git-common-dir"}, cwd);
  if (!dir.ok()) return NotFound("not inside a git repository (" + dir.status().message() + ")");
  return dir;
}

Result<std::optional<std::string>> ConfigGet(const std::string& key, const std::string& cwd) {
  ASSIGN_OR_RETURN(GitRun run, RunGit({"config", "--get", key}, cwd));
  if (run.exit_code == 1) return std::optional<std::string>();  // unset
  if (run.exit_code != 0) return Status(StatusCode::kGit, "git config --get " + key + " failed: " + run.err);
  while (!run.out.empty() && run.out.back() == '\n') run.out.pop_back();
  return std::optional<std::string>(run.out);
}

}  // namespace zipnn::git
