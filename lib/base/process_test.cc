#include "lib/base/process.h"

#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <string>

#include <doctest/doctest.h>

namespace zipnn {
namespace {

std::vector<std::string> Shell(const std::string& script) { return {"/bin/sh", "-c", script}; }

// No child of ours is left unreaped (a zombie) after a call returns.
bool NoChildLeft() { return ::waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD; }

TEST_CASE("run capture: keeps standard output and error apart, and the exit code") {
  auto run = RunCapture(Shell("printf out; printf err >&2; exit 3"));
  REQUIRE(run.ok());
  CHECK(run->out == "out");
  CHECK(run->err == "err");
  CHECK(run->exit_code == 3);
  CHECK(NoChildLeft());
}

TEST_CASE("run capture: megabytes on both outputs at once do not deadlock") {
  // Each output alone is far beyond what a socket buffers, so a reader
  // that drained one before the other would wait for ever.
  auto run =
      RunCapture(Shell("i=0; while [ $i -lt 64 ]; do head -c 65536 /dev/zero; head -c 32768 /dev/zero >&2; "
                       "i=$((i+1)); done"));
  REQUIRE(run.ok());
  CHECK(run->out.size() == 64u * 65536);
  CHECK(run->err.size() == 64u * 32768);
  CHECK(run->exit_code == 0);
}

TEST_CASE("run capture: passes its input while the output is read") {
  // More input than a socket holds, echoed back: writing it all before
  // reading would deadlock.
  std::string input(4 << 20, '\0');
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<char>(i * 7 + i / 251);
  auto run = RunCapture({"cat"}, input);
  REQUIRE(run.ok());
  CHECK(run.value().out == input);
  CHECK(run->exit_code == 0);
}

TEST_CASE("run capture: no input is /dev/null, so a reading child sees the end at once") {
  auto run = RunCapture({"cat"});
  REQUIRE(run.ok());
  CHECK(run->out.empty());
  CHECK(run->exit_code == 0);
}

TEST_CASE("run capture: a child that exits without reading its input does not raise SIGPIPE in us") {
  // If the write to the gone child raised SIGPIPE, this test process
  // would die here instead of failing a check.
  const std::string input(16 << 20, 'x');
  for (int i = 0; i < 3; ++i) {
    auto run = RunCapture(Shell("exit 5"), input);
    REQUIRE(run.ok());
    CHECK(run->exit_code == 5);
  }
  auto partial = RunCapture({"head", "-c", "10"}, input);
  REQUIRE(partial.ok());
  CHECK(partial->out == std::string(10, 'x'));
  CHECK(partial->exit_code == 0);
  CHECK(NoChildLeft());
}

TEST_CASE("run capture: a program that is not there is named with the reason") {
  auto run = RunCapture({"zipnn-no-such-program"});
  REQUIRE(!run.ok());
  CHECK(run.status().code() == StatusCode::kIoError);
  CHECK(run.status().message() == "cannot run zipnn-no-such-program: No such file or directory");
  auto empty = RunCapture({});
  CHECK(empty.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("run capture: a signal that ends the child reads as exit code 128") {
  auto run = RunCapture(Shell("kill -9 $$"));
  REQUIRE(run.ok());
  CHECK(run->exit_code == 128);
}

TEST_CASE("run capture: a deadline stops a child that hangs, and it is reaped") {
  const auto start = std::chrono::steady_clock::now();
  auto run = RunCapture({"sleep", "30"}, "", 0.2);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(!run.ok());
  CHECK(run.status().code() == StatusCode::kIoError);
  CHECK(run.status().message() == "sleep: did not finish within 0.2 s and was stopped");
  CHECK(took < 5);
  CHECK(NoChildLeft());
}

TEST_CASE("run capture: a child that ignores SIGTERM past its deadline is killed") {
  const auto start = std::chrono::steady_clock::now();
  auto run = RunCapture(Shell("trap '' TERM; exec sleep 30"), "", 0.1);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(!run.ok());
  CHECK(took >= Process::kExitGraceMs / 1000.0);
  CHECK(took < 10);
  CHECK(NoChildLeft());
}

TEST_CASE("run capture: a child that finishes before its deadline is not affected") {
  auto run = RunCapture(Shell("cat; echo done"), "in\n", 30);
  REQUIRE(run.ok());
  CHECK(run->out == "in\ndone\n");
  CHECK(run->exit_code == 0);
}

TEST_CASE("process: talks both ways, and a child gone early makes a write fail, not SIGPIPE") {
  {
    auto cat = Process::Start({"cat"});
    REQUIRE(cat.ok());
    REQUIRE((*cat)->Write("ping", 4).ok());
    char got[4];
    size_t have = 0;
    while (have < 4) {
      auto n = (*cat)->Read(got + have, 4 - have);
      REQUIRE(n.ok());
      REQUIRE(*n > 0);
      have += *n;
    }
    CHECK(std::string(got, 4) == "ping");
  }
  {
    auto gone = Process::Start(Shell("exit 0"));
    REQUIRE(gone.ok());
    char end;
    auto eof = (*gone)->Read(&end, 1);
    REQUIRE(eof.ok());
    CHECK(*eof == 0);
    const std::string big(1 << 20, 'x');
    CHECK(!(*gone)->Write(big.data(), big.size()).ok());
  }
  CHECK(NoChildLeft());
  auto missing = Process::Start({"zipnn-no-such-program"});
  REQUIRE(!missing.ok());
  CHECK(missing.status().message() == "cannot run zipnn-no-such-program: No such file or directory");
}

TEST_CASE("process: a child that ignores the end of its input is stopped after the grace") {
  const auto start = std::chrono::steady_clock::now();
  {
    auto stubborn = Process::Start({"sleep", "30"});
    REQUIRE(stubborn.ok());
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(took >= Process::kExitGraceMs / 1000.0);
  CHECK(took < 10);
  CHECK(NoChildLeft());
}

}  // namespace
}  // namespace zipnn
