#include "cmd/util.h"

#include <errno.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <sstream>

#include "lib/git/git.h"

namespace zipnn::cmd {

Status StdoutSink::Append(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t put = ::write(1, p, n);
    if (put < 0) {
      if (errno == EINTR) continue;
      return IoError(std::string("standard output: ") + std::strerror(errno));
    }
    p += put;
    n -= static_cast<size_t>(put);
  }
  return OkStatus();
}

void AddThreadsOption(CLI::App& sub, int& threads) {
  sub.add_option("--threads,-T", threads, "Worker threads (default: all cores; output is identical for any count)")
      ->check(CLI::Range(0, 4096));
}

const ConfigEntry kFilterConfig[4] = {
    {"filter.zipnn.process", "git-zipnn filter-process"},
    {"filter.zipnn.clean", "git-zipnn clean -- %f"},
    {"filter.zipnn.smudge", "git-zipnn smudge -- %f"},
    {"filter.zipnn.required", "true"},
};

Result<store::Repository> OpenRepository() {
  ASSIGN_OR_RETURN(std::string git_dir, git::GitDir());
  ASSIGN_OR_RETURN(std::optional<std::string> configured, git::ConfigGet("zipnn.storepath"));
  const std::string zipnn_dir = git_dir + "/zipnn";
  store::Repository repo{store::ObjectStore(configured ? *configured : zipnn_dir + "/objects"),
                         zipnn_dir + "/series", zipnn_dir + "/tmp", config::Policy{}};
  auto top = git::TopLevel();
  if (top.ok()) {
    ASSIGN_OR_RETURN(repo.policy, config::LoadPolicy(*top + "/.zipnn.yaml"));
  }
  return repo;
}

Result<store::Pointer> PointerAt(const std::string& spec) {
  auto text = git::GitOutput({"show", spec});
  if (!text.ok()) return NotFound(spec + " is not in git (" + text.status().message() + ")");
  auto pointer = store::ParsePointer(*text + "\n");
  if (!pointer.ok()) return InvalidArgument(spec + " is not stored by git-zipnn (" + pointer.status().message() + ")");
  return *pointer;
}

std::string TrackLine(const std::string& pattern) { return pattern + " filter=zipnn diff=zipnn -text"; }

std::optional<std::string> TrackedPattern(const std::string& line) {
  std::istringstream words(line);
  std::string pattern, word;
  if (!(words >> pattern) || pattern[0] == '#') return std::nullopt;
  while (words >> word) {
    if (word == "filter=zipnn") return pattern;
  }
  return std::nullopt;
}

}  // namespace zipnn::cmd
