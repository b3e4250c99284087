// Process-wide runtime state: counters, compile options, the frame
// compiler that turns a missed frame into a cache entry.
//
// All of it is touched with the GIL held, so plain integers suffice.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/code_cache.h"
#include "support/py_ref.h"

namespace tj::runtime {

enum class Counter {
  frames_traced,
  graphs_compiled,
  graph_breaks,
  recompiles,
  cache_hits,
  guard_failures,
  unique_graphs,
  backend_fallbacks,  // graphs a backend (or AOT) could not compile, run op by op as captured
  kernels_compiled,   // llvm kernels built by LLVM (kept by the jit layer, read through counter())
  kernel_cache_hits,  // llvm kernels found in the in-memory kernel cache
  aot_captures,       // AOT captures of a graph (functionalization on proxies)
  graph_cache_hits,   // AOT results read from the graph cache on disk (compile/graph_cache.h), no capture
  aot_size_reuses,    // sizes a dynamic entry compiled from its AOT size template, with no capture
  program_size_reuses,  // ... of those, sizes served by one program for every size: no passes, no lowering
  sizes_not_served,   // calls of a dynamic entry at sizes its graph's shapes do not hold: the frame ran as it is
  sizes_run_op_by_op, // calls of a dynamic entry at a new size past its kMaxSizeVariants compiled sizes
  // The llvm executor's (kept by the jit layer, read through counter()):
  kernels_written_in_place,  // kernel outputs stored straight into a donated input, per call
  outputs_written_back_early,  // outputs copied into their input mid-graph, once nothing can fail, per call
  inplace_dense_fallbacks,   // calls run op by op: an input written in place was not dense
  inputs_differ_fallbacks,   // calls run op by op: input sizes or dtypes not those compiled for (llvm, nvrtc)
  kernel_input_fallbacks,    // llvm kernels whose inputs differed from their meta at run time, run op by op
  internal_errors,  // bugs of tracejit's own met and reported (support/internal_error.h; kept there)
  onednn_not_finite_refusals,  // oneDNN steps the NaN rule refused, run as ATen ops (jit/onednn_finite.h; kept there)
  aot_runs_op_by_op,           // AOT wrapper calls run as the captured graph op by op (compile/aot/runtime_wrapper.h)
  frozen_first_calls_op_by_op,  // first calls of frozen graphs run op by op (jit/frozen_constants.h, freeze_after)
  aot_size_probes,  // AOT captures at sizes of our choosing for a size template, never compiled (size_probes.h)
  aot_merged_backward_parts,  // backward parts of merged output groups, per call (compile/aot/backward_node.h; kept there)
  count_
};
inline constexpr int kCounterCount = static_cast<int>(Counter::count_);
std::string_view counter_name(Counter c);

// The cache-hit path under the `perf` log (issue 10): on_frame hands over
// the time its guard check of the entry that hit took, and this thread's
// next compiled-graph call adds it to its own profile (compiled_graph.cpp).
// Each compiled graph logs, after 100, 1,000, 10,000... calls, the mean
// time per call of the guard check, of the graph's run (input checks and
// the backend) and of rebuilding the outputs and replaying side effects.
void note_guard_time(double ns);
void bump(Counter c, long long by = 1);
long long counter(Counter c);
void zero_counters();

// The tracejit.config options the runtime reads, as a C++ mirror that
// tracejit.config keeps current (its constructor and every assignment call
// _tracejit._set_config): a compile reads them without touching Python, and
// an assignment takes effect on the next compile.
struct RuntimeConfig {
  long long cache_size_limit = 8;
  bool suppress_errors = true;
  bool debug_check_guards = false;
  bool aot_size_templates = true;
  bool debug_check_aot_templates = false;  // capture each size a template serves too, and compare
  int compiler_collectives = -1;  // -1: None (world size > 1), 0: False, 1: True
  bool capture_scalar_outputs = false;
  bool capture_dynamic_output_shape_ops = true;  // handed to each trace (tracer::FrameInputs)  // handed to each trace (tracer::FrameInputs)
};
const RuntimeConfig& runtime_config();
// Sets a mirrored option from its (already checked) Python value; false
// (no error set) for options the runtime does not read.
bool set_runtime_config(std::string_view name, PyObject* value);

// What tracejit.compile was asked for. Owned (shared) by the compiled
// callable; the frame hook sees a raw pointer for the duration of a call.
struct CompileOptions : std::enable_shared_from_this<CompileOptions> {
  std::string backend;                 // a known backend name, or "" for a callable
  PyRef backend_callable;              // or null
  bool fullgraph = false;
  int dynamic = -1;                    // -1: None (automatic), 0: False, 1: True
  bool whole_program = false;          // --compile-all: installed packages' frames are not traced
  // The code of the function tracejit.compile was given (a bound method's
  // function's), or null: traced even where the skip policy would skip its
  // file (tracejit.compile(opt.step)). Not part of same_as.
  PyRef target_code;
  // Two option sets compile the same way (cache entries are shared).
  bool same_as(const CompileOptions& o) const {
    return backend == o.backend && backend_callable.get() == o.backend_callable.get() && fullgraph == o.fullgraph &&
           dynamic == o.dynamic;
  }
};

// The registered backend names (jit/backend.h), in the order error
// messages list them.
std::vector<std::string> known_backends();
bool is_known_backend(std::string_view name);

// Result of compiling one frame. `code` is the transformed code to cache
// and run; null means "run unchanged" and, with a `skip`
// reason, never ask again for this code (until reset()).
struct FrameCompileResult {
  PyRef code;
  std::unique_ptr<GuardCheck> guards;
  std::string skip_reason;
  bool unsupported = false;  // the skip is a tracing failure, not "nothing to do"
};

// Tests may install a Python callable `cb(code, args)` returning a code
// object or None; it takes precedence over the frame compiler. Borrowed
// in, kept strong; None/null removes it.
void set_python_frame_callback(PyObject* cb);

// Rewrites a code object's signature so that every argument slot is taken
// positionally (what the frame hook passes). Null + error on failure.
PyRef make_positional_code(PyObject* code);

// The callback the frame hook calls (see eval_frame.h).
extern "C" PyObject* on_frame(const tj_FrameView* frame, void* options);

// Installs the frame hook with on_frame; idempotent. 0 or -1 + error.
int ensure_hook_installed();

// Forgets every cache entry and zeroes the counters.
void reset_all();

// Whether frames of this code are not traced: the standard library,
// frozen modules, tracejit itself, generated code, and torch's internals
// (the tracer's skip policy, tracer/skip_policy.h); under --compile-all
// (`whole_program`) every installed package too.
bool is_skipped_code(PyCodeObject* code, PyObject* globals, bool whole_program);

}  // namespace tj::runtime
