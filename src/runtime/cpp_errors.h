// C++ exceptions -> Python exceptions, the way eager PyTorch maps them.
//
// A graph op that fails at run time throws the exception ATen raised (a
// `c10::Error` subclass; see jit/backend.h). Eager PyTorch turns those into
// Python exceptions in its bindings' `END_HANDLE_TH_ERRORS`: `c10::IndexError`
// -> IndexError, `TypeError` -> TypeError, `ValueError`, `NotImplementedError`,
// `LinAlgError` -> torch.linalg.LinAlgError, `OutOfMemoryError`, any other
// `c10::Error` -> RuntimeError, with the message without the C++ backtrace
// (unless TORCH_SHOW_CPP_STACKTRACES) and ATen type names made Python's.
// `set_python_error_from` reuses that very translation
// (`torch::translate_exception_to_python`), so a compiled graph raises what
// eager raises: same type, same message, no prefix.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <exception>

namespace tj::runtime {

// Sets the Python error eager PyTorch would set for `error` (non-null); a
// Python error already set (a `python_error`) is kept. Needs the GIL.
void set_python_error_from(std::exception_ptr error);

// The same for the exception being handled; call it inside a `catch`.
inline void set_python_error_from_current() { set_python_error_from(std::current_exception()); }

}  // namespace tj::runtime
