// The compile pipeline: what happens to a captured graph between the trace
// and the runtime, as one list of named steps (compile_graph, pipeline.cpp,
// reads top to bottom as this list, in the manner of Halide's Lower.cpp):
//
//   fold sizes       size nodes (graph/sym_ints.h) become constants for these sizes
//   AOT boundary     refuse what AOT cannot represent; keep unused results (aot/boundary.h)
//   graph cache      AOT's result from disk (graph_cache.h): capture, partition and
//                    passes skipped on a hit, the result stored after a capture's compile
//   capture          functionalize on proxy tensors, joint with the backward
//                    when an input requires grad (aot/capture.h), or specialize
//                    a dynamic entry's AOT size template for these sizes
//   partition        the joint graph split into forward and backward (aot/partition.h)
//   passes           decompositions (fusing backends), DCE, constant folding, CSE
//   backend compile  each functional graph compiled by the backend (jit/backend.h)
//   runtime wrapper  AOT's wrapper (aot/runtime_wrapper.h), then eager's outputs
//
// A backend that is not functional (`eager`) gets the captured graph with
// its sizes folded and nothing else. Each step logs the graph it made under
// `aot_graphs` (the passes' result under `output_code`) when that topic is
// on. No Python here: the runtime (runtime/backend_step.cpp) adds Python
// callable backends, the GIL, warnings and BackendCompilerFailed, and lends
// the steps what they need of it through `Hooks`.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "compile/aot/boundary.h"
#include "compile/aot/runtime_wrapper.h"
#include "compile/aot/steps.h"
#include "graph/graph.h"
#include "jit/backend.h"
#include "support/expected.h"

namespace tj::compile {

enum class Step { fold_sizes, aot_boundary, capture, partition, passes, backend_compile, runtime_wrapper, check_template };
const char* step_name(Step step);

struct Request {
  std::shared_ptr<const graph::Graph> graph;  // as captured, its metas those of `example_inputs`
  std::vector<at::Tensor> example_inputs;     // one per placeholder
  const jit::Backend* backend = nullptr;
  std::string where;          // the frame, for messages and logs
  bool grad_enabled = true;   // grad mode at compile time (the frame's guards check it)
  // A dynamic entry's AOT size template (jit::aot_generalize) and the
  // boundary around its first capture: specialized for these sizes in
  // place of a capture. Only for a functional backend.
  const jit::AotTemplate* aot_template = nullptr;
  const AotBoundary* template_boundary = nullptr;
  // config.debug_check_aot_templates: with `aot_template`, capture these
  // sizes too and compare the graphs (Step::check_template when they differ).
  bool check_template = false;
};

// What the steps borrow from their caller (the runtime). Either may be empty.
struct Hooks {
  // Checked between AOT's steps: true abandons the compile (a Ctrl-C the
  // runtime keeps and raises; the failure's message is "interrupted").
  std::function<bool()> interrupted;
  // A functional backend failed on `graph` (as handed to it, after the
  // passes) with these inputs: its compile, or a call of what it compiled
  // (the repro tools dump it: runtime/backend_step.h, take_last_backend_failure).
  std::function<void(std::shared_ptr<const graph::Graph> graph, std::vector<graph::TensorMeta> inputs,
                     std::string message)>
      backend_failed;
};

struct Compiled {
  jit::CompiledFn fn;
  bool through_aot = false;  // `fn` is AOT's wrapper: it writes the caller's tensors after its whole graph ran
  // The capture and the boundary around it, kept for a dynamic entry's AOT
  // size template (null from a template, or without a capture to keep).
  std::shared_ptr<const jit::AotPoint> aot_point;
  std::shared_ptr<const AotBoundary> aot_boundary;
  bool one_program = false;  // from a template whose backend programs serve every size
  std::string aot_summary;   // AOT's metadata, readable ("" from a template or without AOT)
};

// Who failed decides what the user is told (runtime/backend_step.cpp).
enum class Blame {
  sizes,    // folding the size nodes
  aot,      // AOT cannot capture the graph (it runs as captured: logged, not warned)
  backend,  // the backend's compile, or the passes before it
};

struct Failure {
  Step step = Step::fold_sizes;
  Blame blame = Blame::aot;
  // One line; an internal error (ErrorKind::internal) already reported
  // (support/internal_error.h) and worded as one.
  std::string message;
  ErrorKind kind = ErrorKind::unsupported;
};

struct Result {
  std::optional<Compiled> compiled;  // else `failure`
  Failure failure;
  bool captured = false;  // AOT's capture ran (the `aot_captures` counter)
  bool from_graph_cache = false;  // AOT's result came from the graph cache (`graph_cache_hits`)
  // The graph with its sizes folded (null when that step failed): what a
  // failed compile runs op by op.
  std::shared_ptr<const graph::Graph> folded;
};

// The steps above for `request` with its backend. Exceptions (LibTorch's,
// or a bug of ours) become failures.
Result compile_graph(const Request& request, const Hooks& hooks = {});

// Steps "fold sizes", "AOT boundary" and "capture" alone, for a probe of
// a dynamic graph at sizes of the runtime's choosing (runtime/size_probes.h):
// the capture and its boundary, kept as a point of an AOT size template;
// nothing is partitioned or compiled. Only for a functional backend, with
// no template in `request`.
struct Probe {
  std::shared_ptr<const jit::AotPoint> point;
  std::shared_ptr<const AotBoundary> boundary;
};
Expected<Probe> capture_probe(const Request& request, const Hooks& hooks = {});

// Step "fold sizes" alone: `graph` itself when it has no size nodes, else a
// copy with them folded (what a Python callable backend is given).
Expected<std::shared_ptr<const graph::Graph>> fold_sizes(std::shared_ptr<const graph::Graph> graph);

}  // namespace tj::compile
