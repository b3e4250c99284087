// What runs after a compiled graph: its Python values rebuilt from the
// trace's templates and its side effects replayed (list/dict contents,
// attributes, globals, grad mode, autocast blocks, warnings).
#pragma once

#include <Python.h>

#include <vector>

#include "support/py_ref.h"
#include "tracer/trace_api.h"

namespace tj::runtime {

// The value described by `t` (a new reference), or null with a Python
// error set. `memo` holds the lists and dicts built so far (borrowed: the
// value under construction owns them), so one that appears twice is one
// object. `inputs` are the call's arguments (borrowed).
PyRef rebuild(const tracer::OutputTemplate& t, const std::vector<PyRef>& outputs, PyObject* const* inputs,
              std::vector<PyObject*>& memo);

// Replays one side effect; 0, or -1 with a Python error set.
int replay(const tracer::SideEffectTemplate& e, const std::vector<PyRef>& outputs, PyObject* const* inputs,
           std::vector<PyObject*>& memo, PyObject* globals);

}  // namespace tj::runtime
