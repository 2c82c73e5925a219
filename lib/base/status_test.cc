// Tests of Status and Result: context put before a message with its code
// kept, and the value of a failed Result never read as if it were there.
#include "lib/base/status.h"

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

namespace zipnn {
namespace {

TEST_CASE("Annotate puts context before the message and keeps the code; OK stays OK") {
  const Status s = Annotate(NotFound("object 12ab is not in the store"), "model.safetensors");
  CHECK(s.code() == StatusCode::kNotFound);
  CHECK(s.message() == "model.safetensors: object 12ab is not in the store");
  CHECK(Annotate(OkStatus(), "model.safetensors").ok());
  // Given the same context twice (a layer below named the file already),
  // the message names it once.
  CHECK(Annotate(s, "model.safetensors").message() == s.message());
  CHECK(Annotate(s, "model").message() == "model: " + s.message());
  CHECK(Annotate(OkStatus(), "model.safetensors").message().empty());
}

TEST_CASE("WithHint puts what to do after the message and keeps the code; OK stays OK") {
  const Status s = WithHint(IoError("HTTP 404"), " (see docs/remotes.md)");
  CHECK(s.code() == StatusCode::kIoError);
  CHECK(s.message() == "HTTP 404 (see docs/remotes.md)");
  CHECK(WithHint(OkStatus(), "; hint").ok());
  CHECK(WithHint(OkStatus(), "; hint").message().empty());
}

TEST_CASE("Replaced names a path as the reader knows it, every time, and keeps the code") {
  const Status s = Replaced(Corruption("/tmp/x.part: bad; /tmp/x.part again"), "/tmp/x.part", "what it sent");
  CHECK(s.code() == StatusCode::kCorruption);
  CHECK(s.message() == "what it sent: bad; what it sent again");
  // A replacement that holds the text it replaces ends (it is not searched again).
  CHECK(Replaced(NotFound("a b"), "a", "aa").message() == "aa b");
  CHECK(Replaced(OkStatus(), "a", "b").ok());
}

TEST_CASE("Result holds a value or the status that says why not") {
  Result<int> seven = 7;
  REQUIRE(seven.ok());
  CHECK(*seven == 7);
  Result<int> failed = Corruption("damaged");
  CHECK(!failed.ok());
  CHECK(failed.status().message() == "damaged");
}

TEST_CASE("reading the value of a failed Result ends the process, saying so") {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(pipe_fds[1], 2);
    std::signal(SIGABRT, SIG_DFL);  // doctest's crash report is not wanted in the child
    Result<int> failed = IoError("disk gone");
    const int read = *failed;  // a bug: the process must end here
    std::_Exit(read == 0 ? 3 : 4);
  }
  ::close(pipe_fds[1]);
  std::string err;
  char buf[256];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  CHECK(err == "git-zipnn: internal error: the value of a failed result was read (i/o error: disk gone)\n");
}

}  // namespace
}  // namespace zipnn
