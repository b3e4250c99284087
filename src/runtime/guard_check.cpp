// Guard evaluation on a frame view; see guard_check.h.
#include "runtime/guard_check.h"

#include <ATen/core/Tensor.h>

#include "tracer/tensor_bridge.h"

namespace tj::runtime {

// New reference to the value of `s` in this frame, or null (no error set).
PyObject* read_source(const tracer::Source& s, const tj_FrameView& f) {
  switch (s.kind) {
    case tracer::SourceKind::local: {
      PyObject* v = f.localsplus[s.index];
      return Py_XNewRef(v);
    }
    case tracer::SourceKind::global: {
      PyObject* name = s.key.get();  // interned at trace time: no allocation per check
      PyObject* v = PyDict_GetItemWithError(f.globals, name);
      if (!v && !PyErr_Occurred() && f.builtins && PyDict_Check(f.builtins)) v = PyDict_GetItemWithError(f.builtins, name);
      PyErr_Clear();
      return Py_XNewRef(v);
    }
    case tracer::SourceKind::closure: {
      PyObject* closure = PyFunction_GetClosure(f.func);
      if (!closure || s.index >= PyTuple_GET_SIZE(closure)) return nullptr;
      return Py_XNewRef(PyCell_GET(PyTuple_GET_ITEM(closure, s.index)));
    }
    case tracer::SourceKind::closure_cell: {
      PyObject* closure = PyFunction_GetClosure(f.func);
      if (!closure || s.index >= PyTuple_GET_SIZE(closure)) return nullptr;
      return Py_NewRef(PyTuple_GET_ITEM(closure, s.index));
    }
    case tracer::SourceKind::attr: {
      PyObject* base = read_source(*s.base, f);
      if (!base) return nullptr;
      PyObject* v = PyObject_GetAttr(base, s.key.get());
      Py_DECREF(base);
      if (!v) PyErr_Clear();
      return v;
    }
    case tracer::SourceKind::item: {
      PyObject* base = read_source(*s.base, f);
      if (!base) return nullptr;
      PyObject* v = nullptr;
      if (PyDict_CheckExact(base)) {
        v = Py_XNewRef(PyDict_GetItemWithError(base, s.key.get()));
      } else if ((PyList_CheckExact(base) || PyTuple_CheckExact(base)) && s.index >= 0 &&
                 s.index < PySequence_Fast_GET_SIZE(base)) {
        v = Py_NewRef(PySequence_Fast_GET_ITEM(base, s.index));
      } else {
        v = PyObject_GetItem(base, s.key.get());
      }
      Py_DECREF(base);
      if (!v) PyErr_Clear();
      return v;
    }
  }
  return nullptr;
}

namespace {

using tracer::Guard;
using tracer::GuardKind;
using tracer::Source;
using tracer::SourceKind;

bool tensor_matches(const Guard& g, PyObject* obj) {
  if (reinterpret_cast<PyObject*>(Py_TYPE(obj)) != g.expected.get() || !tracer::is_tensor(obj)) return false;
  const at::Tensor& t = tracer::unpack_tensor(obj);
  const auto& m = g.tensor;
  if (t.scalar_type() != m.dtype || t.device() != m.device || t.requires_grad() != m.requires_grad) return false;
  if (t.sizes() != c10::IntArrayRef(m.sizes) || t.strides() != c10::IntArrayRef(m.strides)) return false;
  if (t.storage_offset() != m.storage_offset) return false;
  return tracer::dispatch_key_bits(t) == g.dispatch_keys;
}

bool holds(const Guard& g, const tj_FrameView& f) {
  if (g.kind == GuardKind::same_object) {
    PyObject* a = read_source(*g.source, f);
    PyObject* b = read_source(*g.other, f);
    bool same = a && a == b;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return same;
  }
  switch (g.kind) {
    case GuardKind::grad_mode: return tracer::grad_mode_enabled() == g.flag;
    case GuardKind::default_dtype: return tracer::default_dtype() == g.dtype;
    default: break;
  }
  PyObject* v = read_source(*g.source, f);
  if (!v) return false;
  bool ok = false;
  switch (g.kind) {
    case GuardKind::tensor_match: ok = tensor_matches(g, v); break;
    case GuardKind::type_match: ok = reinterpret_cast<PyObject*>(Py_TYPE(v)) == g.expected.get(); break;
    case GuardKind::id_match: ok = v == g.expected.get(); break;
    case GuardKind::const_eq: {
      PyObject* e = g.expected.get();
      ok = Py_TYPE(v) == Py_TYPE(e) && (v == e || PyObject_RichCompareBool(v, e, Py_EQ) == 1);
      break;
    }
    case GuardKind::length:
      ok = reinterpret_cast<PyObject*>(Py_TYPE(v)) == g.expected.get() && PyObject_Length(v) == g.length;
      break;
    case GuardKind::dict_keys: {
      if (!PyDict_Check(v) || PyDict_GET_SIZE(v) != PyTuple_GET_SIZE(g.expected.get())) break;
      Py_ssize_t pos = 0, i = 0;
      PyObject *k, *val;
      ok = true;
      if (PyDict_CheckExact(v)) {
        while (ok && PyDict_Next(v, &pos, &k, &val))
          ok = PyObject_RichCompareBool(k, PyTuple_GET_ITEM(g.expected.get(), i++), Py_EQ) == 1;
        break;
      }
      // A dict subclass (OrderedDict) iterates in its own order.
      PyObject* keys = PySequence_Tuple(v);
      ok = keys && PyObject_RichCompareBool(keys, g.expected.get(), Py_EQ) == 1;
      Py_XDECREF(keys);
      break;
    }
    default: break;
  }
  Py_DECREF(v);
  PyErr_Clear();
  return ok;
}

class CompiledGuards final : public GuardCheck {
 public:
  explicit CompiledGuards(std::vector<Guard> guards) : guards_(std::move(guards)) {}
  bool check(const tj_FrameView& frame, std::string* failed) const override {
    for (const auto& g : guards_) {
      if (!holds(g, frame)) {
        if (failed) *failed = g.to_string();
        return false;
      }
    }
    return true;
  }

 private:
  std::vector<Guard> guards_;
};

}  // namespace

std::unique_ptr<GuardCheck> compile_guards(const tracer::GuardSet& guards) {
  return std::make_unique<CompiledGuards>(guards.guards());
}

}  // namespace tj::runtime
