// on_frame: what the frame hook calls for each frame while compilation is
// active. Decides skip / cache hit / compile, keeps the counters, and
// enforces cache_size_limit. See runtime_state.h.
#include <chrono>
#include <optional>
#include <climits>
#include <string>

#include "graph/boxing.h"
#include "jit/llvm_backend.h"
#include "jit/llvm_codegen.h"
#include "runtime/frame_compiler.h"
#include "runtime/runtime_context.h"
#include "runtime/runtime_state.h"
#include "runtime/user_warnings.h"
#include "support/internal_error.h"
#include "support/log.h"
#include "support/py_errors.h"
#include "tracer/trace_api.h"

namespace tj::runtime {

namespace {

std::string describe(PyCodeObject* code) {
  const char* name = PyUnicode_AsUTF8(code->co_qualname);
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  if (!name || !file) {
    PyErr_Clear();  // a name for a log line: best effort
    return "<code>";
  }
  return std::string(name) + " (" + file + ":" + std::to_string(code->co_firstlineno) + ")";
}

std::string code_qualname(PyCodeObject* code) {
  const char* name = PyUnicode_AsUTF8(code->co_qualname);
  if (!name) PyErr_Clear();  // a name for a message: best effort
  return name ? name : "<code>";
}

int total_arg_slots(PyCodeObject* code) {
  int n = code->co_argcount + code->co_kwonlyargcount;
  if (code->co_flags & CO_VARARGS) ++n;
  if (code->co_flags & CO_VARKEYWORDS) ++n;
  return n;
}

// config.debug_check_guards: a fresh entry's guards must hold on the very
// frame that produced them, and none may be one that cannot hold on the
// next call. False + AssertionError naming the guard otherwise.
bool fresh_guards_hold(const GuardCheck& guards, const tj_FrameView& frame) {
  std::string why = guards.unstable_guard(frame);
  std::string failed;
  if (why.empty() && !guards.check(frame, &failed)) why = failed + " fails on the frame it was made from";
  if (why.empty()) return true;
  if (PyErr_Occurred()) return false;  // an interruption met by a guard: raised as it is
  PyErr_Format(PyExc_AssertionError, "tracejit internal error: a guard of %s can never pass again: %s",
               describe(frame.code).c_str(), why.c_str());
  return false;
}

// Asks the Python test callback; null result means "run unchanged".
FrameCompileResult call_python_callback(const tj_FrameView& frame) {
  FrameCompileResult result;
  int nargs = total_arg_slots(frame.code);
  PyRef args = PyRef::steal(PyTuple_New(nargs));
  if (!args) return result;
  for (int i = 0; i < nargs; ++i)
    PyTuple_SET_ITEM(args.get(), i, Py_NewRef(frame.localsplus[i] ? frame.localsplus[i] : Py_None));
  PyRef out = PyRef::steal(PyObject_CallFunctionObjArgs(runtime_context().python_frame_callback.get(), frame.code,
                                                        args.get(), nullptr));
  if (!out || out.get() == Py_None) return result;  // an error (it stays set) or "run unchanged"
  if (!PyCode_Check(out.get())) {
    PyErr_SetString(PyExc_TypeError, "tracejit frame callback must return a code object or None");
    return result;
  }
  result.code = make_positional_code(out.get());
  return result;
}

}  // namespace

void set_python_frame_callback(PyObject* cb) {
  runtime_context().python_frame_callback = cb == Py_None ? PyRef() : PyRef::borrow(cb);
}

PyRef make_positional_code(PyObject* code) {
  auto* co = reinterpret_cast<PyCodeObject*>(code);
  PyRef kwargs = PyRef::steal(Py_BuildValue("{s:i,s:i,s:i,s:i}", "co_argcount", total_arg_slots(co),
                                            "co_posonlyargcount", 0, "co_kwonlyargcount", 0, "co_flags",
                                            co->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS)));
  if (!kwargs) return PyRef();
  PyRef replace = PyRef::steal(PyObject_GetAttrString(code, "replace"));
  PyRef empty = PyRef::steal(PyTuple_New(0));
  if (!replace || !empty) return PyRef();
  return PyRef::steal(PyObject_Call(replace.get(), empty.get(), kwargs.get()));
}

namespace {
// dynamic=None: when an entry failed only because tensor sizes changed, the
// dims that changed are traced dynamic next time (automatic dynamic shapes);
// dynamic=None or True: ints whose value changed (and nothing else) are
// traced as graph inputs next time (automatic dynamic ints).
void note_size_changes(CodeState& state, const tj_FrameView& frame, const CompileOptions& options) {
  const bool ints_too = options.dynamic != 0 && !options.backend_callable;
  for (const auto& entry : state.entries) {
    if (!entry.guards || !entry.options->same_as(options)) continue;
    std::unordered_map<std::string, std::vector<bool>> changed;
    std::vector<std::string> ints;
    if (!entry.guards->fails_only_on_sizes(frame, &changed, ints_too ? &ints : nullptr)) continue;
    if (options.dynamic == -1)
      for (auto& [source, dims] : changed)
        for (size_t d : add_automatic_dims(state.automatic_dynamic, source, dims))
          TJ_LOG(dynamic, "{}: {} dim {} changed size: traced again with it dynamic", describe(frame.code), source, d);
    for (const std::string& source : ints)
      if (!state.dynamic_ints.static_ints.count(source) && state.dynamic_ints.dynamic.insert(source).second)
        TJ_LOG(dynamic, "{}: int {} changed value: traced again as a graph input", describe(frame.code), source);
  }
  // Numbers that moved since the newest entry's compile, whatever else
  // failed (its `.grad` now set, a new tensor size under dynamic=False).
  if (!ints_too) return;
  for (auto it = state.entries.rbegin(); it != state.entries.rend(); ++it) {
    if (!it->guards || !it->options->same_as(options)) continue;
    std::vector<std::string> moved;
    it->guards->changed_numbers(frame, moved);
    for (const std::string& source : moved)
      if (!state.dynamic_ints.static_ints.count(source) && state.dynamic_ints.dynamic.insert(source).second)
        TJ_LOG(dynamic, "{}: number {} changed value: traced again as a graph input", describe(frame.code), source);
    break;
  }
}
// The forward or backward of a custom autograd.Function called from C with
// a real ctx (eager's apply after a graph break at the call, or the engine
// running backward): left to CPython, as eager runs it. Traced alone it
// would only break again at ctx.save_for_backward.
bool is_autograd_function_frame(const tj_FrameView& frame) {
  if (frame.code->co_argcount < 1 || !frame.localsplus[0]) return false;
  static PyObject* base = nullptr;  // torch._C._FunctionBase, once torch is imported (never imported here)
  if (!base) {
    PyRef name = PyRef::steal(PyUnicode_FromString("torch._C"));
    PyRef module = PyRef::steal(name ? PyImport_GetModule(name.get()) : nullptr);
    base = module ? PyObject_GetAttrString(module.get(), "_FunctionBase") : nullptr;
    if (!clear_expected_error({PyExc_AttributeError}) || !base) return false;  // on_frame raises an unexpected one
  }
  return PyType_Check(base) && PyObject_TypeCheck(frame.localsplus[0], reinterpret_cast<PyTypeObject*>(base));
}
// explain: a frame the skip policy left to CPython although the tracer
// would inline its code into a compiled caller (torch.optim's functions
// called by CPython after a graph break): it ran uncompiled. Once per code.
void explain_skipped_frame(PyCodeObject* code) {
  ExplainRecord* explain = runtime_context().explain.get();
  if (!explain) return;
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  if (!file) {
    PyErr_Clear();  // a file name that does not encode: not torch's
    return;
  }
  if (!tracer::is_inlined_torch_file(file) || !explain->skipped_codes.insert(code).second) return;
  std::string_view f(file);
  size_t torch_at = f.rfind("/torch/");
  std::string rel(torch_at == std::string_view::npos ? f : f.substr(torch_at + 1));
  explain->skipped.push_back(tracer::Unsupported{
      code_qualname(code) + " ran uncompiled: called by CPython (after a graph break or from a frame run as it is), and "
          "torch's code (" + rel + ") is traced only when inlined into a compiled caller",
      file, code->co_firstlineno});
}
// explain: a frame that ran uncompiled for a reason no trace recorded (an
// internal error while compiling it, a transformed code that does not fit
// it), once per code object. An internal error is named as such, never by
// its exception's text (that is in the "please report" log line).
void explain_uncompiled_frame(PyCodeObject* code, const std::string& why) {
  ExplainRecord* explain = runtime_context().explain.get();
  if (!explain || !explain->skipped_codes.insert(code).second) return;
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  if (!file) PyErr_Clear();  // a file name that does not encode: printed empty
  explain->skipped.push_back(tracer::Unsupported{code_qualname(code) + " ran uncompiled: " + why, file ? file : "",
                                                 code->co_firstlineno});
}
}  // namespace

namespace {
// The cached code of the first entry of `state` whose guards pass (a new
// reference), or null: none passed (`newest_failing`: the newest entry
// whose guards failed), or a guard met an interruption (raised).
PyObject* cached_code(CodeState& state, const tj_FrameView& frame, const CompileOptions* options,
                      const GuardCheck*& newest_failing) {
  const bool timed = log::enabled(log::Topic::perf);
  for (auto& entry : state.entries) {
    if (entry.options.get() != options && !entry.options->same_as(*options)) continue;
    const auto start = timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (!entry.guards || entry.guards->check(frame, nullptr)) {
      if (timed)
        note_guard_time(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count());
      bump(Counter::cache_hits);
      return Py_NewRef(entry.code.get());
    }
    newest_failing = entry.guards.get();  // entries are in the order made: the last is the newest
    if (PyErr_Occurred()) return nullptr;  // a guard met an interruption (GuardCheck::check): it raises here
  }
  return nullptr;
}

// The code reached cache_size_limit entries: it runs uncompiled, with one
// warning (true; a Python error set when the warning raised).
bool at_cache_limit(CodeState& state, const tj_FrameView& frame) {
  if (static_cast<long long>(state.entries.size()) < runtime_config().cache_size_limit) return false;
  if (!state.warned_cache_limit) {
    state.warned_cache_limit = true;
    std::string msg = "tracejit: cache_size_limit (" + std::to_string(state.entries.size()) +
                      ") reached for " + describe(frame.code) + "; it now runs uncompiled";
    if (warn_user(msg) < 0) return true;  // a warning that raises: returned set
  }
  return true;
}

// Compiles the frame (or asks the Python frame callback); nullopt when an
// interruption met while compiling must raise from the call.
std::optional<FrameCompileResult> compile_now(CodeState* state, const tj_FrameView* frame,
                                              const CompileOptions* options, bool is_recompile, bool fresh) {
  FrameCompileResult result;
  if (runtime_context().python_frame_callback) {
    result = call_python_callback(*frame);
  } else {
    bump(Counter::frames_traced);
    // Nothing may escape into CPython's eval loop: a C++ exception from any
    // layer (LibTorch's python_error, c10::Error, ...) means "run it as is".
    try {
      if (jit::debug_inject_bug() == "frame_internal_error")  // API.md: a bug of ours while compiling a frame
        throw std::out_of_range("debug_inject_bug=frame_internal_error: unordered_map::at");
      result = compile_frame(*frame, *options, &state->automatic_dynamic,
                             !is_recompile && !fresh && (state->collective_resume || !tracer::is_resume_code(frame->code)),
                             &state->dynamic_ints);
    } catch (const std::exception& e) {
      result = FrameCompileResult{};
      if (pending_interruption()) return std::nullopt;  // not the compiler's failure: raised, the code stays compilable
      PyErr_Clear();  // any other: the frame runs unchanged (logged below)
      // Layers turn the errors they expect into values: an exception that
      // gets this far is a bug of ours, whatever its type (an ATen error
      // the tracer should have caught is named with its message).
      result.skip_reason = report_internal_error("compiling " + describe(frame->code), graph::detail::short_message(e));
      TJ_LOG(graph_breaks, "{}: compiling failed ({}); running it unchanged", describe(frame->code), result.skip_reason);
      explain_uncompiled_frame(frame->code,
                               "an internal error of tracejit while compiling it (counted in internal_errors; the "
                               "'please report' line on stderr has its text)");
    }
  }
  return result;
}
}  // namespace

extern "C" PyObject* on_frame(const tj_FrameView* frame, void* raw_options) {
  CodeState* state = code_state(frame->code, frame->extra);
  if (!state) {
    // co_extra cannot keep our state (a SystemError): the frame runs
    // unchanged. A MemoryError is raised.
    clear_unless_interruption();
    return nullptr;
  }
  if (state->mode == CodeMode::never) return nullptr;
  const auto* options = static_cast<const CompileOptions*>(raw_options);
  // Explain mode traces every frame from scratch and caches nothing; with
  // fullgraph=True a frame skipped for a tracing failure is traced again
  // so that the failure raises.
  const bool fresh = explain_active() || (options->fullgraph && state->mode == CodeMode::skip && state->skip_is_unsupported);
  if (state->mode == CodeMode::skip && !fresh) return nullptr;
  // The file rule depends on the mode (an installed package is traced under
  // tracejit.compile, not under --compile-all): one cached answer per mode.
  int8_t& file_skipped = state->file_skipped[options->whole_program ? 1 : 0];
  // A resume function continues a frame that was traced: it is traced too,
  // wherever its code came from; so is the function compile() was given.
  if (file_skipped < 0)
    file_skipped =
        is_skipped_code(frame->code, frame->globals, options->whole_program) && !tracer::is_resume_code(frame->code) ? 1 : 0;
  if (file_skipped && options->target_code.get() != reinterpret_cast<PyObject*>(frame->code)) {
    if (fresh) explain_skipped_frame(frame->code);
    return nullptr;
  }
  if (state->mode == CodeMode::unknown || (fresh && state->mode == CodeMode::skip)) state->mode = CodeMode::compile;

  // Describing a failed guard reads its value (a repr of a dict's tensor
  // keys can cost milliseconds): only the newest failing entry's, and only
  // when a recompile is logged.
  const GuardCheck* newest_failing = nullptr;
  if (PyObject* code = fresh ? nullptr : cached_code(*state, *frame, options, newest_failing)) return code;
  if (PyErr_Occurred()) return nullptr;  // a guard met an interruption (GuardCheck::check): it raises here
  std::string newest_failure;
  if (newest_failing && log::enabled(log::Topic::recompiles)) newest_failing->check(*frame, &newest_failure);
  bool is_recompile = !state->entries.empty() && !fresh;
  if (is_recompile) bump(Counter::guard_failures);
  if (is_recompile && options->dynamic != 0) note_size_changes(*state, *frame, *options);
  if (PyErr_Occurred()) return nullptr;  // an interruption met by a guard read just above

  if (!fresh && at_cache_limit(*state, *frame)) return nullptr;

  if (is_autograd_function_frame(*frame)) return nullptr;
  std::optional<FrameCompileResult> compiled = compile_now(state, frame, options, is_recompile, fresh);
  if (!compiled) return nullptr;  // not the compiler's failure: raised, the code stays compilable
  FrameCompileResult& result = *compiled;
  if (PyErr_Occurred()) return nullptr;
  if (!result.code) {
    if (!result.skip_reason.empty() && state->entries.empty() && !fresh) {
      state->mode = CodeMode::skip;
      state->skip_reason = result.skip_reason;
      state->skip_is_unsupported = result.unsupported;
    }
    flush_pending_warnings();  // one that a filter makes an error raises from the call
    return nullptr;
  }
  auto* code = reinterpret_cast<PyCodeObject*>(result.code.get());
  if (code->co_argcount != total_arg_slots(frame->code)) {
    TJ_LOG(graph_breaks, "transformed code for {} takes the wrong number of arguments; running it unchanged",
           describe(frame->code));
    explain_uncompiled_frame(frame->code, "its transformed code takes another number of arguments (a bug of tracejit)");
    return nullptr;
  }
  if (is_recompile) {
    bump(Counter::recompiles);
    TJ_LOG(recompiles, "recompiling {}: guard failed: {}", describe(frame->code), newest_failure);
  }
  if (result.guards && runtime_config().debug_check_guards && !fresh_guards_hold(*result.guards, *frame))
    return nullptr;
  mark_never_traced(code);
  if (!fresh) state->entries.push_back(CacheEntry{result.code, std::move(result.guards), options->shared_from_this()});
  // The layers' warnings (the nvrtc backend's "no CUDA device"), at the
  // user's frame; one that a filter makes an error raises from the call
  // (the entry stays cached: the next call runs it).
  if (flush_pending_warnings() < 0) return nullptr;
  return result.code.release();
}

int ensure_hook_installed() {
  if (tj_hook_installed()) return 0;
  return tj_hook_install(on_frame, free_code_state);
}

void reset_all() {
  bump_cache_epoch();
  jit::forget_kernels();
  zero_counters();
}

}  // namespace tj::runtime
