// Status and StatusOr<T>: how egca reports its own errors (bad file, bad option, bad
// record). A candidate program failing is never a Status error: it is a verdict value.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace egca {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,   // bad option, malformed record, bad config value
  kNotFound,          // missing file, missing field, missing tensor
  kDataLoss,          // truncated or corrupt file
  kFailedPrecondition,
  kUnimplemented,     // construct or format egca does not support (reported, not a crash)
  kResourceExhausted,
  kInternal,          // a bug in egca or a failed OS call egca relied on
  kUnavailable,
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
  // "NOT_FOUND: tests/x.py: no such file"
  std::string ToString() const;

  // Returns a copy whose message is "<context>: <message>" (for naming file/line/record).
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status InvalidArgument(std::string message);
Status NotFound(std::string message);
Status DataLoss(std::string message);
Status FailedPrecondition(std::string message);
Status Unimplemented(std::string message);
Status ResourceExhausted(std::string message);
Status Internal(std::string message);
Status Unavailable(std::string message);

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : value_(value) {}          // NOLINT(google-explicit-constructor)
  StatusOr(T&& value) : value_(std::move(value)) {}    // NOLINT(google-explicit-constructor)
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (status_.ok()) status_ = Internal("StatusOr constructed from an OK status");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  // Precondition: ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace egca

#define EGCA_CONCAT_INNER(a, b) a##b
#define EGCA_CONCAT(a, b) EGCA_CONCAT_INNER(a, b)

// Returns from the current function if `expr` (a Status) is not OK.
#define EGCA_RETURN_IF_ERROR(expr)              \
  do {                                          \
    ::egca::Status egca_status_ = (expr);       \
    if (!egca_status_.ok()) return egca_status_; \
  } while (0)

// `EGCA_ASSIGN_OR_RETURN(auto x, MakeX());` assigns the value or returns the error.
#define EGCA_ASSIGN_OR_RETURN(lhs, expr) \
  EGCA_ASSIGN_OR_RETURN_IMPL(EGCA_CONCAT(egca_statusor_, __LINE__), lhs, expr)
#define EGCA_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()
