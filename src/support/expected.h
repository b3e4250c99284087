// Errors a caller can trigger are values, in every layer: `Expected<T>`
// holds a result or an `Error`, `Status` is an `Expected` of nothing.
// An `Error` carries a message for people and a kind for code, so a caller
// that must tell failures apart (a data-dependent op breaks the graph with
// its own reason, an internal error is reported as one) switches on the
// kind instead of reading the message.
// Compiler bugs are asserts, never values.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace tj {

enum class ErrorKind {
  // The input is well formed but not handled: an op no overload accepts,
  // an op without a meta kernel, a graph AOT cannot capture. The default.
  unsupported,
  // The result's shape or value depends on tensor data (a boolean mask,
  // torch.nonzero): only running the op says what it is.
  data_dependent,
  // A bug of tracejit's own, caught on its way out of a layer: a C++
  // exception that is not LibTorch's (std::out_of_range from a map's at(),
  // a logic error). Never shown as if it were the reason something is not
  // supported: where it becomes a reason, report_internal_error
  // (internal_error.h) counts and logs it and words the reason.
  internal,
};

struct Error {
  std::string message;
  ErrorKind kind = ErrorKind::unsupported;
};

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Expected(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok() && "Expected::value() on an error");
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok() && "Expected::value() on an error");
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok() && "Expected::value() on an error");
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const {
    assert(!ok() && "Expected::error() on a value");
    return std::get<1>(v_);
  }

 private:
  std::variant<T, Error> v_;
};

struct Ok {};
using Status = Expected<Ok>;
inline Status ok_status() { return Ok{}; }

}  // namespace tj
