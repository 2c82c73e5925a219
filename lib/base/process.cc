#include "lib/base/process.h"

#include <errno.h>
#include <spawn.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

extern char** environ;

namespace zipnn {

Result<std::unique_ptr<Process>> Process::Start(const std::vector<std::string>& argv) {
  if (argv.empty()) return InvalidArgument("no program to run");
  // [0]: ours, [1]: the child's.
  int in[2], out[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) {
    return IoError("cannot run " + argv[0] + ": " + std::strerror(errno));
  }
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out) != 0) {
    const int err = errno;
    ::close(in[0]);
    ::close(in[1]);
    return IoError("cannot run " + argv[0] + ": " + std::strerror(err));
  }
  std::vector<std::string> args = argv;
  std::vector<char*> raw;
  for (std::string& a : args) raw.push_back(a.data());
  raw.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[1], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  pid_t pid;
  const int spawned = posix_spawnp(&pid, raw[0], &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[1]);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(in[0]);
    ::close(out[0]);
    return IoError("cannot run " + argv[0] + ": " + std::strerror(spawned));
  }
  return std::unique_ptr<Process>(new Process(pid, in[0], out[0], argv[0]));
}

Process::~Process() {
  // Both ends closed first: a child still writing to us (a server
  // streaming what we refused) gets an error instead of blocking on a
  // full socket while we wait for it.
  ::close(to_child_);
  ::close(from_child_);
  // One that ignores the end of its input too is stopped after a grace.
  int status = 0;
  for (int waited_ms = 0;; waited_ms += 10) {
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) return;
    if (waited_ms >= kExitGraceMs) break;
    ::usleep(10 * 1000);
  }
  ::kill(pid_, SIGTERM);
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace zipnn
