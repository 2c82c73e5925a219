// Status and Result<T>: how every lib/ API reports failure.
//
// No exception crosses a lib/ API. A Status is either OK or carries a code
// and a one-line message written for the person at the terminal: it names
// the file or object involved and, where there is one, what to do next.
// Values are small and copyable; thread-compatible (no shared state).
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace zipnn {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // the caller asked for something that cannot be done
  kNotFound,         // a file or object does not exist
  kCorruption,       // stored bytes fail a check; never returned as data
  kUnsupported,      // a valid input this build cannot handle (e.g. newer format)
  kIoError,          // the operating system refused a read or write
  kGit,              // git or libgit2 failed
  kRemoved,          // removed on purpose: a version retention thinned or dropped
  kUnavailable,      // a remote could not give what was asked (unreachable, refused, failing)
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corruption: <message>" style, for logs and the command line.
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
inline Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status Removed(std::string m) { return {StatusCode::kRemoved, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }

// `status` with `context` put before its message ("context: message"),
// its code kept; an OK status, or one whose message starts with that
// context already, stays as it is.
Status Annotate(const Status& status, const std::string& context);

// `status` with `hint` put after its message, its code kept: for the layer
// that knows what to do next ("; `git zipnn pull` restores it"). `hint`
// carries its own separator. An OK status stays as it is.
Status WithHint(const Status& status, const std::string& hint);

// `status` with every `text` in its message replaced by `with`, its code
// kept: a temporary path named as what the reader knows it by.
Status Replaced(const Status& status, const std::string& text, const std::string& with);

namespace internal {
// Ends the process: a Result's value was read when it holds none, a bug
// that would otherwise read uninitialised memory.
[[noreturn]] void DieWithoutValue(const Status& status);
}  // namespace internal

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // Reading the value of a Result that holds an error is a bug: checked
  // on every access (one predictable branch), never undefined.
  T& value() & { return *Checked(); }
  const T& value() const& { return *Checked(); }
  T&& value() && { return std::move(*Checked()); }
  T& operator*() & { return *Checked(); }
  const T& operator*() const& { return *Checked(); }
  T* operator->() { return &*Checked(); }
  const T* operator->() const { return &*Checked(); }

 private:
  std::optional<T>& Checked() {
    if (!value_.has_value()) internal::DieWithoutValue(status_);
    return value_;
  }
  const std::optional<T>& Checked() const {
    if (!value_.has_value()) internal::DieWithoutValue(status_);
    return value_;
  }

  Status status_;
  std::optional<T> value_;
};

}  // namespace zipnn

#define ZIPNN_CONCAT_INNER(a, b) a##b
#define ZIPNN_CONCAT(a, b) ZIPNN_CONCAT_INNER(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define ZIPNN_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::zipnn::Status zipnn_status_ = (expr);        \
    if (!zipnn_status_.ok()) return zipnn_status_; \
  } while (0)

// `lhs = value of expr` (a Result<T>), or returns its Status.
#define ZIPNN_ASSIGN_OR_RETURN(lhs, expr) ZIPNN_ASSIGN_OR_RETURN_IMPL(ZIPNN_CONCAT(zipnn_result_, __LINE__), lhs, expr)
#define ZIPNN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
