// Calls that draw from Python's or numpy's random stream (`random.random()`,
// `random.randint(a, b)`, `random.sample(memory, n)`, `np.random.rand()`, the
// methods of a `random.Random` or numpy `RandomState`/`Generator` instance):
// not traced. A graph replayed on each call would need fresh draws, in
// eager's order, from a stream the graph does not own; the call breaks the
// graph instead and runs in CPython, so the program sees exactly the numbers
// eager would (issue 42: teacher forcing, epsilon-greedy exploration, replay
// sampling). The reason says so, in place of "not modelled" or "not inlined
// by the skip policy".
#include "tracer/random_streams.h"

#include "support/py_lookup.h"
#include "tracer/py_str.h"

namespace tj::tracer {

namespace {

// The object a method is bound to (a C method's self, a Python method's
// __self__); null for anything else.
PyObject* bound_self_of(PyObject* f) {
  if (PyMethod_Check(f)) return PyMethod_GET_SELF(f);
  if (!PyCFunction_Check(f)) return nullptr;
  PyObject* self = PyCFunction_GET_SELF(f);  // null for a function without one
  return self && !PyModule_Check(self) ? self : nullptr;
}

bool is_instance_of(PyObject* obj, const char* module, const char* name) {
  PyObject* type = cached_module_attr(module, name);  // a type check that runs no Python code
  return type && PyType_Check(type) && PyObject_TypeCheck(obj, reinterpret_cast<PyTypeObject*>(type));
}

std::string method_name(PyObject* f) {
  PyRef name = PyRef::steal(PyObject_GetAttrString(f, "__name__"));
  if (!name || !PyUnicode_Check(name.get())) {
    PyErr_Clear();
    return "?";
  }
  return utf8(name.get());
}

}  // namespace

std::optional<std::string> random_stream_call(PyObject* f) {
  PyObject* self = bound_self_of(f);
  if (!self) return std::nullopt;
  const char* stream = nullptr;
  const char* spelling = nullptr;
  if (is_instance_of(self, "random", "Random")) {
    stream = "Python's random stream";
    spelling = "random.";
  } else if (is_instance_of(self, "numpy.random", "RandomState") || is_instance_of(self, "numpy.random", "Generator")) {
    stream = "numpy's random stream";
    spelling = "numpy.random.";
  }
  if (!stream) return std::nullopt;
  return std::string(spelling) + method_name(f) + "() draws from " + stream +
         ": not traced, it runs in CPython so that the numbers are eager's (a graph break)";
}

}  // namespace tj::tracer
