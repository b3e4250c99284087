// The `_tracejit` extension module: the C side of the `tracejit` package.
// Built into the launcher (PyImport_AppendInittab) and as an extension
// module in build/python. Python-facing functions stay thin: they convert
// arguments and call the runtime (runtime_state.h, call_wrappers.h).
#include <string>

#include "jit/backend_info.h"
#include "runtime/call_wrappers.h"
#include "runtime/backend_step.h"
#include "runtime/compiled_graph.h"
#include "runtime/frame_compiler.h"
#include "runtime/module_parts.h"
#include "runtime/runtime_context.h"
#include "runtime/runtime_state.h"
#include "runtime/tracejit_module.h"
#include "runtime/user_warnings.h"
#include "runtime/warm_up.h"
#include "support/log.h"
#include "tracer/trace_api.h"
#include "tracejit_build_config.h"

namespace tj::runtime {

namespace {

std::string known_backends_text() {
  std::string out;
  for (auto b : known_backends()) {
    if (!out.empty()) out += ", ";
    out += b;
  }
  return out;
}

// Builds CompileOptions from Python values; null + ValueError/TypeError.
std::shared_ptr<CompileOptions> parse_options(PyObject* backend, int fullgraph, PyObject* dynamic) {
  auto options = std::make_shared<CompileOptions>();
  if (PyUnicode_Check(backend)) {
    const char* name = PyUnicode_AsUTF8(backend);
    if (!name) return nullptr;
    if (!is_known_backend(name)) {
      PyErr_Format(PyExc_ValueError, "tracejit: unknown backend '%s' (known: %s, or a callable)", name,
                   known_backends_text().c_str());
      return nullptr;
    }
    options->backend = name;
  } else if (PyCallable_Check(backend)) {
    options->backend_callable = PyRef::borrow(backend);
  } else {
    PyErr_Format(PyExc_TypeError, "tracejit: backend must be a name (%s) or a callable, not %R",
                 known_backends_text().c_str(), backend);
    return nullptr;
  }
  options->fullgraph = fullgraph != 0;
  if (dynamic == Py_None) {
    options->dynamic = -1;
  } else if (PyBool_Check(dynamic)) {
    options->dynamic = dynamic == Py_True ? 1 : 0;
  } else {
    PyErr_Format(PyExc_TypeError, "tracejit: dynamic must be None, True or False, not %R", dynamic);
    return nullptr;
  }
  return options;
}

PyObject* py_compile_function(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"fn", "backend", "fullgraph", "dynamic", nullptr};
  PyObject* fn = nullptr;
  PyObject* backend = nullptr;
  int fullgraph = 0;
  PyObject* dynamic = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|pO", const_cast<char**>(kwlist), &fn, &backend, &fullgraph,
                                   &dynamic))
    return nullptr;
  auto options = parse_options(backend, fullgraph, dynamic);
  if (!options) return nullptr;
  PyObject* target = PyMethod_Check(fn) ? PyMethod_GET_FUNCTION(fn) : fn;  // borrowed
  if (PyFunction_Check(target)) options->target_code = PyRef::borrow(PyFunction_GET_CODE(target));
  return make_compiled_function(fn, std::move(options));
}

PyObject* py_check_backend(PyObject*, PyObject* backend) {
  if (!parse_options(backend, 0, Py_None)) return nullptr;
  Py_RETURN_NONE;
}

PyObject* py_disable(PyObject*, PyObject* fn) {
  PyObject* target = fn;
  if (PyMethod_Check(target)) target = PyMethod_GET_FUNCTION(target);
  if (PyFunction_Check(target)) {
    if (ensure_hook_installed() < 0) return nullptr;
    mark_never_traced(reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(target)));
    if (PyErr_Occurred()) return nullptr;
  }
  return make_disabled_function(fn);
}

// _set_config(name, value): tracejit.config mirrors an option into the runtime.
PyObject* py_set_config(PyObject*, PyObject* args) {
  const char* name = nullptr;
  PyObject* value = nullptr;
  if (!PyArg_ParseTuple(args, "sO", &name, &value)) return nullptr;
  return Py_NewRef(set_runtime_config(name, value) ? Py_True : Py_False);
}

PyObject* py_counters(PyObject*, PyObject*) {
  PyRef d = PyRef::steal(PyDict_New());
  if (!d) return nullptr;
  for (int i = 0; i < kCounterCount; ++i) {
    auto c = static_cast<Counter>(i);
    PyRef v = PyRef::steal(PyLong_FromLongLong(counter(c)));
    if (!v || PyDict_SetItemString(d.get(), std::string(counter_name(c)).c_str(), v.get()) < 0) return nullptr;
  }
  return d.release();
}

PyObject* py_reset(PyObject*, PyObject*) {
  reset_all();
  Py_RETURN_NONE;
}

PyObject* py_set_logs(PyObject*, PyObject* spec) {
  const char* s = PyUnicode_AsUTF8(spec);
  if (!s) return nullptr;
  std::string error;
  if (!log::set_topics(s, &error)) {
    PyErr_SetString(PyExc_ValueError, ("tracejit: " + error).c_str());
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyObject* py_log(PyObject*, PyObject* args) {
  const char* topic = nullptr;
  const char* message = nullptr;
  if (!PyArg_ParseTuple(args, "ss", &topic, &message)) return nullptr;
  for (int i = 0; i < log::kTopicCount; ++i) {
    auto t = static_cast<log::Topic>(i);
    if (log::topic_name(t) == topic) {
      if (log::enabled(t)) log::logger(t).info("{}", message);
      Py_RETURN_NONE;
    }
  }
  return PyErr_Format(PyExc_ValueError, "tracejit: unknown log topic '%s'", topic);
}

PyObject* py_log_enabled(PyObject*, PyObject* topic_obj) {
  const char* topic = PyUnicode_AsUTF8(topic_obj);
  if (!topic) return nullptr;
  for (int i = 0; i < log::kTopicCount; ++i) {
    auto t = static_cast<log::Topic>(i);
    if (log::topic_name(t) == topic) return PyBool_FromLong(log::enabled(t));
  }
  return PyErr_Format(PyExc_ValueError, "tracejit: unknown log topic '%s'", topic);
}

PyObject* py_set_frame_callback(PyObject*, PyObject* cb) {
  if (cb != Py_None && !PyCallable_Check(cb)) return PyErr_Format(PyExc_TypeError, "expected a callable or None");
  set_python_frame_callback(cb);
  Py_RETURN_NONE;
}

PyObject* py_install_hook(PyObject*, PyObject*) {
  if (ensure_hook_installed() < 0) return nullptr;
  Py_RETURN_NONE;
}

PyObject* py_uninstall_hook(PyObject*, PyObject*) {
  tj_hook_uninstall();
  Py_RETURN_NONE;
}

PyObject* py_hook_installed(PyObject*, PyObject*) { return PyBool_FromLong(tj_hook_installed()); }

PyObject* py_hook_callback_calls(PyObject*, PyObject*) { return PyLong_FromUnsignedLongLong(tj_hook_callback_calls()); }

PyObject* py_set_compile_all(PyObject*, PyObject* backend) {
  if (backend == Py_None) {
    tj_set_default_options(nullptr);
    runtime_context().compile_all_options.reset();
    Py_RETURN_NONE;
  }
  auto options = parse_options(backend, 0, Py_None);
  if (!options || ensure_hook_installed() < 0) return nullptr;
  options->whole_program = true;
  runtime_context().compile_all_options = options;
  tj_set_default_options(options.get());
  Py_RETURN_NONE;
}

PyObject* py_version_lines(PyObject*, PyObject*) {
  return Py_BuildValue("[sss]", "tracejit " TRACEJIT_VERSION, jit::llvm_version_line().c_str(),
                       jit::nvrtc_version_line().c_str());
}

PyObject* py_last_aot_summary(PyObject*, PyObject*) { return PyUnicode_FromString(last_aot_summary().c_str()); }

PyObject* py_known_backends(PyObject*, PyObject*) {
  PyRef list = PyRef::steal(PyList_New(0));
  if (!list) return nullptr;
  for (auto b : known_backends()) {
    PyRef s = PyRef::steal(PyUnicode_FromStringAndSize(b.data(), static_cast<Py_ssize_t>(b.size())));
    if (!s || PyList_Append(list.get(), s.get()) < 0) return nullptr;
  }
  return list.release();
}

PyObject* py_explain_begin(PyObject*, PyObject*) {
  explain_begin();
  Py_RETURN_NONE;
}

PyObject* py_explain_end(PyObject*, PyObject*) { return explain_end(); }

PyObject* py_trace_for_test(PyObject*, PyObject* args) {
  PyObject* fn = nullptr;
  PyObject* fargs = nullptr;
  if (!PyArg_ParseTuple(args, "OO", &fn, &fargs)) return nullptr;
  return trace_for_test(fn, fargs);
}

// The transformed code objects cached for `fn`'s code, newest last.
PyObject* py_cache_entries(PyObject*, PyObject* fn) {
  PyObject* code = PyFunction_Check(fn) ? PyFunction_GET_CODE(fn) : PyCode_Check(fn) ? fn : nullptr;
  if (!code) return PyErr_Format(PyExc_TypeError, "expected a Python function or a code object");
  if (ensure_hook_installed() < 0) return nullptr;
  CodeState* state = code_state(reinterpret_cast<PyCodeObject*>(code));
  if (!state) return nullptr;
  PyRef list = PyRef::steal(PyList_New(0));
  if (!list) return nullptr;
  for (const auto& e : state->entries)
    if (PyList_Append(list.get(), e.code.get()) < 0) return nullptr;
  return list.release();
}

PyObject* py_compile_for_test(PyObject*, PyObject* args) {
  PyObject* fn = nullptr;
  PyObject* fargs = nullptr;
  if (!PyArg_ParseTuple(args, "OO", &fn, &fargs)) return nullptr;
  return compile_for_test(fn, fargs);
}

PyMethodDef kMethods[] = {
    {"_compile_for_test", py_compile_for_test, METH_VARARGS,
     "_compile_for_test(fn, args) -> transformed code (or the reason it runs unchanged), not run or cached"},
    {"_cache_entries", py_cache_entries, METH_O, "the transformed code objects cached for fn (tools, tests)"},
    {"_trace_for_test", py_trace_for_test, METH_VARARGS,
     "_trace_for_test(fn, args) -> dict(graph, guards, unsupported, lineno, op_count, instructions); traces without running"},
    {"explain_begin", py_explain_begin, METH_NOARGS, "start recording graphs and break reasons (tracejit.explain)"},
    {"explain_end", py_explain_end, METH_NOARGS, "stop recording; a dict of graphs, break_reasons, op_count"},
    {"compile_function", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_compile_function)),
     METH_VARARGS | METH_KEYWORDS,
     "compile_function(fn, backend, fullgraph=False, dynamic=None) -> CompiledFunction"},
    {"check_backend", py_check_backend, METH_O, "raise ValueError/TypeError unless backend is usable"},
    {"disable", py_disable, METH_O, "disable(fn) -> DisabledFunction; fn's frames are never traced"},
    {"counters", py_counters, METH_NOARGS, "a snapshot dict of the counters"},
    {"_set_config", py_set_config, METH_VARARGS, "mirror a tracejit.config option into the runtime"},
    {"reset", py_reset, METH_NOARGS, "forget every cache entry and zero the counters"},
    {"set_logs", py_set_logs, METH_O, "enable exactly these log topics (comma list)"},
    {"log", py_log, METH_VARARGS, "log(topic, message)"},
    {"log_enabled", py_log_enabled, METH_O, "whether a log topic is on"},
    {"_set_frame_callback", py_set_frame_callback, METH_O,
     "test hook: cb(code, args) -> code object or None, consulted on cache misses"},
    {"_install_hook", py_install_hook, METH_NOARGS, nullptr},
    {"_uninstall_hook", py_uninstall_hook, METH_NOARGS, nullptr},
    {"_hook_installed", py_hook_installed, METH_NOARGS, nullptr},
    {"_hook_callback_calls", py_hook_callback_calls, METH_NOARGS, nullptr},
    {"set_compile_all", py_set_compile_all, METH_O, "trace every user frame with this backend (None: stop)"},
    {"version_lines", py_version_lines, METH_NOARGS, nullptr},
    {"known_backends", py_known_backends, METH_NOARGS, nullptr},
    {"_last_aot_summary", py_last_aot_summary, METH_NOARGS, "AOT metadata of the last graph AOT compiled"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_tracejit", "tracejit's C++ runtime.", -1, kMethods};

}  // namespace

PyObject* unsupported_error() { return runtime_context().unsupported_error.get(); }
PyObject* backend_compiler_failed_error() { return runtime_context().backend_compiler_failed_error.get(); }

int register_core(PyObject* module) {
  RuntimeContext& context = runtime_context();
  context.unsupported_error = PyRef::steal(PyErr_NewExceptionWithDoc(
      "tracejit.Unsupported", "Raised with fullgraph=True when the tracer must break the graph.", PyExc_RuntimeError,
      nullptr));
  context.backend_compiler_failed_error = PyRef::steal(PyErr_NewExceptionWithDoc(
      "tracejit.BackendCompilerFailed", "A backend failed to compile or run a graph.", PyExc_RuntimeError, nullptr));
  if (!context.unsupported_error || !context.backend_compiler_failed_error) return -1;
  if (PyModule_AddObjectRef(module, "Unsupported", unsupported_error()) < 0) return -1;
  if (PyModule_AddObjectRef(module, "BackendCompilerFailed", backend_compiler_failed_error()) < 0) return -1;
  if (register_warnings(module) < 0 || register_compiled_graph(module) < 0) return -1;
  return register_call_wrappers(module);
}

}  // namespace tj::runtime

PyMODINIT_FUNC PyInit__tracejit() {
  tj::PyRef module = tj::PyRef::steal(PyModule_Create(&tj::runtime::kModule));
  if (!module) return nullptr;
  if (tj::runtime::register_core(module.get()) < 0 || tj::tracer::register_bytecode_bindings(module.get()) < 0 ||
      tj::runtime::register_graph(module.get()) < 0)
    return nullptr;
  tj::runtime::start_warm_up();
  return module.release();
}
