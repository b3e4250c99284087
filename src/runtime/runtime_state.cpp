// The runtime context, counters, the backend names and the skip-file rule;
// see runtime_context.h and runtime_state.h.
#include <climits>
#include <string>
#include <vector>

#include "runtime/runtime_state.h"

#include "compile/aot/backward_node.h"
#include "compile/aot/runtime_wrapper.h"
#include "compile/graph_cache.h"
#include "jit/backend.h"
#include "jit/kernel_cache.h"
#include "jit/frozen_constants.h"
#include "jit/llvm_backend.h"
#include "jit/llvm_codegen.h"
#include "jit/onednn_exec.h"
#include "jit/nvrtc_compile.h"
#include "runtime/runtime_context.h"
#include "support/internal_error.h"
#include "tracer/trace_api.h"

namespace tj::runtime {

RuntimeContext& runtime_context() {
  static RuntimeContext* context = new RuntimeContext;  // never destroyed: see runtime_context.h
  return *context;
}

const RuntimeConfig& runtime_config() { return runtime_context().config; }

bool set_runtime_config(std::string_view name, PyObject* value) {
  RuntimeConfig& config = runtime_context().config;
  if (name == "cache_size_limit" && PyLong_Check(value)) {
    int overflow = 0;
    long long limit = PyLong_AsLongLongAndOverflow(value, &overflow);
    PyErr_Clear();  // an int: only the overflow flag can be set, never an error
    config.cache_size_limit = overflow > 0 ? LLONG_MAX : limit;
    return true;
  }
  if (name == "suppress_errors") {
    config.suppress_errors = value == Py_True;
    return true;
  }
  if (name == "capture_dynamic_output_shape_ops") {
    config.capture_dynamic_output_shape_ops = value == Py_True;
    return true;
  }
  if (name == "capture_scalar_outputs") {
    config.capture_scalar_outputs = value == Py_True;
    return true;
  }
  if (name == "compiler_collectives") {
    config.compiler_collectives = value == Py_None ? -1 : value == Py_True ? 1 : 0;
    return true;
  }
  if (name == "aot_size_templates") {
    config.aot_size_templates = value == Py_True;
    return true;
  }
  if (name == "debug_check_aot_templates") {
    config.debug_check_aot_templates = value == Py_True;
    return true;
  }
  if (name == "debug_check_guards") {
    config.debug_check_guards = value == Py_True;
    return true;
  }
  if (name == "nvrtc_arch") {
    const char* s = PyUnicode_Check(value) ? PyUnicode_AsUTF8(value) : nullptr;
    jit::nvrtc::set_arch(s ? s : "");
    PyErr_Clear();  // a str that does not encode (surrogates): taken as ""
    return true;
  }
  if (name == "cache_dir") {  // None: the environment's; "": no disk cache
    const char* s = PyUnicode_Check(value) ? PyUnicode_AsUTF8(value) : nullptr;
    PyErr_Clear();  // a str that does not encode (surrogates): taken as ""
    jit::kernel_cache::set_base_directory(value == Py_None ? std::nullopt : std::optional<std::string>(s ? s : ""));
    return true;
  }
  if (name == "graph_cache") {
    compile::graph_cache::set_enabled(value == Py_True);
    return true;
  }
  if (name == "cache_max_mb" && PyLong_Check(value)) {
    int overflow = 0;
    long long mb = PyLong_AsLongLongAndOverflow(value, &overflow);
    PyErr_Clear();  // an int: only the overflow flag can be set, never an error
    jit::kernel_cache::set_size_limit(overflow > 0 || mb > (LLONG_MAX >> 20) ? LLONG_MAX : mb << 20);
    return true;
  }
  if (name == "freezing") {
    jit::set_freezing(value == Py_True);  // the llvm backend's own copy: no other reader
    return true;
  }
  if (name == "debug_inject_bug") {
    const char* s = PyUnicode_Check(value) ? PyUnicode_AsUTF8(value) : nullptr;
    jit::set_debug_inject_bug(s ? s : "");  // the llvm backend's own copy: no other reader
    PyErr_Clear();  // a str that does not encode (surrogates): taken as ""
    return true;
  }
  return false;
}

namespace {
constexpr std::array<std::string_view, kCounterCount> kCounterNames = {
    "frames_traced", "graphs_compiled", "graph_breaks", "recompiles", "cache_hits", "guard_failures", "unique_graphs", "backend_fallbacks",
    "kernels_compiled", "kernel_cache_hits", "aot_captures", "graph_cache_hits", "aot_size_reuses", "program_size_reuses", "sizes_not_served",
    "sizes_run_op_by_op", "kernels_written_in_place", "outputs_written_back_early",
    "inplace_dense_fallbacks", "inputs_differ_fallbacks", "kernel_input_fallbacks", "internal_errors",
    "onednn_not_finite_refusals", "aot_runs_op_by_op", "frozen_first_calls_op_by_op",
    "aot_size_probes", "aot_merged_backward_parts"};
std::array<long long, kCounterCount> g_counters{};
long long g_frozen_op_by_op_base = 0;  // freeze_stats() keeps its own total: counted from the last zero

// Directory prefixes whose code is never traced as a frame: the standard
// library and the installed packages (torch internals among them).
const std::vector<std::string>& skipped_prefixes() {
  static std::vector<std::string> prefixes = [] {
    std::vector<std::string> out;
    PyObject* list = nullptr;  // borrowed from globals
    PyRef globals = PyRef::steal(PyDict_New());
    if (globals) {
      PyRef r = PyRef::steal(PyRun_String(
          "import sys, sysconfig\n"
          "_p = sysconfig.get_paths()\n"
          "_out = {_p[k] for k in ('stdlib', 'platstdlib', 'purelib', 'platlib') if k in _p}\n"
          "_out |= {p for p in sys.path if p.endswith(('dist-packages', 'site-packages'))}\n"
          "_out.add('/usr/lib/python3/dist-packages')\n"
          "_out = sorted(p.rstrip('/') + '/' for p in _out if p)\n",
          Py_file_input, globals.get(), globals.get()));
      list = r ? PyDict_GetItemString(globals.get(), "_out") : nullptr;
    }
    if (list) {
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); ++i) {
        if (const char* s = PyUnicode_AsUTF8(PyList_GET_ITEM(list, i))) out.emplace_back(s);
      }
    }
    PyErr_Clear();  // the skip list is best effort: a name that does not read is not skipped
    return out;
  }();
  return prefixes;
}

bool is_skipped_module(PyObject* globals) {
  if (!globals || !PyDict_Check(globals)) return false;
  PyObject* name = PyDict_GetItemString(globals, "__name__");
  if (!name || !PyUnicode_Check(name)) return false;
  const char* s = PyUnicode_AsUTF8(name);
  if (!s) {
    PyErr_Clear();  // a module name that does not encode: not one we skip
    return false;
  }
  std::string_view n(s);
  // tracejit itself, and the code collections.namedtuple generates.
  return n == "tracejit" || n.starts_with("tracejit.") || n.starts_with("namedtuple_");
}
}  // namespace

std::string_view counter_name(Counter c) { return kCounterNames[static_cast<int>(c)]; }
void bump(Counter c, long long by) { g_counters[static_cast<int>(c)] += by; }
// The kernel and executor counters live in the jit layer, which counts without the GIL.
long long counter(Counter c) {
  if (c == Counter::kernels_compiled) return jit::kernels_compiled();
  if (c == Counter::kernel_cache_hits) return jit::kernel_cache_hits();
  if (c == Counter::kernels_written_in_place) return jit::kernel_outputs_written_in_place();
  if (c == Counter::outputs_written_back_early) return jit::outputs_written_back_early();
  if (c == Counter::inplace_dense_fallbacks) return jit::inplace_dense_fallbacks();
  if (c == Counter::inputs_differ_fallbacks) return jit::inputs_differ_fallbacks();
  if (c == Counter::kernel_input_fallbacks) return jit::kernel_input_fallbacks();
  if (c == Counter::internal_errors) return internal_error_count();
  if (c == Counter::onednn_not_finite_refusals) return jit::onednn::not_finite_refusals();
  if (c == Counter::aot_runs_op_by_op) return jit::aot_runs_op_by_op();
  if (c == Counter::aot_merged_backward_parts) return jit::aot_rt::merged_backward_parts();
  if (c == Counter::frozen_first_calls_op_by_op) return jit::freeze_stats().op_by_op_calls - g_frozen_op_by_op_base;
  return g_counters[static_cast<int>(c)];
}
void zero_counters() {
  g_counters.fill(0);
  jit::zero_kernel_counters();
  jit::zero_llvm_run_counters();
  zero_internal_error_count();
  jit::onednn::zero_not_finite_refusals();
  jit::zero_aot_runs_op_by_op();
  jit::aot_rt::zero_merged_backward_parts();
  g_frozen_op_by_op_base = jit::freeze_stats().op_by_op_calls;
}

std::vector<std::string> known_backends() { return jit::backend_names(); }

bool is_known_backend(std::string_view name) { return jit::find_backend(name) != nullptr; }

bool is_skipped_code(PyCodeObject* code, PyObject* globals, bool whole_program) {
  if (is_skipped_module(globals)) return true;
  const char* file = PyUnicode_AsUTF8(code->co_filename);
  if (!file) {
    PyErr_Clear();  // a file name that does not encode: never traced
    return true;
  }
  std::string_view f(file);
  // Generated code of libraries: <frozen ...>, <__array_function__
  // internals>, dataclasses' __create_fn__. "<string>" and "<stdin>" are
  // the user's (-c, the prompt).
  if (f.starts_with("<") && f != "<string>" && f != "<stdin>") return true;
  const char* name = PyUnicode_AsUTF8(code->co_name);
  if (!name) PyErr_Clear();  // a name that does not encode: not __create_fn__
  std::string_view n = name ? name : "";
  const char* qual = PyUnicode_AsUTF8(code->co_qualname);
  if (!qual) PyErr_Clear();  // as above
  if (n == "__create_fn__" || (qual && std::string_view(qual).starts_with("__create_fn__."))) return true;
  // The forward of torch.nn's modules is traced like user code (an
  // nn.Sequential compiled directly); their other frames (Module.__call__
  // and its hooks machinery) are not: the tracer inlines module calls its own way.
  if (f.find("/torch/nn/modules/") != std::string_view::npos) return n != "forward";
  if (!whole_program) return tracer::skip_frame_reason(f).has_value();
  for (const auto& prefix : skipped_prefixes()) {
    if (f.starts_with(prefix)) return true;
  }
  return false;
}

}  // namespace tj::runtime
