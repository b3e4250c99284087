// Python type tracejit.GraphModule: a graph::Graph seen from Python.
//
//   gm = _tracejit.GraphModule(text)       # or GraphModule.from_text(text)
//   gm.code            # Python source of forward(self, ...), runnable with torch
//   gm.graph           # the readable graph text (printer.h)
//   gm.text            # the full text serialization (parse_graph reads it)
//   gm.print_readable()
//   gm(x, y)           # runs the graph on tensors through the interpreter
//   pickle.dumps(gm)   # pickles as its text
//
// and, for the debugging tools (tracejit/_repro.py):
//   _tracejit.compile_graph(gm, backend, inputs, stage) -> callable
//       stage "dynamo": gm is a captured graph, compiled through the whole
//       pipeline (AOT, passes, backend) without falling back: a failure
//       raises BackendCompilerFailed; "aot": gm is a functional graph handed
//       to the backend as it is.
//   _tracejit._last_backend_failure() -> (graph text, [(sizes, strides,
//       dtype, requires_grad)], message) or None: what a functional backend
//       last failed on (backend_step.h).
//
// This is the one runtime file that includes python_variable.h (tensor
// <-> PyObject), which costs ~7 s of build. C++ callers wrap a graph with
// wrap_graph_module().
#include <memory>
#include <new>
#include <string>

#include <torch/csrc/autograd/python_variable.h>

#include "graph/graph.h"
#include "graph/interpreter.h"
#include "graph/printer.h"
#include "graph/python_codegen.h"
#include "graph/text_format.h"
#include "graph/type_names.h"
#include "jit/backend.h"
#include "runtime/backend_step.h"
#include "runtime/compiled_graph.h"
#include "runtime/cpp_errors.h"
#include "runtime/module_parts.h"
#include "runtime/tracejit_module.h"
#include "support/py_ref.h"
#include "support/tensor_bridge.h"

namespace tj::runtime {

// New reference to a GraphModule owning `graph`, or null with an exception.
PyObject* wrap_graph_module(std::shared_ptr<graph::Graph> graph);

namespace {

struct PyGraphModule {
  PyObject_HEAD
  std::shared_ptr<graph::Graph> graph;
};

// A new reference from register_graph, kept for the life of the process
// (never released: the type outlives every GraphModule).
PyTypeObject* graph_module_type = nullptr;

// THPVariable_Wrap needs torch's Python side loaded.
bool ensure_torch_imported() {
  static bool imported = false;
  if (imported) return true;
  if (!PyRef::steal(PyImport_ImportModule("torch"))) return false;
  imported = true;
  return true;
}

graph::Graph& graph_of(PyObject* self) { return *reinterpret_cast<PyGraphModule*>(self)->graph; }

// New reference: a GraphModule parsed from `text`, or null + ValueError.
PyObject* from_text_impl(PyTypeObject* type, PyObject* text) {
  if (!PyUnicode_Check(text)) {
    PyErr_Format(PyExc_TypeError, "GraphModule: expected the graph text (str), not %R", text);
    return nullptr;
  }
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text, &size);
  if (!data) return nullptr;
  auto parsed = graph::parse_graph(std::string_view(data, size));
  if (!parsed) {
    PyErr_SetString(PyExc_ValueError, parsed.error().message.c_str());
    return nullptr;
  }
  PyObject* self = type->tp_alloc(type, 0);
  if (!self) return nullptr;
  new (&reinterpret_cast<PyGraphModule*>(self)->graph) std::shared_ptr<graph::Graph>(std::move(*parsed));
  return self;
}

PyObject* gm_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"text", nullptr};
  PyObject* text = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O", const_cast<char**>(kwlist), &text)) return nullptr;
  return from_text_impl(type, text);
}

void gm_dealloc(PyObject* self) {
  reinterpret_cast<PyGraphModule*>(self)->graph.~shared_ptr();
  Py_TYPE(self)->tp_free(self);
}

PyObject* gm_from_text(PyObject* cls, PyObject* text) { return from_text_impl(reinterpret_cast<PyTypeObject*>(cls), text); }

PyObject* to_py_string(const std::string& s) { return PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size())); }

PyObject* gm_code(PyObject* self, void*) { return to_py_string(graph::python_code(graph_of(self))); }
PyObject* gm_graph(PyObject* self, void*) { return to_py_string(graph::print_graph(graph_of(self))); }
PyObject* gm_text(PyObject* self, void*) { return to_py_string(graph::serialize_graph(graph_of(self))); }

PyObject* gm_print_readable(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* kwlist[] = {"print_output", nullptr};
  int print_output = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p", const_cast<char**>(kwlist), &print_output)) return nullptr;
  std::string code = graph::python_code(graph_of(self));
  // Module-level definitions (a custom autograd.Function per backward
  // body) stay above the class; forward() is indented into it, and the
  // module's import lines are left out.
  size_t start = code.find("def forward");
  size_t defs = code.find_first_not_of('\n', code.find('\n'));
  std::string text = defs < start ? code.substr(defs, start - defs) : "";
  text += "class GraphModule(torch.nn.Module):\n";
  for (size_t pos = start; pos < code.size();) {
    size_t nl = code.find('\n', pos);
    std::string line = code.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    text += (line.empty() ? "" : "    ") + line + "\n";
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  if (print_output) PySys_WriteStdout("%s", text.c_str());
  return to_py_string(text);
}

PyObject* gm_reduce(PyObject* self, PyObject*) {
  PyObject* text = gm_text(self, nullptr);
  if (!text) return nullptr;
  return Py_BuildValue("(O(N))", reinterpret_cast<PyObject*>(Py_TYPE(self)), text);
}

PyObject* gm_repr(PyObject* self) {
  return PyUnicode_FromFormat("<tracejit.GraphModule with %zu nodes>", graph_of(self).size());
}

// A Python argument as an IValue: tensors, None, bool, int, float.
bool to_ivalue(PyObject* obj, c10::IValue& out) {
  if (THPVariable_Check(obj)) {
    out = THPVariable_Unpack(obj);
  } else if (obj == Py_None) {
    out = c10::IValue();
  } else if (PyBool_Check(obj)) {
    out = c10::IValue(obj == Py_True);
  } else if (PyLong_Check(obj)) {
    int64_t v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred()) return false;
    out = c10::IValue(v);
  } else if (PyFloat_Check(obj)) {
    out = c10::IValue(PyFloat_AsDouble(obj));
  } else {
    PyErr_Format(PyExc_TypeError, "GraphModule: cannot pass %R to a graph (tensors, numbers and None only)", obj);
    return false;
  }
  return true;
}

// New reference: an interpreter result as a Python object.
PyObject* from_ivalue(const c10::IValue& v) {
  if (v.isTensor()) return THPVariable_Wrap(v.toTensor());
  if (v.isNone()) Py_RETURN_NONE;
  if (v.isBool()) return PyBool_FromLong(v.toBool());
  if (v.isInt()) return PyLong_FromLongLong(v.toInt());
  if (v.isDouble()) return PyFloat_FromDouble(v.toDouble());
  if (v.isString()) return PyUnicode_FromString(v.toStringRef().c_str());
  if (v.isTuple() || v.isList()) {
    std::vector<c10::IValue> items = v.isTuple() ? v.toTupleRef().elements().vec() : v.toListRef().vec();
    PyRef seq = PyRef::steal(v.isTuple() ? PyTuple_New(static_cast<Py_ssize_t>(items.size()))
                                         : PyList_New(static_cast<Py_ssize_t>(items.size())));
    if (!seq) return nullptr;
    for (size_t i = 0; i < items.size(); ++i) {
      PyObject* item = from_ivalue(items[i]);  // new reference, stolen by the SET_ITEM
      if (!item) return nullptr;
      if (v.isTuple()) PyTuple_SET_ITEM(seq.get(), static_cast<Py_ssize_t>(i), item);
      else PyList_SET_ITEM(seq.get(), static_cast<Py_ssize_t>(i), item);
    }
    return seq.release();
  }
  PyErr_Format(PyExc_TypeError, "GraphModule: the graph returned a %s, which has no Python form here",
               v.tagKind().c_str());
  return nullptr;
}

PyObject* gm_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (kwargs && PyDict_Size(kwargs) != 0) {
    PyErr_SetString(PyExc_TypeError, "GraphModule: takes positional arguments only");
    return nullptr;
  }
  if (!ensure_torch_imported()) return nullptr;
  std::vector<c10::IValue> inputs(static_cast<size_t>(PyTuple_GET_SIZE(args)));
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); ++i)
    if (!to_ivalue(PyTuple_GET_ITEM(args, i), inputs[static_cast<size_t>(i)])) return nullptr;
  std::shared_ptr<graph::Graph> g = reinterpret_cast<PyGraphModule*>(self)->graph;
  Expected<c10::IValue> result = Error{"not run"};
  std::exception_ptr failure;
  Py_BEGIN_ALLOW_THREADS
  try {
    result = graph::interpret(*g, inputs);
  } catch (...) {
    failure = std::current_exception();
  }
  Py_END_ALLOW_THREADS
  if (failure) {
    set_python_error_from(failure);  // what eager raises: type and message
    return nullptr;
  }
  if (!result) {
    PyErr_SetString(PyExc_RuntimeError, result.error().message.c_str());
    return nullptr;
  }
  return from_ivalue(*result);
}

PyMethodDef gm_methods[] = {
    {"from_text", reinterpret_cast<PyCFunction>(gm_from_text), METH_O | METH_CLASS,
     "GraphModule.from_text(text): the graph in the printer's text form (verbose or readable)."},
    {"print_readable", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(gm_print_readable)),
     METH_VARARGS | METH_KEYWORDS, "Print (and return) the generated forward() inside a module class."},
    {"__reduce__", gm_reduce, METH_NOARGS, "Pickles as the text serialization."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef gm_getset[] = {
    {"code", gm_code, nullptr, "Python source of forward(self, ...), calling torch.ops.aten overloads.", nullptr},
    {"graph", gm_graph, nullptr, "The readable graph text.", nullptr},
    {"text", gm_text, nullptr, "The full text serialization (storage ids, locations, tags, attributes).", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyType_Slot gm_slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(gm_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(gm_dealloc)},
    {Py_tp_call, reinterpret_cast<void*>(gm_call)},
    {Py_tp_repr, reinterpret_cast<void*>(gm_repr)},
    {Py_tp_methods, gm_methods},
    {Py_tp_getset, gm_getset},
    {Py_tp_doc, const_cast<char*>("A graph of ATen operators: .code, .graph, .text, callable on tensors.")},
    {0, nullptr},
};

PyType_Spec gm_spec = {"_tracejit.GraphModule", sizeof(PyGraphModule), 0, Py_TPFLAGS_DEFAULT, gm_slots};

// Number of tensors the graph's output node returns (a flat tuple/list).
int graph_output_count(const graph::Graph& g) {
  int n = 0;
  const graph::Node* out = g.output_node();
  if (out) out->args().at(0).for_each_node([&](graph::Node*) { ++n; });
  return n;
}

PyObject* py_compile_graph(PyObject*, PyObject* args) {
  PyObject *gm, *inputs;
  const char *backend_name, *stage;
  if (!PyArg_ParseTuple(args, "OsOs:compile_graph", &gm, &backend_name, &inputs, &stage)) return nullptr;
  if (!graph_module_type || !PyObject_TypeCheck(gm, graph_module_type) || !PyList_Check(inputs)) {
    PyErr_SetString(PyExc_TypeError, "compile_graph(gm: GraphModule, backend: str, inputs: list, stage: str)");
    return nullptr;
  }
  const jit::Backend* backend = jit::find_backend(backend_name);
  if (!backend) {
    PyErr_Format(PyExc_ValueError, "compile_graph: unknown backend '%s'", backend_name);
    return nullptr;
  }
  std::vector<PyObject*> examples;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(inputs); ++i) {
    PyObject* t = PyList_GET_ITEM(inputs, i);
    if (!is_tensor(t)) {
      PyErr_SetString(PyExc_TypeError, "compile_graph: every input must be a tensor");
      return nullptr;
    }
    examples.push_back(t);
  }
  std::shared_ptr<const graph::Graph> g = reinterpret_cast<PyGraphModule*>(gm)->graph->clone();
  CompiledStep step;
  if (std::string_view(stage) == "dynamo") {
    step = compile_graph_step(g, examples, BackendChoice{backend_name, nullptr, false}, "repro");
    if (!step.ok) return nullptr;
  } else if (std::string_view(stage) == "aot") {
    std::vector<graph::TensorMeta> metas;
    for (PyObject* t : examples) metas.push_back(graph::TensorMeta::of(unpack_tensor(t)));
    Expected<jit::CompiledFn> fn = Error{"not compiled"};
    try {
      fn = backend->compile(g, metas);
    } catch (const std::exception& e) {
      fn = Error{e.what()};
    }
    if (!fn) {
      PyErr_Format(backend_compiler_failed_error(), "backend %s failed: %s", backend_name, fn.error().message.c_str());
      return nullptr;
    }
    step.fn = std::move(*fn);
  } else {
    PyErr_Format(PyExc_ValueError, "compile_graph: stage must be 'dynamo' or 'aot', not '%s'", stage);
    return nullptr;
  }
  tracer::OutputTemplate out;
  out.kind = tracer::OutputTemplate::Kind::tuple;
  for (int i = 0, n = graph_output_count(*g); i < n; ++i) {
    tracer::OutputTemplate item;
    item.kind = tracer::OutputTemplate::Kind::graph_output;
    item.index = i;
    out.items.push_back(std::move(item));
  }
  return make_compiled_graph(g, static_cast<int>(examples.size()), std::move(out), std::move(step));
}

PyObject* py_last_backend_failure(PyObject*, PyObject*) {
  std::optional<BackendFailure> failure = take_last_backend_failure();
  if (!failure) Py_RETURN_NONE;
  PyRef specs = PyRef::steal(PyList_New(0));
  if (!specs) return nullptr;
  // A tuple of ints, or null with an error set.
  auto int_tuple = [](const std::vector<int64_t>& values) {
    PyRef tuple = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(values.size())));
    for (size_t i = 0; tuple && i < values.size(); ++i) {
      PyObject* v = PyLong_FromLongLong(values[i]);  // new reference, stolen by PyTuple_SET_ITEM
      if (!v) return PyRef();
      PyTuple_SET_ITEM(tuple.get(), static_cast<Py_ssize_t>(i), v);
    }
    return tuple;
  };
  for (const graph::TensorMeta& m : failure->inputs) {
    PyRef sizes = int_tuple(m.sizes);
    PyRef strides = sizes ? int_tuple(m.strides) : PyRef();
    if (!strides) return nullptr;
    std::string dtype(graph::dtype_python_name(m.dtype));
    PyRef spec = PyRef::steal(Py_BuildValue("(OOsO)", sizes.get(), strides.get(), dtype.c_str(),
                                            m.requires_grad ? Py_True : Py_False));
    if (!spec || PyList_Append(specs.get(), spec.get()) < 0) return nullptr;
  }
  std::string text = graph::serialize_graph(*failure->graph);
  // No "s#": torch's headers include Python.h before PY_SSIZE_T_CLEAN here.
  PyRef py_text = PyRef::steal(PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size())));
  if (!py_text) return nullptr;
  return Py_BuildValue("(OOs)", py_text.get(), specs.get(), failure->message.c_str());
}

PyMethodDef repro_functions[] = {
    {"compile_graph", py_compile_graph, METH_VARARGS,
     "compile_graph(gm, backend, inputs, stage): gm compiled by a registered backend, failures raised"},
    {"_last_backend_failure", py_last_backend_failure, METH_NOARGS,
     "the functional graph a backend last failed on: (text, input specs, message) or None"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

PyObject* wrap_graph_module(std::shared_ptr<graph::Graph> graph) {
  if (!graph_module_type) {
    PyErr_SetString(PyExc_RuntimeError, "tracejit: GraphModule type is not registered");
    return nullptr;
  }
  PyObject* self = graph_module_type->tp_alloc(graph_module_type, 0);
  if (!self) return nullptr;
  new (&reinterpret_cast<PyGraphModule*>(self)->graph) std::shared_ptr<graph::Graph>(std::move(graph));
  return self;
}

int register_graph(PyObject* module) {
  PyObject* type = PyType_FromSpec(&gm_spec);
  if (!type) return -1;
  graph_module_type = reinterpret_cast<PyTypeObject*>(type);
  // PyModule_AddObjectRef does not steal; the module and our pointer share the type.
  if (PyModule_AddObjectRef(module, "GraphModule", type) < 0) return -1;
  return PyModule_AddFunctions(module, repro_functions);
}

}  // namespace tj::runtime
