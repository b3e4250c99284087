// Guard evaluation on a frame view; see guard_check.h.
#include "runtime/guard_check.h"

#include <algorithm>

#include <ATen/autocast_mode.h>
#include <ATen/core/Tensor.h>

#include "runtime/size_facts.h"
#include "support/py_errors.h"
#include "support/tensor_bridge.h"

namespace tj::runtime {

PyRef read_source(const tracer::Source& s, const tj_FrameView& f) {
  // A failed read is a guard that does not hold, whatever the source
  // raised: the retrace (or CPython running the frame) reads it again and
  // meets the same error at the user's line. An interruption is kept: no
  // second read raises it again (guard_check.h).
  auto or_clear = [](PyObject* v) {
    if (!v) clear_unless_interruption();
    return PyRef::steal(v);
  };
  switch (s.kind) {
    case tracer::SourceKind::local: return PyRef::borrow(f.localsplus[s.index]);
    case tracer::SourceKind::global: {
      PyObject* name = s.key.get();  // interned at trace time: no allocation per check
      PyObject* v = PyDict_GetItemWithError(f.globals, name);  // borrowed
      if (!v && !PyErr_Occurred() && f.builtins && PyDict_Check(f.builtins)) v = PyDict_GetItemWithError(f.builtins, name);
      clear_unless_interruption();  // a key's __eq__ raising: as any failed read
      return PyRef::borrow(v);
    }
    case tracer::SourceKind::closure: {
      PyObject* closure = PyFunction_GetClosure(f.func);  // borrowed
      if (!closure || s.index >= PyTuple_GET_SIZE(closure)) return {};
      return PyRef::borrow(PyCell_GET(PyTuple_GET_ITEM(closure, s.index)));
    }
    case tracer::SourceKind::module: return or_clear(PyImport_GetModule(s.key.get()));  // null when not imported
    case tracer::SourceKind::closure_cell: {
      PyObject* closure = PyFunction_GetClosure(f.func);  // borrowed
      // index -1: a cell variable of the frame (loaded by the transformed
      // code, never guarded): not readable from the frame view.
      if (!closure || s.index < 0 || s.index >= PyTuple_GET_SIZE(closure)) return {};
      return PyRef::borrow(PyTuple_GET_ITEM(closure, s.index));
    }
    case tracer::SourceKind::call: {  // only side-effect-free methods (cls.__subclasses__)
      PyRef base = read_source(*s.base, f);
      if (!base) return {};
      return or_clear(PyObject_CallMethodNoArgs(base.get(), s.key.get()));
    }
    case tracer::SourceKind::attr: {
      PyRef base = read_source(*s.base, f);
      if (!base) return {};
      return or_clear(PyObject_GetAttr(base.get(), s.key.get()));
    }
    case tracer::SourceKind::item: {
      PyRef base_ref = read_source(*s.base, f);
      PyObject* base = base_ref.get();
      if (!base) return {};
      // Plain dicts, OrderedDicts and defaultdicts (read without running
      // __missing__: guards never insert).
      bool plain_dict = PyDict_CheckExact(base) || (PyDict_Check(base) && Py_TYPE(base)->tp_as_mapping &&
                                                    Py_TYPE(base)->tp_as_mapping->mp_subscript ==
                                                        PyDict_Type.tp_as_mapping->mp_subscript);
      if (plain_dict) return or_clear(Py_XNewRef(PyDict_GetItemWithError(base, s.key.get())));
      if ((PyList_CheckExact(base) || PyTuple_CheckExact(base)) && s.index >= 0 &&
          s.index < PySequence_Fast_GET_SIZE(base))
        return PyRef::borrow(PySequence_Fast_GET_ITEM(base, s.index));
      return or_clear(PyObject_GetItem(base, s.key.get()));
    }
  }
  return {};
}

namespace {

using tracer::Guard;
using tracer::GuardKind;
using tracer::Source;
using tracer::SourceKind;

// The strides of a dense tensor of these sizes with its dims ordered as the
// traced strides order them (the outermost first; ties by position).
std::vector<int64_t> strides_in_traced_order(const std::vector<int64_t>& traced, c10::IntArrayRef sizes) {
  std::vector<size_t> order(traced.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = d;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return traced[a] > traced[b]; });
  std::vector<int64_t> out(traced.size());
  int64_t stride = 1;
  for (size_t i = order.size(); i-- > 0;) {
    out[order[i]] = stride;
    stride *= std::max<int64_t>(sizes[order[i]], 1);
  }
  return out;
}

// The sizes and strides part of a tensor_match: exact, or for dynamic dims
// any size >= 2 with the strides of a dense tensor in the traced dim order
// (the traced strides: dims of size 1 keep theirs, as the tensor has them).
bool sizes_match(const Guard& g, const at::Tensor& t) {
  const auto& m = g.tensor;
  if (g.dynamic_dims.empty()) return t.sizes() == c10::IntArrayRef(m.sizes) && t.strides() == c10::IntArrayRef(m.strides);
  if (t.dim() != static_cast<int64_t>(m.sizes.size())) return false;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    const int64_t size = t.size(static_cast<int64_t>(d));
    if (g.dynamic_dims[d] ? size < 2 : size != m.sizes[d]) return false;
  }
  const std::vector<int64_t> expected = strides_in_traced_order(m.strides, t.sizes());
  for (size_t d = 0; d < expected.size(); ++d)
    if (t.size(static_cast<int64_t>(d)) != 1 && t.stride(static_cast<int64_t>(d)) != expected[d]) return false;
  return true;
}

// Everything of a tensor_match but sizes and strides.
bool same_kind_of_tensor(const Guard& g, PyObject* obj) {
  if (reinterpret_cast<PyObject*>(Py_TYPE(obj)) != g.expected.get() || !is_tensor(obj)) return false;
  const at::Tensor& t = unpack_tensor(obj);
  const auto& m = g.tensor;
  if (t.scalar_type() != m.dtype || t.device() != m.device || t.requires_grad() != m.requires_grad) return false;
  if (t.storage_offset() != m.storage_offset) return false;
  return dispatch_key_bits(t) == g.dispatch_keys;
}

bool tensor_matches(const Guard& g, PyObject* obj) {
  return same_kind_of_tensor(g, obj) && sizes_match(g, unpack_tensor(obj));
}

// CPU autocast as when the frame was traced (the graph has its casts built in).
bool autocast_matches(const Guard& g) {
  if (at::autocast::is_cpu_enabled() != g.flag) return false;
  return !g.flag || at::autocast::get_autocast_cpu_dtype() == g.dtype;
}

// Tensors that had distinct storages at trace time still do: a compile that
// assumed two inputs do not share memory (a write to one not seen through
// the other) is not reused when they do (the same tensor passed twice, two
// views of one tensor). Sorting by storage keeps it O(n log n) for graphs
// with many inputs (an optimizer step).
bool no_aliasing_holds(const Guard& g, const tj_FrameView& f) {
  std::vector<std::pair<const void*, int64_t>> seen;
  seen.reserve(g.sources.size());
  for (size_t i = 0; i < g.sources.size(); ++i) {
    PyRef v = read_source(*g.sources[i], f);
    if (!v || !is_tensor(v.get())) return false;
    seen.emplace_back(storage_identity(unpack_tensor(v.get())), g.storage_ids[i]);
  }
  std::sort(seen.begin(), seen.end());
  for (size_t i = 1; i < seen.size(); ++i)
    if (seen[i].first == seen[i - 1].first && seen[i].second != seen[i - 1].second) return false;
  return true;
}

// Objects the trace compared by identity (`a is b`, a module as a dict or
// set key) that were distinct then are still distinct.
bool distinct_objects_hold(const Guard& g, const tj_FrameView& f) {
  std::vector<const PyObject*> seen;
  seen.reserve(g.sources.size());
  for (const auto& source : g.sources) {
    PyRef v = read_source(*source, f);
    if (!v) return false;
    seen.push_back(v.get());
  }
  std::sort(seen.begin(), seen.end());
  return std::adjacent_find(seen.begin(), seen.end()) == seen.end();
}

bool holds(const Guard& g, const tj_FrameView& f) {
  if (g.kind == GuardKind::same_object) {
    PyRef a = read_source(*g.source, f);
    PyRef b = read_source(*g.other, f);
    return a && a.get() == b.get();
  }
  switch (g.kind) {
    case GuardKind::grad_mode: return grad_mode_enabled() == g.flag;
    case GuardKind::default_dtype: return default_dtype() == g.dtype;
    case GuardKind::autocast_cpu: return autocast_matches(g);
    case GuardKind::no_aliasing: return no_aliasing_holds(g, f);
    case GuardKind::size_facts: return size_facts_hold(*g.size_facts, f, nullptr);
    case GuardKind::distinct_objects: return distinct_objects_hold(g, f);
    default: break;
  }
  PyRef v_ref = read_source(*g.source, f);
  PyObject* v = v_ref.get();  // borrowed from v_ref
  if (!v) return false;
  bool ok = false;
  switch (g.kind) {
    case GuardKind::tensor_match: ok = tensor_matches(g, v); break;
    case GuardKind::type_match: ok = reinterpret_cast<PyObject*>(Py_TYPE(v)) == g.expected.get(); break;
    case GuardKind::id_match: ok = v == g.expected.get() && (!g.no_module_hooks || tracer::module_hooks_empty(v)); break;
    case GuardKind::dynamic_int: ok = tracer::fits_dynamic_number(v, g.flag); break;
    case GuardKind::number_fact: ok = tracer::number_fact_outcome(*g.number_fact, v) == (g.number_fact->outcome ? 1 : 0); break;
    case GuardKind::not_grad_leaf: ok = is_tensor(v) && tracer::grad_state(unpack_tensor(v)) != tracer::GradState::leaf; break;
    case GuardKind::no_module_hooks: ok = tracer::module_hooks_empty(v); break;
    case GuardKind::module_match:
      ok = reinterpret_cast<PyObject*>(Py_TYPE(v)) == g.expected.get() && tracer::module_names_absent(v, g.absent) &&
           (!g.no_module_hooks || tracer::module_hooks_empty(v));
      break;
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
      // Tensor keys (an optimizer's state) are compared by identity, as
      // Python's dict hashes them: Tensor.__eq__ would compare data.
      auto same_key = [](PyObject* a, PyObject* b) {
        if (a == b) return true;
        if (is_tensor(a) || is_tensor(b)) return false;
        return PyObject_RichCompareBool(a, b, Py_EQ) == 1;
      };
      if (PyDict_CheckExact(v)) {
        while (ok && PyDict_Next(v, &pos, &k, &val)) ok = same_key(k, PyTuple_GET_ITEM(g.expected.get(), i++));
        break;
      }
      // A dict subclass (OrderedDict) iterates in its own order.
      PyRef keys = PyRef::steal(PySequence_Tuple(v));
      ok = keys && PyTuple_GET_SIZE(keys.get()) == PyTuple_GET_SIZE(g.expected.get());
      for (Py_ssize_t j = 0; ok && j < PyTuple_GET_SIZE(keys.get()); ++j)
        ok = same_key(PyTuple_GET_ITEM(keys.get(), j), PyTuple_GET_ITEM(g.expected.get(), j));
      break;
    }
    default: break;
  }
  // A comparison that raised (a user __eq__, __len__) is a guard that does
  // not hold, as a failed read is; an interruption is left for the caller.
  clear_unless_interruption();
  return ok;
}

// A short repr of a Python object for failure messages (no error left set).
std::string short_repr(PyObject* obj) {
  if (!obj) return "<unreadable>";
  if (PyType_Check(obj)) return reinterpret_cast<PyTypeObject*>(obj)->tp_name;
  PyRef r = PyRef::steal(PyObject_Repr(obj));
  const char* s = r ? PyUnicode_AsUTF8(r.get()) : nullptr;
  std::string out = s ? s : "<" + std::string(Py_TYPE(obj)->tp_name) + ">";
  clear_unless_interruption();  // a repr for a log line: any failure gives the type's name
  if (out.size() > 80) out = out.substr(0, 77) + "...";
  return out;
}

std::string list_mismatch(const char* what, c10::IntArrayRef expected, c10::IntArrayRef actual) {
  if (expected.size() != actual.size())
    return std::string(what) + " count mismatch: expected " + std::to_string(expected.size()) + ", actual " +
           std::to_string(actual.size());
  for (size_t i = 0; i < expected.size(); ++i)
    if (expected[i] != actual[i])
      return std::string(what) + " mismatch at index " + std::to_string(i) + ": expected " + std::to_string(expected[i]) +
             ", actual " + std::to_string(actual[i]);
  return "";
}

// Why `g` fails on `v` (its value in the frame, may be null), with the
// expected and the actual value: "size mismatch at index 0: expected 1, actual 2".
std::string failure_detail(const Guard& g, PyObject* v) {
  switch (g.kind) {
    case GuardKind::grad_mode:
      return std::string("expected ") + (g.flag ? "enabled" : "disabled") + ", actual " +
             (grad_mode_enabled() ? "enabled" : "disabled");
    case GuardKind::default_dtype:
      return std::string("expected ") + c10::toString(g.dtype) + ", actual " + c10::toString(default_dtype());
    case GuardKind::autocast_cpu:
      return std::string("expected ") + (g.flag ? std::string("enabled ") + c10::toString(g.dtype) : "disabled") +
             ", actual " +
             (at::autocast::is_cpu_enabled() ? std::string("enabled ") + c10::toString(at::autocast::get_autocast_cpu_dtype())
                                             : "disabled");
    case GuardKind::same_object: return "not the same object";
    case GuardKind::no_aliasing: return "inputs that had distinct storages share one";
    case GuardKind::distinct_objects: return "objects that were distinct are one";
    default: break;
  }
  if (!v) return "the value cannot be read";
  std::string actual_type = Py_TYPE(v)->tp_name;
  switch (g.kind) {
    case GuardKind::tensor_match: {
      if (reinterpret_cast<PyObject*>(Py_TYPE(v)) != g.expected.get() || !is_tensor(v))
        return "type mismatch: expected " + short_repr(g.expected.get()) + ", actual " + actual_type;
      const at::Tensor& t = unpack_tensor(v);
      const auto& m = g.tensor;
      if (t.scalar_type() != m.dtype)
        return std::string("dtype mismatch: expected ") + c10::toString(m.dtype) + ", actual " + c10::toString(t.scalar_type());
      if (t.device() != m.device) return "device mismatch: expected " + m.device.str() + ", actual " + t.device().str();
      if (t.requires_grad() != m.requires_grad)
        return std::string("requires_grad mismatch: expected ") + (m.requires_grad ? "True" : "False") + ", actual " +
               (t.requires_grad() ? "True" : "False");
      if (!g.dynamic_dims.empty()) {
        if (t.dim() != static_cast<int64_t>(m.sizes.size()))
          return "size count mismatch: expected " + std::to_string(m.sizes.size()) + ", actual " + std::to_string(t.dim());
        for (size_t d = 0; d < m.sizes.size(); ++d) {
          const int64_t size = t.size(static_cast<int64_t>(d));
          if (g.dynamic_dims[d] && size < 2)
            return "size mismatch at index " + std::to_string(d) + ": expected >= 2 (dynamic), actual " + std::to_string(size);
          if (!g.dynamic_dims[d] && size != m.sizes[d])
            return "size mismatch at index " + std::to_string(d) + ": expected " + std::to_string(m.sizes[d]) +
                   ", actual " + std::to_string(size);
        }
        return "strides are not those of a dense tensor in the traced dim order: actual " +
               c10::str(t.strides());
      }
      if (auto d = list_mismatch("size", m.sizes, t.sizes()); !d.empty()) return d;
      if (auto d = list_mismatch("stride", m.strides, t.strides()); !d.empty()) return d;
      if (t.storage_offset() != m.storage_offset)
        return "storage offset mismatch: expected " + std::to_string(m.storage_offset) + ", actual " +
               std::to_string(t.storage_offset());
      return "dispatch keys differ (another tensor subclass or mode)";
    }
    case GuardKind::type_match:
    case GuardKind::length:
      if (reinterpret_cast<PyObject*>(Py_TYPE(v)) != g.expected.get())
        return "type mismatch: expected " + short_repr(g.expected.get()) + ", actual " + actual_type;
      if (g.kind == GuardKind::length)
        return "length mismatch: expected " + std::to_string(g.length) + ", actual " + std::to_string(PyObject_Length(v));
      return "";
    case GuardKind::id_match:
      if (g.no_module_hooks && v == g.expected.get()) return "a hook is registered on it";
      return "expected " + short_repr(g.expected.get()) + ", actual " + short_repr(v);
    case GuardKind::dynamic_int: return "actual " + short_repr(v);
    case GuardKind::number_fact: return "actual " + short_repr(v);
    case GuardKind::not_grad_leaf: return "a leaf that requires grad, or a view of one: eager refuses the in-place ops traced on it";
    case GuardKind::no_module_hooks: return "a hook is registered on it";
    case GuardKind::module_match:
      if (reinterpret_cast<PyObject*>(Py_TYPE(v)) != g.expected.get())
        return "type mismatch: expected " + short_repr(g.expected.get()) + ", actual " + actual_type;
      if (!tracer::module_names_absent(v, g.absent)) return "a name the trace read resolves elsewhere now";
      return "a hook is registered on it";
    case GuardKind::const_eq:
    case GuardKind::dict_keys: {
      PyRef keys = PyRef::steal(g.kind == GuardKind::dict_keys && PyDict_Check(v) ? PyDict_Keys(v) : nullptr);
      PyRef key_tuple = PyRef::steal(keys ? PyList_AsTuple(keys.get()) : nullptr);
      std::string actual = short_repr(key_tuple ? key_tuple.get() : v);
      clear_unless_interruption();  // keys for a log line: best effort
      return "expected " + short_repr(g.expected.get()) + ", actual " + actual;
    }
    default: return "";
  }
}

std::string describe_failure(const Guard& g, const tj_FrameView& f) {
  if (g.kind == GuardKind::size_facts) {
    std::string failed;
    size_facts_hold(*g.size_facts, f, &failed);
    return "SIZE_FACTS: " + failed;
  }
  PyRef v = g.source && g.kind != GuardKind::same_object && g.kind != GuardKind::distinct_objects
                ? read_source(*g.source, f)
                : PyRef();
  std::string detail = failure_detail(g, v.get());
  return detail.empty() ? g.to_string() : g.to_string() + ": " + detail;
}

class CompiledGuards final : public GuardCheck {
 public:
  explicit CompiledGuards(std::vector<Guard> guards) : guards_(std::move(guards)) {}
  bool check(const tj_FrameView& frame, std::string* failed) const override {
    for (const auto& g : guards_) {
      if (!holds(g, frame)) {
        if (failed && !PyErr_Occurred()) *failed = describe_failure(g, frame);
        return false;
      }
    }
    return true;
  }
  bool fails_only_on_sizes(const tj_FrameView& frame, std::unordered_map<std::string, std::vector<bool>>* dims,
                           std::vector<std::string>* ints) const override {
    std::vector<std::pair<std::string, std::vector<bool>>> found;
    std::vector<std::string> changed_ints;
    for (const auto& g : guards_) {
      if (holds(g, frame) || g.kind == GuardKind::size_facts) continue;
      if (PyErr_Occurred()) return false;  // an interruption: the caller raises it
      // Floats from any source: a frame's local (a loss.item() passed to a
      // resumed frame) or read from an object (a param group's lr an LR
      // scheduler writes each step). Where the trace then needs the value
      // (a shape, a call it cannot see into) it breaks, and
      // prefer_static_ints makes the float a constant again.
      const bool is_float = g.expected && PyFloat_CheckExact(g.expected.get()) && g.source;
      if (g.kind == GuardKind::const_eq && ints && (PyLong_CheckExact(g.expected.get()) || is_float)) {
        // An int or a float whose value changed (automatic dynamic ints; a
        // float read with .item() and passed to a resumed frame)
        PyRef v = read_source(*g.source, frame);
        bool still_int = v && tracer::fits_dynamic_number(v.get(), is_float) &&
                         tracer::fits_dynamic_number(g.expected.get(), is_float);
        if (PyErr_Occurred()) return false;  // an interruption (read_source clears anything else)
        if (!still_int) return false;
        changed_ints.push_back(g.source->to_string());
        continue;
      }
      if (g.kind != GuardKind::tensor_match) return false;
      PyRef v = read_source(*g.source, frame);
      bool same_kind = v && same_kind_of_tensor(g, v.get());
      std::vector<bool> changed(g.tensor.sizes.size(), false);
      if (same_kind) {
        const at::Tensor& t = unpack_tensor(v.get());
        same_kind = t.dim() == static_cast<int64_t>(changed.size()) && t.is_non_overlapping_and_dense();
        for (size_t d = 0; same_kind && d < changed.size(); ++d)
          changed[d] = t.size(static_cast<int64_t>(d)) != g.tensor.sizes[d] ||
                       (!g.dynamic_dims.empty() && g.dynamic_dims[d]);
      }
      if (!same_kind) return false;
      found.emplace_back(g.source->to_string(), std::move(changed));
    }
    if (found.empty() && changed_ints.empty()) return false;
    for (auto& [source, changed] : found) {
      auto& known = (*dims)[source];
      if (known.size() != changed.size()) known.assign(changed.size(), false);
      for (size_t d = 0; d < changed.size(); ++d) known[d] = known[d] || changed[d];
    }
    if (ints) ints->insert(ints->end(), changed_ints.begin(), changed_ints.end());
    return true;
  }
  void changed_numbers(const tj_FrameView& frame, std::vector<std::string>& sources) const override {
    for (const auto& g : guards_) {
      if (g.kind != GuardKind::const_eq || !g.source || !g.expected) continue;
      const bool is_float = PyFloat_CheckExact(g.expected.get());
      if (!is_float && !PyLong_CheckExact(g.expected.get())) continue;
      if (holds(g, frame) || PyErr_Occurred()) continue;
      PyRef v = read_source(*g.source, frame);
      if (PyErr_Occurred()) return;  // an interruption: the caller raises it
      if (v && tracer::fits_dynamic_number(v.get(), is_float) && tracer::fits_dynamic_number(g.expected.get(), is_float))
        sources.push_back(g.source->to_string());
    }
  }
  std::string unstable_guard(const tj_FrameView& frame) const override {
    for (const auto& g : guards_) {
      if (g.kind != GuardKind::id_match || !g.expected || !g.source) continue;
      if (PyMethod_Check(g.expected.get())) return g.to_string() + " (a bound method is made afresh by every attribute read)";
      PyRef first = read_source(*g.source, frame);
      PyRef second = read_source(*g.source, frame);
      bool fresh = first && second && first.get() != second.get();
      if (fresh) return g.to_string() + " (its source gives a new object on every read)";
    }
    return "";
  }

 private:
  std::vector<Guard> guards_;
};

}  // namespace

std::unique_ptr<GuardCheck> compile_guards(const tracer::GuardSet& guards) {
  return std::make_unique<CompiledGuards>(guards.guards());
}

}  // namespace tj::runtime
