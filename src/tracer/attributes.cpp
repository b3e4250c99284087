// Attribute state written during the trace. An object's attributes are one
// storage that Python shows through several paths: `o.k`, `o.__dict__['k']`,
// `hasattr(o, 'k')`, and for a class attribute `C.k`, `type(o).k` and `o.k`.
// The tracer keeps pending writes on the written value (`attr_overrides`,
// replayed as SideEffects), links an object to its `__dict__` value once
// that is read (`instance_dict`), and finds classes by identity
// (TraceShared::input_objects), so every path reads what the frame wrote.
// What cannot be decided that way (a write to a descriptor, a method put on
// a class, a key deleted through `__dict__`) is unsupported: the graph
// breaks and CPython runs it.
#include <algorithm>

#include "support/tensor_bridge.h"
#include "tracer/grad_writes.h"
#include "tracer/attr_writes.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

// The class attribute `name` of `type` (borrowed) when it is a data
// descriptor (property, slot, getset), which wins over an instance's dict.
PyObject* data_descriptor(PyTypeObject* type, PyObject* key) {
  PyObject* descr = _PyType_Lookup(type, key);
  return descr && Py_TYPE(descr)->tp_descr_set ? descr : nullptr;
}

// A value that reads the same through a class and through an instance (no
// binding, no descriptor protocol).
bool is_plain_data(const ValuePtr& v) {
  switch (v->kind) {
    case ValueKind::constant: return Py_TYPE(v->obj.get())->tp_descr_get == nullptr;
    case ValueKind::tensor:
    case ValueKind::tuple:
    case ValueKind::list:
    case ValueKind::dict: return true;
    default: return false;
  }
}

int find_key(const Value& dict, PyObject* key) {
  for (size_t i = 0; i < dict.keys.size(); ++i) {
    int r = PyObject_RichCompareBool(dict.keys[i]->obj.get(), key, Py_EQ);
    if (r == 1) return static_cast<int>(i);
    // Keys that do not compare (TypeError) differ; a key's __eq__ raising
    // anything else is what CPython raises too: left set, the trace names it.
    if (r < 0 && !clear_expected_error({PyExc_TypeError})) return -1;
  }
  return -1;
}

// Sets (or adds) the override `name` of `owner`: what the trace reads for
// that attribute from now on.
void set_override(const ValuePtr& owner, const std::string& name, const ValuePtr& value) {
  for (auto& [n, v] : owner->attr_overrides)
    if (n == name) return void(v = value);
  owner->attr_overrides.emplace_back(name, value);
}

bool has_override(const ValuePtr& owner, const std::string& name) {
  return std::any_of(owner->attr_overrides.begin(), owner->attr_overrides.end(),
                     [&](const auto& kv) { return kv.first == name; });
}

void erase_override(const ValuePtr& owner, const std::string& name) {
  auto& o = owner->attr_overrides;
  o.erase(std::remove_if(o.begin(), o.end(), [&](const auto& kv) { return kv.first == name; }), o.end());
}

}  // namespace

bool real_instance_has(PyObject* obj, PyObject* key) {
  PyRef dict = PyRef::steal(PyObject_GenericGetDict(obj, nullptr));
  bool has = dict && PyDict_Check(dict.get()) && PyDict_GetItem(dict.get(), key);
  clear_expected_error({PyExc_AttributeError});  // no __dict__; anything else is named by the trace
  return has;
}

ValuePtr attr_written_in_frame(TraceContext cx, const ValuePtr& obj, const std::string& name) {
  for (const auto& [n, v] : obj->attr_overrides) {
    if (n == name && is_deleted_attr(v))
      return cx.unsupported("'" + name + "' read after it was deleted in the frame"), nullptr;
    if (n == name) return v;
  }
  if (!obj->obj || (obj->kind != ValueKind::object && obj->kind != ValueKind::callable)) return nullptr;
  PyObject* o = obj->obj.get();
  PyRef key = PyRef::steal(PyUnicode_FromString(name.c_str()));
  bool instance = obj->kind == ValueKind::object;
  if (instance && obj->instance_dict() && !data_descriptor(Py_TYPE(o), key.get())) {
    int i = find_key(*obj->instance_dict(), key.get());
    if (i >= 0) return obj->instance_dict()->items[static_cast<size_t>(i)];
    if (real_instance_has(o, key.get()))
      return cx.unsupported("'" + name + "' read after it was removed through __dict__ in the frame"), nullptr;
  }
  // A write to a class on the MRO, unless a class before it defines the name.
  PyTypeObject* type = instance ? Py_TYPE(o) : PyType_Check(o) ? reinterpret_cast<PyTypeObject*>(o) : nullptr;
  if (!type || !type->tp_mro) return nullptr;
  ValuePtr written;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(type->tp_mro) && !written; ++i) {
    PyObject* cls = PyTuple_GET_ITEM(type->tp_mro, i);
    if (auto it = cx.shared().input_objects.find(cls); it != cx.shared().input_objects.end() && it->second != obj)
      for (const auto& [n, v] : it->second->attr_overrides)
        if (n == name) written = v;
    if (!written && PyDict_GetItem(reinterpret_cast<PyTypeObject*>(cls)->tp_dict, key.get())) break;
  }
  if (!written) return nullptr;
  if (instance) {
    bool on_instance = obj->instance_dict() ? find_key(*obj->instance_dict(), key.get()) >= 0 : real_instance_has(o, key.get());
    if (is_plain_data(written)) return on_instance ? nullptr : written;
  } else if (is_plain_data(written) || written->kind == ValueKind::function || written->kind == ValueKind::partial ||
             (written->kind == ValueKind::callable && PyFunction_Check(written->obj.get()))) {
    return written;
  }
  return cx.unsupported("'" + name +
                        "' read after a write of its class attribute in the frame (a method or descriptor)"),
         nullptr;
}

ValuePtr instance_dict_of(TraceContext cx, const ValuePtr& obj, ValuePtr real_dict) {
  if (obj->instance_dict()) return obj->instance_dict();
  if (real_dict->kind != ValueKind::dict)
    return cx.unsupported("__dict__ of a " + obj->type_name() + " is not a plain dict"), nullptr;
  if (!obj->attr_overrides.empty() && Py_TYPE(obj->obj.get())->tp_setattro != PyObject_GenericSetAttr)
    return cx.unsupported("__dict__ of a " + obj->type_name() + " with a custom __setattr__ after attribute writes"),
           nullptr;
  // The writes made so far are in the dict from now on.
  cx.journal(obj);
  cx.journal(real_dict);
  for (const auto& [n, v] : obj->attr_overrides) {
    PyRef key = PyRef::steal(PyUnicode_FromString(n.c_str()));
    int i = find_key(*real_dict, key.get());
    if (i >= 0) {
      real_dict->items[static_cast<size_t>(i)] = v;
    } else {
      real_dict->keys.push_back(Value::constant(key.get()));
      real_dict->items.push_back(v);
    }
  }
  assert(std::holds_alternative<std::monostate>(obj->payload) && "an input object has no other payload");
  obj->payload = InstanceDictPayload{real_dict};
  return real_dict;
}

bool record_attr_store(TraceContext cx, const ValuePtr& owner, const std::string& name, const ValuePtr& value) {
  if (name == "__dict__" || name == "__class__") return cx.unsupported("assignment to " + name);
  PyRef key = PyRef::steal(PyUnicode_FromString(name.c_str()));
  // A slot (member descriptor) is plain storage outside __dict__; any other
  // data descriptor (a property) runs code on assignment.
  PyObject* descr = owner->obj ? data_descriptor(Py_TYPE(owner->obj.get()), key.get()) : nullptr;
  if (descr && Py_TYPE(descr) != &PyMemberDescr_Type)
    return cx.unsupported("assignment to '" + name + "', a property of " + owner->type_name());
  if (owner->instance_dict() && !descr) {
    if (Py_TYPE(owner->obj.get())->tp_setattro != PyObject_GenericSetAttr)
      return cx.unsupported("attribute write on a " + owner->type_name() +
                            " with a custom __setattr__ after reading __dict__");
    cx.journal(owner->instance_dict());
    int i = find_key(*owner->instance_dict(), key.get());
    if (i >= 0) {
      owner->instance_dict()->items[static_cast<size_t>(i)] = value;
    } else {
      owner->instance_dict()->keys.push_back(Value::constant(key.get()));
      owner->instance_dict()->items.push_back(value);
    }
  }
  cx.journal(owner);
  set_override(owner, name, value);
  cx.add_side_effect(SideEffect{SideEffect::Kind::set_attr, owner, name, value});
  return true;
}

namespace {

// `p.data = t` (THPVariable_set_data): p keeps its identity, autograd
// metadata and version counter and takes t's storage, sizes, strides and
// dtype. Replayed after the graph as the real assignment (a set_attr side
// effect); in the trace p stands for `t.detach()` from here on, so later
// reads, views and in-place writes see t's memory. A p that requires grad
// is a leaf of new data autograd cannot get from the graph: any use of it
// in grad mode breaks the graph there (data_replaced_leaf_used); under
// no_grad (an optimizer's update) it is plain memory.
bool store_tensor_data(TraceContext cx, const ValuePtr& owner, const ValuePtr& value) {
  if (!owner->source || !cx.input_tensor_object(owner))
    return cx.unsupported("assignment to Tensor.data of a tensor made in the graph");
  if (!value->is_tensor() || is_python_number(value))
    return cx.unsupported(std::string("assignment of a ") + value->type_name() + " to Tensor.data (eager raises)");
  const graph::TensorMeta& m = owner->meta();
  const graph::TensorMeta& d = value->meta();
  if (d.device != m.device) return cx.unsupported("assignment to Tensor.data of a tensor of another device");
  const bool leaf_requires_grad = data_replaced_requires_grad(cx, owner);
  if (leaf_requires_grad && !(c10::isFloatingType(d.dtype) || c10::isComplexType(d.dtype)))
    return cx.unsupported("assignment to Tensor.data of a tensor that requires grad: data of a non-floating dtype "
                          "(eager raises)");
  ValuePtr alias = cx.call_aten("aten::detach", {value});
  if (!alias) return false;
  cx.journal(owner);
  owner->node = alias->node;
  set_override(owner, "data", value);
  if (leaf_requires_grad && !has_override(owner, "requires_grad"))
    owner->attr_overrides.emplace_back("requires_grad", Value::constant(Py_True));
  cx.add_side_effect(SideEffect{SideEffect::Kind::set_attr, owner, "data", value});
  return true;
}

}  // namespace

// Whether `v` stands for a tensor that requires grad though its node (a
// detach of the data assigned to it) does not: see store_tensor_data; or
// whose memory the graph wrote values requiring grad into through another
// view (grad_writes.cpp).
bool data_replaced_requires_grad(TraceContext cx, const ValuePtr& v) {
  for (const auto& [n, o] : v->attr_overrides)
    if (n == "requires_grad") return o->obj.get() == Py_True;
  return v->is_tensor() && (v->meta().requires_grad || requires_grad_by_write(cx, v->node));
}

bool data_replaced_leaf_used(TraceContext cx, const std::string& op, const std::vector<ValuePtr>& args) {
  if (!grad_mode_enabled()) return false;
  for (const auto& a : args) {
    if (a->is_sequence() && data_replaced_leaf_used(cx, op, a->items)) return true;
    if (!a->is_tensor() || a->attr_overrides.empty()) continue;
    bool replaced = false;
    for (const auto& [n, o] : a->attr_overrides) replaced |= n == "requires_grad" && o->obj.get() == Py_True;
    if (replaced)
      return cx.unsupported(op + " in grad mode on " + (a->source ? a->source->to_string() : "a tensor") +
                            ", a leaf that requires grad whose .data the graph assigned (autograd's leaf is not in the "
                            "graph)"),
             true;
  }
  return false;
}

namespace {

// The name under which a leaf whose requires_grad the frame set to False
// keeps its own node (see toggle_leaf_requires_grad); no Python attribute.
constexpr const char* kLeafNode = " leaf node";

}  // namespace

bool leaf_requires_grad_toggled(const ValuePtr& v) { return has_override(v, kLeafNode); }

// `p.requires_grad = False` (or `requires_grad_(False)`) on an input leaf
// that requires grad, and `= True` back (CycleGAN's set_requires_grad around
// the generator's step; freezing a backbone). From the False on, p stands
// for `p.detach()` in the trace: autograd in the graph (a forward whose
// loss the frame differentiates) stops there, as eager's does at a leaf
// that does not require grad, while reads, views and in-place writes share
// p's memory. True again gives p its own node (the graph's input, a leaf of
// the graph's autograd). Each assignment is replayed after the graph on the
// real tensor, in order. A non-leaf (eager raises) or a tensor whose .data
// the frame assigned: a precise break.
bool toggle_leaf_requires_grad(TraceContext cx, const ValuePtr& owner, bool wanted) {
  PyObject* obj = owner->source ? cx.input_tensor_object(owner) : nullptr;
  PyRef leaf = obj ? PyRef::steal(PyObject_GetAttrString(obj, "is_leaf")) : PyRef();
  if (!leaf) PyErr_Clear();
  if (!leaf || leaf.get() != Py_True)
    return cx.unsupported("assignment to Tensor.requires_grad of a tensor that requires grad and is not a leaf of "
                          "the frame's inputs (eager raises for a non-leaf; not modelled)");
  if (has_override(owner, "data"))
    return cx.unsupported("assignment to Tensor.requires_grad of a leaf whose .data the frame assigned");
  // a leaf at every call (a view of a leaf passes the tensor guards; eager raises for it)
  cx.add_guard(Guard{GuardKind::const_eq, Source::attr(owner->source, "grad_fn"), PyRef::borrow(Py_None)});
  const bool toggled = leaf_requires_grad_toggled(owner);
  if (wanted == !toggled) return true;  // unchanged: eager's assignment changes nothing either
  cx.journal(owner);
  if (!wanted) {
    ValuePtr own = Value::tensor(owner->node);
    ValuePtr alias = cx.call_aten("aten::detach", {owner});
    if (!alias) return false;
    owner->node = alias->node;
    set_override(owner, kLeafNode, own);
    set_override(owner, "requires_grad", Value::constant(Py_False));
  } else {
    for (const auto& [n, v] : owner->attr_overrides)
      if (n == kLeafNode) owner->node = v->node;
    erase_override(owner, kLeafNode);
    erase_override(owner, "requires_grad");
  }
  cx.add_side_effect(SideEffect{SideEffect::Kind::set_attr, owner, "requires_grad",
                                Value::constant(wanted ? Py_True : Py_False)});
  return true;
}

namespace {

// `x.requires_grad = b` (THPVariable_set_requires_grad): eager raises for a
// non-bool, on a non-leaf and for True on a dtype that cannot require grad;
// on a tensor that does not require grad (a leaf) it is
// `x.requires_grad_(b)`, traced as that op (wav2vec2's feature extractor
// sets it on a view of its input). A tensor that requires grad may be a
// non-leaf (eager raises): a precise break.
bool store_tensor_requires_grad(TraceContext cx, const ValuePtr& owner, const ValuePtr& value) {
  if (!value->is_constant() || !PyBool_Check(value->obj.get()))
    return cx.unsupported(std::string("assignment of a ") + value->type_name() +
                          " to Tensor.requires_grad (a bool known at trace time is traced)");
  if (is_python_number(owner))
    return cx.unsupported("assignment to requires_grad of a Python number from Tensor.item() (AttributeError)");
  const bool wanted = value->obj.get() == Py_True;
  if (leaf_requires_grad_toggled(owner) || data_replaced_requires_grad(cx, owner))
    return toggle_leaf_requires_grad(cx, owner, wanted);
  if (!wanted) return true;  // a leaf that does not require grad keeps not requiring it
  const c10::ScalarType dtype = owner->meta().dtype;
  if (!(c10::isFloatingType(dtype) || c10::isComplexType(dtype)))
    return cx.unsupported("assignment of True to Tensor.requires_grad of a tensor of a dtype that cannot require "
                          "grad (eager raises)");
  return cx.call_aten("aten::requires_grad_", {owner}, {{"requires_grad", value}}) != nullptr;
}

}  // namespace

bool store_tensor_attr(TraceContext cx, const ValuePtr& owner, const std::string& name, const ValuePtr& value) {
  if (name == "data") return store_tensor_data(cx, owner, value);
  if (name == "requires_grad") return store_tensor_requires_grad(cx, owner, value);
  if (name != "grad") return cx.unsupported("assignment to Tensor." + name + " (not modelled)");
  if (!owner->source || !cx.input_tensor_object(owner))
    return cx.unsupported("assignment to Tensor.grad of a tensor made in the graph");
  if (value->is_tensor()) {
    // THPVariable_set_grad's checks: a grad of another dtype, device or
    // size raises in eager; the graph does not model that error.
    const graph::TensorMeta& m = owner->meta();
    const graph::TensorMeta& g = value->meta();
    cx.note_sizes_read("Tensor.grad assignment (sizes must match)");
    if (is_python_number(value) || g.dtype != m.dtype || g.device != m.device || g.sizes != m.sizes)
      return cx.unsupported("assignment to Tensor.grad of a tensor of another dtype, device or size");
  } else if (!(value->is_constant() && value->obj.get() == Py_None)) {
    return cx.unsupported(std::string("assignment of a ") + value->type_name() + " to Tensor.grad");
  }
  cx.journal(owner);
  for (auto& [n, v] : owner->attr_overrides)
    if (n == name) v = value;
  if (std::none_of(owner->attr_overrides.begin(), owner->attr_overrides.end(),
                   [&](const auto& kv) { return kv.first == name; }))
    owner->attr_overrides.emplace_back(name, value);
  cx.add_side_effect(SideEffect{SideEffect::Kind::set_attr, owner, name, value});
  return true;
}

}  // namespace tj::tracer
