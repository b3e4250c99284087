// CompiledGraph; see compiled_graph.h.
#include "runtime/compiled_graph.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <unordered_map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_set>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/scalar_tensor.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/Exception.h>

#include "graph/effects.h"
#include "graph/interpreter.h"
#include "graph/meta_infer.h"
#include "graph/printer.h"
#include "graph/sym_ints.h"
#include "graph/unbacked_sizes.h"
#include "runtime/cpp_errors.h"
#include "runtime/eval_frame.h"
#include "runtime/input_snapshot.h"
#include "runtime/output_rebuild.h"
#include "runtime/runtime_state.h"
#include "runtime/size_probes.h"
#include "runtime/tracejit_module.h"
#include "support/log.h"
#include "support/py_errors.h"
#include "support/py_lookup.h"
#include "support/tensor_bridge.h"

namespace tj::runtime {

namespace {

struct SignatureHash {
  size_t operator()(const std::vector<int64_t>& v) const {
    size_t h = v.size();
    for (int64_t x : v) h = h * 1000003u ^ std::hash<int64_t>{}(x);
    return h;
  }
};

// An entry with dynamic dims (make_compiled_graph's recompile_for_sizes):
// the function compiled for each other size signature of the tensor inputs.
struct SizeVariants {
  BackendChoice choice;
  std::string where;
  std::vector<int64_t> first;  // the signature `fn` was compiled for
  std::deque<std::pair<std::vector<int64_t>, jit::CompiledFn>> compiled;  // stable addresses
  std::unordered_map<std::vector<int64_t>, jit::CompiledFn*, SignatureHash> by_sizes;  // into `compiled`
  std::unique_ptr<jit::CompiledFn> op_by_op;                              // past kMaxSizeVariants
  // AOT's captures of the first sizes (the boundary around the first), made
  // one AOT size template once they allow it (compile/aot/runtime_wrapper.h): later sizes
  // specialize it instead of capturing again.
  std::vector<std::shared_ptr<const jit::AotPoint>> points;
  std::shared_ptr<const compile::AotBoundary> boundary;
  std::shared_ptr<const jit::AotTemplate> aot_template;
  bool told_no_template = false;  // the `dynamic` log said why there is none
  // A template was tried from the first capture and probes (size_probes.h),
  // or a size was captured for real since: no more probes.
  bool probed = false;
  bool one_program = false;       // sizes are served by the backend's one program for every size
  // The first compile is a graph with data-dependent sizes compiled in
  // stages that serves every size (CompiledStep::serves_every_size): other
  // sizes reuse it, each stage compiling per size signature of its inputs.
  bool staged = false;
};
// Each size keeps its lowered program (its buffers go back when another
// size of the entry runs: jit/llvm_backend.cpp's pool groups); a few MB for
// all of them. Once one program serves every size (jit/program_template.h),
// a size keeps only its runtime plan: a few KB.
constexpr size_t kMaxSizeVariants = 256;
constexpr size_t kMaxOneProgramSizes = 4096;
constexpr size_t kMaxTemplatePoints = 8;  // captures tried for a template; then sizes keep capturing

// Where a compiled graph's cache-hit calls spend their time (`perf` log;
// see note_guard_time).
struct HitProfile {
  std::string where;
  long long calls = 0, next_report = 100;
  double guard_ns = 0, run_ns = 0, outputs_ns = 0;
};
thread_local double g_guard_ns = 0;

// What a compiled graph object owns. The object holds it by pointer and
// deletes it when it dies, so each part is released by its own destructor.
struct CompiledGraph {
  std::shared_ptr<const graph::Graph> graph;
  tracer::OutputTemplate output;
  int tensor_inputs = 0;
  size_t num_outputs = 0;
  PyRef backend_fn;                     // may be null: a custom Python backend's callable
  std::unique_ptr<jit::CompiledFn> fn;  // what runs when backend_fn is null
  std::vector<tracer::SideEffectTemplate> side_effects;
  PyRef globals;                  // may be null
  bool rerun_on_failure = false;  // a failure can be undone (graph/effects.h)
  bool saves_cpu_rng = false;     // ... once the CPU generator's state is put back
  bool inference_mode = false;    // runs in c10::InferenceMode (a traced torch.inference_mode block)
  // ... if the inputs alias as they did at compile time: AOT's wrapper
  // writes inputs after its functional graph, except when inputs alias
  // unlike at capture (then it runs the captured graph op by op, writing
  // as it goes, and the inputs are snapshot). Empty: no such condition.
  std::optional<std::vector<std::pair<int, int>>> rerun_needs_aliasing;
  // ... once these inputs are put back (a graph run op by op writes inputs
  // as it goes): an InputSnapshot is kept while it runs. Empty: none.
  std::optional<std::vector<int>> restores_inputs;
  bool restores_metadata = false;          // the snapshot keeps storage, sizes, strides, offset too
  bool restores_data = false;              // the snapshot copies the inputs' data (else it keeps their versions)
  std::unique_ptr<SizeVariants> variants;  // null unless the entry has dynamic dims
  HitProfile profile;
  std::optional<std::vector<int>> int_inputs;  // empty unless some inputs come as Python ints
  // Sizes used as numbers (tracer/size_numbers.cpp): computed per call from
  // the tensor inputs' sizes; the last value's tensor is reused while
  // nothing else holds it.
  struct SizeInputSlot {
    int index = -1;
    graph::SizeExpr expr;
    PyRef tensor;
    int64_t value = 0;
  };
  std::vector<SizeInputSlot> size_inputs;
  // Outputs with data-dependent dims (graph/unbacked_sizes.h), by output
  // index, and the set of those dims: set as the tensor's
  // `_tracejit_dynamic_dims` (tracejit.mark_dynamic's mark), so a frame that
  // takes it (the resume function after a break) traces them dynamic from
  // its first compile instead of compiling per count (issue 43 item 5).
  std::vector<std::pair<size_t, PyRef>> unbacked_outputs;
};

struct CompiledGraphObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  CompiledGraph* state;  // owned
};

using Clock = std::chrono::steady_clock;
double ns_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::nano>(b - a).count(); }

void record_hit(HitProfile& p, Clock::time_point start, Clock::time_point ran, Clock::time_point built) {
  ++p.calls;
  p.guard_ns += g_guard_ns;
  g_guard_ns = 0;
  p.run_ns += ns_between(start, ran);
  p.outputs_ns += ns_between(ran, built);
  if (p.calls < p.next_report) return;
  p.next_report *= 10;
  const double n = static_cast<double>(p.calls) * 1000.0;  // ns -> us per call
  TJ_LOG(perf, "cache-hit path of {}: {} calls, per call: guards {:.2f} us, graph run {:.2f} us, outputs {:.2f} us",
         p.where, p.calls, p.guard_ns / n, p.run_ns / n, p.outputs_ns / n);
}

std::string describe_sizes(PyObject* const* args, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? " " : "") + c10::str(unpack_tensor(args[i]).sizes());
  return out;
}

// Each tensor input's rank then sizes.
std::vector<int64_t> size_signature(PyObject* const* args, int n) {
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) {
    const at::Tensor& t = unpack_tensor(args[i]);
    out.push_back(t.dim());
    for (int64_t s : t.sizes()) out.push_back(s);
  }
  return out;
}

// A capture of a new size for the entry's AOT size template: kept, and the
// template made once the captures allow it (the `dynamic` log says why not).
void keep_for_template(SizeVariants& v, const CompiledStep& step) {
  v.probed = true;
  if (v.aot_template || v.points.size() >= kMaxTemplatePoints || !runtime_config().aot_size_templates) return;
  if (!step.aot_point) {
    // AOT's wrapper ran (defers_input_writes) but kept no capture: one with
    // grad whose graph has nothing to differentiate.
    if (step.defers_input_writes && !v.told_no_template)
      TJ_LOG(dynamic, "{}: no AOT size template: its AOT captures run with grad but record no backward; every size "
             "is captured", v.where);
    v.told_no_template = v.told_no_template || step.defers_input_writes;
    return;
  }
  const bool same_boundary = v.boundary && step.aot_boundary->extra_outputs == v.boundary->extra_outputs &&
                             step.aot_boundary->fixes == v.boundary->fixes;
  if (!same_boundary) {
    if (v.boundary)
      TJ_LOG(dynamic, "{}: the outputs AOT's boundary adds or fixes differ between sizes: the AOT size template "
             "starts again from this capture", v.where);
    v.points.clear();
    v.boundary = step.aot_boundary;
  }
  v.points.push_back(step.aot_point);
  if (v.points.size() < 3) return;
  auto made = jit::aot_generalize(v.points);
  if (!made) {
    TJ_LOG(dynamic, "{}: no AOT size template from {} captures yet: {}", v.where, v.points.size(), made.error().message);
    if (v.points.size() == kMaxTemplatePoints)
      TJ_LOG(dynamic, "{}: every size keeps its own AOT capture", v.where);
    return;
  }
  v.aot_template = std::move(*made);
  const graph::aot::SizeTemplate& t = jit::aot_template_graph(*v.aot_template);
  TJ_LOG(dynamic, "{}: one AOT graph serves every size from now on (a template of {} captures, {} size class(es), "
         "{} int argument(s) computed from the sizes)", v.where, v.points.size(), t.classes.size(), t.symbolic_ints);
  TJ_LOG(aot_graphs, "AOT size template for {}:\n{}", v.where, graph::print_graph(*t.graph));
  v.points.clear();
}

// The entry's second size signature: its AOT size template from its first
// capture and probes at sizes of our choosing (size_probes.h), so that this
// size and later ones need no capture; when that fails, sizes are captured
// as before.
void probe_for_template(CompiledGraph* self, PyObject* const* args) {
  SizeVariants& v = *self->variants;
  v.probed = true;
  ProbeRequest r;
  r.traced = self->graph.get();
  r.first = v.points[0];
  r.boundary = v.boundary.get();
  r.choice = v.choice;
  r.where = v.where;
  std::vector<graph::Node*> placeholders = self->graph->placeholders();
  std::vector<at::Tensor> next;
  for (int i = 0; i < self->tensor_inputs; ++i) {
    const graph::TensorMeta* m = static_cast<size_t>(i) < placeholders.size() ? placeholders[i]->meta().tensor() : nullptr;
    if (!m) return;
    r.first_sizes.push_back(m->sizes);
    r.first_strides.push_back(m->strides);
    next.push_back(unpack_tensor(args[i]));
  }
  std::string why;
  v.aot_template = template_from_probes(r, next, &why);
  if (!v.aot_template) {
    TJ_LOG(dynamic, "{}: no AOT size template from probes ({}); sizes are captured until one is made", v.where, why);
    return;
  }
  const graph::aot::SizeTemplate& t = jit::aot_template_graph(*v.aot_template);
  TJ_LOG(dynamic, "{}: one AOT graph serves every size from now on (a template of 1 capture and probes, {} size "
         "class(es), {} int argument(s) computed from the sizes)", v.where, t.classes.size(), t.symbolic_ints);
  TJ_LOG(aot_graphs, "AOT size template for {}:\n{}", v.where, graph::print_graph(*t.graph));
  v.points.clear();
}

// The graph for other sizes: as traced, its metas inferred anew from the
// inputs (past kMaxSizeVariants it runs op by op). When they do not hold
// (eager would raise for these sizes) the entry does not serve them: an
// empty function, and the caller runs the frame's bytecode instead, before
// anything of the graph ran (an op of the graph raising midway would leave
// the writes before it, and the frame's own try/except, to chance).
jit::CompiledFn* compiled_for_sizes(CompiledGraph* self, PyObject* const* args) {
  SizeVariants& v = *self->variants;
  std::vector<int64_t> key = size_signature(args, self->tensor_inputs);
  if (key == v.first) return self->fn.get();
  if (auto it = v.by_sizes.find(key); it != v.by_sizes.end()) {
    if (!*it->second) bump(Counter::sizes_not_served);
    return it->second;
  }
  std::shared_ptr<const graph::Graph> captured = self->graph;
  auto interpret = [captured](c10::ArrayRef<at::Tensor> inputs) { return graph::interpret_or_throw(*captured, inputs); };
  if (const size_t most = v.one_program ? kMaxOneProgramSizes : kMaxSizeVariants; v.compiled.size() >= most) {
    if (!v.op_by_op) {
      TJ_LOG(dynamic, "{}: {} sizes compiled already; other sizes run op by op", v.where, most);
      v.op_by_op = std::make_unique<jit::CompiledFn>(interpret);
    }
    bump(Counter::sizes_run_op_by_op);
    return v.op_by_op.get();
  }
  jit::CompiledFn fn;
  {
    std::shared_ptr<graph::Graph> g = captured->clone();
    std::vector<graph::Node*> placeholders = g->placeholders();
    for (size_t i = 0; i < placeholders.size() && i < static_cast<size_t>(self->tensor_inputs); ++i) {
      graph::TensorMeta m = *placeholders[i]->meta().tensor();
      const at::Tensor& t = unpack_tensor(args[i]);
      m.sizes = t.sizes().vec();
      m.strides = t.strides().vec();
      m.storage_offset = t.storage_offset();
      placeholders[i]->meta().set_tensor(m);
    }
    Status inferred = ok_status();
    // A meta function that raised: the graph runs as captured (below).
    if (!run_as_torch_binding([&] { inferred = graph::infer_meta_all(*g); })) PyErr_Clear();
    if (inferred.ok() && !PyErr_Occurred()) {
      // The size nodes' values as constants, here on this size's own copy
      // (what compile_graph_step and compile_from_aot_template would
      // otherwise do on another copy; a failure leaves it to them).
      // Not with data-dependent sizes (a sym_item's placeholder value): compile_graph_step runs it op by op.
      if (graph::has_sym_nodes(*g) && !graph::first_unbacked_node(*g)) (void)graph::fold_sym_nodes(*g);
      if (v.staged) {
        TJ_LOG(dynamic, "{}: input sizes {} served by the stages of the first compile (each compiles per size)",
               v.where, describe_sizes(args, self->tensor_inputs));
        v.compiled.emplace_back(std::move(key), *self->fn);
        v.by_sizes.emplace(v.compiled.back().first, &v.compiled.back().second);
        return &v.compiled.back().second;
      }
      std::vector<PyObject*> examples(args, args + self->tensor_inputs);
      CompiledStep step;
      bool from_template = false;
      {
        c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
        if (!v.aot_template && !v.probed && v.points.size() == 1 && v.boundary && runtime_config().aot_size_templates)
          probe_for_template(self, args);
        if (v.aot_template && runtime_config().aot_size_templates) {
          std::string why;
          step = compile_from_aot_template(g, *v.aot_template, *v.boundary, examples, v.choice, v.where, &why);
          from_template = step.ok;
          if (!from_template && PyErr_Occurred()) return nullptr;  // config.debug_check_aot_templates failed
          if (!from_template)
            TJ_LOG(dynamic, "{}: the AOT size template does not serve input sizes {} ({}); capturing for them", v.where,
                   describe_sizes(args, self->tensor_inputs), why);
        }
        if (!from_template) step = compile_graph_step(g, examples, v.choice, v.where);
      }
      if (!step.ok) return nullptr;  // BackendCompilerFailed (suppress_errors off)
      PyErr_Clear();  // a backend failure suppressed (and logged) by compile_graph_step
      fn = step.python_fn ? interpret : std::move(step.fn);
      if (from_template && step.one_program) {
        v.one_program = true;
        bump(Counter::program_size_reuses);
      }
      if (from_template) {
        bump(Counter::aot_size_reuses);
        TJ_LOG(dynamic, "{}: compiled for input sizes {} from the AOT size template (no capture)", v.where,
               describe_sizes(args, self->tensor_inputs));
      } else {
        TJ_LOG(dynamic, "{}: compiled again for input sizes {}", v.where, describe_sizes(args, self->tensor_inputs));
        keep_for_template(v, step);
      }
    } else {
      // A meta kernel written in Python leaves its own error set (size_facts.cpp):
      // the frame's bytecode raises eager's instead. An interruption is raised.
      if (pending_interruption()) return nullptr;
      PyErr_Clear();
      TJ_LOG(dynamic, "{}: the graph's shapes do not hold for input sizes {} ({}); the frame runs as it is for them",
             v.where, describe_sizes(args, self->tensor_inputs), inferred.ok() ? "an error" : inferred.error().message);
    }
  }
  if (!fn) bump(Counter::sizes_not_served);
  v.compiled.emplace_back(std::move(key), std::move(fn));
  v.by_sizes.emplace(v.compiled.back().first, &v.compiled.back().second);
  return &v.compiled.back().second;
}

// The graph failed, nothing else has happened yet (side effects are replayed
// after it runs): when it cannot have left a trace (`rerun`), ask the frame
// hook to run the calling frame's original bytecode instead (eval_frame.h).
// The user's line of the op that failed, when the op-by-op engine ran this
// graph and the op is the frame's own (not an inlined function's); else -1.
int failed_op_line(const CompiledGraph* self, PyCodeObject* code) {
  const graph::Node* n = graph::last_failed_node();
  if (!n || !n->meta().loc || !self->graph->contains(n)) return -1;
  SavedError graphs_error;  // a name that does not encode: not the frame's line
  const char* qualname = PyUnicode_AsUTF8(code->co_qualname);
  const char* file = qualname ? PyUnicode_AsUTF8(code->co_filename) : nullptr;
  bool own = file && n->meta().loc->code == qualname && n->meta().loc->file == file;
  return own ? n->meta().loc->line : -1;
}

void after_graph_failure(const CompiledGraph* self, bool rerun) {
  PyFrameObject* caller = PyEval_GetFrame();  // borrowed: the transformed code's frame
  if (!caller) return;
  PyRef code_ref = PyRef::steal(reinterpret_cast<PyObject*>(PyFrame_GetCode(caller)));
  auto* code = reinterpret_cast<PyCodeObject*>(code_ref.get());  // borrowed from code_ref
  if (rerun) tj_request_rerun(reinterpret_cast<PyObject*>(code));
  int line = rerun ? -1 : failed_op_line(self, code);
  if (line > 0) tj_set_failure_line(reinterpret_cast<PyObject*>(code), line);
  if (tj::log::enabled(tj::log::Topic::graph_breaks)) {
    SavedError graphs_error;  // the log line's own errors are cleared
    const char* name = PyUnicode_AsUTF8(code->co_qualname);
    const std::string type = graphs_error.error().type_name();
    std::string message = graphs_error.error().message().value_or("").substr(0, 300);
    TJ_LOG(graph_breaks, "{}: the graph failed at run time ({}: {}); {}", name ? name : "?", type.empty() ? "?" : type,
           message,
           rerun ? "running the frame's bytecode instead"
                 : "raising eager's exception (the graph may have written an input or drawn "
                   "random numbers, so it is not rerun)");
  }
}

// False with a Python error when the graph failed; `unserved` set when it
// did not run at all because the entry does not serve these sizes.
bool run_compiled(CompiledGraph* self, PyObject* const* args, std::vector<PyRef>& outputs, bool* unserved) {
  std::vector<at::Tensor> inputs;
  inputs.reserve(static_cast<size_t>(self->tensor_inputs));
  for (int i = 0; i < self->tensor_inputs; ++i) {
    if (!is_tensor(args[i])) {
      PyErr_SetString(PyExc_TypeError, "tracejit: a compiled graph expected a tensor input");
      return false;
    }
    inputs.push_back(unpack_tensor(args[i]));
  }
  jit::CompiledFn* fn = self->variants ? compiled_for_sizes(self, args) : self->fn.get();
  if (!fn) return false;
  if (!*fn) {
    *unserved = true;
    PyErr_SetString(PyExc_RuntimeError, "tracejit: the graph's shapes do not hold for these input sizes");
    return false;
  }
  // Eager's own exception (type and message) and warnings.
  return run_as_torch_binding([&] {
    std::vector<at::Tensor> result = (*fn)(inputs);
    outputs.reserve(result.size());
    for (const at::Tensor& t : result) outputs.push_back(PyRef::steal(wrap_tensor(t)));
  });
}

bool run_backend(CompiledGraph* self, PyObject* const* args, std::vector<PyRef>& outputs) {
  // The backend's callable is not the user's code: nothing under it is traced.
  tj_ActiveState previous = tj_set_active(nullptr);
  PyRef result = PyRef::steal(
      PyObject_Vectorcall(self->backend_fn.get(), args, static_cast<size_t>(self->tensor_inputs), nullptr));
  tj_restore_active(previous);
  if (!result) return false;
  PyRef seq = PyRef::steal(
      PySequence_Fast(result.get(), "tracejit: a backend's compiled callable must return a tuple or list"));
  if (!seq) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.get()); ++i)
    outputs.push_back(PyRef::borrow(PySequence_Fast_GET_ITEM(seq.get(), i)));
  return true;
}

PyObject* call_graph(CompiledGraph* self, PyObject* const* args);

// The 0-d int64 tensor of a size input for these arguments (its last one
// when the value is the same and nothing else holds it); null with a
// Python error when the sizes give it no value.
PyObject* size_input_for(CompiledGraph::SizeInputSlot& slot, PyObject* const* args, size_t nargs) {
  auto input_size = [&](int input, int64_t dim) -> std::optional<int64_t> {
    if (input < 0 || static_cast<size_t>(input) >= nargs || !is_tensor(args[input])) return std::nullopt;
    const at::Tensor& t = unpack_tensor(args[input]);
    if (dim < 0 || dim >= t.dim()) return std::nullopt;
    return t.sizes()[static_cast<size_t>(dim)];
  };
  const std::optional<int64_t> value = graph::eval_size_expr(slot.expr, input_size);
  if (!value) {
    PyErr_SetString(PyExc_RuntimeError, "tracejit: a size used as a number has no value for these input sizes");
    return nullptr;
  }
  const bool reusable = slot.tensor && slot.value == *value && Py_REFCNT(slot.tensor.get()) == 1 &&
                        unpack_tensor(slot.tensor.get()).use_count() == 1 &&
                        unpack_tensor(slot.tensor.get()).storage().use_count() == 1;
  if (!reusable) {
    PyObject* made = size_input_tensor(*value);
    if (!made) return nullptr;
    slot.tensor = PyRef::steal(made);
    slot.value = *value;
  }
  return slot.tensor.get();
}

// The call with its int inputs made tensors (int_input_tensor) and its
// size inputs computed (size_input_for); the arguments after the graph's
// inputs are what side effects and outputs read.
PyObject* call_with_int_inputs(CompiledGraph* self, PyObject* const* args, size_t nargs) {
  std::vector<PyObject*> converted(args, args + nargs);  // borrowed from args, `owned` and the size slots
  std::vector<PyRef> owned;
  if (self->int_inputs) {
    owned.reserve(self->int_inputs->size());
    for (int i : *self->int_inputs) {
      PyRef t = PyRef::steal(static_cast<size_t>(i) < nargs ? int_input_tensor(args[i]) : nullptr);
      if (!t && !PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "tracejit: a compiled graph lacks an int input");
      if (!t) return nullptr;
      converted[static_cast<size_t>(i)] = t.get();
      owned.push_back(std::move(t));
    }
  }
  for (CompiledGraph::SizeInputSlot& slot : self->size_inputs) {
    PyObject* t = static_cast<size_t>(slot.index) < nargs ? size_input_for(slot, args, nargs) : nullptr;
    if (!t) {
      // Nothing ran: the frame's bytecode runs instead (as for sizes the entry does not serve).
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "tracejit: a compiled graph lacks a size input");
      after_graph_failure(self, true);
      return nullptr;
    }
    converted[static_cast<size_t>(slot.index)] = t;
  }
  return call_graph(self, converted.data());
}

PyObject* compiled_graph_call(PyObject* self_obj, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  CompiledGraph* self = reinterpret_cast<CompiledGraphObject*>(self_obj)->state;
  if (PyVectorcall_NARGS(nargsf) < static_cast<Py_ssize_t>(self->tensor_inputs) || kwnames) {
    PyErr_SetString(PyExc_TypeError, "tracejit: a compiled graph got the wrong arguments");
    return nullptr;
  }
  return self->int_inputs || !self->size_inputs.empty() ? call_with_int_inputs(self, args, PyVectorcall_NARGS(nargsf))
                                                        : call_graph(self, args);
}

PyObject* call_graph(CompiledGraph* self, PyObject* const* args) {
  const bool timed = log::enabled(log::Topic::perf);
  const Clock::time_point start = timed ? Clock::now() : Clock::time_point{};
  std::vector<PyRef> outputs;
  std::optional<CpuRngState> rng_state;
  if (self->saves_cpu_rng) rng_state.emplace(cpu_rng_state());
  // AOT's wrapper defers its writes only for calls aliased as at compile time.
  bool deferred = self->rerun_needs_aliasing && same_aliasing(args, self->tensor_inputs, *self->rerun_needs_aliasing);
  InputSnapshot snapshot;
  if (self->restores_inputs && !deferred) {
    // An input that cannot be copied (no storage): no snapshot, no rerun.
    if (!run_as_torch_binding([&] {
          snapshot = InputSnapshot(*self->restores_inputs, args, self->restores_metadata, self->restores_data);
        }))
      PyErr_Clear();  // no snapshot: the graph is not rerun if it fails
  }
  if (seed_before_graph(self->side_effects, args) < 0) return nullptr;
  bool ok = false;
  bool unserved = false;
  {
    // The graph has eager autocast's casts built in (tracer/translate_with.cpp):
    // the dispatcher must not add them again.
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
    // A graph traced in a `with torch.inference_mode():` block runs in it,
    // so that its tensors are inference tensors as eager's are.
    std::optional<c10::InferenceMode> inference;
    if (self->inference_mode) inference.emplace(true);
    ok = self->backend_fn ? run_backend(self, args, outputs) : run_compiled(self, args, outputs, &unserved);
  }
  if (!ok) {
    // BackendCompilerFailed is the debugging tools' verdict on the backend
    // (API.md "Debugging tools"): raised, never hidden by a rerun.
    bool writes_undone = deferred || snapshot.taken() || (!self->restores_inputs && !self->rerun_needs_aliasing);
    bool rerun = unserved ||  // nothing ran
                 (self->rerun_on_failure && !PyErr_ExceptionMatches(backend_compiler_failed_error()) && writes_undone);
    if (rerun && !unserved && snapshot.taken()) {
      // The writes made before the failing op are undone, so the frame's
      // bytecode (its side effects, its try/except) runs as eager's would.
      SavedError graphs_error;  // a failed restore: the graph's own error is raised
      bool restored = false;
      rerun = run_as_torch_binding([&] { restored = snapshot.restore(); }) && restored;
    }
    if (rerun && rng_state) set_cpu_rng_state(*rng_state);
    after_graph_failure(self, rerun);
  }
  PyRef result;
  const Clock::time_point ran = timed ? Clock::now() : Clock::time_point{};
  if (ok) {
    size_t expected = self->num_outputs;
    if (outputs.size() != expected) {
      PyErr_Format(PyExc_RuntimeError, "tracejit: the compiled graph returned %zu outputs, expected %zu", outputs.size(), expected);
    } else {
      std::vector<PyObject*> memo;
      bool replayed = true;
      for (const auto& e : self->side_effects)
        if (replay(e, outputs, args, memo, self->globals.get()) < 0) {
          replayed = false;
          break;
        }
      for (const auto& [index, dims] : self->unbacked_outputs)
        if (PyObject_SetAttrString(outputs[index].get(), "_tracejit_dynamic_dims", dims.get()) < 0)
          PyErr_Clear();  // a mark is a compile hint: a tensor that refuses it is traced as it is
      if (replayed) result = rebuild(self->output, outputs, args, memo);
    }
  }
  outputs.clear();  // released inside the timed span (outputs_ns)
  if (timed && result) record_hit(self->profile, start, ran, Clock::now());
  return result.release();
}

void compiled_graph_dealloc(PyObject* self_obj) {
  delete reinterpret_cast<CompiledGraphObject*>(self_obj)->state;
  Py_TYPE(self_obj)->tp_free(self_obj);
}

PyTypeObject make_type() {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "tracejit.CompiledGraph";
  t.tp_basicsize = sizeof(CompiledGraphObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  t.tp_doc = "A traced graph compiled by a backend, as called by transformed bytecode.";
  t.tp_dealloc = compiled_graph_dealloc;
  t.tp_call = PyVectorcall_Call;
  t.tp_vectorcall_offset = offsetof(CompiledGraphObject, vectorcall);
  return t;
}

PyTypeObject g_type = make_type();

}  // namespace

PyObject* make_compiled_graph(std::shared_ptr<const graph::Graph> graph, int tensor_inputs,
                              tracer::OutputTemplate output, CompiledStep compiled,
                              std::vector<tracer::SideEffectTemplate> side_effects, PyObject* globals,
                              std::optional<BackendChoice> recompile_for_sizes, std::string where,
                              std::vector<int> int_inputs, std::vector<tracer::SizeInput> size_inputs) {
  if (PyType_Ready(&g_type) < 0) return nullptr;
  auto state = std::make_unique<CompiledGraph>();
  CompiledGraph* self = state.get();
  self->graph = std::move(graph);
  self->output = std::move(output);
  self->tensor_inputs = tensor_inputs;
  const graph::Node* out = self->graph->output_node();
  self->num_outputs = !out || out->args().empty() ? 0 : (out->args()[0].is_list() ? out->args()[0].items().size() : 1);
  self->backend_fn = std::move(compiled.python_fn);
  if (!self->backend_fn) self->fn = std::make_unique<jit::CompiledFn>(std::move(compiled.fn));
  self->side_effects = std::move(side_effects);
  self->globals = PyRef::borrow(globals);
  graph::GraphEffects effects = graph::effects_of(*self->graph);
  // Inputs a graph writes as it runs (the eager backend, AOT's fallbacks)
  // are snapshot while it runs, and put back if it fails (input_snapshot.h);
  // not a custom backend's (its failure is its own), nor attributes.
  bool inputs_restorable = effects.writes_inputs && !self->backend_fn && !effects.writes_attrs &&
                           !effects.written_inputs.empty();
  if (inputs_restorable) self->restores_inputs = effects.written_inputs;
  self->restores_metadata = inputs_restorable && effects.changes_metadata;
  // A graph that can only fail before its first write (every later op
  // raises on sizes and dtypes alone, which the compile checked) needs no
  // copies: a failure leaves the inputs' versions where they were, which
  // the snapshot checks. An optimizer's step thus copies no state per call.
  self->restores_data = effects.may_fail_after_a_write || effects.changes_metadata;
  bool undoable = !effects.writes_inputs || inputs_restorable || compiled.defers_input_writes;
  self->rerun_on_failure = undoable && (!effects.draws_random || effects.random_only_on_cpu);
  // A torch.manual_seed replayed before the graph changes the generator too:
  // a rerun must start from the state before it.
  const bool seeds = std::any_of(self->side_effects.begin(), self->side_effects.end(), [](const auto& e) {
    return e.kind == tracer::SideEffect::Kind::manual_seed || e.kind == tracer::SideEffect::Kind::seed;
  });
  self->saves_cpu_rng = self->rerun_on_failure && (effects.draws_random || seeds);
  self->inference_mode = std::any_of(self->side_effects.begin(), self->side_effects.end(),
                                     [](const auto& e) { return e.kind == tracer::SideEffect::Kind::inference_mode; });
  // With writes deferred by AOT, only calls aliased as at compile time are
  // rerun without a snapshot.
  if (effects.writes_inputs && compiled.defers_input_writes) self->rerun_needs_aliasing = std::move(compiled.aliasing);
  self->profile.where = where;
  if (out && !out->args().empty() && out->args()[0].is_list() && graph::first_unbacked_node(*self->graph)) {
    const std::vector<graph::Arg>& items = out->args()[0].items();
    for (size_t i = 0; i < items.size(); ++i) {
      const graph::Node* n = items[i].is_node() ? items[i].node() : nullptr;
      const graph::TensorMeta* m = n ? n->meta().tensor() : nullptr;
      if (!m) continue;
      PyRef dims = PyRef::steal(PySet_New(nullptr));
      if (!dims) return nullptr;
      for (int64_t d = 0; d < static_cast<int64_t>(m->sizes.size()); ++d)
        if (graph::unbacked_dim(*n, d)) {
          PyRef dim = PyRef::steal(PyLong_FromLongLong(d));
          if (!dim || PySet_Add(dims.get(), dim.get()) < 0) return nullptr;
        }
      if (PySet_GET_SIZE(dims.get()) > 0) self->unbacked_outputs.emplace_back(i, std::move(dims));
    }
  }
  if (!int_inputs.empty()) self->int_inputs = std::move(int_inputs);
  for (tracer::SizeInput& s : size_inputs) self->size_inputs.push_back({s.index, std::move(s.expr), {}, 0});
  if (recompile_for_sizes && self->fn && self->tensor_inputs > 0) {
    // Only the tensors' sizes: the signature of the call that compiled `fn` is the graph's placeholders'.
    std::vector<int64_t> first;
    for (graph::Node* p : self->graph->placeholders()) {
      const graph::TensorMeta* m = p->meta().tensor();
      if (!m) continue;
      first.push_back(static_cast<int64_t>(m->sizes.size()));
      first.insert(first.end(), m->sizes.begin(), m->sizes.end());
    }
    self->variants = std::unique_ptr<SizeVariants>(
        new SizeVariants{std::move(*recompile_for_sizes), std::move(where), std::move(first), {}});
    self->variants->staged = compiled.serves_every_size;
    if (compiled.aot_point) {
      self->variants->points.push_back(compiled.aot_point);
      self->variants->boundary = compiled.aot_boundary;
    }
  }
  auto* object = PyObject_New(CompiledGraphObject, &g_type);
  if (!object) return nullptr;
  object->vectorcall = compiled_graph_call;
  object->state = state.release();
  return reinterpret_cast<PyObject*>(object);
}

int register_compiled_graph(PyObject*) { return PyType_Ready(&g_type); }

void note_guard_time(double ns) { g_guard_ns = ns; }

}  // namespace tj::runtime
