// Helpers for the tracer unit tests: run Python source in the embedded
// interpreter (started by tests/unit/gtest_main.cpp) and fetch results.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "support/py_ref.h"

namespace tj::bc::testing {

// Runs `source` in a fresh namespace and returns the namespace (new ref);
// fails the test on a Python error.
inline PyRef run_python(const std::string& source) {
  PyRef globals = PyRef::steal(PyDict_New());
  PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins());
  PyRef result = PyRef::steal(PyRun_String(source.c_str(), Py_file_input, globals.get(), globals.get()));
  if (!result) {
    PyErr_Print();
    ADD_FAILURE() << "Python error running:\n" << source;
  }
  return globals;
}

// Evaluates `expr` in the namespace `ns` (borrowed); new ref or null.
inline PyRef eval_python(PyObject* ns, const std::string& expr) {
  PyRef result = PyRef::steal(PyRun_String(expr.c_str(), Py_eval_input, ns, ns));
  if (!result) {
    PyErr_Print();
    ADD_FAILURE() << "Python error evaluating: " << expr;
  }
  return result;
}

inline long eval_long(PyObject* ns, const std::string& expr) {
  PyRef r = eval_python(ns, expr);
  return r ? PyLong_AsLong(r.get()) : -9999;
}

inline std::string eval_str(PyObject* ns, const std::string& expr) {
  PyRef r = eval_python(ns, expr);
  const char* s = r ? PyUnicode_AsUTF8(r.get()) : nullptr;
  return s ? s : "<error>";
}

// The code object of function `name` defined by `source` (new ref).
inline PyRef function_code(const std::string& source, const std::string& name) {
  PyRef ns = run_python(source);
  return eval_python(ns.get(), name + ".__code__");
}

inline PyCodeObject* as_code(const PyRef& ref) { return reinterpret_cast<PyCodeObject*>(ref.get()); }

}  // namespace tj::bc::testing
