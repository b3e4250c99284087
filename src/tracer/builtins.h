// The builtins family of the tracer (translate_builtins.cpp), as a free
// function over a TraceContext (trace_context.h): len, isinstance, range,
// min, max, abs, getattr, hasattr, setattr, tuple, list, dict, int, float,
// bool, enumerate, zip, ..., dispatched through one table keyed by the
// builtin's identity; a builtin without a handler is folded on constant
// arguments when it is pure, else unsupported.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <vector>

#include "tracer/trace_context.h"

namespace tj::tracer {

// A call of a builtin function or type (a function of module `builtins`
// or a builtin type): the result, or null with the failure set.
ValuePtr call_builtin(TraceContext cx, PyObject* fn, std::vector<ValuePtr> args, TraceContext::Kwargs kwargs);

// The builtins that read the frame being traced (frame_builtins.cpp):
// super() / super(cls, self) in a method, an object value over a real super
// object with a SuperPayload; locals() (and vars()), a fresh dict value of
// the frame's bound locals, cells and free variables. Null with the failure set.
ValuePtr make_super(TraceContext cx, const std::vector<ValuePtr>& args);
ValuePtr locals_dict(TraceContext cx);

}  // namespace tj::tracer
