// Result<T>: a value or a typed error, for failures a caller is expected to handle
// (attach failures, bad input, missing debuginfo). Exceptions are kept for fatal start-up
// errors, caught in main().
#pragma once

#include <cstring>
#include <string>
#include <utility>
#include <variant>

namespace cephscope {

enum class ErrorKind {
  kInvalidInput,  // bad config, profile or argument
  kNotFound,      // file, process, symbol or type absent
  kUnsupported,   // the kernel or binary lacks a feature
  kSystem,        // a syscall or libbpf call failed (errno in code)
  kDwarf,         // debuginfo unreadable or inconsistent
};

struct Error {
  ErrorKind kind = ErrorKind::kSystem;
  std::string message;
  int code = 0;  // errno where one applies
  // A short stable word for the cause ("not_mapped", "replaced"), for metric labels and for
  // callers that branch on it; lower-case, no spaces. Empty when the kind says enough.
  std::string reason;
};

inline Error make_error(ErrorKind kind, std::string message, int code = 0) {
  return Error{kind, std::move(message), code, {}};
}

// A failed system call: WHAT, then the text of ERR (an errno value the caller read at once).
inline Error errno_error(const std::string& what, int err) {
  return make_error(ErrorKind::kSystem, what + ": " + std::strerror(err), err);
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }

  [[nodiscard]] T& value() & { return std::get<T>(v_); }
  [[nodiscard]] const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  [[nodiscard]] const Error& error() const { return std::get<Error>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Result<void>: success or an error.
struct Ok {};
using Status = Result<Ok>;
inline Status ok_status() {
  return Ok{};
}

}  // namespace cephscope
