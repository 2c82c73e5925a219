// Reading fuzz inputs back: the files a path names (the path itself, or
// every regular file directly inside a folder, in name order) and their
// bytes. Shared by the replay program and the replay test, which run the
// fuzz targets over their committed corpus and regressions without
// libFuzzer. Plain functions; thread-safe.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

namespace zipnn::fuzz {

// A missing path gives no files: a target may have no regressions yet.
inline std::vector<std::string> InputFiles(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_regular_file(path, ec)) {
    files.push_back(path);
  } else if (fs::is_directory(path, ec)) {
    for (const fs::directory_entry& e : fs::directory_iterator(path, ec)) {
      if (e.is_regular_file(ec)) files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
  }
  return files;
}

inline std::string ReadInput(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace zipnn::fuzz
