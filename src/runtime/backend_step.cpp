// The runtime's side of the compile pipeline; see backend_step.h.
#include "runtime/backend_step.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>

#include <mutex>

#include "compile/pipeline.h"
#include "graph/unbacked_sizes.h"
#include "runtime/module_parts.h"
#include "runtime/runtime_context.h"
#include "runtime/runtime_state.h"
#include "runtime/tracejit_module.h"
#include "runtime/unbacked_stages.h"
#include "runtime/user_warnings.h"
#include "support/internal_error.h"
#include "support/log.h"
#include "support/py_errors.h"
#include "support/py_gil.h"
#include "support/tensor_bridge.h"

namespace tj::runtime {

namespace {

// A Ctrl-C between the compile steps that run without the GIL (AOT's
// capture, the passes, the backend's compile): the GIL is taken back for a
// moment to check pending signals, as CPython's eval loop would; the error
// is kept for this thread until compile_graph_step raises it (the compile
// is abandoned, not fallen back from).
struct Interruption {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* traceback = nullptr;
};
thread_local Interruption t_interruption;

bool interrupted_between_steps() {
  if (t_interruption.type) return true;
  PyGILState_STATE gil = PyGILState_Ensure();
  if (PyErr_CheckSignals() < 0) PyErr_Fetch(&t_interruption.type, &t_interruption.value, &t_interruption.traceback);
  PyGILState_Release(gil);
  return t_interruption.type != nullptr;
}

// Sets the kept interruption as the pending Python error (GIL held); false when there is none.
bool raise_kept_interruption() {
  if (!t_interruption.type) return false;
  PyErr_Restore(t_interruption.type, t_interruption.value, t_interruption.traceback);
  t_interruption = Interruption{};
  return true;
}

void record_failure(std::shared_ptr<const graph::Graph> g, std::vector<graph::TensorMeta> inputs, std::string message) {
  RuntimeContext& context = runtime_context();
  std::lock_guard<std::mutex> lock(context.failure_mutex);
  context.last_failure = BackendFailure{std::move(g), std::move(inputs), std::move(message)};
}

// A Python callable backend, called as backend(GraphModule, example_inputs).
// The callable it returns; null + error on failure.
PyRef run_python_backend(PyObject* backend, const std::shared_ptr<const graph::Graph>& g,
                         const std::vector<PyObject*>& example_inputs) {
  PyRef gm = PyRef::steal(make_graph_module(g));
  if (!gm) return PyRef();
  PyRef examples = PyRef::steal(PyList_New(0));
  if (!examples) return PyRef();
  for (PyObject* t : example_inputs)
    if (PyList_Append(examples.get(), t) < 0) return PyRef();
  PyRef fn = PyRef::steal(PyObject_CallFunctionObjArgs(backend, gm.get(), examples.get(), nullptr));
  if (fn && !PyCallable_Check(fn.get())) {
    fn = PyRef();
    PyErr_SetString(PyExc_TypeError, "the backend did not return a callable");
  }
  return fn;
}

// The captured graph run op by op: what a failed backend falls back to.
jit::CompiledFn eager_fallback(std::shared_ptr<const graph::Graph> g) {
  const jit::Backend* eager = jit::find_backend("eager");
  assert(eager && "the eager backend is always registered");
  auto fn = eager->compile(std::move(g), {});
  assert(fn.ok() && "the eager backend cannot fail to compile");
  return std::move(*fn);
}

// Turns a compile failure into the fallback (with a warning) or, without
// suppress_errors, into BackendCompilerFailed. `message` is one line.
CompiledStep fail_or_fall_back(const std::string& message, std::shared_ptr<const graph::Graph> g,
                               const BackendChoice& choice) {
  CompiledStep out;
  if (!choice.suppress_errors) {
    PyErr_SetString(backend_compiler_failed_error(), message.c_str());
    out.ok = false;
    return out;
  }
  bump(Counter::backend_fallbacks);
  TJ_LOG(perf, "{}; running the captured graph op by op", message);
  if (warn_user(message + "; running the graph eagerly") < 0) {
    out.ok = false;
    return out;
  }
  out.fn = eager_fallback(std::move(g));
  return out;
}

// The text of the pending Python error (cleared).
std::string take_python_error_text() {
  FetchedError e = FetchedError::fetch();
  e.normalize();
  return e.message().value_or("?");  // a message that does not print: "?"
}

// What the pipeline borrows from the runtime.
compile::Hooks runtime_hooks() {
  compile::Hooks hooks;
  hooks.interrupted = interrupted_between_steps;
  hooks.backend_failed = record_failure;
  return hooks;
}

compile::Request request_for(std::shared_ptr<const graph::Graph> graph, const std::vector<PyObject*>& example_inputs,
                             const jit::Backend& backend, const std::string& where) {
  compile::Request request;
  request.graph = std::move(graph);
  for (PyObject* t : example_inputs) request.example_inputs.push_back(unpack_tensor(t));
  request.backend = &backend;
  request.where = where;
  request.grad_enabled = at::GradMode::is_enabled();
  return request;
}

// The pipeline, with the GIL released for a functional backend's (AOT's
// capture runs LibTorch's autograd engine on proxies).
compile::Result run_pipeline(const compile::Request& request) {
  if (!request.backend->functional) return compile::compile_graph(request, runtime_hooks());
  ReleasedGil released;
  return compile::compile_graph(request, runtime_hooks());
}

}  // namespace

std::optional<BackendFailure> take_last_backend_failure() {
  RuntimeContext& context = runtime_context();
  std::lock_guard<std::mutex> lock(context.failure_mutex);
  auto out = std::move(context.last_failure);
  context.last_failure.reset();
  return out;
}

const std::string& last_aot_summary() { return runtime_context().last_aot_summary; }

std::vector<std::pair<int, int>> input_aliasing(PyObject* const* inputs, int n) {
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < n; ++i) {
    const at::Tensor& a = unpack_tensor(inputs[i]);
    for (int j = i + 1; j < n; ++j) {
      const at::Tensor& b = unpack_tensor(inputs[j]);
      if (!a.has_storage() || !b.has_storage() || a.storage().is_alias_of(b.storage())) pairs.emplace_back(i, j);
    }
  }
  return pairs;
}

CompiledStep compile_graph_step(std::shared_ptr<const graph::Graph> graph, const std::vector<PyObject*>& example_inputs,
                                const BackendChoice& choice, const std::string& where) {
  CompiledStep out;
  if (const graph::Node* source = graph::first_unbacked_node(*graph)) {
    // Sizes known only when the graph runs (nonzero, x[mask], unique, ...):
    // a registered compiling backend compiles it in stages, the part after
    // the data-dependent ops once their sizes are known (unbacked_stages.h);
    // a Python backend, or a graph that cannot be cut, runs op by op.
    std::string why = "a Python backend";
    if (!choice.python_callable && choice.name != "eager")
      if (auto staged = compile_in_stages(graph, example_inputs, choice, where, &why)) return std::move(*staged);
    if (choice.python_callable || choice.name != "eager") {
      bump(Counter::backend_fallbacks);  // visible beside the log line: the backend compiled nothing
      TJ_LOG(perf, "{} ({}): data-dependent sizes from {} ({}); running the captured graph op by op", where,
             choice.python_callable ? "a Python backend" : choice.name, graph::describe_unbacked(*source), why);
    }
    out.fn = eager_fallback(std::move(graph));
    return out;
  }
  if (choice.python_callable) {
    auto folded = compile::fold_sizes(graph);  // sizes read into Python: compiled for these sizes, as constants
    if (!folded)
      return fail_or_fall_back(folded.error().kind == ErrorKind::internal
                                   ? report_internal_error("folding sizes of " + where, folded.error().message)
                                   : folded.error().message,
                               graph, choice);
    graph = std::move(*folded);
    out.python_fn = run_python_backend(choice.python_callable, graph, example_inputs);
    if (out.python_fn) return out;
    // BackendCompilerFailed from a Python backend is a deliberate verdict
    // (the repro flow raises it after dumping: API.md "Debugging tools"),
    // not an accident to suppress.
    if (PyErr_ExceptionMatches(backend_compiler_failed_error())) {
      out.ok = false;
      return out;
    }
    return fail_or_fall_back("the backend failed to compile " + where + ": " + take_python_error_text(), graph,
                             choice);
  }
  const jit::Backend* backend = jit::find_backend(choice.name);
  if (!backend) return fail_or_fall_back("unknown backend '" + choice.name + "'", graph, choice);
  compile::Result result = run_pipeline(request_for(graph, example_inputs, *backend, where));
  if (result.captured) bump(Counter::aot_captures);
  if (result.from_graph_cache) bump(Counter::graph_cache_hits);
  if (raise_kept_interruption()) {  // Ctrl-C between two steps: raised, nothing compiled
    out = CompiledStep{};
    out.ok = false;
    return out;
  }
  if (result.compiled) {
    compile::Compiled& compiled = *result.compiled;
    if (compiled.through_aot) runtime_context().last_aot_summary = compiled.aot_summary;
    out.fn = std::move(compiled.fn);
    out.defers_input_writes = compiled.through_aot;
    out.aliasing = input_aliasing(example_inputs.data(), static_cast<int>(example_inputs.size()));
    out.aot_point = std::move(compiled.aot_point);
    out.aot_boundary = std::move(compiled.aot_boundary);
    return out;
  }
  // A bug of ours in AOT or the backend was reported as one by the pipeline,
  // never as the reason the graph is not supported; the graph still runs, op by op.
  const compile::Failure& failed = result.failure;
  if (failed.blame == compile::Blame::sizes) return fail_or_fall_back(failed.message, graph, choice);
  std::shared_ptr<const graph::Graph> as_captured = result.folded ? result.folded : graph;
  // AOT cannot capture every graph yet (data-dependent ops, ops without a
  // meta function): such a graph runs as captured. That is not a backend
  // failure the user must hear about, so it is logged, not warned.
  if (failed.blame == compile::Blame::aot) {
    PyErr_Clear();  // a meta function's Python error: the capture failed, the graph runs as captured
    bump(Counter::backend_fallbacks);
    TJ_LOG(perf, "{} ({}): {}; running the captured graph op by op", where, choice.name, failed.message);
    TJ_LOG(aot_graphs, "{}: AOT failed: {}; running the captured graph op by op", where, failed.message);
    out.fn = eager_fallback(std::move(as_captured));
    return out;
  }
  return fail_or_fall_back("the " + choice.name + " backend failed to compile " + where + ": " + failed.message,
                           as_captured, choice);
}

CompiledStep compile_from_aot_template(std::shared_ptr<const graph::Graph> graph, const jit::AotTemplate& t,
                                       const compile::AotBoundary& boundary,
                                       const std::vector<PyObject*>& example_inputs, const BackendChoice& choice,
                                       const std::string& where, std::string* why) {
  CompiledStep out;
  out.ok = false;
  const jit::Backend* backend = choice.python_callable ? nullptr : jit::find_backend(choice.name);
  if (!backend || !backend->functional) {
    *why = "the backend does not run AOT";
    return out;
  }
  compile::Request request = request_for(std::move(graph), example_inputs, *backend, where);
  request.aot_template = &t;
  request.template_boundary = &boundary;
  request.check_template = runtime_config().debug_check_aot_templates;
  compile::Result result = run_pipeline(request);
  if (raise_kept_interruption()) return out;  // Ctrl-C: raised (a Python error set), as the template's own failure
  if (!result.compiled) {
    if (result.failure.step == compile::Step::check_template) {
      // BackendCompilerFailed: raised to the caller, never rerun quietly
      PyErr_Format(backend_compiler_failed_error(),
                   "tracejit internal error (debug_check_aot_templates): the AOT size template of %s gives other "
                   "graphs than capturing these sizes: %s",
                   where.c_str(), result.failure.message.c_str());
      return out;
    }
    PyErr_Clear();  // a meta function's Python error (the template's check ran the graph): these sizes are captured
    *why = result.failure.message;
    return out;
  }
  out.ok = true;
  out.fn = std::move(result.compiled->fn);
  out.one_program = result.compiled->one_program;
  out.defers_input_writes = true;
  out.aliasing = input_aliasing(example_inputs.data(), static_cast<int>(example_inputs.size()));
  return out;
}

}  // namespace tj::runtime
