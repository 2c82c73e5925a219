#include "lib/base/lazy_library.h"

#include <doctest/doctest.h>
#include <math.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace zipnn {
namespace {

// libm and libc's own, found by name when first called, as libgit2's are.
ZIPNN_LAZY("libm.so.6", j0)
ZIPNN_LAZY("libc.so.6", snprintf)

TEST_CASE("a lazy function is the library's, looked up on its first call, variable arguments included") {
  CHECK(j0(0.0) == doctest::Approx(1.0));
  CHECK(j0(2.404825557695773) == doctest::Approx(0.0));  // looked up once, then called directly
  char text[32];
  CHECK(snprintf(text, sizeof text, "%s %d", "parts", 3) == 7);
  CHECK(std::string(text) == "parts 3");
  // The address is the library's own.
  CHECK(LibrarySymbol("libm.so.6", "j0") == reinterpret_cast<void*>(&::j0));
}

// Runs `body` in a child process; its exit code.
template <typename F>
int InChild(F body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::freopen("/dev/null", "w", stderr);
    body();
    std::_Exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_CASE("a library or a function that is not there ends the program with 127, as the loader would have") {
  CHECK(InChild([] { (void)LibrarySymbol("libzipnn-no-such-library.so.1", "f"); }) == 127);
  CHECK(InChild([] { (void)LibrarySymbol("libm.so.6", "zipnn_no_such_function"); }) == 127);
}

}  // namespace
}  // namespace zipnn
