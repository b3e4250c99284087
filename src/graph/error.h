// Errors a caller can trigger (an unknown op, an argument no overload
// accepts, an op without a meta kernel, a malformed graph text) are values:
// `Expected<T>` holds a result or an `Error`, `Status` is an `Expected` of
// nothing. Compiler bugs are asserts, never values.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace tj::graph {

struct Error {
  std::string message;
};

template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Expected(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

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

}  // namespace tj::graph
