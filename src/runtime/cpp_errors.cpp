// C++ -> Python exception translation; see cpp_errors.h.
#include "runtime/cpp_errors.h"

#include <torch/csrc/Exceptions.h>

namespace tj::runtime {

void set_python_error_from(std::exception_ptr error) {
  if (!error) {
    PyErr_SetString(PyExc_SystemError, "tracejit: no exception to translate");
    return;
  }
  try {
    torch::translate_exception_to_python(error);
  } catch (...) {
    // translate_exception_to_python rethrows what it does not know (not a
    // std::exception): keep the failure a Python error, never a crash.
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "tracejit: unknown C++ exception in a compiled graph");
  }
}

bool run_as_torch_binding(const std::function<void()>& body) {
  try {
    torch::PyWarningHandler warnings;  // its destructor issues the Python warnings
    try {
      body();
    } catch (...) {
      warnings.set_in_exception();
      throw;
    }
  } catch (...) {
    // A warning an "error" filter turned into an exception arrives as a
    // python_error, which the translation restores.
    set_python_error_from_current();
    return false;
  }
  return true;
}

}  // namespace tj::runtime
