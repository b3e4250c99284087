// The builtins the tracer evaluates itself: len, isinstance, range, min,
// max, abs, getattr, hasattr, setattr, tuple, list, dict, int, float, bool,
// enumerate, zip, and any builtin of a safe list on constant arguments.
//
// One table, kBuiltinHandlers, maps each builtin (a function of module
// `builtins`, told by identity, or a builtin type) to a small handler. A
// handler answers the call (a value; null with the reason set) or declines
// it (nullopt: these arguments are not its case); a declined call, like a
// builtin without a handler, is folded on constant arguments when the
// builtin is pure (kPureBuiltinFunctions, kPureBuiltinTypes), else it is
// unsupported. New builtins go into kBuiltinHandlers.
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "support/tensor_bridge.h"
#include "tracer/attr_writes.h"
#include "tracer/builtins.h"
#include "tracer/objects.h"
#include "tracer/sizes.h"
#include "tracer/torch_ops.h"
#include "support/py_lookup.h"
#include "tracer/py_str.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

std::string builtin_name(PyObject* fn) {
  if (PyType_Check(fn)) return reinterpret_cast<PyTypeObject*>(fn)->tp_name;
  PyRef n = PyRef::steal(PyObject_GetAttrString(fn, "__name__"));
  std::string out = utf8(n.get());
  PyErr_Clear();  // a name for messages: best effort
  return out;
}

PyObject* as_object(PyTypeObject& type) { return reinterpret_cast<PyObject*>(&type); }

// builtins.<name> (borrowed: the builtins module keeps it), or null.
PyObject* builtins_attr(const char* name) {
  PyObject* f = PyDict_GetItemString(PyModule_GetDict(builtins_module()), name);
  return f;
}

// Builtins with no side effects, folded when every argument is constant.
PyTypeObject* const kPureBuiltinTypes[] = {&PyLong_Type,     &PyFloat_Type, &PyBool_Type, &PyTuple_Type, &PyRange_Type,
                                           &PyReversed_Type, &PyEnum_Type,  &PyZip_Type,  &PyList_Type,  &PyDict_Type};
const char* const kPureBuiltinFunctions[] = {"len",   "abs",    "min",     "max",     "round",      "divmod",     "pow",
                                             "sorted", "all",   "any",     "sum",     "repr",       "str",        "hash",
                                             "chr",   "ord",    "isinstance", "issubclass", "callable", "hex", "bin",
                                             "oct",   "format", "getattr", "hasattr"};

bool is_pure_builtin(PyObject* fn) {
  static const std::unordered_set<PyObject*> pure = [] {
    std::unordered_set<PyObject*> out;
    for (PyTypeObject* type : kPureBuiltinTypes) out.insert(as_object(*type));
    for (const char* name : kPureBuiltinFunctions)
      if (PyObject* f = builtins_attr(name)) out.insert(f);
    return out;
  }();
  return pure.count(fn) > 0;
}

PyObject* torch_tensor_type() { return cached_module_attr("torch", "Tensor"); }

using Kwargs = std::vector<std::pair<std::string, ValuePtr>>;

// One call of a builtin, as its handler sees it. `name` is for messages.
struct BuiltinCall {
  mutable TraceContext t;
  PyObject* fn;
  const std::string& name;
  std::vector<ValuePtr>& args;
  Kwargs& kwargs;

  bool plain(size_t n) const { return args.size() == n && kwargs.empty(); }
  // Ends the call as unsupported: the null result.
  ValuePtr refuse(const std::string& reason) const { return t.unsupported(reason), nullptr; }
};

// The answer of a handler: a value (null: failed, the reason set), or
// nullopt: not its case (then folded when pure, or unsupported).
using Answer = std::optional<ValuePtr>;
using BuiltinHandler = Answer (*)(BuiltinCall&);
constexpr std::nullopt_t kDecline = std::nullopt;

// The items iterating over `v` gives, for list(), tuple(), sum(), zip() ...
// (an iterator is consumed to its end); nullopt with unsupported set.
std::optional<std::vector<ValuePtr>> items_of(BuiltinCall& c, const ValuePtr& v) {
  TraceContext t = c.t;
  if (auto modules = module_container_items(t, v)) return modules;
  switch (v->kind) {
    case ValueKind::tuple:
    case ValueKind::list: return v->items;
    case ValueKind::dict: return v->keys;
    case ValueKind::dict_view: return v->view_items();
    case ValueKind::iterator: {
      std::vector<ValuePtr> rest(v->items.begin() + static_cast<long>(v->position), v->items.end());
      t.consume(v, rest.size());
      return rest;
    }
    case ValueKind::tensor: {
      ValuePtr unbound = t.call_value(Value::tensor_method(v, "unbind"), {}, {});
      if (!unbound) return std::nullopt;
      return unbound->items;
    }
    case ValueKind::constant: {
      PyRef it = PyRef::steal(PyObject_GetIter(v->obj.get()));
      if (!it) break;
      std::vector<ValuePtr> out;
      while (PyRef x = PyRef::steal(PyIter_Next(it.get()))) out.push_back(Value::constant(x.get()));
      if (PyErr_Occurred()) break;
      return out;
    }
    default: break;
  }
  clear_expected_error({PyExc_TypeError});  // not iterable; unsupported() names any other error
  t.unsupported(c.name + "() over a " + v->type_name());
  return std::nullopt;
}

// The type the tracer knows `v` to have (type(v), isinstance(v, ...)), or null.
PyObject* known_type(const ValuePtr& v) {
  switch (v->kind) {
    case ValueKind::tensor: return v->obj ? v->obj.get() : torch_tensor_type();
    case ValueKind::tuple:  // a structseq or torch.Size made in the frame keeps its type in `obj`
      return v->obj && PyType_Check(v->obj.get()) ? v->obj.get() : as_object(PyTuple_Type);
    case ValueKind::list: return as_object(PyList_Type);
    case ValueKind::dict: return v->obj ? reinterpret_cast<PyObject*>(Py_TYPE(v->obj.get())) : as_object(PyDict_Type);
    case ValueKind::partial: return cached_module_attr("functools", "partial");
    default: return nullptr;
  }
}

Answer builtin_print(BuiltinCall& c) { return c.refuse("print() (a side effect)"); }

Answer builtin_locals(BuiltinCall& c) {
  if (!c.plain(0)) return kDecline;
  return locals_dict(c.t);
}

Answer builtin_vars(BuiltinCall& c) {
  if (c.plain(0)) return locals_dict(c.t);
  if (c.plain(1) && c.args[0]->kind == ValueKind::object) return c.t.get_attr(c.args[0], "__dict__");
  return kDecline;
}

// type(v) of what the tracer knows the type of: a tensor's class (an
// input's is guarded by TENSOR_MATCH), containers, objects made here.
Answer builtin_type(BuiltinCall& c) {
  if (!c.plain(1)) return kDecline;
  const ValuePtr& v = c.args[0];
  if (v->kind == ValueKind::object && v->source) {
    // The class of an input object: the same value as the class read by
    // name (C.x = 1 through type(o) is seen through C).
    PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(v->obj.get()));
    return c.t.wrap_input(type, Source::attr(v->source, "__class__"));
  }
  if (v->kind == ValueKind::object && v->object_class()) return v->object_class();  // made in the frame: its class's value
  PyObject* type = known_type(v);
  if (v->kind == ValueKind::constant || v->kind == ValueKind::callable || v->kind == ValueKind::module)
    type = reinterpret_cast<PyObject*>(Py_TYPE(v->obj.get()));
  if (!type) return kDecline;
  return Value::callable(type);
}

// sorted() of something with constant items (the keys of a dict of
// tensors, locals()): the items as a list of constants, then folded.
Answer builtin_sorted(BuiltinCall& c) {
  if (!c.plain(1) || c.args[0]->is_python_constant()) return kDecline;
  auto items = items_of(c, c.args[0]);
  if (!items) return nullptr;
  ValuePtr list = Value::sequence(ValueKind::list, std::move(*items));
  if (!list->is_python_constant()) return c.refuse("sorted() of values that are not constants");
  c.args[0] = list;
  return kDecline;
}

Answer builtin_super(BuiltinCall& c) {
  if (c.args.size() > 2 || !c.kwargs.empty()) return kDecline;
  return make_super(c.t, c.args);
}

// An int traced from a deque input's length (builtin_len below), unchanged:
// never negative, as `__len__` must return.
bool is_deque_length(const ValuePtr& n) {
  const DynamicIntOrigin* origin = n->number() ? n->number()->dynamic_int.get() : nullptr;
  if (!origin || !origin->expr || !origin->expr->steps.empty() || !origin->expr->source) return false;
  const Source& s = *origin->expr->source;
  return s.kind == SourceKind::call && s.name == "__len__";  // made only there
}

Answer builtin_len(BuiltinCall& c) {
  if (c.args.size() != 1) return kDecline;
  const ValuePtr& v = c.args[0];
  if (auto modules = module_container_items(c.t, v)) return Value::constant_steal(PyLong_FromSize_t(modules->size()));
  if (v->is_sequence() || v->kind == ValueKind::dict) return Value::constant_steal(PyLong_FromSize_t(v->items.size()));
  if (v->kind == ValueKind::dict_view) return Value::constant_steal(PyLong_FromSize_t(v->as_dict_view().dict->items.size()));
  if (is_user_object(v)) {
    bool handled = false;
    ValuePtr n = call_dunder(c.t, v, "__len__", {}, handled);
    if (handled) {
      if (n && !(n->is_constant() && PyLong_Check(n->obj.get()) && PyLong_AsLong(n->obj.get()) >= 0) &&
          !is_deque_length(n))
        return clear_expected_error({PyExc_OverflowError}),
               c.refuse("__len__ of " + v->type_name() + " did not return a non-negative int");
      return n;
    }
  }
  if (v->kind == ValueKind::object && v->source && v->obj && has_exact_type(v->obj.get(), "collections", "deque")) {
    // A replay memory's `len(self.memory)` (DQN): a deque input, never
    // changed by the trace (its mutating methods break), read as an int
    // input at `memory.__len__()`: guarded by value, and an automatic
    // dynamic int once it changed between calls (one recompile, not one
    // per call), a comparison on it then guarded by its outcome.
    const Py_ssize_t n = PyObject_Length(v->obj.get());
    if (n < 0) return c.refuse("len() of a deque failed");
    PyRef length = PyRef::steal(PyLong_FromSsize_t(n));
    return c.t.wrap_input(length.get(), Source::call(v->source, "__len__"));
  }
  if (v->is_tensor()) {
    if (v->meta().sizes.empty()) return c.refuse("len() of a 0-d tensor");
    return tensor_size(c.t, v, 0);
  }
  return kDecline;
}

Answer builtin_isinstance(BuiltinCall& c) {
  if (c.args.size() != 2) return kDecline;
  const ValuePtr& obj = c.args[0];
  const ValuePtr& cls = c.args[1];
  if (obj->is_python_constant() && !cls->is_python_constant()) {
    // isinstance(3, (int, torch.Tensor)): a tuple of classes is no constant value.
    PyRef cls_obj = cls->as_python();
    PyRef real = obj->as_python();
    if (!cls_obj || !real) return c.refuse("isinstance() with a class of type " + cls->type_name());
    int r = PyObject_IsInstance(real.get(), cls_obj.get());
    if (r < 0) return c.refuse("isinstance() failed at trace time");
    return Value::constant(r ? Py_True : Py_False);
  }
  if (obj->is_python_constant() || cls->kind == ValueKind::tensor) return kDecline;
  PyRef cls_obj = cls->as_python();
  if (!cls_obj) return c.refuse("isinstance() with a class of type " + cls->type_name());
  PyObject* type = known_type(obj);
  if (obj->kind == ValueKind::iterator)  // a generator made in the frame (model.parameters()) has its Python type
    type = reinterpret_cast<PyObject*>(obj->as_iterator().python_type);
  else if (!type)
    type = obj->obj ? reinterpret_cast<PyObject*>(Py_TYPE(obj->obj.get())) : nullptr;
  if (obj->source && obj->is_sequence() && obj->obj) type = reinterpret_cast<PyObject*>(Py_TYPE(obj->obj.get()));
  int r = type ? PyObject_IsSubclass(type, cls_obj.get()) : -1;
  if (r < 0) return c.refuse("isinstance() failed at trace time");
  return Value::constant(r ? Py_True : Py_False);
}

// setattr(o, "k", v): as `o.k = v` (STORE_ATTR's rules).
Answer builtin_setattr(BuiltinCall& c) {
  if (!c.plain(3) || !c.args[1]->is_constant() || !PyUnicode_Check(c.args[1]->obj.get())) return kDecline;
  const ValuePtr& owner = c.args[0];
  std::string attr = utf8(c.args[1]->obj.get());
  bool stored = false;
  if (owner->kind == ValueKind::object && owner->object_class())
    stored = store_fresh_object_attr(c.t, owner, attr, c.args[2]);
  else if ((owner->kind == ValueKind::object || owner->kind == ValueKind::callable) && owner->source && !owner->bound_self())
    stored = record_attr_store(c.t, owner, attr, c.args[2]);
  else
    return c.refuse("setattr() on a " + owner->type_name());
  return stored ? Value::constant(Py_None) : nullptr;
}

// delattr(o, "k"): as `del o.k` (translate_delattr.cpp).
Answer builtin_delattr(BuiltinCall& c) { return call_delattr(c.t, c.args, c.kwargs); }

// Whether `obj.attr` exists: what the frame wrote first, then the real
// object (only AttributeError means absent, as hasattr() and getattr(o, k,
// default) do); torch.Tensor's own attributes for a tensor. Null: failed.
std::optional<bool> attr_exists(BuiltinCall& c, const ValuePtr& obj, const std::string& attr) {
  if (obj->is_tensor()) {
    PyObject* tt = torch_tensor_type();
    return tt && PyObject_HasAttrString(tt, attr.c_str());  // no user code runs
  }
  if (!obj->obj) return true;
  ValuePtr written = attr_written_in_frame(c.t, obj, attr);
  if (c.t.failed()) return std::nullopt;
  if (written) return true;
  PyRef found = PyRef::steal(PyObject_GetAttrString(obj->obj.get(), attr.c_str()));
  if (!found && !clear_expected_error({PyExc_AttributeError})) {
    c.t.unsupported(c.name + "() of " + obj->type_name() + "." + attr + " raised");
    return std::nullopt;
  }
  return static_cast<bool>(found);
}

// getattr(o, "k"[, default]) and hasattr(o, "k").
Answer attr_query(BuiltinCall& c, bool has) {
  if (c.args.size() < 2 || !c.args[1]->is_constant() || !PyUnicode_Check(c.args[1]->obj.get())) return kDecline;
  std::string attr = utf8(c.args[1]->obj.get());
  const ValuePtr& obj = c.args[0];
  std::optional<bool> exists = attr_exists(c, obj, attr);
  if (!exists) return nullptr;
  if (obj->source && !obj->is_tensor() && c.t.has_guard(GuardKind::module_match, *obj->source)) {
    // Not pinned by identity: an absent name is absent from every table
    // of another instance too; a present one is read (and guarded).
    PyRef key = PyRef::steal(PyUnicode_FromString(attr.c_str()));
    if (!*exists && key)
      for (ModuleTable table : {ModuleTable::instance_dict, ModuleTable::parameters, ModuleTable::buffers, ModuleTable::modules})
        c.t.note_module_name_absent(obj, table, key.get());
    if (*exists && has && !c.t.get_attr(obj, attr)) return nullptr;
  }
  if (has) return Value::constant(*exists ? Py_True : Py_False);
  if (!*exists && c.args.size() == 3) return c.args[2];
  return c.t.get_attr(obj, attr);
}
Answer builtin_getattr(BuiltinCall& c) { return attr_query(c, /*has=*/false); }
Answer builtin_hasattr(BuiltinCall& c) { return attr_query(c, /*has=*/true); }

Answer sequence_of(BuiltinCall& c, ValueKind kind) {
  if (c.args.size() > 1 || !c.kwargs.empty()) return kDecline;
  std::vector<ValuePtr> items;
  if (c.args.size() == 1) {
    auto it = items_of(c, c.args[0]);
    if (!it) return nullptr;
    items = std::move(*it);
  }
  return Value::sequence(kind, std::move(items));
}
Answer builtin_tuple(BuiltinCall& c) { return sequence_of(c, ValueKind::tuple); }
Answer builtin_list(BuiltinCall& c) { return sequence_of(c, ValueKind::list); }

Answer builtin_dict(BuiltinCall& c) {
  if (c.args.size() > 1) return kDecline;
  ValuePtr d = Value::dict({}, {});
  if (c.args.size() == 1 && c.args[0]->kind == ValueKind::dict) {
    d->keys = c.args[0]->keys;
    d->items = c.args[0]->items;
  } else if (c.args.size() == 1) {
    auto pairs = items_of(c, c.args[0]);
    if (!pairs) return nullptr;
    for (const auto& p : *pairs) {
      if (!p->is_sequence() || p->items.size() != 2 || !p->items[0]->is_constant())
        return c.refuse("dict() from items that are not constant-keyed pairs");
      d->keys.push_back(p->items[0]);
      d->items.push_back(p->items[1]);
    }
  }
  for (auto& [k, v] : c.kwargs) {
    d->keys.push_back(Value::constant_steal(PyUnicode_FromString(k.c_str())));
    d->items.push_back(v);
  }
  return d;
}

Answer builtin_enumerate(BuiltinCall& c) {
  if (c.args.size() != 1 && c.args.size() != 2) return kDecline;
  auto items = items_of(c, c.args[0]);
  if (!items) return nullptr;
  long start = 0;
  if (c.args.size() == 2) {
    if (!c.args[1]->is_constant()) return c.refuse("enumerate() start of type " + c.args[1]->type_name());
    start = PyLong_AsLong(c.args[1]->obj.get());
  }
  std::vector<ValuePtr> pairs;
  for (size_t i = 0; i < items->size(); ++i)
    pairs.push_back(Value::sequence(ValueKind::tuple, {Value::constant_steal(PyLong_FromLong(start + static_cast<long>(i))), (*items)[i]}));
  return Value::iterator(std::move(pairs), &PyEnum_Type);
}

Answer builtin_zip(BuiltinCall& c) {
  if (!c.kwargs.empty()) return kDecline;
  std::vector<std::vector<ValuePtr>> lists;
  size_t n = SIZE_MAX;
  for (const auto& a : c.args) {
    auto items = items_of(c, a);
    if (!items) return nullptr;
    n = std::min(n, items->size());
    lists.push_back(std::move(*items));
  }
  if (lists.empty()) n = 0;
  std::vector<ValuePtr> tuples;
  for (size_t i = 0; i < n; ++i) {
    std::vector<ValuePtr> row;
    for (auto& l : lists) row.push_back(l[i]);
    tuples.push_back(Value::sequence(ValueKind::tuple, std::move(row)));
  }
  return Value::iterator(std::move(tuples), &PyZip_Type);
}

Answer builtin_reversed(BuiltinCall& c) {
  if (c.args.size() != 1 || c.args[0]->is_python_constant()) return kDecline;
  auto items = items_of(c, c.args[0]);
  if (!items) return nullptr;
  return Value::iterator(std::vector<ValuePtr>(items->rbegin(), items->rend()), &PyReversed_Type);
}

Answer builtin_iter(BuiltinCall& c) {
  if (c.args.size() != 1) return kDecline;
  const ValuePtr& v = c.args[0];
  if (v->kind == ValueKind::iterator) return v;  // an iterator is its own iterator
  auto items = items_of(c, v);
  if (!items) return nullptr;
  PyTypeObject* type = v->kind == ValueKind::list ? &PyListIter_Type : v->kind == ValueKind::tuple ? &PyTupleIter_Type : &PySeqIter_Type;
  return Value::iterator(std::move(*items), type);
}

// abs(t), max(t), min(t) of one tensor: the ATen op of that name.
Answer tensor_reduction(BuiltinCall& c) {
  if (c.args.size() != 1 || !c.args[0]->is_tensor()) return kDecline;
  return c.t.call_aten("aten::" + c.name, {c.args[0]});
}

Answer builtin_sum(BuiltinCall& c) {
  if (c.args.empty() || c.args[0]->is_python_constant()) return kDecline;
  auto items = items_of(c, c.args[0]);
  if (!items) return nullptr;
  ValuePtr acc = c.args.size() == 2 ? c.args[1] : Value::constant_steal(PyLong_FromLong(0));
  for (const auto& item : *items) {
    if (acc->is_constant() && item->is_constant()) {
      PyObject* r = PyNumber_Add(acc->obj.get(), item->obj.get());
      if (!r) return c.refuse("sum() of constants raised");
      acc = Value::constant_steal(r);
      continue;
    }
    // Python numbers add as numbers (an int stays an int)
    const bc::BinaryOpArg add = bc::binary_op(bc::BinaryOp::add);
    acc = is_python_number(acc) || is_python_number(item) ? c.t.number_binary_op(add, acc, item)
                                                          : c.t.tensor_binary_op(add, acc, item);
    if (!acc) return nullptr;
  }
  return acc;
}

// int(t), float(t), bool(t) of a tensor.
Answer number_of_tensor(BuiltinCall& c) {
  if (c.args.size() != 1 || !c.args[0]->is_tensor()) return kDecline;
  return c.refuse(c.name + "() of a tensor needs its data (data-dependent)");
}

// The builtins with a handler: functions of `builtins` by name (looked up
// there once, then told by identity), builtin types by their object.
struct BuiltinEntry {
  const char* function;  // or null, and `type`
  PyTypeObject* type;
  BuiltinHandler handler;
};
const BuiltinEntry kBuiltinHandlers[] = {
    {"print", nullptr, builtin_print},
    {"locals", nullptr, builtin_locals},
    {"vars", nullptr, builtin_vars},
    {nullptr, &PyType_Type, builtin_type},
    {"sorted", nullptr, builtin_sorted},
    {nullptr, &PySuper_Type, builtin_super},
    {"len", nullptr, builtin_len},
    {"isinstance", nullptr, builtin_isinstance},
    {"setattr", nullptr, builtin_setattr},
    {"delattr", nullptr, builtin_delattr},
    {"getattr", nullptr, builtin_getattr},
    {"hasattr", nullptr, builtin_hasattr},
    {nullptr, &PyTuple_Type, builtin_tuple},
    {nullptr, &PyList_Type, builtin_list},
    {nullptr, &PyDict_Type, builtin_dict},
    {nullptr, &PyEnum_Type, builtin_enumerate},
    {nullptr, &PyZip_Type, builtin_zip},
    {nullptr, &PyReversed_Type, builtin_reversed},
    {"iter", nullptr, builtin_iter},
    {"abs", nullptr, tensor_reduction},
    {"max", nullptr, tensor_reduction},
    {"min", nullptr, tensor_reduction},
    {"sum", nullptr, builtin_sum},
    {nullptr, &PyLong_Type, number_of_tensor},
    {nullptr, &PyFloat_Type, number_of_tensor},
    {nullptr, &PyBool_Type, number_of_tensor},
};

BuiltinHandler find_builtin_handler(PyObject* fn) {
  static const std::unordered_map<PyObject*, BuiltinHandler> table = [] {
    std::unordered_map<PyObject*, BuiltinHandler> out;
    for (const BuiltinEntry& e : kBuiltinHandlers) {
      PyObject* key = e.function ? builtins_attr(e.function) : as_object(*e.type);
      if (key) out.emplace(key, e.handler);
    }
    return out;
  }();
  auto it = table.find(fn);
  return it == table.end() ? nullptr : it->second;
}

// A pure builtin on constant arguments, called at trace time.
ValuePtr fold_builtin(BuiltinCall& c) {
  bool constant_args = true;
  for (const auto& a : c.args)
    constant_args &= a->is_python_constant() || a->kind == ValueKind::callable || a->kind == ValueKind::partial ||
                     a->kind == ValueKind::module;
  for (const auto& [k, a] : c.kwargs) constant_args &= a->is_python_constant();
  if (!is_pure_builtin(c.fn) || !constant_args) return c.refuse("builtin " + c.name + "() with these arguments is not supported");
  PyRef r = call_with_constants(c.fn, c.args, c.kwargs);
  if (!r) return c.refuse(c.name + "() raised at trace time");
  PyObject* result = r.get();
  if (PyList_CheckExact(result) || PyDict_CheckExact(result) || PyIter_Check(result)) {
    // Mutable results and iterators (enumerate, zip, reversed, and the
    // range_iterator of reversed(range(n))) become tracked values: a
    // folded iterator kept as a constant would be consumed by the first
    // call and empty on every later one.
    PyRef seq = PyRef::steal(PySequence_List(result));
    if (!seq) return c.refuse(c.name + "() result cannot be listed");
    std::vector<ValuePtr> items;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(seq.get()); ++i) items.push_back(Value::constant(PyList_GET_ITEM(seq.get(), i)));
    if (PyList_CheckExact(result)) return Value::sequence(ValueKind::list, std::move(items));
    if (PyDict_CheckExact(result)) return c.refuse("dict() result");
    return Value::iterator(std::move(items), Py_TYPE(result));  // a static type (enumerate, zip, ...)
  }
  return c.t.wrap_constant_result(std::move(r));
}

}  // namespace

ValuePtr call_builtin(TraceContext cx, PyObject* fn, std::vector<ValuePtr> args, Kwargs kwargs) {
  const std::string name = builtin_name(fn);
  BuiltinCall call{cx, fn, name, args, kwargs};
  if (BuiltinHandler handler = find_builtin_handler(fn))
    if (Answer answer = handler(call)) return *answer;
  return fold_builtin(call);
}

}  // namespace tj::tracer
