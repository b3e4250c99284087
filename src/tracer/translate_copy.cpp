// `copy.deepcopy(v)` traced (issue 42). A tensor outside autograd is a
// `clone` (Tensor.__deepcopy__ copies the storage and keeps sizes and
// strides; a view or a tensor requiring grad, whose copy is a new leaf, is
// refused); a constant is copied at trace time by the real `copy.deepcopy`
// (atoms come back as themselves, a set as a new set); lists, tuples
// (namedtuples too) and plain dicts are new containers of copied items,
// with deepcopy's memo, so an item reached twice is copied once and the
// copies share it as the originals did. Anything else (an nn.Module, whose
// copied parameters would be new leaf tensors made outside the graph, a
// user object, a custom `__deepcopy__`, a `memo=` argument) breaks the graph
// with the reason, and CPython runs the copy.
#include <unordered_map>

#include "support/py_errors.h"
#include "support/py_lookup.h"
#include "tracer/torch_ops_support.h"
#include "tracer/translate_call.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

class DeepCopier {
 public:
  explicit DeepCopier(TraceContext tr) : tr_(tr) {}

  // Null with the trace's failure set when `v` cannot be copied in the graph.
  ValuePtr copy(const ValuePtr& v) {
    if (auto it = memo_.find(v.get()); it != memo_.end()) return it->second;
    ValuePtr out = copy_uncached(v);
    if (out) memo_.emplace(v.get(), out);
    return out;
  }

 private:
  ValuePtr refuse(const std::string& why) { return tr_.unsupported("copy.deepcopy of " + why), nullptr; }

  ValuePtr copy_uncached(const ValuePtr& v) {
    switch (v->kind) {
      case ValueKind::constant: return copy_constant(v);
      case ValueKind::symint: return v;  // an int: deepcopy returns it
      case ValueKind::tensor: return copy_tensor(v);
      case ValueKind::list:
      case ValueKind::tuple: return copy_sequence(v);
      case ValueKind::dict: return copy_dict(v);
      case ValueKind::module:
      case ValueKind::object:
        if (is_nn_module(v))
          return refuse("an nn.Module (its copy's parameters are new leaf tensors, made outside the graph)");
        return refuse("a " + v->type_name() + " (not modelled)");
      default: return refuse("a " + v->type_name() + " (not modelled)");
    }
  }

  static bool is_nn_module(const ValuePtr& v) {
    PyObject* module_type = cached_module_attr("torch.nn", "Module");
    if (!v->obj || !module_type) return false;
    int r = PyObject_IsInstance(v->obj.get(), module_type);
    clear_unless_interruption();  // a user __class__ raising: not a module
    return r == 1;
  }

  ValuePtr copy_constant(const ValuePtr& v) {
    PyObject* deepcopy = cached_module_attr("copy", "deepcopy");
    PyRef copied = PyRef::steal(deepcopy ? PyObject_CallOneArg(deepcopy, v->obj.get()) : nullptr);
    if (!copied) return refuse("a " + v->type_name() + " (copying it raised)");
    return Value::constant(copied.get());
  }

  ValuePtr copy_tensor(const ValuePtr& v) {
    if (is_python_number(v)) return v;  // a number: deepcopy returns it
    const graph::TensorMeta& m = v->meta();
    tr_.note_sizes_read("copy.deepcopy of a tensor (its layout)");
    if (m.requires_grad) return refuse("a tensor that requires grad (its copy is a new leaf, made outside the graph)");
    if (!m.is_contiguous() || m.storage_offset != 0) return refuse("a view (its copy keeps the base's storage)");
    return tr_.call_aten("aten::clone", {v});
  }

  ValuePtr copy_sequence(const ValuePtr& v) {
    if (v->kind == ValueKind::list && v->obj && !PyList_CheckExact(v->obj.get()))
      return refuse("a " + v->type_name() + " (a list subclass)");
    std::vector<ValuePtr> items;
    for (const ValuePtr& item : v->items) {
      ValuePtr c = copy(item);
      if (!c) return nullptr;
      items.push_back(std::move(c));
    }
    ValuePtr out = Value::sequence(v->kind, std::move(items));
    if (v->kind == ValueKind::tuple && v->obj) {
      // A namedtuple or structseq keeps its class (an input's obj is the real tuple).
      PyObject* type = PyType_Check(v->obj.get()) ? v->obj.get() : reinterpret_cast<PyObject*>(Py_TYPE(v->obj.get()));
      if (type != reinterpret_cast<PyObject*>(&PyTuple_Type)) out->obj = PyRef::borrow(type);
    }
    return out;
  }

  ValuePtr copy_dict(const ValuePtr& v) {
    if (v->obj && Py_TYPE(v->obj.get()) != &PyDict_Type)
      return refuse("a " + v->type_name() + " (only plain dicts are modelled)");
    std::vector<ValuePtr> keys, items;
    for (size_t i = 0; i < v->keys.size(); ++i) {
      if (!v->keys[i]->is_constant()) return refuse("a dict with a key that is not a constant");
      ValuePtr key = copy(v->keys[i]);
      ValuePtr item = key ? copy(v->items[i]) : nullptr;
      if (!item) return nullptr;
      keys.push_back(std::move(key));
      items.push_back(std::move(item));
    }
    return Value::dict(std::move(keys), std::move(items));
  }

  TraceContext tr_;
  std::unordered_map<const Value*, ValuePtr> memo_;
};

}  // namespace

ValuePtr call_deepcopy(TraceContext cx, const std::vector<ValuePtr>& args,
                       const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  if (args.size() != 1 || !kwargs.empty()) return cx.unsupported("copy.deepcopy with a memo argument"), nullptr;
  return DeepCopier(cx).copy(args[0]);
}

}  // namespace tj::tracer
