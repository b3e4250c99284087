// Shared by translate_autograd_function*.cpp: the trace-only ctx class of a
// custom autograd.Function (defined in `<string>`, so the inliner traces its
// methods: save_for_backward, mark_dirty, mark_non_differentiable,
// set_materialize_grads record what they are told on the instance, as
// `saved_tensors`, `_tj_dirty`, `_tj_non_differentiable`,
// `_tj_materialize_grads`), and the plain function behind a staticmethod.
#pragma once

#include <Python.h>

namespace tj::tracer {

// The ctx class (borrowed, alive for the process), or null.
PyObject* traced_ctx_class();
// `cls.<name>` when it is a plain Python function (borrowed: the class keeps
// it), else null.
PyObject* plain_static_function(PyObject* function_class, const char* name);

}  // namespace tj::tracer
