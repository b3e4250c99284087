// Attribute deletion (issue 42): `del o.k` (DELETE_ATTR) and `delattr(o, "k")`;
// item deletion `del c[k]` (DELETE_SUBSCR) at the end.
// On an object made in the frame the attribute is dropped from the object's
// trace-only attributes, so reads, `hasattr` and the rebuild after the graph
// no longer see it. On an object or function passed in (generic attribute
// storage, no `__delattr__` of its own) the deletion is recorded like a write:
// the attribute's entry in `attr_overrides` becomes a deletion marker (a
// later read in the trace breaks the graph there, a later write replaces it)
// and a `del_attr` side effect deletes it from the real object after the
// graph, in order with the writes around it. What eager would raise on (an
// attribute that is absent, a property or slot, a custom `__delattr__` such as
// nn.Module's, a class, a tensor attribute) breaks the graph with the reason,
// and CPython runs the deletion.
#include <algorithm>

#include "tracer/attr_writes.h"
#include "tracer/objects.h"
#include "tracer/sets_and_dicts.h"
#include "tracer/py_str.h"
#include "tracer/translate_call.h"
#include "tracer/translator.h"

namespace tj::tracer {

PyObject* deleted_attr_marker() {
  static PyObject* marker = PyObject_CallNoArgs(reinterpret_cast<PyObject*>(&PyBaseObject_Type));
  return marker;
}

bool is_deleted_attr(const ValuePtr& v) { return v && v->is_constant() && v->obj.get() == deleted_attr_marker(); }

bool InstructionTranslator::op_delete_attr(const bc::Instruction& inst) {
  ValuePtr owner = pop();
  return delete_attr(*this, owner, utf8(inst.argval.get()));
}

ValuePtr call_delattr(TraceContext cx, const std::vector<ValuePtr>& args, const TraceContext::Kwargs& kwargs) {
  if (args.size() != 2 || !kwargs.empty() || !args[1]->is_constant() || !PyUnicode_Check(args[1]->obj.get()))
    return cx.unsupported("delattr() with a name the trace does not know as a str"), nullptr;
  return delete_attr(cx, args[0], utf8(args[1]->obj.get())) ? Value::constant(Py_None) : nullptr;
}

bool delete_attr(TraceContext cx, const ValuePtr& owner, const std::string& name) {
  const std::string what = "deletion of attribute '" + name + "' of a " + owner->type_name();
  if (owner->is_tensor()) return cx.unsupported(what + " (Tensor attributes are not modelled)");
  if ((owner->kind != ValueKind::object && owner->kind != ValueKind::callable) || !owner->obj || owner->bound_self())
    return cx.unsupported(what);
  PyObject* obj = owner->obj.get();
  if (owner->kind == ValueKind::callable && !PyFunction_Check(obj))
    return cx.unsupported(what + " (only functions and plain objects are modelled)");
  if (name == "__dict__" || name == "__class__") return cx.unsupported(what);
  PyTypeObject* type = Py_TYPE(obj);
  if (type->tp_setattro != PyObject_GenericSetAttr)
    return cx.unsupported(what + " with its own __delattr__ (" + std::string(type->tp_name) + ")");
  PyRef key = PyRef::steal(PyUnicode_FromString(name.c_str()));
  if (!key) return cx.unsupported(what + ": cannot make the name");
  if (PyObject* descr = _PyType_Lookup(type, key.get()); descr && Py_TYPE(descr)->tp_descr_set)
    return cx.unsupported(what + ", a property, slot or descriptor of its class");

  auto written = std::find_if(owner->attr_overrides.begin(), owner->attr_overrides.end(),
                              [&](const auto& entry) { return entry.first == name; });
  const bool written_here = written != owner->attr_overrides.end() && !is_deleted_attr(written->second);
  if (owner->kind == ValueKind::object && owner->object_class()) {
    // Made in the frame: its attributes are all in attr_overrides.
    if (!written_here) return cx.unsupported(what + " that it does not have (eager raises AttributeError)");
    cx.journal(owner);
    owner->attr_overrides.erase(written);
    return true;
  }
  if (!owner->source) return cx.unsupported(what + " without a source");
  const bool had = written != owner->attr_overrides.end() ? written_here : real_instance_has(obj, key.get());
  if (cx.failed()) return false;
  if (!had) return cx.unsupported(what + " that it does not have (eager raises AttributeError)");
  // Present before the frame: read through its source, so the guards
  // require it of the next call's object too (the deletion is replayed).
  if (!written_here && !get_attr(cx, owner, name)) return false;
  if (Value* dict = owner->instance_dict().get()) {  // `o.__dict__` read earlier: the key leaves it too
    auto key_at = std::find_if(dict->keys.begin(), dict->keys.end(), [&](const ValuePtr& k) {
      return k->is_constant() && PyUnicode_Check(k->obj.get()) && utf8(k->obj.get()) == name;
    });
    if (key_at != dict->keys.end()) {
      cx.journal(owner->instance_dict());
      dict->items.erase(dict->items.begin() + (key_at - dict->keys.begin()));
      dict->keys.erase(key_at);
    }
  }
  cx.journal(owner);
  ValuePtr marker = Value::constant(deleted_attr_marker());
  if (written != owner->attr_overrides.end()) written->second = marker;
  else owner->attr_overrides.emplace_back(name, marker);
  cx.add_side_effect(SideEffect{SideEffect::Kind::del_attr, owner, name, Value::constant(Py_None)});
  return true;
}

// DELETE_SUBSCR: `del lst[i]`, `del lst[a:b]` (RL code's `del policy.rewards[:]`
// after each episode) and `del d[k]` on a list or dict, one made in the frame
// or passed in (the change is journaled and, for one passed in, written back
// after the graph as every other list or dict mutation); a user object's own
// `__delitem__` is inlined. A tensor, a missing key, an index out of range
// or a slice with a step break the graph, and CPython runs the deletion.
bool InstructionTranslator::op_delete_subscr(const bc::Instruction&) {
  ValuePtr index = pop();
  ValuePtr obj = pop();
  if (is_user_object(obj)) {
    bool handled = false;
    ValuePtr r = call_dunder(*this, obj, "__delitem__", {index}, handled);
    if (!handled) return unsupported("'" + obj->type_name() + "' object does not support item deletion here");
    return r != nullptr;
  }
  // (a set made in the frame is a dict of keys: `del s[k]` raises in CPython)
  if ((obj->kind != ValueKind::list && obj->kind != ValueKind::dict) || is_keyed_set(obj))
    return unsupported("item deletion on a " + obj->type_name());
  if (obj->kind == ValueKind::dict) {
    ValuePtr key = dict_key(*this, index);
    if (!key) return false;
    int i = find_dict_key(*this, *obj, key);
    if (i < 0) return unsupported("del of a key the dict does not hold (KeyError)");
    record_container_mutation(obj);
    journal(obj);
    obj->keys.erase(obj->keys.begin() + i);
    obj->items.erase(obj->items.begin() + i);
    return true;
  }
  if (!index->is_constant()) return unsupported("list deletion index of type " + index->type_name());
  PyObject* key = index->obj.get();
  auto n = static_cast<Py_ssize_t>(obj->items.size());
  Py_ssize_t start = 0, stop = 0;
  if (PyLong_Check(key)) {
    start = PyLong_AsSsize_t(key);
    if (start == -1 && PyErr_Occurred()) {  // beyond Py_ssize_t: IndexError in CPython
      clear_unless_interruption();
      return unsupported("list deletion index out of range");
    }
    if (start < 0) start += n;
    if (start < 0 || start >= n) return unsupported("list deletion index out of range");
    stop = start + 1;
  } else if (PySlice_Check(key)) {
    Py_ssize_t step = 1;
    if (PySlice_Unpack(key, &start, &stop, &step) < 0) {  // a zero step: ValueError in CPython
      clear_unless_interruption();
      return unsupported("del of a list slice with a zero step");
    }
    if (step != 1) return unsupported("del of a list slice with a step");
    PySlice_AdjustIndices(n, &start, &stop, step);
    if (stop < start) stop = start;
  } else {
    return unsupported("list deletion index of type " + index->type_name());
  }
  record_container_mutation(obj);
  journal(obj);
  obj->items.erase(obj->items.begin() + start, obj->items.begin() + stop);
  return true;
}

}  // namespace tj::tracer
