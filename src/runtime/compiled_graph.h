// CompiledGraph: the callable a transformed code object calls.
//
// It is called with the frame's graph inputs (tensors, in placeholder
// order) followed by pass-through objects, runs the graph with the chosen
// backend (the eager interpreter, or the callable a custom backend
// returned), and rebuilds the frame's return value from the output
// template: graph outputs, inputs returned as the very same objects, and
// constants, inside fresh tuples/lists/dicts.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>

#include "graph/graph.h"
#include "tracer/translator.h"

namespace tj::runtime {

// New reference. `backend_fn` (borrowed, may be null) is a Python callable
// taking the tensor inputs and returning a tuple/list of outputs; null runs
// the eager interpreter.
// `side_effects` are replayed (after the graph runs, before the output is
// built) on the inputs they name; `globals` (borrowed) is the frame's
// module dict, for global stores.
PyObject* make_compiled_graph(std::shared_ptr<const graph::Graph> graph, int tensor_inputs,
                              tracer::OutputTemplate output, PyObject* backend_fn,
                              std::vector<tracer::SideEffectTemplate> side_effects = {}, PyObject* globals = nullptr);

int register_compiled_graph(PyObject* module);

}  // namespace tj::runtime
