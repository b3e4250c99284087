// Compiling a graph with data-dependent sizes (issue 43 item 1).
//
// compile_graph_step hands such a graph here for a registered compiling
// backend (aot_eager, llvm, ...). It is cut into a head, a middle and a
// tail (graph/unbacked_split.h): the head is compiled now, like any graph;
// the middle (the data-dependent ops) runs op by op on the real tensors; the
// tail is compiled the first time each size signature of its inputs (their
// sizes, strides, requires_grad, grad mode, and the values of the 0-d
// tensors read as sizes) comes, its metas inferred from the real tensors,
// through the same compile_graph_step (so a tail with data-dependent ops
// of its own is cut again). The backends' kernels take sizes as arguments,
// so a new size reuses the kernels already built (the llvm kernel cache
// keys on the rank); what runs again per size is AOT's capture, the passes
// and the lowering. Past kMaxTailSizes signatures the tail runs op by op.
// The `dynamic` log names each tail compile and the op its sizes come from.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "runtime/backend_step.h"

namespace tj::runtime {

// The compiled stages of `graph` for `example_inputs` (borrowed, one per
// placeholder); nullopt with `*why` when the graph cannot be cut (then it
// runs op by op). A step with `ok` false has a Python error set
// (BackendCompilerFailed of the head, config.suppress_errors off).
std::optional<CompiledStep> compile_in_stages(std::shared_ptr<const graph::Graph> graph,
                                              const std::vector<PyObject*>& example_inputs,
                                              const BackendChoice& choice, const std::string& where,
                                              std::string* why);

}  // namespace tj::runtime
