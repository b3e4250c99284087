// Entry points of the `_tracejit` module for the launcher and the layers
// that raise tracejit's exceptions.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyMODINIT_FUNC PyInit__tracejit();

namespace tj::runtime {
// Borrowed references, valid once the module is initialized.
PyObject* unsupported_error();
PyObject* backend_compiler_failed_error();
}  // namespace tj::runtime
