// The UTF-8 text of a Python str, for messages, names and sources: "?"
// for anything that is not a str (and no Python error is left set).
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string>

namespace tj::tracer {

inline std::string utf8(PyObject* s) {
  const char* c = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : nullptr;
  if (!c) PyErr_Clear();  // text for names and messages: a str that does not encode reads "?"
  return c ? c : "?";
}

}  // namespace tj::tracer
