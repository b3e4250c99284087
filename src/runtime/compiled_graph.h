// CompiledGraph: the callable a transformed code object calls.
//
// It is called with the frame's graph inputs (tensors, in placeholder
// order) followed by pass-through objects, runs what the backend step
// compiled (a jit::CompiledFn, or the callable a custom Python backend
// returned), and rebuilds the frame's return value from the output
// template: graph outputs, inputs returned as the very same objects, and
// constants, inside fresh tuples/lists/dicts.
//
// When the graph fails, the Python error is eager's own (cpp_errors.h), and
// a graph whose trace can be undone asks the frame hook to run the frame's
// original bytecode instead (eval_frame.h, tj_request_rerun): side effects,
// try/except and the traceback are eager's. Undone: the inputs it writes as
// it runs (an InputSnapshot taken before the call, input_snapshot.h; AOT's
// wrapper writes only after its functional graph, so none is needed when
// the call aliases as at compile time) and the CPU generator's state; not
// undone, hence not rerun: a written input that requires grad, a written
// attribute, a custom backend's writes (graph/effects.h).
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>
#include <optional>
#include <string>

#include "graph/graph.h"
#include "runtime/backend_step.h"
#include "runtime/call_inputs.h"
#include "tracer/trace_api.h"

namespace tj::runtime {

// New reference. `compiled` is what the backend step produced: its
// `python_fn` (its reference taken over) is a Python callable taking the
// tensor inputs and returning a tuple/list of outputs; else `fn` runs.
// `side_effects` are replayed (after the graph runs, before the output is
// built) on the inputs they name; `globals` (borrowed) is the frame's
// module dict, for global stores. `recompile_for_sizes` (an entry with
// dynamic dims, tracer/dynamic_shapes.cpp): a call whose tensor inputs have
// other sizes than `compiled` was made for compiles the graph again for
// them with this backend (metas inferred anew; kept per size signature,
// at most 64; then op by op); `where` names the frame in messages.
// `int_inputs`: the inputs the caller passes as Python ints (automatic
// dynamic ints), each made a 0-d int64 tensor before anything reads it.
// `size_inputs`: inputs computed from the tensor inputs' sizes at each call
// (sizes used as numbers); the caller passes any object in their place.
PyObject* make_compiled_graph(std::shared_ptr<const graph::Graph> graph, int tensor_inputs,
                              tracer::OutputTemplate output, CompiledStep compiled,
                              std::vector<tracer::SideEffectTemplate> side_effects = {}, PyObject* globals = nullptr,
                              std::optional<BackendChoice> recompile_for_sizes = std::nullopt, std::string where = "",
                              std::vector<int> int_inputs = {}, std::vector<tracer::SizeInput> size_inputs = {});

// int_input_tensor and size_input_tensor: runtime/call_inputs.h.

int register_compiled_graph(PyObject* module);

}  // namespace tj::runtime
