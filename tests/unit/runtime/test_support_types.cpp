// The support layer's value types every layer shares: Expected/Status/Error
// (support/expected.h), PyRef (support/py_ref.h), and which pending Python
// errors may be cleared (support/py_errors.h).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/expected.h"
#include "support/py_errors.h"
#include "support/py_ref.h"

namespace tj {
namespace {

Expected<int> parse_digit(char c) {
  if (c < '0' || c > '9') return Error{std::string("not a digit: ") + c};
  return c - '0';
}

Status check_positive(int n) {
  if (n <= 0) return Error{"not positive", ErrorKind::data_dependent};
  return ok_status();
}

TEST(Expected, HoldsAValueOrAnError) {
  Expected<int> seven = parse_digit('7');
  ASSERT_TRUE(seven.ok());
  EXPECT_TRUE(static_cast<bool>(seven));
  EXPECT_EQ(*seven, 7);
  EXPECT_EQ(seven.value(), 7);

  Expected<int> bad = parse_digit('x');
  ASSERT_FALSE(bad.ok());
  EXPECT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(bad.error().message, "not a digit: x");
}

TEST(Expected, ErrorKindDefaultsToUnsupportedAndIsKept) {
  EXPECT_EQ(parse_digit('x').error().kind, ErrorKind::unsupported);
  Status st = check_positive(-1);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::data_dependent);
  // Passing an error on keeps its kind.
  auto forward = [&]() -> Expected<std::string> {
    if (auto s = check_positive(0); !s) return s.error();
    return std::string("positive");
  };
  EXPECT_EQ(forward().error().kind, ErrorKind::data_dependent);
  EXPECT_TRUE(check_positive(3).ok());
}

TEST(Expected, MovesItsValueOut) {
  auto make = []() -> Expected<std::unique_ptr<int>> { return std::make_unique<int>(4); };
  std::unique_ptr<int> p = make().value();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 4);
  Expected<std::string> s = std::string("abc");
  EXPECT_EQ(s->size(), 3u);
}

TEST(PyRef, OwnsExactlyOneReference) {
  PyObject* obj = PyList_New(0);
  ASSERT_NE(obj, nullptr);
  Py_ssize_t base = Py_REFCNT(obj);
  {
    PyRef owner = PyRef::borrow(obj);
    EXPECT_EQ(Py_REFCNT(obj), base + 1);
    PyRef copy = owner;
    EXPECT_EQ(Py_REFCNT(obj), base + 2);
    PyRef moved = std::move(copy);
    EXPECT_EQ(Py_REFCNT(obj), base + 2);
    EXPECT_FALSE(copy);  // NOLINT: moved-from is empty
    EXPECT_EQ(moved.get(), obj);
    copy = moved;
    EXPECT_EQ(Py_REFCNT(obj), base + 3);
    copy = PyRef();
    EXPECT_EQ(Py_REFCNT(obj), base + 2);
  }
  EXPECT_EQ(Py_REFCNT(obj), base);
  PyRef stolen = PyRef::steal(obj);  // takes over the reference PyList_New made
  PyObject* back = stolen.release();
  EXPECT_FALSE(stolen);
  EXPECT_EQ(Py_REFCNT(back), base);
  Py_DECREF(back);
}

TEST(PyRef, NullIsAllowed) {
  PyRef empty = PyRef::steal(nullptr);
  EXPECT_FALSE(empty);
  PyRef copy = PyRef::borrow(nullptr);
  copy = empty;
  EXPECT_EQ(copy.get(), nullptr);
}

// A probe clears only the errors it names (and their subclasses); any
// other stays set, and the helper says so.
TEST(PyErrors, ClearExpectedErrorClearsOnlyWhatItNames) {
  EXPECT_TRUE(clear_expected_error({PyExc_AttributeError}));  // nothing set
  PyErr_SetString(PyExc_KeyError, "k");
  EXPECT_TRUE(pending_error_is({PyExc_LookupError}));
  EXPECT_TRUE(clear_expected_error({PyExc_AttributeError, PyExc_LookupError}));
  EXPECT_FALSE(PyErr_Occurred());
  PyErr_SetString(PyExc_RuntimeError, "not a lookup");
  EXPECT_FALSE(clear_expected_error({PyExc_AttributeError}));
  EXPECT_TRUE(PyErr_ExceptionMatches(PyExc_RuntimeError));
  EXPECT_FALSE(clear_probe_error());
  PyErr_Clear();
  PyErr_SetString(PyExc_OverflowError, "big");
  EXPECT_TRUE(clear_probe_error());
  EXPECT_FALSE(PyErr_Occurred());
}

// Best-effort clears keep an interruption: nothing done again raises it again.
TEST(PyErrors, ClearUnlessInterruptionKeepsKeyboardInterruptAndMemoryError) {
  PyErr_SetString(PyExc_RuntimeError, "user code");
  clear_unless_interruption();
  EXPECT_FALSE(PyErr_Occurred());
  for (PyObject* type : {PyExc_KeyboardInterrupt, PyExc_MemoryError}) {
    PyErr_SetNone(type);
    EXPECT_TRUE(pending_interruption());
    clear_unless_interruption();
    EXPECT_TRUE(PyErr_ExceptionMatches(type));
    PyErr_Clear();
  }
}

}  // namespace
}  // namespace tj
