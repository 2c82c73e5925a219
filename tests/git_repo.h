// A temporary git repository for tests that drive the real git binary
// and git-zipnn (from the test's runfiles) through a shell: its own HOME
// and GIT_CONFIG_NOSYSTEM=1, so no user or system configuration leaks in.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/test_util.h"

namespace zipnn::testing {

class Repo {
 public:
  Repo() {
    const char* t = std::getenv("TEST_TMPDIR");
    root_ = std::string(t != nullptr ? t : "/tmp") + "/git-XXXXXX";
    REQUIRE(mkdtemp(root_.data()) != nullptr);
    char cwd[4096];
    REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
    runfiles_ = cwd;
    REQUIRE(Sh("mkdir home && git init -q repo && cd repo && git config user.email t@example.com && "
               "git config user.name T && git config commit.gpgsign false")
                .code == 0);
  }
  // Runs a shell line in the repository (our own literals only).
  Run Sh(const std::string& line) {
    const std::string out = root_ + "/out", err = root_ + "/err";
    const std::string env = "export HOME='" + root_ + "/home' GIT_CONFIG_NOSYSTEM=1 PATH='" + runfiles_ +
                            "/cmd':\"$PATH\"; cd '" + root_ + "' && { [ -d repo ] && cd repo || true; } && ";
    const std::string cmd = "bash -c \"" + Escape(env + line) + "\" >'" + out + "' 2>'" + err + "'";
    const int status = std::system(cmd.c_str());
    return Run{WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out), Slurp(err)};
  }
  std::string Data(const std::string& rel) const { return runfiles_ + "/tests/data/" + rel; }
  std::string Runfile(const std::string& rel) const { return runfiles_ + "/" + rel; }
  std::string File(const std::string& rel) const { return root_ + "/repo/" + rel; }
  // The folder that holds repo/ and home/.
  const std::string& root() const { return root_; }

 private:
  static std::string Escape(const std::string& s) {
    std::string r;
    for (char c : s) {
      if (c == '"' || c == '\\' || c == '$' || c == '`') r += '\\';
      r += c;
    }
    return r;
  }
  std::string root_;
  std::string runfiles_;
};

// Starts `command` (a shell line) in the background with its output in
// <dir>/log and its process id in <dir>/pid, waits until it prints
// "listening on 127.0.0.1:<port>", and returns the port (a server of the
// tests: s3rver, tests/lfs_server.py).
inline std::string StartListening(Repo& repo, const std::string& dir, const std::string& command) {
  REQUIRE(
      repo.Sh("mkdir -p '" + dir + "' && { " + command + " > '" + dir + "/log' 2>&1 & echo $! > '" + dir + "/pid'; }")
          .code == 0);
  Run up = repo.Sh("for i in $(seq 200); do grep -o 'listening on 127.0.0.1:[0-9]*' '" + dir +
                   "/log' && exit 0; sleep 0.05; done; cat '" + dir + "/log'; exit 1");
  const std::string log = up.out + up.err;
  REQUIRE_MESSAGE(up.code == 0, log);
  std::string port = up.out.substr(up.out.rfind(':') + 1);
  while (!port.empty() && port.back() == '\n') port.pop_back();
  return port;
}

// The content id a pointer in git names ("" when it is not a pointer).
inline std::string IdAt(Repo& repo, const std::string& rev_path) {
  const std::string pointer = repo.Sh("git show '" + rev_path + "'").out;
  const size_t at = pointer.find("xxh3-128:");
  return at == std::string::npos ? "" : pointer.substr(at + 9, 32);
}

// The format a pointer names, in either version ("" when it is not a
// pointer): the last word of its text.
inline std::string PointerFormat(const std::string& pointer) {
  if (pointer.rfind("git-zipnn pointer ", 0) != 0 || pointer.empty() || pointer.back() != '\n') return "";
  const size_t space = pointer.find_last_of(' ');
  return pointer.substr(space + 1, pointer.size() - space - 2);
}

inline std::string Step12(int i) {  // the cnn12-bf16 steps: 10, 20, ..., 120
  char name[40];
  std::snprintf(name, sizeof name, "step-%06d.safetensors", 10 * (i + 1));
  return name;
}

// The five steps of the cnn-bf16 fixture trajectory.
inline constexpr const char* kSteps[] = {"000040", "000080", "000120", "000160", "000200"};

// Commits the five cnn-bf16 steps to model.safetensors with base_interval
// 5: a base, two deltas each of the one before, a delta of the newest, and
// the newest whole (depths 0 1 2 1 0).
inline void CommitTrajectory(Repo& repo) {
  REQUIRE(repo.Sh("git zipnn install --local && git zipnn track '*.safetensors' && "
                  "printf 'base_interval: 5\\n' > .zipnn.yaml && git add .gitattributes .zipnn.yaml && "
                  "git commit -qm setup")
              .code == 0);
  for (const char* step : kSteps) {
    REQUIRE(repo.Sh("cp '" + repo.Data(std::string("cnn-bf16/step-") + step + ".safetensors") +
                    "' model.safetensors && git add model.safetensors && git commit -qm 'step " + step + "'")
                .code == 0);
  }
}

}  // namespace zipnn::testing
