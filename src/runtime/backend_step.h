// The runtime's side of the compile pipeline (compile/pipeline.h: fold
// sizes, AOT boundary, capture, partition, passes, backend compile, runtime
// wrapper): what needs Python. A Python callable backend gets the captured
// graph, its sizes folded, as a GraphModule; a registered one goes through
// the pipeline, with the GIL released while AOT runs (LibTorch's autograd
// engine refuses to run under it) and a Ctrl-C between steps kept and
// raised. A failure of AOT falls back to running the captured graph op by
// op (logged, counted in `backend_fallbacks`); a failure of the backend does
// too, with a warning, or raises BackendCompilerFailed when
// `config.suppress_errors` is false.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "compile/aot/boundary.h"
#include "compile/aot/runtime_wrapper.h"
#include "jit/backend.h"
#include "support/py_ref.h"

namespace tj::runtime {

struct BackendChoice {
  std::string name;                   // a registered backend's name ("" for a callable)
  PyObject* python_callable = nullptr;  // borrowed, or null
  bool suppress_errors = true;
};

// What the compiled graph object runs: a compiled function, or a Python
// callable returned by a custom backend. Exactly one is set
// unless `ok` is false (a Python error is set then).
struct CompiledStep {
  bool ok = true;
  jit::CompiledFn fn;
  PyRef python_fn;
  // `fn` is AOT's runtime wrapper: it writes the caller's tensors only after
  // the whole functional graph ran, so a failure leaves the inputs as they
  // were (the runtime may then rerun the frame, compiled_graph.h).
  bool defers_input_writes = false;
  // Which tensor inputs shared storage at compile time (pairs i < j): AOT's
  // wrapper defers writes only for calls aliased the same way (else it runs
  // the captured graph op by op, writing as it goes).
  std::vector<std::pair<int, int>> aliasing;
  // AOT's capture (without grad) and the boundary around it: what a dynamic
  // entry keeps to make one AOT size template of its first sizes
  // (compiled_graph.cpp). Null otherwise.
  std::shared_ptr<const jit::AotPoint> aot_point;
  std::shared_ptr<const compile::AotBoundary> aot_boundary;
  // compile_from_aot_template: the backend's programs for every size serve it.
  bool one_program = false;
  // compile_in_stages: `fn` compiles each stage per size signature of its
  // inputs itself, so it serves every size the captured graph's metas hold
  // for (a dynamic entry reuses it for other sizes).
  bool serves_every_size = false;
};

// The graph a functional backend last failed on (its compile failed, or its
// compiled function threw), as handed to it after AOT and the passes, with
// the inputs of that compile or call: what `repro_after="aot"` dumps
// (tracejit/_repro.py). Taking it clears it.
struct BackendFailure {
  std::shared_ptr<const graph::Graph> graph;
  std::vector<graph::TensorMeta> inputs;
  std::string message;
};
std::optional<BackendFailure> take_last_backend_failure();

// The pairs (i < j) of `n` tensor inputs (borrowed) that share storage.
std::vector<std::pair<int, int>> input_aliasing(PyObject* const* inputs, int n);

// Compiles the captured `graph` for `example_inputs` (borrowed Python
// tensors, one per placeholder). `where` names the frame for messages.
CompiledStep compile_graph_step(std::shared_ptr<const graph::Graph> graph, const std::vector<PyObject*>& example_inputs,
                                const BackendChoice& choice, const std::string& where);

// compile_graph_step with the dynamic entry's AOT size template in place of
// AOT's capture (compile/aot/runtime_wrapper.h, aot_specialize): `graph` is the entry's captured
// graph with its metas inferred for the sizes of `example_inputs`;
// `boundary` the one around the template's first capture. When the template
// does not serve these sizes, or the backend fails, `ok` is false with `why`
// set and no Python error: the caller compiles as usual.
CompiledStep compile_from_aot_template(std::shared_ptr<const graph::Graph> graph, const jit::AotTemplate& t,
                                       const compile::AotBoundary& boundary, const std::vector<PyObject*>& example_inputs,
                                       const BackendChoice& choice, const std::string& where, std::string* why);

// The readable AOT metadata (mutations, aliasing, partition: saved tensors
// and bytes) of the last graph AOT compiled, for scripts/bench and tests.
const std::string& last_aot_summary();

}  // namespace tj::runtime
