// Child processes: the one place that starts them, for git, ssh and any
// other program. Two shapes share the same spawning code:
// - Process, a program we talk to over its standard input and output
//   (ssh carrying the store protocol, for one), its standard error ours so
//   that what it says to the user (a password prompt, an ssh error)
//   reaches them;
// - RunCapture, a program run to its end with its input given and its
//   standard output and error kept apart (every git command).
//
// A program is started from an argument vector, never through a shell
// built here. Whatever we write to a child goes through a socket pair with
// MSG_NOSIGNAL, so a write to a child that has exited fails with an error
// instead of raising SIGPIPE: no signal mask or handler is touched, which
// keeps this safe from any thread.
//
// One thread uses a Process at a time; RunCapture may be called from many
// threads at once.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "lib/base/file.h"
#include "lib/base/io.h"
#include "lib/base/status.h"

namespace zipnn {

class Process : public Channel {
 public:
  static constexpr int kExitGraceMs = 2000;
  // Starts argv[0] (looked up on PATH when it has no slash).
  static Result<std::unique_ptr<Process>> Start(const std::vector<std::string>& argv);
  // Closes both ends (the child sees the end of its input, and a write
  // of its fails) and waits for it to exit; one still running after
  // kExitGraceMs gets SIGTERM.
  ~Process() override;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  Result<size_t> Read(void* out, size_t n) override { return channel_.Read(out, n); }
  Status Write(const void* data, size_t n) override { return channel_.Write(data, n); }
  void SetTimeout(double seconds) override { channel_.SetTimeout(seconds); }
  void SetLowSpeed(const LowSpeed& limit) override { channel_.SetLowSpeed(limit); }

 private:
  Process(pid_t pid, int to_child, int from_child, const std::string& name)
      : pid_(pid), to_child_(to_child), from_child_(from_child), channel_(from_child, to_child, name) {}
  pid_t pid_;
  int to_child_;
  int from_child_;
  FdChannel channel_;
};

// What a program run to its end left behind.
struct Captured {
  int exit_code = 0;  // 128 when a signal ended it
  std::string out;
  std::string err;
};

// Runs argv[0] (looked up on PATH when it has no slash) with `input` on
// its standard input (empty: /dev/null) and returns everything it wrote.
// Input is written while both outputs are read, so no amount of either
// can stall the child or us, and a child that exits without reading all
// its input is no error. A non-zero exit is reported in exit_code, not as
// an error; a program that cannot be started is an IoError "cannot run
// <argv[0]>: <reason>". With `deadline_seconds` > 0 a child still running
// then gets SIGTERM (SIGKILL after Process::kExitGraceMs) and the run is
// an IoError; with 0 it may run for ever. The child is always waited for.
Result<Captured> RunCapture(const std::vector<std::string>& argv, const std::string& input = "",
                            double deadline_seconds = 0);

}  // namespace zipnn
