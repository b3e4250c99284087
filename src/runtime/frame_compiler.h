// The frame compiler: what on_frame calls on a cache miss. It traces the
// frame (tracer::trace_frame), hands the graph to the backend, builds the
// transformed code that calls the compiled graph, and compiles the guards.
// An unsupported frame runs unchanged (its reason goes to the graph_breaks
// log and to explain), or raises tracejit.Unsupported under fullgraph=True.
//
// Explain mode (tracejit.explain) records every graph and every reason of
// one run, tracing each frame from scratch and caching nothing.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/runtime_state.h"

namespace tj::runtime {

// `automatic`: dims to trace dynamic under dynamic=None (CodeState::automatic_dynamic);
// `first_compile`: the code has no cache entry yet, so under distributed
// training the compiler collective runs (compiler_collective.h) and may add
// to `automatic`; `ints`: the ints to trace as graph inputs
// (CodeState::dynamic_ints), moved to its static_ints when a trace shows
// they are better constants.
FrameCompileResult compile_frame(const tj_FrameView& frame, const CompileOptions& options,
                                 std::unordered_map<std::string, std::vector<bool>>* automatic = nullptr,
                                 bool first_compile = false, DynamicInts* ints = nullptr);

// Explain mode: begin() starts recording (and bypassing the caches) on
// this process; end() stops and returns a new dict with "graphs" (list of
// GraphModule), "break_reasons" (list of (reason, filename, lineno)) and
// "op_count".
void explain_begin();
PyObject* explain_end();
bool explain_active();

// For tests and tools: traces `fn`'s code (a Python function, borrowed) as
// if called with the positional `args` (a tuple), without running it.
// Returns a new dict: "graph" (printed graph text or None), "guards"
// (guard lines), "unsupported" (reason or None), "lineno", "op_count".
PyObject* trace_for_test(PyObject* fn, PyObject* args);
// Compiles `fn` for these positional args with the eager backend, without
// running or caching it: the transformed code object (new reference), or
// the reason (a str) when the frame would run unchanged.
PyObject* compile_for_test(PyObject* fn, PyObject* args);

}  // namespace tj::runtime
