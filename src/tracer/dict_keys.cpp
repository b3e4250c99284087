// Dict keys beyond constants, and the dict types model code makes.
//
// A dict value's keys are constants (compared with ==, as Python does) or
// tensors, which hash by identity in Python (`Tensor.__hash__` is `id`):
// an input tensor is keyed by its real object (an object value with a
// TensorKeyPayload, so a key read from a dict input and the same parameter
// read from elsewhere are one key), a tensor made in the graph by its value.
// This is what `optimizer.state[p]` needs: a defaultdict keyed by the
// parameters.
//
// `collections.defaultdict` and `OrderedDict` are dict values whose `obj`
// is a real (empty, for ones made in the frame) instance of their type, so
// type() and isinstance see it; a defaultdict's factory is kept in
// a DefaultDictPayload and a missing key inserts what calling it makes (an
// empty list, dict or set, 0, ...). One made in the frame that escapes is
// made again as its type (`rebuild_typed_dict`).
#include <algorithm>
#include <cstring>

#include "support/py_lookup.h"
#include "tracer/py_str.h"
#include "tracer/skip_policy.h"
#include "tracer/sets_and_dicts.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

// (type, factory, items_dict[, names, value...]) -> type(items) or
// defaultdict(factory, items), with the attributes `names` set to the values.
PyObject* rebuild_typed_dict(PyObject*, PyObject* parts) {
  const Py_ssize_t n = PyTuple_Check(parts) ? PyTuple_GET_SIZE(parts) : 0;
  PyObject* names = n > 3 ? PyTuple_GET_ITEM(parts, 3) : nullptr;
  if (n < 3 || (names && (!PyTuple_Check(names) || PyTuple_GET_SIZE(names) != n - 4))) {
    PyErr_SetString(PyExc_TypeError, "tracejit: malformed dict template");
    return nullptr;
  }
  PyObject* type = PyTuple_GET_ITEM(parts, 0);
  PyObject* factory = PyTuple_GET_ITEM(parts, 1);
  PyObject* items = PyTuple_GET_ITEM(parts, 2);
  PyObject* made = type == cached_module_attr("collections", "defaultdict")
                       ? PyObject_CallFunctionObjArgs(type, factory, items, nullptr)
                       : PyObject_CallOneArg(type, items);
  for (Py_ssize_t i = 0; made && names && i < PyTuple_GET_SIZE(names); ++i)
    if (PyObject_SetAttr(made, PyTuple_GET_ITEM(names, i), PyTuple_GET_ITEM(parts, 4 + i)) < 0) Py_CLEAR(made);
  return made;
}

PyMethodDef kRebuildDictDef = {"_rebuild_typed_dict", rebuild_typed_dict, METH_O,
                               "tracejit: an OrderedDict/defaultdict made in a compiled frame, made again"};

}  // namespace

PyObject* rebuild_typed_dict_function() {
  static PyObject* fn = PyCFunction_New(&kRebuildDictDef, nullptr);
  return fn;
}

bool is_module_key(const ValuePtr& v) {
  if (v->kind != ValueKind::object || !v->obj || v->object_class() || !v->source) return false;
  PyObject* module_type = cached_module_attr("torch.nn", "Module");
  bool is_module = module_type && PyObject_IsInstance(v->obj.get(), module_type) == 1;
  clear_unless_interruption();  // a user __class__ raising: not a module key
  return is_module;
}

bool is_tensor_key(const ValuePtr& key) {
  return key->tensor_key() != nullptr;
}

ValuePtr tensor_key_of(PyObject* tensor, const ValuePtr& tensor_value) {
  ValuePtr v = Value::object(tensor);
  v->payload = TensorKeyPayload{tensor_value};
  return v;
}

PyObject* InstructionTranslator::input_tensor_object(const ValuePtr& v) const {
  for (const auto& [obj, value] : shared_->tensor_inputs)
    if (value == v) return obj;
  return nullptr;
}

bool InstructionTranslator::in_file_under(const char* part) const {
  PyObject* file = frame_.code ? frame_.code->co_filename : nullptr;
  const char* text = file ? PyUnicode_AsUTF8(file) : nullptr;
  if (!text) PyErr_Clear();  // a file name that does not encode: in no such file
  return text && std::strstr(text, part) != nullptr;
}

bool InstructionTranslator::in_optimizer_code() const {
  PyObject* file = frame_.code ? frame_.code->co_filename : nullptr;
  const char* text = file ? PyUnicode_AsUTF8(file) : nullptr;
  if (!text) PyErr_Clear();  // as above
  return text && (std::strstr(text, "/torch/optim/") != nullptr || is_polyfill_file(text));
}

ValuePtr dict_key(TraceContext cx, const ValuePtr& key) {
  if (key->kind == ValueKind::tuple && !key->is_python_constant() && cx.shows_sizes(key)) {
    ValuePtr numbers = cx.specialize(key);  // {x.shape: v}: a key by its numbers
    if (numbers->is_python_constant()) return dict_key(cx, numbers);
  }
  if (key->is_symint() || key->kind == ValueKind::size_text) return dict_key(cx, cx.specialize(key));
  if (key->kind == ValueKind::tuple && key->is_python_constant()) {  // (a, b) built in the frame: a constant key
    if (PyRef obj = key->as_python()) return dict_key(cx, Value::constant(obj.get()));
  }
  if (key->kind == ValueKind::tuple && !key->items.empty() &&
      std::all_of(key->items.begin(), key->items.end(), [](const ValuePtr& v) { return v->is_constant() || is_class_key(v); })) {
    // (type(p), type(q)): kl_divergence's memo key, classes by identity
    PyRef tuple = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(key->items.size())));
    if (!tuple) return cx.unsupported("building a tuple key failed"), nullptr;
    for (size_t i = 0; i < key->items.size(); ++i)
      PyTuple_SET_ITEM(tuple.get(), static_cast<Py_ssize_t>(i), Py_NewRef(key->items[i]->obj.get()));
    return dict_key(cx, Value::constant(tuple.get()));
  }
  if (key->is_constant()) {
    if (PyObject_Hash(key->obj.get()) == -1) {
      clear_expected_error({PyExc_TypeError});  // unsupported() names a __hash__ raising anything else
      return cx.unsupported("unhashable dict key of type " + key->type_name() + " (TypeError)"), nullptr;
    }
    return key;
  }
  if (is_tensor_key(key)) return key;
  if (is_module_key(key)) return key;
  if (is_class_key(key)) return Value::constant(key->obj.get());  // `SUPPORTED_NODES[type(x)]`: by identity
  if (is_python_number(key)) return cx.unsupported("a Python number from Tensor.item() as a dict key (data-dependent)"), nullptr;
  if (key->is_tensor()) {
    if (PyObject* real = cx.input_tensor_object(key)) return tensor_key_of(real, key);
    return key;  // made in the graph: its value is its identity
  }
  return cx.unsupported("dict key of type " + key->type_name()), nullptr;
}

int find_dict_key(TraceContext cx, const Value& dict, const ValuePtr& key) {
  for (size_t i = 0; i < dict.keys.size(); ++i) {
    const ValuePtr& k = dict.keys[i];
    if (k == key) return static_cast<int>(i);
    if (k->is_constant() && key->is_constant()) {
      int r = PyObject_RichCompareBool(k->obj.get(), key->obj.get(), Py_EQ);
      if (r < 0 && !clear_expected_error({PyExc_TypeError})) return -1;  // a key's __eq__ raising: named by the trace
      if (r == 1) return static_cast<int>(i);
    } else if (is_module_key(k) && is_module_key(key)) {
      if (k->obj.get() == key->obj.get()) return static_cast<int>(i);
      cx.note_identity_compared(k, key);  // modules are not pinned by identity (MODULE_MATCH)
    } else if (is_tensor_key(k) && is_tensor_key(key)) {
      // The answer depends on which tensors these are: against a key of a
      // dict input (a fixed object), the looked-up tensor must stay that
      // object (ID_MATCH); between tensors of this frame, only whether two
      // inputs are one object matters (NO_ALIASING).
      const ValuePtr& looked_up = key->tensor_key()->tensor;
      if (!k->tensor_key()->tensor && looked_up && looked_up->source) {
        cx.guard_identity(looked_up, key->obj.get());
      } else {
        cx.note_tensor_identity_matters();
      }
      if (k->obj.get() == key->obj.get()) return static_cast<int>(i);
    }
  }
  return -1;
}

ValuePtr dict_missing(TraceContext cx, const ValuePtr& dict, const ValuePtr& key) {
  if (!dict->default_factory())
    return cx.unsupported(key->is_constant() ? "dict key not found at trace time (KeyError)" : "dict key not found (KeyError)"),
           nullptr;
  // d[k] of a defaultdict: d[k] = factory(), then that value.
  ValuePtr made = cx.call_value(dict->default_factory(), {}, {});
  if (!made) return nullptr;
  cx.record_container_mutation(dict);
  cx.journal(dict);
  dict->keys.push_back(key);
  dict->items.push_back(made);
  return made;
}

ValuePtr make_typed_dict(TraceContext cx, PyObject* type, const std::vector<ValuePtr>& args,
                         const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  bool is_default = type == cached_module_attr("collections", "defaultdict");
  ValuePtr factory;
  std::vector<ValuePtr> rest = args;
  if (is_default) {
    factory = args.empty() ? Value::constant(Py_None) : args[0];
    if (!args.empty()) rest.erase(rest.begin());
    if (!(factory->is_constant() && factory->obj.get() == Py_None) && factory->kind != ValueKind::callable &&
        factory->kind != ValueKind::function && factory->kind != ValueKind::partial)
      return cx.unsupported("defaultdict with a factory of type " + factory->type_name()), nullptr;
  }
  // The items as dict() would take them.
  ValuePtr items = cx.call_builtin(reinterpret_cast<PyObject*>(&PyDict_Type), rest, kwargs);
  if (!items) return nullptr;
  PyObject* empty = PyObject_CallNoArgs(type);
  if (!empty) return cx.unsupported("cannot make an empty " + std::string(reinterpret_cast<PyTypeObject*>(type)->tp_name)), nullptr;
  ValuePtr d = Value::dict(items->keys, items->items);
  d->obj = PyRef::steal(empty);
  if (is_default && !(factory->is_constant() && factory->obj.get() == Py_None)) d->payload = DefaultDictPayload{factory};
  return d;
}

bool InstructionTranslator::build_typed_dict_output(const ValuePtr& v, OutputTemplate& out,
                                                    std::vector<graph::Arg>& outputs,
                                                    std::unordered_map<graph::Node*, int>& output_index) {
  using Kind = OutputTemplate::Kind;
  out.kind = Kind::tuple;
  out.constant = PyRef::borrow(rebuild_typed_dict_function());
  out.items.resize(3);
  out.items[0].kind = Kind::constant;
  out.items[0].constant = PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(v->obj.get())));
  if (v->default_factory()) {
    if (!build_output(v->default_factory(), out.items[1], outputs, output_index)) return false;
  } else {
    out.items[1].kind = Kind::constant;
    out.items[1].constant = PyRef::borrow(Py_None);
  }
  ValuePtr plain = Value::dict(v->keys, v->items);
  if (!build_output(plain, out.items[2], outputs, output_index)) return false;
  if (v->attr_overrides.empty()) return true;
  // Attributes written in the frame (op_store_attr): their names, then their values.
  PyRef names = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(v->attr_overrides.size())));
  for (size_t i = 0; names && i < v->attr_overrides.size(); ++i) {
    if (is_deleted_attr(v->attr_overrides[i].second))
      return unsupported("an OrderedDict whose attribute was deleted in the frame cannot leave it");
    PyTuple_SET_ITEM(names.get(), static_cast<Py_ssize_t>(i), PyUnicode_FromString(v->attr_overrides[i].first.c_str()));
  }
  if (!names) return unsupported("cannot make the attribute names of an OrderedDict");
  out.items.emplace_back();
  out.items.back().kind = Kind::constant;
  out.items.back().constant = std::move(names);
  for (const auto& [name, value] : v->attr_overrides) {
    out.items.emplace_back();
    if (!build_output(value, out.items.back(), outputs, output_index)) return false;
  }
  return true;
}

}  // namespace tj::tracer
