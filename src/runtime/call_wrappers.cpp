// CompiledFunction / DisabledFunction; see call_wrappers.h.
#include "runtime/call_wrappers.h"

#include <new>

#include <structmember.h>

#include "support/py_ref.h"

namespace tj::runtime {

namespace {

// PyObject_GC_New allocates the object without running constructors:
// make_wrapper constructs the C++ members (`fn`, `options`) in place and
// wrapper_dealloc destroys them.
struct CallWrapper {
  PyObject_HEAD
  PyRef fn;
  // The instance __dict__, which CPython reads and sets through
  // tp_dictoffset as a raw strong reference (may be null).
  PyObject* dict;
  PyObject* weakrefs;  // CPython's weak-reference list (tp_weaklistoffset), owns nothing
  vectorcallfunc vectorcall;
  std::shared_ptr<CompileOptions> options;  // null for DisabledFunction
};

PyObject* wrapper_vectorcall(PyObject* self_obj, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* self = reinterpret_cast<CallWrapper*>(self_obj);
  void* options = self->options.get();
  if (options && ensure_hook_installed() < 0) return nullptr;
  tj_ActiveState previous = tj_set_active(options);
  PyObject* result = PyObject_Vectorcall(self->fn.get(), args, nargsf, kwnames);
  tj_restore_active(previous);
  return result;
}

void wrapper_dealloc(PyObject* self_obj) {
  auto* self = reinterpret_cast<CallWrapper*>(self_obj);
  PyObject_GC_UnTrack(self_obj);
  if (self->weakrefs) PyObject_ClearWeakRefs(self_obj);
  Py_CLEAR(self->dict);
  self->fn.~PyRef();
  self->options.~shared_ptr();
  Py_TYPE(self_obj)->tp_free(self_obj);
}

int wrapper_traverse(PyObject* self_obj, visitproc visit, void* arg) {
  auto* self = reinterpret_cast<CallWrapper*>(self_obj);
  Py_VISIT(self->fn.get());
  Py_VISIT(self->dict);
  return 0;
}

int wrapper_clear(PyObject* self_obj) {
  auto* self = reinterpret_cast<CallWrapper*>(self_obj);
  self->fn = PyRef();
  Py_CLEAR(self->dict);
  return 0;
}

PyObject* wrapper_descr_get(PyObject* self, PyObject* obj, PyObject* type) {
  if (obj == nullptr || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

PyObject* wrapper_repr(PyObject* self_obj) {
  auto* self = reinterpret_cast<CallWrapper*>(self_obj);
  return PyUnicode_FromFormat("<%s of %R>", Py_TYPE(self_obj)->tp_name, self->fn.get());
}

PyObject* get_fn(PyObject* self_obj, void*) { return Py_NewRef(reinterpret_cast<CallWrapper*>(self_obj)->fn.get()); }

PyObject* get_backend(PyObject* self_obj, void*) {
  auto* self = reinterpret_cast<CallWrapper*>(self_obj);
  if (!self->options) Py_RETURN_NONE;
  const CompileOptions& o = *self->options;
  if (o.backend_callable) return Py_NewRef(o.backend_callable.get());
  return PyUnicode_FromStringAndSize(o.backend.data(), static_cast<Py_ssize_t>(o.backend.size()));
}

// copy.copy / copy.deepcopy keep the wrapper, as they keep a plain
// function (a model holding a compiled function can be deep-copied).
PyObject* wrapper_copy(PyObject* self, PyObject*) { return Py_NewRef(self); }
PyObject* wrapper_deepcopy(PyObject* self, PyObject*) { return Py_NewRef(self); }

// pickle: by reference, as a function is: its __qualname__ (copied from the
// wrapped function by functools.update_wrapper) names a global that must be
// this very wrapper (`@tracejit.compile def f`), else pickle refuses.
PyObject* wrapper_reduce(PyObject* self, PyObject*) {
  PyObject* qualname = PyObject_GetAttrString(self, "__qualname__");
  if (!qualname && PyErr_ExceptionMatches(PyExc_AttributeError)) {
    PyErr_Clear();  // a wrapper of a callable without a name: not picklable
    return PyErr_Format(PyExc_TypeError, "cannot pickle %R: it has no __qualname__", self);
  }
  return qualname;
}

PyMethodDef wrapper_methods[] = {
    {"__copy__", wrapper_copy, METH_NOARGS, "the wrapper itself"},
    {"__deepcopy__", wrapper_deepcopy, METH_O, "the wrapper itself"},
    {"__reduce__", wrapper_reduce, METH_NOARGS, "pickled by reference (its __qualname__)"},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef wrapper_getset[] = {
    {"_tracejit_fn", get_fn, nullptr, "the wrapped callable", nullptr},
    {"_tracejit_backend", get_backend, nullptr, "the backend (name or callable), None when disabled", nullptr},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject make_type(const char* name, const char* doc) {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = name;
  t.tp_basicsize = sizeof(CallWrapper);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR;
  t.tp_doc = doc;
  t.tp_dealloc = wrapper_dealloc;
  t.tp_traverse = wrapper_traverse;
  t.tp_clear = wrapper_clear;
  t.tp_call = PyVectorcall_Call;
  t.tp_vectorcall_offset = offsetof(CallWrapper, vectorcall);
  t.tp_descr_get = wrapper_descr_get;
  t.tp_repr = wrapper_repr;
  t.tp_getset = wrapper_getset;
  t.tp_methods = wrapper_methods;
  t.tp_dictoffset = offsetof(CallWrapper, dict);
  t.tp_weaklistoffset = offsetof(CallWrapper, weakrefs);
  return t;
}

PyTypeObject g_compiled_type = make_type("tracejit.CompiledFunction", "A callable compiled by tracejit.compile.");
PyTypeObject g_disabled_type = make_type("tracejit.DisabledFunction", "A callable never traced (tracejit.disable).");

// New reference, or null + error. `fn` is borrowed.
PyObject* make_wrapper(PyTypeObject* type, PyObject* fn, std::shared_ptr<CompileOptions> options) {
  if (!PyCallable_Check(fn)) return PyErr_Format(PyExc_TypeError, "tracejit: expected a callable, got %R", fn);
  auto* self = PyObject_GC_New(CallWrapper, type);
  if (!self) return nullptr;
  new (&self->fn) PyRef(PyRef::borrow(fn));
  self->dict = nullptr;
  self->weakrefs = nullptr;
  self->vectorcall = wrapper_vectorcall;
  new (&self->options) std::shared_ptr<CompileOptions>(std::move(options));
  PyObject_GC_Track(self);
  return reinterpret_cast<PyObject*>(self);
}

}  // namespace

PyObject* make_compiled_function(PyObject* fn, std::shared_ptr<CompileOptions> options) {
  return make_wrapper(&g_compiled_type, fn, std::move(options));
}

PyObject* make_disabled_function(PyObject* fn) { return make_wrapper(&g_disabled_type, fn, nullptr); }

bool is_compiled_function(PyObject* obj) { return Py_TYPE(obj) == &g_compiled_type; }
bool is_disabled_function(PyObject* obj) { return Py_TYPE(obj) == &g_disabled_type; }

int register_call_wrappers(PyObject* module) {
  for (PyTypeObject* t : {&g_compiled_type, &g_disabled_type}) {
    if (PyType_Ready(t) < 0) return -1;
    const char* short_name = strrchr(t->tp_name, '.') + 1;
    if (PyModule_AddObjectRef(module, short_name, reinterpret_cast<PyObject*>(t)) < 0) return -1;
  }
  return 0;
}

}  // namespace tj::runtime
