// A child process we talk to over its standard input and output (ssh
// carrying the store protocol, for one). Its standard error is ours, so
// what it says to the user (a password prompt, an ssh error) reaches them.
//
// The program is started from an argument vector, never through a shell
// built here. Both ends are socket pairs, so a write to a process that
// has exited fails with an error instead of raising SIGPIPE.
//
// One thread uses a Process at a time.
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

 private:
  Process(pid_t pid, int to_child, int from_child, const std::string& name)
      : pid_(pid), to_child_(to_child), from_child_(from_child), channel_(from_child, to_child, name) {}
  pid_t pid_;
  int to_child_;
  int from_child_;
  FdChannel channel_;
};

}  // namespace zipnn
