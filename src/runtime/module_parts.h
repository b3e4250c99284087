// The pieces of the `_tracejit` extension module that live beside the
// layer they expose. module.cpp calls each register_* from PyInit__tracejit;
// each adds its functions/types to `module` and returns 0, or -1 with a
// Python error set. The tracer's bytecode bindings (decode/assemble for
// tests and tools) are tracer::register_bytecode_bindings (trace_api.h).
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace tj::runtime {

int register_core(PyObject* module);        // module.cpp: hook, counters, compile/disable wrappers
int register_graph(PyObject* module);       // py_graph.cpp: tracejit.GraphModule

}  // namespace tj::runtime

namespace tj::graph {
class Graph;
}

#include <memory>

namespace tj::runtime {
// A new tracejit.GraphModule wrapping `graph` (shared, not copied); null +
// error on failure. Defined beside the GraphModule type (py_graph.cpp).
PyObject* wrap_graph_module(std::shared_ptr<graph::Graph> graph);
// The same for a graph the caller will not mutate (frame_compiler.cpp).
PyObject* make_graph_module(std::shared_ptr<const graph::Graph> graph);
}  // namespace tj::runtime
