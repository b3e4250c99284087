// Expected<T>: a value or an error message, for failures a caller can
// cause (malformed bytecode, a jump to an instruction that is not in the
// list, a name that is no cell or free variable). Invariants that only a
// bug in the tracer could break are asserts instead.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace tj::bc {

struct Error {
  std::string message;
};

template <class T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() {
    assert(ok() && "value() of an error");
    return std::get<0>(v_);
  }
  const T& value() const {
    assert(ok() && "value() of an error");
    return std::get<0>(v_);
  }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const std::string& error() const {
    assert(!ok() && "error() of a value");
    return std::get<1>(v_).message;
  }

 private:
  std::variant<T, Error> v_;
};

}  // namespace tj::bc
