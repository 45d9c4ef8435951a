// Status and Result: how memfold reports errors that user input can trigger.
//
// A Status is ok or carries a one-line message that names what is wrong and what to do.
// Result<T> holds either a T or an error. Internal invariants use assert, not Status.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace memfold {

class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message), true); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

 private:
  Status(std::string message, bool failed) : message_(std::move(message)), failed_(failed) {}
  std::string message_;
  bool failed_ = false;
};

template <typename T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : state_(std::move(status)) { assert(!std::get<Status>(state_).ok()); }

  bool ok() const { return std::holds_alternative<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T& value() & { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const T& operator*() const { return value(); }
  T& operator*() { return value(); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(state_); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace memfold

#define MF_CONCAT_INNER(a, b) a##b
#define MF_CONCAT(a, b) MF_CONCAT_INNER(a, b)

#define MF_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::memfold::Status mf_status_ = (expr);   \
    if (!mf_status_.ok()) return mf_status_; \
  } while (0)

#define MF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

#define MF_ASSIGN_OR_RETURN(lhs, expr) \
  MF_ASSIGN_OR_RETURN_IMPL(MF_CONCAT(mf_result_, __LINE__), lhs, expr)
