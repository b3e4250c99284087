// AOT step by step (runtime_wrapper.h's aot_compile and aot_specialize
// split into their steps), for the compile pipeline (compile/pipeline.h),
// which runs the backend passes between the partition and the backend's
// compile: aot_compile is aot_capture, aot_partition, aot_compile_graphs,
// aot_runtime_wrapper; aot_specialize the same with
// aot_capture_from_template first.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compile/aot/capture.h"
#include "compile/aot/runtime_wrapper.h"

namespace tj::jit {

struct AotPlan;  // what the runtime wrapper does around the compiled graphs

// Step "capture": the functional graph of one capture, or of the size
// template specialized for these sizes, and the plan of the runtime wrapper.
struct AotCaptured {
  std::shared_ptr<AotPlan> plan;
  // The forward graph, or with a backward the joint graph (primals, then
  // tangents). Null when the template's programs for every size serve these
  // sizes (`one_program`) and no graph was asked for (AotOptions::specialize_graphs).
  std::shared_ptr<const graph::Graph> graph;
  bool joint = false;    // `graph` is the joint graph: aot_partition splits it
  std::string summary;   // the input/output mutation and alias metadata, readable
  // From a template: the template, its given inputs' metas at these sizes,
  // and the backend's programs for every size when they serve them.
  const AotTemplate* from_template = nullptr;
  std::vector<graph::TensorMeta> given;
  bool one_program = false;
  // The one program serves, and `graph` is these sizes' joint graph all the
  // same, partitioned only for what needs these sizes' backward graph: the
  // layouts of its gradients and a run without absent tangents
  // (aot_rt::Plan::layout_graph).
  bool for_layouts = false;
  CompiledFn served_forward, served_backward;
  // A capture kept for a dynamic entry's size template (AotGraphs::point);
  // null from a template, and for a capture with grad that records no backward.
  std::shared_ptr<const AotPoint> point;
  // A capture's metadata (its graph moved into `graph`), for the graph
  // cache (compile/graph_cache.h); null from a template.
  std::shared_ptr<const graph::aot::Capture> capture;
};
Expected<AotCaptured> aot_capture(std::shared_ptr<const graph::Graph> graph, c10::ArrayRef<at::Tensor> example_inputs,
                                  const AotOptions& options);
// What aot_capture returns for a capture made already (`capture`, read
// back from the graph cache): the runtime wrapper's plan made from it.
AotCaptured aot_captured_from(std::shared_ptr<const graph::Graph> graph, graph::aot::Capture capture,
                              c10::ArrayRef<at::Tensor> example_inputs, const AotOptions& options);
Expected<AotCaptured> aot_capture_from_template(const AotTemplate& t, std::shared_ptr<const graph::Graph> graph,
                                                c10::ArrayRef<at::Tensor> example_inputs, const AotOptions& options);

// Step "partition": the forward and backward graphs of a joint capture (the
// backend's pointwise fusion decides whether cheap values are recomputed);
// the captured graph itself as the forward otherwise.
struct AotPartitioned {
  std::shared_ptr<const graph::Graph> forward;
  std::shared_ptr<const graph::Graph> backward;  // null without a backward
  std::string note;  // saved tensors and bytes, for the summary ("" without a backward)
};
Expected<AotPartitioned> aot_partition(const AotCaptured& captured, const Backend& backend);
// What aot_partition records in the plan about its backward (which saved
// tensors each tangent reads); for graphs read back from the graph cache.
void aot_take_partition(const AotCaptured& captured, const AotPartitioned& graphs);

// Step "backend compile": `forward` and `backward` (the partition's graphs,
// after any passes) compiled with `backend`; from a template, through its
// programs for every size (size_programs.h). Errors name the graph that
// failed ("backend <name> (forward): ...").
struct AotCompiledGraphs {
  CompiledFn forward;
  CompiledFn backward;  // empty without a backward
};
Expected<AotCompiledGraphs> aot_compile_graphs(const AotCaptured& captured,
                                               const std::shared_ptr<const graph::Graph>& forward,
                                               const std::shared_ptr<const graph::Graph>& backward,
                                               const Backend& backend, const std::string& where);

// Step "runtime wrapper": the CompiledFn that runs the compiled graphs with
// the captured graph's calling convention (see the top of runtime_wrapper.h).
CompiledFn aot_runtime_wrapper(const AotCaptured& captured, AotCompiledGraphs compiled);

}  // namespace tj::jit
