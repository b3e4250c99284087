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
// eager raises: same type, same message, no prefix; `run_as_torch_binding`
// also turns ATen's warnings into Python warnings, as eager does.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <exception>
#include <functional>

namespace tj::runtime {

// Sets the Python error eager PyTorch would set for `error` (non-null); a
// Python error already set (a `python_error`) is kept. Needs the GIL.
void set_python_error_from(std::exception_ptr error);

// The same for the exception being handled; call it inside a `catch`.
inline void set_python_error_from_current() { set_python_error_from(std::current_exception()); }

// Runs `body` (which must not leave a Python error set) the way torch's
// bindings run an op (HANDLE_TH_ERRORS / END_HANDLE_TH_ERRORS): warnings
// ATen emits meanwhile (TORCH_WARN) become Python warnings, so filters and
// `warnings.catch_warnings` see them and an "error" filter raises; an
// exception becomes eager's Python error. Returns true, or false with a
// Python error set. Needs the GIL.
bool run_as_torch_binding(const std::function<void()>& body);

}  // namespace tj::runtime
