// The autograd.Function family of the tracer, as free functions over a
// TraceContext (trace_context.h): `CustomFunc.apply(*args)` of a
// torch.autograd.Function subclass (translate_autograd_function*.cpp).
//
// Shared by translate_autograd_function*.cpp: the trace-only ctx class of a
// custom autograd.Function (defined in `<string>`, so the inliner traces its
// methods: save_for_backward, mark_dirty, mark_non_differentiable,
// set_materialize_grads record what they are told on the instance, as
// `saved_tensors`, `_tj_dirty`, `_tj_non_differentiable`,
// `_tj_materialize_grads`), and the plain function behind a staticmethod.
#pragma once

#include <Python.h>

#include <string>
#include <utility>
#include <vector>

#include "tracer/trace_context.h"

namespace tj::tracer {

// The ctx class (borrowed, alive for the process), or null.
PyObject* traced_ctx_class();
// `cls.<name>` when it is a plain Python function (borrowed: the class keeps
// it), else null.
PyObject* plain_static_function(PyObject* function_class, const char* name);

// CustomFunc.apply(*args) of a torch.autograd.Function subclass
// (`apply_fn`: the apply value, whose source guards forward/backward): its
// forward inlined under no_grad; with grad, its backward traced into a
// body and one autograd_function node.
ValuePtr call_autograd_function(TraceContext cx, const ValuePtr& apply_fn, PyObject* function_class,
                                std::vector<ValuePtr> args, std::vector<std::pair<std::string, ValuePtr>> kwargs);
ValuePtr call_autograd_function_with_grad(TraceContext cx, const ValuePtr& apply_fn, PyObject* function_class,
                                          std::vector<ValuePtr> args);
// The trace-only ctx, `needs_input_grad` set (all False unless `real_needs_input_grad`).
ValuePtr make_autograd_ctx(TraceContext cx, const std::vector<ValuePtr>& args, bool real_needs_input_grad);

}  // namespace tj::tracer
