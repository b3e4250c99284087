// AOT: the captured graph made functional, and differentiable by LibTorch's
// own formulas, in front of a functional backend (the seed's
// `aot_dispatch_base` / `aot_dispatch_autograd` + `create_runtime_wrapper`).
//
// `aot_compile` records the captured graph on proxy tensors under LibTorch's
// functionalization (and, when an input requires grad and grad mode is on,
// its autograd engine, to record the joint forward/backward graph, then
// partitions it), compiles the functional forward (and backward) with the
// backend, and returns the runtime wrapper as a `CompiledFn` with the same
// calling convention as the captured graph: the graph's tensor inputs in,
// its outputs out. The wrapper deduplicates inputs, applies input data and
// metadata mutations to the caller's tensors in place (bumping their
// version counters), regenerates outputs that alias inputs, intermediates or
// each other as views of the right base, and with grad wraps the compiled
// forward/backward in one autograd node.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/size_template.h"
#include "jit/backend.h"

namespace tj::jit {

struct AotOptions {
  // Grad mode at compile time (guarded by the frame's guards): with it off,
  // or no input requiring grad, no joint graph is built.
  bool grad_enabled = true;
  // aot_specialize: make the graphs of the sizes even where one program
  // serves every size (config.debug_check_aot_templates compares them with
  // a capture's).
  bool specialize_graphs = false;
  std::string where;  // the frame, for logs
  // The graph's last N outputs are unused results kept only so that their
  // ops run (compile/aot/boundary.h): never differentiated
  // (graph::aot::CaptureOptions::undifferentiated_outputs).
  int undifferentiated_outputs = 0;
};

struct AotPoint;     // one capture kept for dynamic shapes (aot_template.h)
struct AotTemplate;  // the captures of several sizes made one (aot_template.h)

// The functional graphs AOT produced, for logs (`aot_graphs`) and tests.
struct AotGraphs {
  std::shared_ptr<const graph::Graph> forward;
  std::shared_ptr<const graph::Graph> backward;  // null without grad
  std::string summary;  // the input/output mutation and alias metadata, readable
  // The capture, kept for a dynamic entry to generalize over sizes
  // (aot_generalize).
  std::shared_ptr<const AotPoint> point;
  // aot_specialize: the backend's programs for every size ran (no lowering
  // for these sizes).
  bool one_program = false;
};

// `graph`: the captured (non-functional) graph; `example_inputs`: the real
// tensors of the first call, one per placeholder (their aliasing and
// requires_grad shape the result); `backend` must be functional.
Expected<CompiledFn> aot_compile(std::shared_ptr<const graph::Graph> graph,
                                 c10::ArrayRef<at::Tensor> example_inputs, const Backend& backend,
                                 const AotOptions& options, AotGraphs* graphs_out = nullptr);

// Dynamic shapes (issue 15): one AOT capture for every size of a dynamic
// entry. The captures of the entry's first sizes (AotGraphs::point, at
// least three) become one template: the functional graph with size nodes
// where their ints differ (graph/size_template.h) and one runtime plan,
// which must be the same at every point (no synthetic bases; view
// geometries fitted as the graph's ints). With grad the graph is the joint
// one, its tangents' sizes derived from the primals'; each size partitions
// its specialization again (the recomputation rule weighs bytes), so a
// size gets the forward and backward graphs its own capture would give.
Expected<std::shared_ptr<const AotTemplate>> aot_generalize(
    const std::vector<std::shared_ptr<const AotPoint>>& points);

// What aot_compile would return for `graph` (the captured graph at the
// sizes of `example_inputs`), with the template specialized for these sizes
// in place of a capture; an error when the template does not serve them.
// With a backend that has `compile_all_sizes` (llvm), the forward and
// backward programs of the first three sizes it serves become one program
// each for every size (jit/program_template.h): later sizes only evaluate
// the plan's view geometries, with no specialization, partition, passes or
// lowering (AotGraphs::one_program).
Expected<CompiledFn> aot_specialize(const AotTemplate& t, std::shared_ptr<const graph::Graph> graph,
                                           c10::ArrayRef<at::Tensor> example_inputs, const Backend& backend,
                                           const AotOptions& options, AotGraphs* graphs_out = nullptr);

// How two AOT results' graphs differ (forward, then backward), as text
// naming the first that does and printing both; "" when they print the
// same, metas' requires_grad flags aside (meta inference sets them from the
// parameters, a capture under no_grad does not, and no backend reads them).
// config.debug_check_aot_templates compares a template's graphs with a
// capture's this way.
std::string aot_graphs_differ(const AotGraphs& from_template, const AotGraphs& captured);

// The template's graph (size nodes in it; joint with grad), for logs and tests.
const graph::aot::SizeTemplate& aot_template_graph(const AotTemplate& t);

// Calls the AOT wrapper ran as the captured graph op by op (inputs aliased
// otherwise than at capture, gradients wanted of a graph compiled without,
// saved-tensor hooks active: each logged under `perf`), since the last
// zero_aot_runs_op_by_op(); counted in tracejit.counters().
long long aot_runs_op_by_op();
void zero_aot_runs_op_by_op();

}  // namespace tj::jit
