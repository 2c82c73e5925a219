#include "lib/base/process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

extern char** environ;

namespace zipnn {

namespace {

// How one of the child's standard streams (0, 1, 2) is connected.
enum class Stream { kInherit, kNull, kSocket };

struct Spawned {
  pid_t pid = -1;
  int fds[3] = {-1, -1, -1};  // our end of each kSocket stream
};

void CloseAll(int (&fds)[3]) {
  for (int& fd : fds) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

// Starts argv with its standard streams connected as `streams` says.
// Sockets rather than pipes, so that our writes can carry MSG_NOSIGNAL;
// created close-on-exec, so that a child started by another thread
// meanwhile holds none of them open.
Result<Spawned> Spawn(const std::vector<std::string>& argv, const Stream (&streams)[3]) {
  if (argv.empty()) return InvalidArgument("no program to run");
  Spawned s;
  int theirs[3] = {-1, -1, -1};
  for (int i = 0; i < 3; ++i) {
    if (streams[i] != Stream::kSocket) continue;
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      const int err = errno;
      CloseAll(s.fds);
      CloseAll(theirs);
      return IoError("cannot run " + argv[0] + ": " + std::strerror(err));
    }
    s.fds[i] = pair[0];
    theirs[i] = pair[1];
  }
  std::vector<std::string> args = argv;
  std::vector<char*> raw;
  for (std::string& a : args) raw.push_back(a.data());
  raw.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (int i = 0; i < 3; ++i) {
    if (streams[i] == Stream::kSocket) posix_spawn_file_actions_adddup2(&actions, theirs[i], i);
    if (streams[i] == Stream::kNull) {
      posix_spawn_file_actions_addopen(&actions, i, "/dev/null", i == 0 ? O_RDONLY : O_WRONLY, 0);
    }
  }
  const int spawned = posix_spawnp(&s.pid, raw[0], &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  CloseAll(theirs);
  if (spawned != 0) {
    CloseAll(s.fds);
    return IoError("cannot run " + argv[0] + ": " + std::strerror(spawned));
  }
  return s;
}

// Waits up to `ms` for `pid` to exit; false if it is still running.
bool ReapWithin(pid_t pid, int ms, int* status) {
  for (int waited_ms = 0;; waited_ms += 10) {
    const pid_t r = ::waitpid(pid, status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return true;
    if (waited_ms >= ms) return false;
    ::usleep(10 * 1000);
  }
}

void Reap(pid_t pid, int* status) {
  while (::waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

Result<std::unique_ptr<Process>> Process::Start(const std::vector<std::string>& argv) {
  ZIPNN_ASSIGN_OR_RETURN(Spawned s, Spawn(argv, {Stream::kSocket, Stream::kSocket, Stream::kInherit}));
  return std::unique_ptr<Process>(new Process(s.pid, s.fds[0], s.fds[1], argv[0]));
}

Process::~Process() {
  // Both ends closed first: a child still writing to us (a server
  // streaming what we refused) gets an error instead of blocking on a
  // full socket while we wait for it.
  ::close(to_child_);
  ::close(from_child_);
  // One that ignores the end of its input too is stopped after a grace.
  int status = 0;
  if (ReapWithin(pid_, kExitGraceMs, &status)) return;
  ::kill(pid_, SIGTERM);
  Reap(pid_, &status);
}

Result<Captured> RunCapture(const std::vector<std::string>& argv, const std::string& input, double deadline_seconds) {
  const Stream input_stream = input.empty() ? Stream::kNull : Stream::kSocket;
  ZIPNN_ASSIGN_OR_RETURN(Spawned child, Spawn(argv, {input_stream, Stream::kSocket, Stream::kSocket}));

  // All three are served as they become ready, so that neither side can
  // fill one and block the other.
  Captured run;
  pollfd fds[3] = {{child.fds[1], POLLIN, 0}, {child.fds[2], POLLIN, 0}, {child.fds[0], POLLOUT, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  size_t written = 0;
  int open = fds[2].fd >= 0 ? 3 : 2;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_seconds);
  bool late = false;
  char buf[65536];
  while (open > 0) {
    int wait_ms = -1;
    if (deadline_seconds > 0) {
      const std::chrono::duration<double, std::milli> left = deadline - std::chrono::steady_clock::now();
      if (left.count() <= 0) {
        late = true;
        break;
      }
      wait_ms = static_cast<int>(std::ceil(left.count()));
    }
    if (::poll(fds, 3, wait_ms) < 0) {
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
      // A child that exited before it read all its input makes this fail
      // with EPIPE, which only ends the input.
      const ssize_t n = ::send(fds[2].fd, input.data() + written, std::min<size_t>(input.size() - written, 65536),
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) written += static_cast<size_t>(n);
      if (written == input.size() || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        ::close(fds[2].fd);
        fds[2].fd = -1;
        --open;
      }
    }
  }
  for (pollfd& p : fds) {
    if (p.fd >= 0) ::close(p.fd);
  }
  int status = 0;
  if (late) {
    ::kill(child.pid, SIGTERM);
    if (!ReapWithin(child.pid, Process::kExitGraceMs, &status)) {
      ::kill(child.pid, SIGKILL);
      Reap(child.pid, &status);
    }
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", deadline_seconds);
    return IoError(argv[0] + ": did not finish within " + seconds + " s and was stopped");
  }
  Reap(child.pid, &status);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return Result<Captured>(std::move(run));  // a large output is moved, not copied
}

}  // namespace zipnn
