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

}  // namespace tj::runtime
