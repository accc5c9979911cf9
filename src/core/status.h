// Status and Result<T>: how the core reports failure without exceptions (leveldb style).
// A Status is ok or carries a code and a message that names where (file:line, field), what was
// expected and what was found. Result<T> holds a T or a non-ok Status. Both are plain values,
// cheap to move, not thread-safe to mutate concurrently (like any value type).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace fulcrum {

enum class StatusCode {
  kOk = 0,
  kInvalidInput,  // the user's input is wrong (file, flag, spec, HTTP body): exit code 2
  kNotFound,      // a named thing does not exist (GPU, model, file): exit code 2
  kIoError,       // the OS refused (disk, network, process): exit code 1
  kUnavailable,   // a peer or device is not there right now: exit code 1
  kInternal,      // a bug or an impossible state: exit code 1
};

// Where and what, for an input error: what `--json` prints as
// {"error": {"message", "file", "line", "field", "expected", "found", "nearest"}}. Empty strings,
// an unset line and an empty `nearest` mean "not known" and are printed as null / [].
struct ErrorDetail {
  std::string file;
  std::optional<int> line;  // 1-based
  std::string field;
  std::string expected;
  std::string found;
  std::vector<std::string> nearest;  // the closest valid names, best first
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidInput(std::string msg) {
    return {StatusCode::kInvalidInput, std::move(msg)};
  }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status IoError(std::string msg) { return {StatusCode::kIoError, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Process exit code for a CLI that fails with this status: 2 for input errors, 1 otherwise.
  int ExitCode() const;
  // "invalid input: <message>" and similar; "ok" when ok.
  std::string ToString() const;
  // Returns a copy whose message is "<prefix>: <message>" (adds context on the way up). The
  // detail, if any, is kept.
  Status WithContext(const std::string& prefix) const;

  // The structured form of the message, when the code that failed knew it (loaders, parsers,
  // name lookups); nullptr otherwise. The message stays the complete human-readable text.
  const ErrorDetail* detail() const { return detail_.get(); }
  // Returns a copy carrying `detail`.
  Status WithDetail(ErrorDetail detail) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::shared_ptr<const ErrorDetail> detail_;  // immutable once set, so sharing copies is safe
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace fulcrum

#define FULCRUM_CONCAT_INNER(a, b) a##b
#define FULCRUM_CONCAT(a, b) FULCRUM_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` (a Status) is not ok.
#define FULCRUM_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::fulcrum::Status fulcrum_status_ = (expr);        \
    if (!fulcrum_status_.ok()) return fulcrum_status_; \
  } while (0)

// `lhs` = value of `rexpr` (a Result<T>), or returns its Status from the enclosing function.
#define FULCRUM_ASSIGN_OR_RETURN(lhs, rexpr) \
  FULCRUM_ASSIGN_OR_RETURN_IMPL(FULCRUM_CONCAT(fulcrum_result_, __LINE__), lhs, rexpr)
#define FULCRUM_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                  \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()
