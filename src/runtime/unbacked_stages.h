// Compiling a graph with data-dependent sizes (issue 43 item 1).
//
// compile_graph_step hands such a graph here for a registered compiling
// backend (aot_eager, llvm, ...). It is cut into a head, a middle and a
// tail (graph/unbacked_split.h): the middle (the data-dependent ops) runs
// op by op on the real tensors; the head (compiled now for the first
// sizes) and the tail are each compiled the first time each size signature
// of their inputs (sizes, strides, requires_grad, grad mode, and the values
// of the 0-d tensors read as sizes) comes, metas inferred from the real
// tensors, through the same compile_graph_step (so a tail with
// data-dependent ops of its own is cut again). Each keeps its first AOT
// captures and makes them one AOT size template (graph/size_template.h),
// so later sizes compile with no capture: only sizes of 2 or more are
// captured for it or served by it (counts 0 and 1 compile on their own),
// and a stage that reads 0-d tensor values as sizes (x[:t]) runs as one
// that reads them as sizes of extra [v, 0] inputs (values >= 0), so its
// template covers the values too. Past 64
// signatures without a template (4096 with one) a stage runs op by op
// (sizes_run_op_by_op). When the cut folded no size node the compiled
// stages serve every size of the graph's inputs (serves_every_size), so a
// dynamic entry reuses them. The `dynamic` log names each compile and the
// op its sizes come from.
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
