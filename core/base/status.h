#pragma once

// Errors as values. A Status is ok or carries a code and a message a user can act on;
// Result<T> holds either a T or a non-ok Status. No exceptions cross component boundaries.

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace vgpu {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad input from a user, a file or an annotation
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,  // e.g. resourceVersion conflict, lock held
  kResourceExhausted,   // out of memory, no capacity
  kUnavailable,         // peer unreachable; retrying may help
  kDeadlineExceeded,
  kPermissionDenied,
  kInternal,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "NotFound: pod default/x not found" — for logs and error responses.
  std::string ToString() const;

  // Prefixes the message with context: "reading /etc/x: <message>".
  Status WithContext(const std::string& context) const {
    return ok() ? *this : Status(code_, context + ": " + message_);
  }

  friend bool operator==(const Status&, const Status&) = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) {
  return {StatusCode::kNotFound, std::move(m)};
}
inline Status AlreadyExists(std::string m) {
  return {StatusCode::kAlreadyExists, std::move(m)};
}
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status ResourceExhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status Unavailable(std::string m) {
  return {StatusCode::kUnavailable, std::move(m)};
}
inline Status DeadlineExceeded(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status PermissionDenied(std::string m) {
  return {StatusCode::kPermissionDenied, std::move(m)};
}
inline Status Internal(std::string m) {
  return {StatusCode::kInternal, std::move(m)};
}

inline const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kDeadlineExceeded:
      return "DeadlineExceeded";
    case StatusCode::kPermissionDenied:
      return "PermissionDenied";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

inline std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

// Either a value or an error. Access to value() on an error is a programming bug (asserted).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : data_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(data_).ok() && "Result built from an ok Status has no value");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(data_);
  }

  T& value() & {
    assert(ok());
    return std::get<T>(data_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(data_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(data_));
  }

  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> data_;
};

}  // namespace vgpu

// Returns early from a function returning Status (or Result<T>) when `expr` is not ok.
#define VGPU_RETURN_IF_ERROR(expr)               \
  do {                                           \
    ::vgpu::Status _vgpu_status = (expr);        \
    if (!_vgpu_status.ok()) return _vgpu_status; \
  } while (false)
