#include "core/status.h"

namespace fulcrum {

int Status::ExitCode() const {
  switch (code_) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kInvalidInput:
    case StatusCode::kNotFound:
      return 2;
    default:
      return 1;
  }
}

std::string Status::ToString() const {
  const char* prefix = "ok";
  switch (code_) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidInput:
      prefix = "invalid input";
      break;
    case StatusCode::kNotFound:
      prefix = "not found";
      break;
    case StatusCode::kIoError:
      prefix = "I/O error";
      break;
    case StatusCode::kUnavailable:
      prefix = "unavailable";
      break;
    case StatusCode::kInternal:
      prefix = "internal error";
      break;
  }
  return std::string(prefix) + ": " + message_;
}

Status Status::WithContext(const std::string& prefix) const {
  if (ok()) return *this;
  Status out(code_, prefix + ": " + message_);
  out.detail_ = detail_;
  return out;
}

Status Status::WithDetail(ErrorDetail detail) const {
  Status out = *this;
  out.detail_ = std::make_shared<const ErrorDetail>(std::move(detail));
  return out;
}

}  // namespace fulcrum
