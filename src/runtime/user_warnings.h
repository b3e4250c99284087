// tracejit.TracejitWarning (a UserWarning) and the way tracejit's warnings
// reach Python's `warnings` module, so that `-W error`, filters and
// `warnings.catch_warnings` work on them.
//
// The runtime warns directly (warn_user, with the GIL). The layers below
// hold no Python state: their tj::warn() messages (support/warnings.h) are
// queued and raised by flush_pending_warnings() at the next point where the
// runtime holds the GIL and can raise (after a frame's compile, before a
// compiled call returns), as TracejitWarning at the user's frame.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string>

namespace tj::runtime {

// Borrowed; valid once `_tracejit` is initialized.
PyObject* tracejit_warning();

// Creates tracejit.TracejitWarning, adds it to the module and routes
// tj::warn() into the queue. 0, or -1 with an error set.
int register_warnings(PyObject* module);

// PyErr_WarnEx(TracejitWarning, message, stacklevel): 0, or -1 when a
// filter turned it into an exception (set).
int warn_user(const std::string& message, int stacklevel = 1);

// Raises the queued warnings of the layers below (needs the GIL): 0, or -1
// with the exception a filter made of one (the rest stay queued).
int flush_pending_warnings();

}  // namespace tj::runtime
