// Which pending Python errors C++ code may clear, and which it must leave.
//
// A failed call into Python is one of three things, and the code says which:
//  - A probe whose failure means "no": a missing attribute raises
//    AttributeError, a missing key KeyError, a value that does not convert
//    TypeError or OverflowError. The caller names the errors it expects:
//    `clear_expected_error({PyExc_AttributeError})` clears a matching one
//    and leaves any other set (a user __getattr__ raising RuntimeError,
//    KeyboardInterrupt, MemoryError, a bug of ours), so that it reaches the
//    layer's reporting path: the tracer's unsupported() and the end of
//    trace_frame name it and the frame runs in CPython, which meets the
//    same condition itself; the runtime returns it to the eval loop.
//  - Best effort: any failure means "no", whatever raised it (a repr for a
//    log line, a name for a message, a lookup in an object whose failure is
//    replayed when the code runs). These keep PyErr_Clear() with a comment
//    saying why any error will do.
//  - An interruption (`pending_interruption()`: KeyboardInterrupt or
//    MemoryError): raised by the process's state, not by the code, so
//    nothing done again later raises it again. Code that otherwise treats
//    every error as "no" (the guard checks) leaves these set.
//
// Taking an error out (`FetchedError`: owned, restored or dropped;
// `take_error_text()`: the tracer's "<type>: <message>" for a reason;
// `SavedError`: the pending error put aside while best-effort code runs
// and set again after) is written once here.
//
// Naming: `pending_*` only asks; `clear_unless_interruption` is the
// best-effort clear that keeps interruptions; `clear_expected_error` returns true
// when no error is left set (none was, or the one set was expected and is
// now cleared), and so does `clear_probe_error`, for the probe errors. Header only: the Python headers come from the layer that
// includes it, as for py_ref.h. All of it needs the GIL.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "support/py_ref.h"

namespace tj {

// Whether an error is set and it is an instance of one of `types` (or of a
// subclass: PyExc_LookupError matches KeyError and IndexError).
inline bool pending_error_is(std::initializer_list<PyObject*> types) {
  if (!PyErr_Occurred()) return false;
  for (PyObject* type : types)
    if (PyErr_ExceptionMatches(type)) return true;
  return false;
}

// Clears the pending error if it is one of `types`. Returns whether no error
// is left set: false means an unexpected one is, and the caller must stop
// and let it reach its reporting path (never call further Python APIs as
// though nothing happened).
inline bool clear_expected_error(std::initializer_list<PyObject*> types) {
  if (!PyErr_Occurred()) return true;
  if (!pending_error_is(types)) return false;
  PyErr_Clear();
  return true;
}

// Whether the pending error is a KeyboardInterrupt or a MemoryError: an
// error of the moment (a signal, memory running out) that no retry of the
// same code reproduces, so it must never be dropped as "this did not work".
inline bool pending_interruption() { return pending_error_is({PyExc_KeyboardInterrupt, PyExc_MemoryError}); }

// The errors a probe of ours may fail with (an attribute or item lookup, a
// conversion or a number that does not fit, an optional import), for code
// that probes several ways before deciding: anything else is unexpected.
inline bool pending_probe_error() {
  return pending_error_is({PyExc_AttributeError, PyExc_LookupError, PyExc_TypeError, PyExc_ValueError,
                           PyExc_ArithmeticError, PyExc_ImportError});
}
inline bool clear_probe_error() { return !PyErr_Occurred() || (pending_probe_error() && (PyErr_Clear(), true)); }

// For code where any failure means "no" (the guard checks): clears the
// pending error unless it is an interruption, which stays set.
inline void clear_unless_interruption() {
  if (PyErr_Occurred() && !pending_interruption()) PyErr_Clear();
}

// A Python error taken out of the pending slot: owned, and either set
// again (restore) or dropped with the object.
class FetchedError {
 public:
  // Takes the pending error (clearing it); empty when none is set.
  static FetchedError fetch() {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    FetchedError e;
    e.type_ = PyRef::steal(type);
    e.value_ = PyRef::steal(value);
    e.traceback_ = PyRef::steal(traceback);
    return e;
  }
  // Makes the value an instance of the type (PyErr_SetString leaves a str).
  void normalize() {
    if (!type_) return;
    PyObject *type = type_.release(), *value = value_.release(), *traceback = traceback_.release();
    PyErr_NormalizeException(&type, &value, &traceback);
    type_ = PyRef::steal(type);
    value_ = PyRef::steal(value);
    traceback_ = PyRef::steal(traceback);
  }
  explicit operator bool() const { return bool(type_); }
  PyObject* type() const { return type_.get(); }    // borrowed
  PyObject* value() const { return value_.get(); }  // borrowed; may be null
  // The type's name ("" when empty).
  std::string type_name() const {
    return type_ && PyType_Check(type_.get()) ? reinterpret_cast<PyTypeObject*>(type_.get())->tp_name : "";
  }
  // str(value), or nullopt when there is no value or it does not print (a
  // pending error of str() itself is cleared: any failure means "no text").
  std::optional<std::string> message() const {
    if (!value_) return std::nullopt;
    PyRef text = PyRef::steal(PyObject_Str(value_.get()));
    const char* s = text ? PyUnicode_AsUTF8(text.get()) : nullptr;
    if (!s) {
      PyErr_Clear();  // best effort, as said above
      return std::nullopt;
    }
    return std::string(s);
  }
  // Sets it as the pending error again (replacing any); empty afterwards.
  void restore() { PyErr_Restore(type_.release(), value_.release(), traceback_.release()); }

 private:
  PyRef type_, value_, traceback_;
};

// The pending Python error as "<type>: <message>" ("<type>" alone when the
// message is empty or does not print), cleared; "" when none is set.
inline std::string take_error_text() {
  FetchedError e = FetchedError::fetch();
  if (!e) return "";
  e.normalize();
  std::string text = e.type_name().empty() ? "an error" : e.type_name();
  std::optional<std::string> message = e.message();
  if (message && !message->empty()) text += ": " + *message;
  return text;
}

// For best-effort code run while an error is pending (a name for the
// message that reports it, a log line): the pending error is put aside for
// the scope and set again at its end; any error the code left set is
// cleared then, the saved one being what the caller reports.
class SavedError {
 public:
  SavedError() : saved_(FetchedError::fetch()) {}
  ~SavedError() {
    PyErr_Clear();  // best effort, as said above
    saved_.restore();
  }
  SavedError(const SavedError&) = delete;
  SavedError& operator=(const SavedError&) = delete;
  const FetchedError& error() const { return saved_; }

 private:
  FetchedError saved_;
};

}  // namespace tj
