#include "lib/base/status.h"

#include <cstdio>
#include <cstdlib>

namespace zipnn {

namespace {
const char* CodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kCorruption:
      return "corruption";
    case StatusCode::kUnsupported:
      return "unsupported";
    case StatusCode::kIoError:
      return "i/o error";
    case StatusCode::kGit:
      return "git";
    case StatusCode::kRemoved:
      return "removed";
    case StatusCode::kUnavailable:
      return "unavailable";
  }
  return "unknown";
}
}  // namespace

Status Annotate(const Status& status, const std::string& context) {
  // Once: a message that starts with the context already keeps it once.
  if (status.ok() || status.message().rfind(context + ": ", 0) == 0) return status;
  return Status(status.code(), context + ": " + status.message());
}

Status WithHint(const Status& status, const std::string& hint) {
  if (status.ok()) return status;
  return Status(status.code(), status.message() + hint);
}

Status Replaced(const Status& status, const std::string& text, const std::string& with) {
  if (status.ok() || text.empty()) return status;
  std::string message = status.message();
  for (size_t at = 0; (at = message.find(text, at)) != std::string::npos; at += with.size()) {
    message.replace(at, text.size(), with);
  }
  return Status(status.code(), message);
}

namespace internal {
void DieWithoutValue(const Status& status) {
  std::fprintf(stderr, "git-zipnn: internal error: the value of a failed result was read (%s)\n",
               status.ToString().c_str());
  std::abort();
}
}  // namespace internal

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(CodeName(code_)) + ": " + message_;
}

}  // namespace zipnn
