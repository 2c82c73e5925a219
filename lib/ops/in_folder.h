// For the tests of lib/ops: a scratch folder (optionally a git
// repository the git binary makes) that the test runs in while it lives.
// Not thread-safe: it changes the process's current folder.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace zipnn::ops {

class InFolder {
 public:
  explicit InFolder(bool repository) {
    const char* t = std::getenv("TEST_TMPDIR");
    root_ = std::string(t != nullptr ? t : "/tmp") + "/ops-XXXXXX";
    REQUIRE(mkdtemp(root_.data()) != nullptr);
    char cwd[4096];
    REQUIRE(getcwd(cwd, sizeof cwd) != nullptr);
    back_ = cwd;
    REQUIRE(chdir(root_.c_str()) == 0);
    if (repository) REQUIRE(std::system("GIT_CONFIG_NOSYSTEM=1 git init -q . >/dev/null 2>&1") == 0);
  }
  ~InFolder() { (void)chdir(back_.c_str()); }
  InFolder(const InFolder&) = delete;
  InFolder& operator=(const InFolder&) = delete;
  const std::string& root() const { return root_; }

 private:
  std::string root_, back_;
};

}  // namespace zipnn::ops
