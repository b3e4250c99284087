// The compile steps after the trace; see backend_step.h.
#include "runtime/backend_step.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>

#include <mutex>

#include "graph/boxing.h"
#include "graph/lint.h"
#include "graph/passes/constant_fold.h"
#include "graph/passes/cse.h"
#include "graph/passes/dce.h"
#include "graph/sym_ints.h"
#include "graph/passes/decompose.h"
#include "graph/printer.h"
#include "compile/aot/runtime_wrapper.h"
#include "compile/aot/boundary.h"
#include "runtime/module_parts.h"
#include "runtime/runtime_context.h"
#include "runtime/runtime_state.h"
#include "runtime/tracejit_module.h"
#include "support/internal_error.h"
#include "support/log.h"
#include "support/tensor_bridge.h"

namespace tj::runtime {

namespace {

// Step: the optimization passes every functional graph gets before a
// backend sees it. They only ever see AOT's functional graphs: the
// captured graph may mutate its inputs, which these passes do not model.
Status run_passes(graph::Graph& g, bool fusing_backend) {
  graph::LintAtEnd lint(g, "the backend passes (decompose_for_fusion, eliminate_dead_code, fold_constants, "
                           "eliminate_common_subexpressions, eliminate_dead_code)");
  if (fusing_backend)
    if (auto decomposed = graph::decompose_for_fusion(g); !decomposed) return decomposed.error();
  graph::eliminate_dead_code(g);
  auto folded = graph::fold_constants(g);
  if (!folded) return folded.error();
  graph::eliminate_common_subexpressions(g);
  graph::eliminate_dead_code(g);
  lint.finish();
  return ok_status();
}

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

// A functional backend behind the passes and the `output_code` log: what
// AOT hands each functional graph (forward, backward) to. A compile that
// fails, or a compiled function that throws, leaves the graph it was given
// for `take_last_backend_failure`.
jit::Backend with_passes(const jit::Backend& backend, std::string where) {
  jit::Backend wrapped = backend;
  // The backend's compile (or compile_point) on the optimized graph; its
  // failures recorded for the repro tools.
  using Inner = std::function<Expected<jit::CompiledFn>(std::shared_ptr<const graph::Graph>,
                                                        const std::vector<graph::TensorMeta>&)>;
  auto optimized_then = [fusing = backend.fuses_pointwise, where](
                            const std::shared_ptr<const graph::Graph>& g, const std::vector<graph::TensorMeta>& inputs,
                            const Inner& inner) -> Expected<jit::CompiledFn> {
    if (interrupted_between_steps()) return Error{"interrupted"};  // raised by compile_graph_step
    std::shared_ptr<graph::Graph> optimized = g->clone();
    if (auto st = run_passes(*optimized, fusing); !st) return st.error();
    if (interrupted_between_steps()) return Error{"interrupted"};
    TJ_LOG(output_code, "graph handed to the backend for {}:\n{}", where, graph::print_graph(*optimized));
    std::shared_ptr<const graph::Graph> handed = optimized;
    auto fn = inner(handed, inputs);
    if (!fn) {
      record_failure(handed, inputs, fn.error().message);
      return fn;
    }
    return jit::CompiledFn([handed, fn = std::move(*fn)](c10::ArrayRef<at::Tensor> in) {
      try {
        return fn(in);
      } catch (const std::exception& e) {
        std::vector<graph::TensorMeta> metas;
        for (const at::Tensor& t : in) metas.push_back(graph::TensorMeta::of(t));
        record_failure(handed, std::move(metas), graph::detail::short_message(e));
        throw;
      }
    });
  };
  wrapped.compile = [inner = backend.compile, optimized_then](std::shared_ptr<const graph::Graph> g,
                                                              const std::vector<graph::TensorMeta>& inputs) {
    return optimized_then(g, inputs, inner);
  };
  if (backend.compile_point)
    wrapped.compile_point = [inner = backend.compile_point, optimized_then](
                                std::shared_ptr<const graph::Graph> g, const std::vector<graph::TensorMeta>& inputs,
                                jit::Backend::SizePoint* point) {
      return optimized_then(g, inputs, [&](std::shared_ptr<const graph::Graph> handed,
                                           const std::vector<graph::TensorMeta>& in) { return inner(handed, in, point); });
    };
  return wrapped;
}

// Step: a Python callable backend, called as backend(GraphModule, example_inputs).
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

// The GIL released for a scope and taken back however it ends (an
// exception included): AOT runs LibTorch's autograd engine on proxies,
// which refuses to run under the GIL; nothing in AOT or a C++ backend
// touches Python.
struct ReleasedGil {
  PyThreadState* state = PyEval_SaveThread();
  ReleasedGil() = default;
  ReleasedGil(const ReleasedGil&) = delete;
  ReleasedGil& operator=(const ReleasedGil&) = delete;
  ~ReleasedGil() { PyEval_RestoreThread(state); }
};

// Step: the backend named in `choice` (AOT in front of it when it is functional).
Expected<jit::CompiledFn> compile_registered(const jit::Backend& backend,
                                             std::shared_ptr<const graph::Graph> g,
                                             const std::vector<PyObject*>& example_inputs,
                                             const std::string& where, bool* backend_failed,
                                             CompiledStep* kept) {
  std::vector<at::Tensor> examples;
  std::vector<graph::TensorMeta> metas;
  for (PyObject* t : example_inputs) {
    examples.push_back(unpack_tensor(t));
    metas.push_back(graph::TensorMeta::of(examples.back()));
  }
  try {
    if (!backend.functional) return backend.compile(std::move(g), metas);
    jit::AotOptions options;
    options.grad_enabled = at::GradMode::is_enabled();
    jit::AotGraphs graphs;
    Expected<jit::CompiledFn> fn = Error{"not compiled"};
    if (std::string why = aot_cannot_represent(*g); !why.empty()) return Error{"AOT: " + why};
    AotBoundary boundary = prepare_for_aot(std::move(g));
    options.undifferentiated_outputs = boundary.extra_outputs;
    bump(Counter::aot_captures);
    {
      ReleasedGil released;
      fn = jit::aot_compile(boundary.graph, examples, with_passes(backend, where), options, &graphs);
    }
    if (fn) runtime_context().last_aot_summary = graphs.summary;
    if (fn) fn = with_eager_outputs(std::move(*fn), boundary);
    *backend_failed = graphs.backend_failed;
    if (fn && graphs.point) {
      kept->aot_point = graphs.point;
      kept->aot_boundary = std::make_shared<const AotBoundary>(boundary);
    }
    if (fn && log::enabled(log::Topic::aot_graphs)) {
      TJ_LOG(aot_graphs, "AOT forward graph for {}:\n{}", where, graph::print_graph(*graphs.forward));
      if (graphs.backward)
        TJ_LOG(aot_graphs, "AOT backward graph for {}:\n{}", where, graph::print_graph(*graphs.backward));
      TJ_LOG(aot_graphs, "AOT metadata for {}:\n{}", where, graphs.summary);
    }
    return fn;
  } catch (const std::exception& e) {
    return graph::detail::exception_error("", e);  // LibTorch's error, or ours (ErrorKind::internal)
  }
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
  if (PyErr_WarnEx(PyExc_UserWarning, (message + "; running the graph eagerly").c_str(), 1) < 0) {
    out.ok = false;
    return out;
  }
  out.fn = eager_fallback(std::move(g));
  return out;
}

// The text of the pending Python error (cleared).
std::string take_python_error_text() {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  PyRef type_ref = PyRef::steal(type), value_ref = PyRef::steal(value), tb_ref = PyRef::steal(tb);
  PyRef text = PyRef::steal(value ? PyObject_Str(value) : nullptr);
  const char* s = text ? PyUnicode_AsUTF8(text.get()) : nullptr;
  std::string out = s ? s : "?";
  PyErr_Clear();  // a message that does not print: "?"; the error itself was fetched above
  return out;
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
  // Sizes read into Python are size nodes (graph/sym_ints.h): compiled for these sizes, as constants.
  if (graph::has_sym_nodes(*graph)) {
    std::shared_ptr<graph::Graph> folded = graph->clone();
    if (auto st = graph::fold_sym_nodes(*folded); !st)
      return fail_or_fall_back(st.error().kind == ErrorKind::internal
                                   ? report_internal_error("folding sizes of " + where, st.error().message)
                                   : st.error().message,
                               graph, choice);
    graph = std::move(folded);
  }
  if (choice.python_callable) {
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
  bool backend_failed = false;
  auto fn = compile_registered(*backend, graph, example_inputs, where, &backend_failed, &out);
  if (raise_kept_interruption()) {  // Ctrl-C between two steps: raised, nothing compiled
    out = CompiledStep{};
    out.ok = false;
    return out;
  }
  // A bug of ours in AOT or the backend: reported as one, never as the
  // reason the graph is not supported; the graph still runs, op by op.
  if (!fn && fn.error().kind == ErrorKind::internal)
    fn = Error{report_internal_error("compiling " + where + " (" + choice.name + ")", fn.error().message),
               ErrorKind::internal};
  if (fn) {
    out.fn = std::move(*fn);
    out.defers_input_writes = backend->functional;
    out.aliasing = input_aliasing(example_inputs.data(), static_cast<int>(example_inputs.size()));
    return out;
  }
  // AOT cannot capture every graph yet (data-dependent ops, ops without a
  // meta function): such a graph runs as captured. That is not a backend
  // failure the user must hear about, so it is logged, not warned.
  if (backend->functional && !backend_failed) {
    PyErr_Clear();  // a meta function's Python error: the capture failed, the graph runs as captured
    bump(Counter::backend_fallbacks);
    TJ_LOG(perf, "{} ({}): {}; running the captured graph op by op", where, choice.name, fn.error().message);
    TJ_LOG(aot_graphs, "{}: AOT failed: {}; running the captured graph op by op", where, fn.error().message);
    out.fn = eager_fallback(std::move(graph));
    return out;
  }
  return fail_or_fall_back("the " + choice.name + " backend failed to compile " + where + ": " + fn.error().message,
                           graph, choice);
}

namespace {

// config.debug_check_aot_templates: what capturing the graph at these
// sizes gives, against what the template gave ("" when the same).
std::string differs_from_capture(std::shared_ptr<const graph::Graph> graph, const std::vector<at::Tensor>& examples,
                                 const jit::Backend& backend, const jit::AotOptions& options,
                                 const jit::AotGraphs& from_template) {
  jit::AotGraphs captured;
  Expected<jit::CompiledFn> fn = Error{"not compiled"};
  try {
    ReleasedGil released;
    fn = jit::aot_compile(std::move(graph), examples, backend, options, &captured);
  } catch (const std::exception& e) {
    fn = graph::detail::exception_error("", e);
  }
  if (!fn && fn.error().kind == ErrorKind::internal)
    return "capturing them fails: " + report_internal_error("checking an AOT size template", fn.error().message);
  if (!fn) return "capturing them fails: " + fn.error().message;
  return jit::aot_graphs_differ(from_template, captured);
}

}  // namespace

CompiledStep compile_from_aot_template(std::shared_ptr<const graph::Graph> graph, const jit::AotTemplate& t,
                                       const AotBoundary& boundary, const std::vector<PyObject*>& example_inputs,
                                       const BackendChoice& choice, const std::string& where, std::string* why) {
  CompiledStep out;
  out.ok = false;
  const jit::Backend* backend = choice.python_callable ? nullptr : jit::find_backend(choice.name);
  if (!backend || !backend->functional) {
    *why = "the backend does not run AOT";
    return out;
  }
  if (graph::has_sym_nodes(*graph)) {
    std::shared_ptr<graph::Graph> folded = graph->clone();
    if (auto st = graph::fold_sym_nodes(*folded); !st) {
      *why = st.error().message;
      return out;
    }
    graph = std::move(folded);
  }
  if (std::string cannot = aot_cannot_represent(*graph); !cannot.empty()) {
    *why = "AOT: " + cannot;
    return out;
  }
  AotBoundary here = prepare_for_aot(std::move(graph));
  if (here.extra_outputs != boundary.extra_outputs || here.fixes != boundary.fixes) {
    *why = "the outputs AOT's boundary adds or fixes differ";
    return out;
  }
  std::vector<at::Tensor> examples;
  for (PyObject* x : example_inputs) examples.push_back(unpack_tensor(x));
  jit::AotOptions options;
  options.grad_enabled = at::GradMode::is_enabled();
  options.specialize_graphs = runtime_config().debug_check_aot_templates;
  options.where = where;
  options.undifferentiated_outputs = here.extra_outputs;
  jit::AotGraphs graphs;
  Expected<jit::CompiledFn> fn = Error{"not compiled"};
  try {
    ReleasedGil released;
    fn = jit::aot_specialize(t, here.graph, examples, with_passes(*backend, where), options, &graphs);
  } catch (const std::exception& e) {
    fn = graph::detail::exception_error("", e);
  }
  if (raise_kept_interruption()) return out;  // Ctrl-C: raised (a Python error set), as the template's own failure
  if (!fn) {
    *why = fn.error().kind == ErrorKind::internal ? report_internal_error(where, fn.error().message) : fn.error().message;
    return out;
  }
  if (runtime_config().debug_check_aot_templates) {
    std::string differs = differs_from_capture(here.graph, examples, with_passes(*backend, where), options, graphs);
    if (raise_kept_interruption()) return out;
    if (!differs.empty()) {
      // BackendCompilerFailed: raised to the caller, never rerun quietly
      PyErr_Format(backend_compiler_failed_error(),
                   "tracejit internal error (debug_check_aot_templates): the AOT size template of %s gives other "
                   "graphs than capturing these sizes: %s",
                   where.c_str(), differs.c_str());
      return out;
    }
  }
  if (log::enabled(log::Topic::aot_graphs))
    TJ_LOG(aot_graphs, "AOT forward graph for {} (the size template, specialized):\n{}", where,
           graph::print_graph(*graphs.forward));
  out.ok = true;
  out.fn = with_eager_outputs(std::move(*fn), here);
  out.one_program = graphs.one_program;
  out.defers_input_writes = true;
  out.aliasing = input_aliasing(example_inputs.data(), static_cast<int>(example_inputs.size()));
  return out;
}

}  // namespace tj::runtime
