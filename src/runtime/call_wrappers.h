// The callables that tracejit.compile and tracejit.disable return.
//
// A CompiledFunction holds the user's callable and its CompileOptions; a
// call makes those options active on the thread (eval_frame.h) for the
// call's dynamic extent, so the frame hook compiles the function's frames
// and any frame it calls that is not inlined. A DisabledFunction makes no
// options active for its call: nothing under it is traced. Both are
// descriptors (so they work as methods) and carry a __dict__ so that
// functools.update_wrapper can copy __name__, __doc__, __wrapped__.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>

#include "runtime/runtime_state.h"

namespace tj::runtime {

// New reference, or null + error.
PyObject* make_compiled_function(PyObject* fn, std::shared_ptr<CompileOptions> options);
PyObject* make_disabled_function(PyObject* fn);

bool is_compiled_function(PyObject* obj);
bool is_disabled_function(PyObject* obj);

int register_call_wrappers(PyObject* module);

}  // namespace tj::runtime
