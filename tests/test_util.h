// Helpers shared by the tests that run programs: a command's exit code and
// output, and reading a whole file as a string.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace zipnn::testing {

struct Run {
  int code;
  std::string out;
  std::string err;
};

inline std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace zipnn::testing
