// Trace -> backend -> transformed code + guards; see frame_compiler.h.
#include "runtime/frame_compiler.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <c10/core/impl/LocalDispatchKeySet.h>

#include "graph/printer.h"
#include "graph/unbacked_sizes.h"
#include "runtime/backend_step.h"
#include "runtime/code_cache.h"
#include "runtime/compiled_graph.h"
#include "runtime/compiler_collective.h"
#include "runtime/guard_check.h"
#include "runtime/module_parts.h"
#include "runtime/runtime_context.h"
#include "runtime/tracejit_module.h"
#include "runtime/user_warnings.h"
#include "support/log.h"
#include "support/py_errors.h"
#include "support/py_lookup.h"
#include "support/tensor_bridge.h"
#include "tracer/trace_api.h"

namespace tj::runtime {

namespace {

// A point in time, by the clock and by this thread's CPU time (the compile's
// phases for the `perf` log: on a loaded machine its CPU time says more).
struct PhaseClock {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  double cpu = thread_cpu_ms();
  static double thread_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
  }
  double wall_ms(const PhaseClock& since) const {
    return std::chrono::duration<double, std::milli>(wall - since.wall).count();
  }
  double cpu_ms(const PhaseClock& since) const { return cpu - since.cpu; }
};

std::string code_name(PyCodeObject* code) {
  const char* n = PyUnicode_AsUTF8(code->co_qualname);
  if (!n) PyErr_Clear();  // a name for a log line: best effort
  return n ? n : "?";
}

// A frame that has seen no tensor (its graph is empty) logs under `skips`,
// not `graph_breaks`: under --compile-all most such frames are set-up code.
void record_unsupported(const tracer::Unsupported& u, PyCodeObject* code, bool is_break, bool has_graph) {
  bump(Counter::graph_breaks);
  auto topic = has_graph ? log::Topic::graph_breaks : log::Topic::skips;
  if (log::enabled(topic)) {
    if (is_break)
      log::logger(topic).info("{}:{}: graph break in {}: {}", u.filename, u.lineno, code_name(code), u.reason);
    else
      log::logger(topic).info("{}:{}: {} runs uncompiled: {}", u.filename, u.lineno, code_name(code), u.reason);
  }
  if (ExplainRecord* explain = runtime_context().explain.get()) explain->reasons.push_back(u);
}

// Whether the frame is handed a tensor or an nn.Module: a frame that would
// produce a graph even if it breaks before its first tensor operation.
bool takes_tensors(const tj_FrameView& frame) {
  PyCodeObject* co = frame.code;
  int nargs = co->co_argcount + co->co_kwonlyargcount + ((co->co_flags & CO_VARARGS) ? 1 : 0) +
              ((co->co_flags & CO_VARKEYWORDS) ? 1 : 0);
  PyObject* module_type = cached_module_attr("torch.nn", "Module");
  for (int i = 0; i < nargs; ++i) {
    PyObject* v = frame.localsplus[i];
    if (!v) continue;
    if (is_tensor(v)) return true;
    if (module_type && PyObject_IsInstance(v, module_type) == 1) return true;
  }
  // A user __class__ that raises is "no module" (only the cost of a trace
  // that finds nothing depends on it); an interruption is raised.
  clear_unless_interruption();
  return false;
}


}  // namespace

namespace {
constexpr int kMaxResumeNesting = 24;

// How many resume functions are running on this thread's Python stack: a
// break in a loop nests one per iteration, so past a bound the frame runs
// unchanged instead (no runaway recursion).
int resume_nesting() {
  int n = 0;
  for (PyRef f = PyRef::borrow(reinterpret_cast<PyObject*>(PyEval_GetFrame())); f;
       f = PyRef::steal(reinterpret_cast<PyObject*>(PyFrame_GetBack(reinterpret_cast<PyFrameObject*>(f.get()))))) {
    PyRef code = PyRef::steal(reinterpret_cast<PyObject*>(PyFrame_GetCode(reinterpret_cast<PyFrameObject*>(f.get()))));
    if (tracer::is_resume_code(reinterpret_cast<PyCodeObject*>(code.get()))) ++n;
  }
  PyErr_Clear();  // nothing above sets one (is_resume_code clears its own): kept for safety
  return n;
}
}  // namespace

namespace {
void log_dynamic(const tracer::TraceResult& traced, PyCodeObject* code) {
  if (!log::enabled(log::Topic::dynamic)) return;
  for (const tracer::DynamicInput& d : traced.dynamic) {
    std::string dims;
    for (size_t i = 0; i < d.dims.size(); ++i)
      if (d.dims[i]) dims += (dims.empty() ? "" : ", ") + std::to_string(i) + " (size " + std::to_string(d.sizes[i]) + ")";
    TJ_LOG(dynamic, "{}: {} dims {} dynamic ({})", code_name(code), d.source, dims, d.why);
  }
  for (const tracer::Guard& g : traced.guards.guards())
    if (g.kind == tracer::GuardKind::size_facts)
      TJ_LOG(dynamic, "{}: the trace relies on {}", code_name(code), g.to_string());
  for (const tracer::SizeInput& s : traced.size_inputs)
    TJ_LOG(dynamic, "{}: the size {} (now {}) is used as a number: a graph input computed from the input sizes at "
           "each call (from {})", code_name(code), s.text, s.value, s.where.empty() ? "?" : s.where);
  for (const tracer::Unsupported& s : traced.specializations)
    TJ_LOG(dynamic, "{}: {} ({}:{})", code_name(code), s.reason, s.filename, s.lineno);
  if (traced.graph)  // data-dependent sizes (unbacked): known only when the graph runs
    for (const graph::Node* n : traced.graph->nodes())
      if (n->meta().unbacked)
        TJ_LOG(dynamic, "{}: {} has an unbacked size (known when the graph runs) from {}", code_name(code), n->name(),
               graph::describe_unbacked(*n));
  if (traced.sizes_read)
    TJ_LOG(dynamic, "{}: every size stays static: the trace reads {} at {}:{}", code_name(code),
           traced.sizes_read->reason, traced.sizes_read->filename, traced.sizes_read->lineno);
}
}  // namespace

namespace {
// Which frame a collective state is about: the same text on every rank for
// the same code (a resume function's name without its per-process number).
std::string code_file(PyCodeObject* code) {
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  if (!file) PyErr_Clear();  // a file name that does not encode: the same "?" on every rank
  return file ? file : "?";
}

std::string collective_code_name(PyCodeObject* code) {
  std::string name = code_name(code);
  if (tracer::is_resume_code(code)) name = name.substr(0, name.find_last_of('_'));
  return code_file(code) + ":" + std::to_string(code->co_firstlineno) + ":" + name;
}

// What a trace ended with, for the collective: where it broke or why it gave up.
void note_outcome(const tracer::TraceResult& traced, CollectiveState& state) {
  if (traced.graph_break) {
    state.break_at = traced.graph_break->failing;
    state.break_reason = traced.unsupported ? traced.unsupported->reason : "a graph break";
  } else if (traced.unsupported) {
    state.unchanged_reason = traced.unsupported->reason;
  }
}

// Makes `traced` "the frame runs uncompiled", for `reason`.
void give_up(tracer::TraceResult& traced, PyCodeObject* code, const std::string& reason) {
  traced = tracer::TraceResult{};
  traced.unsupported = tracer::Unsupported{reason, code_file(code), code->co_firstlineno};
}

// Marks the resume functions among `code`'s constants (nested code too) as
// taking part in the compiler collective at their first compile.
void mark_collective_resume(PyCodeObject* code) {
  PyObject* consts = code->co_consts;
  for (Py_ssize_t i = 0; consts && i < PyTuple_GET_SIZE(consts); ++i) {
    PyObject* c = PyTuple_GET_ITEM(consts, i);
    if (!PyCode_Check(c)) continue;
    auto* inner = reinterpret_cast<PyCodeObject*>(c);
    if (tracer::is_resume_code(inner)) {
      if (CodeState* state = code_state(inner)) state->collective_resume = true;
      PyErr_Clear();  // no state for it (co_extra full): it simply does not take part
    }
    mark_collective_resume(inner);
  }
}

bool is_int_input(const tracer::TraceResult& traced, size_t index) {
  return std::find(traced.int_inputs.begin(), traced.int_inputs.end(), static_cast<int>(index)) != traced.int_inputs.end();
}

const tracer::SizeInput* size_input_at(const tracer::TraceResult& traced, size_t index) {
  for (const tracer::SizeInput& s : traced.size_inputs)
    if (s.index == static_cast<int>(index)) return &s;
  return nullptr;
}


// How far a trace got: the whole frame (no break), else the later its
// break the better; a frame that cannot be compiled at all is last.
long long trace_reach(const tracer::TraceResult& traced) {
  if (!traced.unsupported) return std::numeric_limits<long long>::max();
  return traced.graph_break ? traced.graph_break->failing : -1;
}

// Sizes used as numbers (tracer/size_numbers.cpp): a trace that made some
// and then stopped (a number where the value itself is needed: a branch on
// `n / 2`, a shape from a float) is traced again with sizes specialized as
// before; the trace that went further is kept.
void prefer_specialized_sizes(tracer::TraceResult& traced, const tracer::FrameInputs& in, PyCodeObject* code) {
  if (traced.size_inputs.empty() || !traced.unsupported) return;
  tracer::FrameInputs specialized = in;
  specialized.sizes_as_numbers = false;
  tracer::TraceResult again = tracer::trace_frame(specialized);
  if (again.interrupted) {
    traced = std::move(again);
    return;
  }
  if (trace_reach(again) <= trace_reach(traced)) return;
  TJ_LOG(dynamic, "{}: sizes are specialized (not graph inputs): with sizes as numbers the trace stopped earlier ({})",
         code_name(code), traced.unsupported->to_string());
  traced = std::move(again);
}

// Automatic dynamic ints: a trace that took some ints as graph inputs and
// then stopped. Ints whose value it needed (TraceResult::needed_ints: a
// comparison, a tensor op, a call) are constants from now on, and the
// frame is traced again. A trace that broke elsewhere (range(n), a branch
// on n: places that do not say which int they read) is traced again with
// every int a constant; when that goes further, they all stay constants.
void prefer_static_ints(tracer::TraceResult& traced, tracer::FrameInputs& in, DynamicInts& ints, PyCodeObject* code) {
  auto make_static = [&](const std::string& source, const std::string& why) {
    ints.dynamic.erase(source);
    ints.static_ints.insert(source);
    TJ_LOG(dynamic, "{}: int {} is a constant again: {}", code_name(code), source, why);
  };
  for (int round = 0; round < 4 && !traced.needed_ints.empty() && traced.unsupported; ++round) {
    for (const std::string& s : traced.needed_ints) make_static(s, traced.unsupported->reason);
    in.dynamic_ints = ints.dynamic.empty() ? nullptr : &ints.dynamic;
    traced = tracer::trace_frame(in);
    if (traced.interrupted) return;
  }
  if (traced.int_inputs.empty() || !traced.unsupported) return;
  std::vector<std::string> sources;
  for (int i : traced.int_inputs)
    if (static_cast<size_t>(i) < traced.input_sources.size())
      sources.push_back(traced.input_sources[static_cast<size_t>(i)]->to_string());
  tracer::FrameInputs as_constants = in;
  as_constants.dynamic_ints = nullptr;
  tracer::TraceResult again = tracer::trace_frame(as_constants);
  if (again.interrupted) {
    traced = std::move(again);
    return;
  }
  if (trace_reach(again) <= trace_reach(traced)) return;
  for (const std::string& s : sources)
    make_static(s, "as a graph input the trace stopped earlier (" + traced.unsupported->reason + ")");
  traced = std::move(again);
  in.dynamic_ints = ints.dynamic.empty() ? nullptr : &ints.dynamic;
}

// Whether two input sizes equal on this rank differ on another: duck sizing
// over every rank's sizes shares fewer symbols than this rank's trace did.
bool duck_sizing_differs(const std::map<std::string, std::vector<int64_t>>& local,
                         const std::unordered_map<std::string, std::vector<std::vector<int64_t>>>& ranks) {
  std::map<int64_t, std::vector<int64_t>> seen;  // local size -> its sizes on every rank
  for (const auto& [source, sizes] : local)
    for (size_t d = 0; d < sizes.size(); ++d) {
      std::vector<int64_t> all = tracer::size_on_every_rank(ranks.at(source), d);
      auto [it, inserted] = seen.emplace(sizes[d], all);
      if (!inserted && it->second != all) return true;
    }
  return false;
}

// The compiler collective at a frame's first compile (compiler_collective.h):
// this rank's state from its trace, every rank's decision, the trace again
// when that decision differs from this rank's own, then every rank's final
// outcome compared. False with a Python error set when a gather failed.
bool agree_with_other_ranks(tracer::TraceResult& traced, tracer::FrameInputs& in, const tj_FrameView& frame,
                            std::unordered_map<std::string, std::vector<bool>>* automatic) {
  CollectiveState local;
  local.code = collective_code_name(frame.code);
  const size_t inputs = traced.graph ? traced.graph->placeholders().size() : 0;
  for (size_t i = 0; i < inputs && i < traced.input_sources.size(); ++i) {
    if (size_input_at(traced, i)) continue;  // a number, passed its tensor's source
    PyRef value = read_source(*traced.input_sources[i], frame);
    PyRef shape = PyRef::steal(value && is_tensor(value.get()) ? PyObject_GetAttrString(value.get(), "shape") : nullptr);
    if (shape && PyTuple_Check(shape.get())) {
      std::vector<int64_t>& dims = local.sizes[traced.input_sources[i]->to_string()];
      for (Py_ssize_t d = 0; d < PyTuple_GET_SIZE(shape.get()); ++d)
        dims.push_back(PyLong_AsLongLong(PyTuple_GET_ITEM(shape.get(), d)));
    }
    clear_unless_interruption();  // sizes for the ranks to compare: an unreadable one is simply not sent
  }
  for (const tracer::DynamicInput& d : traced.dynamic) local.dynamic[d.source] = d.dims;
  note_outcome(traced, local);
  auto states = gather_collective_states(local);
  if (!states) return false;
  const CollectiveDecision decision = merge_collective_states(*states);
  const std::string name = code_name(frame.code);
  if (!decision.mismatch.empty()) {
    // The ranks' collectives no longer pair the same frames: every rank stops them.
    stop_compiler_collectives();
    std::string msg = "tracejit: the compiler collective paired different frames (" + decision.mismatch +
                      "); they run uncompiled and the collective is off from now on: every rank must compile the "
                      "same frames in the same order";
    if (warn_user(msg) < 0) return false;
    give_up(traced, frame.code, "the compiler collective paired different frames");
    return true;
  }
  if (decision.unchanged_rank >= 0) {  // every rank runs the frame uncompiled
    if (local.unchanged_reason.empty())
      give_up(traced, frame.code, "rank " + std::to_string(decision.unchanged_rank) +
                                      " runs this frame uncompiled (compiler collective): " + decision.unchanged_reason);
    return true;
  }
  bool again = false;
  if (in.dynamic == -1 && automatic) {
    for (const auto& [source, dims] : decision.dynamic)
      for (size_t d : add_automatic_dims(*automatic, source, dims)) {
        again = true;
        TJ_LOG(dynamic, "{}: {} dim {} differs between ranks or is dynamic on one (compiler collective): traced dynamic",
               name, source, d);
      }
  }
  if (decision.break_at >= 0 && decision.break_at != local.break_at) {
    in.force_break_at = decision.break_at;
    in.force_break_reason = "rank " + std::to_string(decision.break_rank) +
                            " breaks the graph here (compiler collective): " + decision.break_reason;
    again = true;
  }
  // Duck sizing (equal sizes share a symbol) looks at every rank's sizes:
  // two sizes equal here but not on another rank stay two symbols.
  std::unordered_map<std::string, std::vector<std::vector<int64_t>>> rank_sizes;
  for (const CollectiveState& s : *states)
    for (const auto& [source, sizes] : local.sizes) {
      auto other = s.sizes.find(source);
      rank_sizes[source].push_back(other == s.sizes.end() ? std::vector<int64_t>{} : other->second);
    }
  again = again || duck_sizing_differs(local.sizes, rank_sizes);
  in.rank_sizes = &rank_sizes;
  if (again) traced = tracer::trace_frame(in);
  in.rank_sizes = nullptr;
  if (traced.interrupted) return false;
  // A rank may not reach the instruction another broke at (a branch it
  // does not take): then no common trace exists, and every rank runs the
  // frame uncompiled.
  CollectiveState outcome;
  outcome.code = local.code;
  note_outcome(traced, outcome);
  auto outcomes = gather_collective_states(outcome);
  if (!outcomes) return false;
  const std::string differs = compare_trace_outcomes(*outcomes);
  if (!differs.empty())
    give_up(traced, frame.code, "the ranks' traces differ even after the compiler collective (" + differs +
                                    "): every rank runs this frame uncompiled");
  return true;
}
}  // namespace

namespace {
// What trace_frame reads of `frame`, and how it traces it.
// A resume function's stack values that are floats (the `loss.item()` or
// `random.random()` its break ran in CPython, a running `total` of them)
// move at every call: graph inputs from its first trace (DYNAMIC_FLOAT),
// not constants compiled once more after the first change. One its trace
// needs as a constant is made static as any automatic dynamic number.
void seed_resume_floats(const tj_FrameView& frame, DynamicInts& ints) {
  PyObject* names = frame.code->co_localsplusnames;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); ++i) {
    const char* name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, i));
    if (!name) {
      PyErr_Clear();
      continue;
    }
    if (std::string_view(name).rfind("___stack", 0) != 0 || !frame.localsplus[i] || !PyFloat_CheckExact(frame.localsplus[i]))
      continue;
    std::string source = "L['" + std::string(name) + "']";
    if (!ints.static_ints.count(source)) ints.dynamic.insert(std::move(source));
  }
}

tracer::FrameInputs frame_inputs(const tj_FrameView& frame, const CompileOptions& options,
                                 std::unordered_map<std::string, std::vector<bool>>* automatic, DynamicInts* ints) {
  if (ints && options.dynamic != 0 && !options.backend_callable && tracer::is_resume_code(frame.code))
    seed_resume_floats(frame, *ints);
  tracer::FrameInputs in;
  in.code = frame.code;
  in.globals = frame.globals;
  in.builtins = frame.builtins;
  in.closure = PyFunction_GetClosure(frame.func);
  in.localsplus = frame.localsplus;
  in.may_break = resume_nesting() < kMaxResumeNesting;
  // A custom Python backend is handed one graph with concrete sizes: static.
  in.dynamic = options.backend_callable ? 0 : options.dynamic;
  in.automatic = automatic;
  in.dynamic_ints = ints && !ints->dynamic.empty() ? &ints->dynamic : nullptr;
  in.capture_scalar_outputs = runtime_config().capture_scalar_outputs;
  in.capture_dynamic_output_shape_ops = runtime_config().capture_dynamic_output_shape_ops;
  return in;
}

// Whether the traced frame runs as it is: no tensor work, a trace that
// failed without a graph break, or fullgraph refusing a break (a Python
// error set); `out` says why.
bool runs_as_it_is(const tracer::TraceResult& traced, const tj_FrameView& frame, const CompileOptions& options,
                   bool is_break, bool has_graph, FrameCompileResult& out) {
  // Frames that do no tensor work run as they are: the trace budget ran
  // out before any tensor was seen, or a resume function would break again
  // before any tensor work (a loop that breaks every iteration).
  if (traced.no_tensor_work || (is_break && !has_graph && tracer::is_resume_code(frame.code))) {
    TJ_LOG(skips, "{}:{}: {} runs as it is: {}", traced.unsupported->filename, traced.unsupported->lineno,
           code_name(frame.code), traced.no_tensor_work ? traced.unsupported->reason : "no tensor work before a graph break");
    out.skip_reason = "no tensor operations";
    return true;
  }
  if (is_break) {
    record_unsupported(*traced.unsupported, frame.code, true, has_graph);
    if (options.fullgraph) {
      PyErr_Format(unsupported_error(), "%s (%s:%d)", traced.unsupported->reason.c_str(),
                   traced.unsupported->filename.c_str(), traced.unsupported->lineno);
      return true;
    }
  } else if (traced.unsupported) {
    record_unsupported(*traced.unsupported, frame.code, false, has_graph);
    if (options.fullgraph) {
      PyErr_Format(unsupported_error(), "%s (%s:%d)", traced.unsupported->reason.c_str(),
                   traced.unsupported->filename.c_str(), traced.unsupported->lineno);
      return true;
    }
    out.skip_reason = traced.unsupported->reason;
    out.unsupported = true;
    return true;
  }
  if (traced.op_count == 0 && !is_break) {
    TJ_LOG(skips, "{} runs as it is: no tensor operations", code_name(frame.code));
    out.skip_reason = "no tensor operations";
    return true;
  }
  return false;
}

// Reads the example inputs of graph `g`'s placeholders and compiles it
// with the chosen backend; false when the backend failed or a Python
// error (an interruption) is set.
bool compile_traced_graph(const std::shared_ptr<const graph::Graph>& g, size_t tensor_inputs,
                          const tracer::TraceResult& traced, const tj_FrameView& frame, const CompileOptions& options,
                          CompiledStep& compiled) {
  std::vector<PyRef> owned_examples;
  std::vector<PyObject*> examples;  // borrowed from owned_examples
  for (size_t i = 0; i < tensor_inputs; ++i) {
    const tracer::SizeInput* size = size_input_at(traced, i);
    PyRef example = size ? PyRef::steal(size_input_tensor(size->value)) : read_source(*traced.input_sources[i], frame);
    if (example && is_int_input(traced, i)) example = PyRef::steal(int_input_tensor(example.get()));
    if (!example) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "tracejit: cannot read an example input");
      return false;
    }
    examples.push_back(example.get());
    owned_examples.push_back(std::move(example));
  }
  if (PyErr_CheckSignals() < 0) return false;
  BackendChoice choice{options.backend, options.backend_callable.get(), runtime_config().suppress_errors};
  if (traced.op_count == 0) choice = {"eager", nullptr, true};  // only passes inputs through
  {
    // As the graph will run: with autocast's casts in it, not added by the dispatcher.
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
    compiled = compile_graph_step(g, examples, choice, code_name(frame.code));
  }
  return compiled.ok && PyErr_CheckSignals() >= 0;
}

// A graph compiled: counted, and recorded for explain().
void note_graph_compiled(const std::shared_ptr<const graph::Graph>& g, const tracer::TraceResult& traced) {
  bump(Counter::graphs_compiled);
  bump(Counter::unique_graphs);
  if (ExplainRecord* explain = runtime_context().explain.get()) {
    explain->graphs.push_back(g);
    explain->op_count += traced.op_count;
    explain->specializations.insert(explain->specializations.end(), traced.specializations.begin(),
                                    traced.specializations.end());
  }
}
}  // namespace

FrameCompileResult compile_frame(const tj_FrameView& frame, const CompileOptions& options,
                                 std::unordered_map<std::string, std::vector<bool>>* automatic, bool first_compile,
                                 DynamicInts* ints) {
  FrameCompileResult out;
  if (!PyDict_GetItemString(PyImport_GetModuleDict(), "torch")) {
    out.skip_reason = "torch is not imported";
    return out;
  }
  const PhaseClock started;
  tracer::FrameInputs in = frame_inputs(frame, options, automatic, ints);
  // An interruption (Ctrl-C) met by a trace, or pending between the steps
  // below (PyErr_CheckSignals, as CPython's eval loop checks): returned set,
  // raised from the frame's call; the frame is compiled again at its next call.
  tracer::TraceResult traced = tracer::trace_frame(in);
  const PhaseClock traced_at;
  if (traced.interrupted) return out;
  if (ints && !traced.int_inputs.empty() && traced.unsupported) prefer_static_ints(traced, in, *ints, frame.code);
  if (traced.interrupted) return out;
  prefer_specialized_sizes(traced, in, frame.code);
  if (traced.interrupted || PyErr_CheckSignals() < 0) return out;
  auto does_tensor_work = [&] {
    return traced.op_count > 0 || (traced.graph && !traced.graph->placeholders().empty()) || takes_tensors(frame);
  };
  // Distributed training: the first compile of a frame doing tensor work
  // decides alike on every rank.
  const bool collective = first_compile && !explain_active() && !traced.no_tensor_work && does_tensor_work() &&
                          compiler_collectives_on(runtime_config().compiler_collectives);
  if (PyErr_Occurred()) return out;  // an interruption met while asking torch.distributed
  if (collective && !agree_with_other_ranks(traced, in, frame, automatic)) return out;
  log_dynamic(traced, frame.code);
  const bool is_break = traced.graph_break.has_value();
  const bool has_graph = does_tensor_work();
  if (runs_as_it_is(traced, frame, options, is_break, has_graph, out)) return out;

  std::shared_ptr<const graph::Graph> g(std::move(traced.graph));
  size_t tensor_inputs = g->placeholders().size();
  if (traced.op_count > 0)
    TJ_LOG(graph_code, "graph for {} ({}:{}):\n{}", code_name(frame.code), PyUnicode_AsUTF8(frame.code->co_filename),
           frame.code->co_firstlineno, graph::print_graph(*g));
  TJ_LOG(guards, "guards for {}:\n{}", code_name(frame.code), traced.guards.to_string());

  CompiledStep compiled;
  const PhaseClock compile_start;
  if (!compile_traced_graph(g, tensor_inputs, traced, frame, options, compiled)) return out;
  const PhaseClock compiled_at;
  // Dynamic dims: the entry serves other sizes, each compiled by the same
  // backend when first seen (compiled_graph.h).
  std::optional<BackendChoice> recompile_for_sizes;
  if (!traced.dynamic.empty() && traced.op_count > 0)
    recompile_for_sizes = BackendChoice{options.backend, nullptr, runtime_config().suppress_errors};
  PyRef compiled_graph = PyRef::steal(make_compiled_graph(
      g, static_cast<int>(tensor_inputs), std::move(traced.output), std::move(compiled),
      std::move(traced.side_effects), traced.globals.get(), recompile_for_sizes, code_name(frame.code),
      std::move(traced.int_inputs), std::move(traced.size_inputs)));
  if (!compiled_graph) return out;
  auto code = is_break ? tracer::make_break_code(frame.code, compiled_graph.get(), traced.input_sources,
                                                 *traced.graph_break, runtime_context().next_resume_number)
                       : tracer::make_transformed_code(frame.code, compiled_graph.get(), traced.input_sources);
  compiled_graph = PyRef();  // the transformed code holds it
  if (!code.ok()) {
    TJ_LOG(graph_breaks, "{}: cannot build the transformed code ({}); running it unchanged", code_name(frame.code),
           code.error().message);
    out.skip_reason = "cannot build the transformed code: " + code.error().message;
    return out;
  }
  // The one resume function every rank continues into after a break the
  // collective aligned runs it again at its first compile (two targets: a
  // branch the ranks may take differently, so none).
  if (collective && is_break && traced.graph_break->targets.size() == 1)
    mark_collective_resume(reinterpret_cast<PyCodeObject*>(code->get()));
  out.code = make_positional_code(code->get());
  if (!out.code) return out;
  out.guards = compile_guards(traced.guards);
  if (traced.op_count == 0) return out;  // a break before any tensor work: no graph to count
  note_graph_compiled(g, traced);
  // Where a compile's time went (issue 44: what a warm first call pays).
  if (log::enabled(log::Topic::perf)) {
    const PhaseClock done;
    TJ_LOG(perf,
           "compiled {}: {:.2f} ms ({:.2f} ms of this thread's CPU): trace {:.2f} ms CPU ({} instructions, {} ops), "
           "backend {:.2f} ms CPU, the rest {:.2f} ms CPU",
           code_name(frame.code), done.wall_ms(started), done.cpu_ms(started), traced_at.cpu_ms(started),
           traced.instructions, traced.op_count, compiled_at.cpu_ms(compile_start),
           done.cpu_ms(started) - traced_at.cpu_ms(started) - compiled_at.cpu_ms(compile_start));
  }
  return out;
}

namespace {
// The argument slots of a frame of `fn` called with the positional `args`
// (borrowed): false + TypeError unless they are exactly its parameters.
bool positional_slots(PyObject* fn, PyObject* args, std::vector<PyObject*>& slots) {
  if (!PyFunction_Check(fn) || !PyTuple_Check(args)) {
    PyErr_SetString(PyExc_TypeError, "expected (function, tuple of its positional arguments)");
    return false;
  }
  auto* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(fn));
  if (PyTuple_GET_SIZE(args) != code->co_argcount || code->co_kwonlyargcount ||
      (code->co_flags & (CO_VARARGS | CO_VARKEYWORDS))) {
    PyErr_SetString(PyExc_TypeError, "pass exactly the function's positional parameters");
    return false;
  }
  slots.assign(static_cast<size_t>(code->co_nlocalsplus), nullptr);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); ++i) slots[static_cast<size_t>(i)] = PyTuple_GET_ITEM(args, i);
  return true;
}
}  // namespace

PyObject* trace_for_test(PyObject* fn, PyObject* args) {
  std::vector<PyObject*> slots;
  if (!positional_slots(fn, args, slots)) return nullptr;
  auto* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(fn));
  tracer::FrameInputs in;
  in.code = code;
  in.globals = PyFunction_GET_GLOBALS(fn);
  in.builtins = PyEval_GetBuiltins();
  in.closure = PyFunction_GET_CLOSURE(fn);
  in.localsplus = slots.data();
  in.capture_scalar_outputs = runtime_config().capture_scalar_outputs;
  in.capture_dynamic_output_shape_ops = runtime_config().capture_dynamic_output_shape_ops;
  tracer::TraceResult r = tracer::trace_frame(in);
  PyRef graph_text = r.graph ? PyRef::steal(PyUnicode_FromString(graph::print_graph(*r.graph).c_str()))
                             : PyRef::borrow(Py_None);
  PyRef reason = r.unsupported ? PyRef::steal(PyUnicode_FromString(r.unsupported->reason.c_str())) : PyRef::borrow(Py_None);
  if (!graph_text || !reason) return nullptr;
  return Py_BuildValue("{s:O,s:s,s:O,s:i,s:i,s:i}", "graph", graph_text.get(), "guards", r.guards.to_string().c_str(),
                       "unsupported", reason.get(), "lineno", r.unsupported ? r.unsupported->lineno : 0, "op_count",
                       r.op_count, "instructions", r.instructions);
}

PyObject* compile_for_test(PyObject* fn, PyObject* args) {
  std::vector<PyObject*> slots;
  if (!positional_slots(fn, args, slots)) return nullptr;
  auto* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(fn));
  tj_FrameView view{code, fn, PyFunction_GET_GLOBALS(fn), PyEval_GetBuiltins(), slots.data(), nullptr};
  CompileOptions options;
  options.backend = "eager";
  FrameCompileResult r = compile_frame(view, options);
  if (PyErr_Occurred()) return nullptr;
  if (!r.code) return PyUnicode_FromString(r.skip_reason.c_str());
  return r.code.release();
}

void explain_begin() { runtime_context().explain = std::make_unique<ExplainRecord>(); }

bool explain_active() { return runtime_context().explain != nullptr; }

PyObject* explain_end() {
  std::unique_ptr<ExplainRecord> rec = std::move(runtime_context().explain);
  if (!rec) rec = std::make_unique<ExplainRecord>();
  PyRef graphs = PyRef::steal(PyList_New(0));
  if (!graphs) return nullptr;
  for (const auto& g : rec->graphs) {
    PyRef gm = PyRef::steal(make_graph_module(g));
    if (!gm || PyList_Append(graphs.get(), gm.get()) < 0) return nullptr;
  }
  PyRef reasons = PyRef::steal(PyList_New(0));
  if (!reasons) return nullptr;
  for (const auto& u : rec->reasons) {
    PyRef row = PyRef::steal(Py_BuildValue("(ssi)", u.reason.c_str(), u.filename.c_str(), u.lineno));
    if (!row || PyList_Append(reasons.get(), row.get()) < 0) return nullptr;
  }
  PyRef specialized = PyRef::steal(PyList_New(0));
  if (!specialized) return nullptr;
  for (const auto& u : rec->specializations) {
    PyRef row = PyRef::steal(Py_BuildValue("(ssi)", u.reason.c_str(), u.filename.c_str(), u.lineno));
    if (!row || PyList_Append(specialized.get(), row.get()) < 0) return nullptr;
  }
  PyRef skipped = PyRef::steal(PyList_New(0));
  if (!skipped) return nullptr;
  for (const auto& u : rec->skipped) {
    PyRef row = PyRef::steal(Py_BuildValue("(ssi)", u.reason.c_str(), u.filename.c_str(), u.lineno));
    if (!row || PyList_Append(skipped.get(), row.get()) < 0) return nullptr;
  }
  return Py_BuildValue("{s:O,s:O,s:O,s:i,s:O}", "graphs", graphs.get(), "break_reasons", reasons.get(),
                       "skipped_frames", skipped.get(), "op_count", rec->op_count, "specializations",
                       specialized.get());
}

}  // namespace tj::runtime

namespace tj::runtime {
PyObject* make_graph_module(std::shared_ptr<const graph::Graph> graph) {
  // GraphModule never mutates the graph it wraps.
  return wrap_graph_module(std::const_pointer_cast<graph::Graph>(std::move(graph)));
}
}  // namespace tj::runtime
