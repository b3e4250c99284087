// The builtins the tracer evaluates itself: len, isinstance, range, min,
// max, abs, getattr, hasattr, tuple, list, dict, int, float, bool,
// enumerate, zip, and any builtin of a safe list on constant arguments.
#include <cstring>

#include "support/tensor_bridge.h"
#include "tracer/torch_ops.h"
#include "support/py_lookup.h"
#include "tracer/py_str.h"
#include "tracer/resume.h"
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

// Builtins with no side effects, folded when every argument is constant:
// these types, and these functions of module `builtins`.
bool is_pure_builtin(PyObject* fn, const std::string& name) {
  static PyTypeObject* const kTypes[] = {&PyLong_Type, &PyFloat_Type, &PyBool_Type,     &PyTuple_Type, &PyRange_Type,
                                         &PyReversed_Type, &PyEnum_Type, &PyZip_Type, &PyList_Type,  &PyDict_Type};
  static const char* kFunctions[] = {"len", "abs",  "min",        "max",        "round",    "divmod", "pow",
                                     "sorted", "all", "any",      "sum",        "repr",     "str",    "hash",
                                     "chr",  "ord",  "isinstance", "issubclass", "callable", "hex",    "bin",
                                     "oct",  "format", "getattr", "hasattr"};
  if (PyType_Check(fn)) {
    for (PyTypeObject* type : kTypes)
      if (fn == reinterpret_cast<PyObject*>(type)) return true;
    return false;
  }
  for (const char* n : kFunctions)
    if (name == n) return true;
  return false;
}

PyObject* torch_tensor_type() { return cached_module_attr("torch", "Tensor"); }

}  // namespace

ValuePtr InstructionTranslator::call_builtin(PyObject* fn, std::vector<ValuePtr> args,
                                             std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  std::string name = builtin_name(fn);
  // Builtin types are told by identity, builtin functions (all of module
  // `builtins`, see call_value) by name.
  auto is_type = [&](PyTypeObject& type) { return fn == reinterpret_cast<PyObject*>(&type); };
  auto items_of = [&](const ValuePtr& v) -> std::optional<std::vector<ValuePtr>> {
    if (auto modules = module_container_items(v)) return modules;
    switch (v->kind) {
      case ValueKind::tuple:
      case ValueKind::list: return v->items;
      case ValueKind::dict: return v->keys;
      case ValueKind::dict_view: return v->view_items();
      case ValueKind::iterator: {
        // Consumed to its end, as list(), tuple(), sum(), zip() ... read it.
        std::vector<ValuePtr> rest(v->items.begin() + static_cast<long>(v->position), v->items.end());
        consume(v, rest.size());
        return rest;
      }
      case ValueKind::tensor: {
        ValuePtr unbound = call_value(Value::tensor_method(v, "unbind"), {}, {});
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
    unsupported(name + "() over a " + v->type_name());
    return std::nullopt;
  };

  if (name == "print") return unsupported("print() (a side effect)"), nullptr;
  if ((name == "locals" || name == "vars") && args.empty() && kwargs.empty()) return locals_dict();
  if (name == "vars" && args.size() == 1 && kwargs.empty() && args[0]->kind == ValueKind::object)
    return get_attr(args[0], "__dict__");
  if (is_type(PyType_Type) && args.size() == 1 && kwargs.empty() && args[0]->kind == ValueKind::object && args[0]->source) {
    // The class of an input object: the same value as the class read by
    // name (C.x = 1 through type(o) is seen through C).
    PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(args[0]->obj.get()));
    return wrap_input(type, Source::attr(args[0]->source, "__class__"));
  }
  if (is_type(PyType_Type) && args.size() == 1 && kwargs.empty() && args[0]->kind == ValueKind::object && args[0]->object_class())
    return args[0]->object_class();  // an object made in the frame: its class's value
  if (is_type(PyType_Type) && args.size() == 1 && kwargs.empty()) {
    // type(v) of what the tracer knows the type of: a tensor's class (an
    // input's is guarded by TENSOR_MATCH), containers, objects made here.
    const ValuePtr& v = args[0];
    PyObject* type = nullptr;
    switch (v->kind) {
      case ValueKind::tensor: type = v->obj ? v->obj.get() : torch_tensor_type(); break;
      case ValueKind::tuple: type = v->obj && PyType_Check(v->obj.get()) ? v->obj.get() : reinterpret_cast<PyObject*>(&PyTuple_Type); break;
      case ValueKind::list: type = reinterpret_cast<PyObject*>(&PyList_Type); break;
      case ValueKind::dict: type = v->obj ? reinterpret_cast<PyObject*>(Py_TYPE(v->obj.get())) : reinterpret_cast<PyObject*>(&PyDict_Type); break;
      case ValueKind::constant:
      case ValueKind::callable:
      case ValueKind::module: type = reinterpret_cast<PyObject*>(Py_TYPE(v->obj.get())); break;
      case ValueKind::partial: type = cached_module_attr("functools", "partial"); break;
      default: break;
    }
    if (type) return Value::callable(type);
  }
  if (name == "sorted" && args.size() == 1 && kwargs.empty() && !args[0]->is_python_constant()) {
    // sorted() of something with constant items (the keys of a dict of tensors, locals()).
    auto items = items_of(args[0]);
    if (!items) return nullptr;
    ValuePtr list = Value::sequence(ValueKind::list, std::move(*items));
    if (!list->is_python_constant()) return unsupported("sorted() of values that are not constants"), nullptr;
    args[0] = list;
  }
  if (is_type(PySuper_Type) && args.size() <= 2 && kwargs.empty()) return make_super(args);
  if (name == "len" && args.size() == 1) {
    const ValuePtr& v = args[0];
    if (auto modules = module_container_items(v)) return Value::constant_steal(PyLong_FromSize_t(modules->size()));
    if (v->is_sequence() || v->kind == ValueKind::dict) return Value::constant_steal(PyLong_FromSize_t(v->items.size()));
    if (v->kind == ValueKind::dict_view) return Value::constant_steal(PyLong_FromSize_t(v->as_dict_view().dict->items.size()));
    if (is_user_object(v)) {
      bool handled = false;
      ValuePtr n = call_dunder(v, "__len__", {}, handled);
      if (handled) {
        if (n && !(n->is_constant() && PyLong_Check(n->obj.get()) && PyLong_AsLong(n->obj.get()) >= 0))
          return clear_expected_error({PyExc_OverflowError}),
                 unsupported("__len__ of " + v->type_name() + " did not return a non-negative int"), nullptr;
        return n;
      }
    }
    if (v->is_tensor()) {
      if (v->meta().sizes.empty()) return unsupported("len() of a 0-d tensor"), nullptr;
      return tensor_size(v, 0);
    }
  }
  if (name == "isinstance" && args.size() == 2 && args[0]->is_python_constant() && !args[1]->is_python_constant()) {
    // isinstance(3, (int, torch.Tensor)): a tuple of classes is no constant value.
    PyRef cls = args[1]->as_python();
    PyRef obj = args[0]->as_python();
    if (!cls || !obj) return unsupported("isinstance() with a class of type " + args[1]->type_name()), nullptr;
    int r = PyObject_IsInstance(obj.get(), cls.get());
    if (r < 0) return unsupported("isinstance() failed at trace time"), nullptr;
    return Value::constant(r ? Py_True : Py_False);
  }
  if (name == "isinstance" && args.size() == 2 && !args[0]->is_python_constant() && args[1]->kind != ValueKind::tensor) {
    PyRef cls = args[1]->as_python();
    if (!cls) return unsupported("isinstance() with a class of type " + args[1]->type_name()), nullptr;
    PyObject* type = nullptr;
    switch (args[0]->kind) {
      case ValueKind::tensor: type = args[0]->obj ? args[0]->obj.get() : torch_tensor_type(); break;
      case ValueKind::tuple:  // a structseq or torch.Size made in the frame keeps its type in `obj`
        type = args[0]->obj && PyType_Check(args[0]->obj.get()) ? args[0]->obj.get() : reinterpret_cast<PyObject*>(&PyTuple_Type);
        break;
      case ValueKind::list: type = reinterpret_cast<PyObject*>(&PyList_Type); break;
      case ValueKind::dict: type = args[0]->obj ? reinterpret_cast<PyObject*>(Py_TYPE(args[0]->obj.get())) : reinterpret_cast<PyObject*>(&PyDict_Type); break;
      case ValueKind::partial: type = cached_module_attr("functools", "partial"); break;
      case ValueKind::iterator:  // a generator made in the frame (model.parameters()) has its Python type
        type = reinterpret_cast<PyObject*>(args[0]->as_iterator().python_type);
        break;
      default: type = args[0]->obj ? reinterpret_cast<PyObject*>(Py_TYPE(args[0]->obj.get())) : nullptr;
    }
    if (args[0]->source && args[0]->is_sequence() && args[0]->obj) type = reinterpret_cast<PyObject*>(Py_TYPE(args[0]->obj.get()));
    int r = type ? PyObject_IsSubclass(type, cls.get()) : -1;
    if (r < 0) return unsupported("isinstance() failed at trace time"), nullptr;
    return Value::constant(r ? Py_True : Py_False);
  }
  if (name == "delattr") return call_delattr(args, kwargs);
  if (name == "setattr" && args.size() == 3 && kwargs.empty() && args[1]->is_constant() &&
      PyUnicode_Check(args[1]->obj.get())) {
    // setattr(o, "k", v): as `o.k = v` (STORE_ATTR's rules).
    const ValuePtr& owner = args[0];
    std::string attr = utf8(args[1]->obj.get());
    bool stored = false;
    if (owner->kind == ValueKind::object && owner->object_class())
      stored = store_fresh_object_attr(owner, attr, args[2]);
    else if ((owner->kind == ValueKind::object || owner->kind == ValueKind::callable) && owner->source && !owner->bound_self())
      stored = record_attr_store(owner, attr, args[2]);
    else
      return unsupported("setattr() on a " + owner->type_name()), nullptr;
    return stored ? Value::constant(Py_None) : nullptr;
  }
  if ((name == "getattr" || name == "hasattr") && args.size() >= 2 && args[1]->is_constant() &&
      PyUnicode_Check(args[1]->obj.get())) {
    std::string attr = utf8(args[1]->obj.get());
    const ValuePtr& obj = args[0];
    bool exists = true;
    if (obj->obj && !obj->is_tensor()) {
      // What the frame wrote first (o.k = 1; hasattr(o, 'k')), then the real object.
      ValuePtr written = attr_written_in_frame(obj, attr);
      if (failed()) return nullptr;
      // As hasattr() and getattr(o, k, default) do: only AttributeError
      // means "absent" (PyObject_HasAttr would swallow any error).
      if (!written) {
        PyRef found = PyRef::steal(PyObject_GetAttrString(obj->obj.get(), attr.c_str()));
        if (!found && !clear_expected_error({PyExc_AttributeError}))
          return unsupported(name + "() of " + obj->type_name() + "." + attr + " raised"), nullptr;
        exists = static_cast<bool>(found);
      }
    } else if (obj->is_tensor()) {
      PyObject* tt = torch_tensor_type();
      exists = tt && PyObject_HasAttrString(tt, attr.c_str());  // torch.Tensor's own attributes: no user code
    }
    if (obj->source && !obj->is_tensor() && guards().find(GuardKind::module_match, *obj->source)) {
      // Not pinned by identity: an absent name is absent from every table
      // of another instance too; a present one is read (and guarded).
      PyRef key = PyRef::steal(PyUnicode_FromString(attr.c_str()));
      if (!exists && key)
        for (ModuleTable t : {ModuleTable::instance_dict, ModuleTable::parameters, ModuleTable::buffers, ModuleTable::modules})
          note_module_name_absent(obj, t, key.get());
      if (exists && name == "hasattr" && !get_attr(obj, attr)) return nullptr;
    }
    if (name == "hasattr") return Value::constant(exists ? Py_True : Py_False);
    if (!exists && args.size() == 3) return args[2];
    return get_attr(obj, attr);
  }
  if ((is_type(PyTuple_Type) || is_type(PyList_Type)) && args.size() <= 1 && kwargs.empty()) {
    std::vector<ValuePtr> items;
    if (args.size() == 1) {
      auto it = items_of(args[0]);
      if (!it) return nullptr;
      items = std::move(*it);
    }
    return Value::sequence(is_type(PyTuple_Type) ? ValueKind::tuple : ValueKind::list, std::move(items));
  }
  if (is_type(PyDict_Type) && args.size() <= 1) {
    ValuePtr d = Value::dict({}, {});
    if (args.size() == 1) {
      if (args[0]->kind == ValueKind::dict) {
        d->keys = args[0]->keys;
        d->items = args[0]->items;
      } else {
        auto pairs = items_of(args[0]);
        if (!pairs) return nullptr;
        for (const auto& p : *pairs) {
          if (!p->is_sequence() || p->items.size() != 2 || !p->items[0]->is_constant())
            return unsupported("dict() from items that are not constant-keyed pairs"), nullptr;
          d->keys.push_back(p->items[0]);
          d->items.push_back(p->items[1]);
        }
      }
    }
    for (auto& [k, v] : kwargs) {
      d->keys.push_back(Value::constant_steal(PyUnicode_FromString(k.c_str())));
      d->items.push_back(v);
    }
    return d;
  }
  if (is_type(PyEnum_Type) && (args.size() == 1 || args.size() == 2)) {
    auto items = items_of(args[0]);
    if (!items) return nullptr;
    long start = 0;
    if (args.size() == 2) {
      if (!args[1]->is_constant()) return unsupported("enumerate() start of type " + args[1]->type_name()), nullptr;
      start = PyLong_AsLong(args[1]->obj.get());
    }
    std::vector<ValuePtr> pairs;
    for (size_t i = 0; i < items->size(); ++i)
      pairs.push_back(Value::sequence(ValueKind::tuple, {Value::constant_steal(PyLong_FromLong(start + static_cast<long>(i))), (*items)[i]}));
    return Value::iterator(std::move(pairs), &PyEnum_Type);
  }
  if (is_type(PyZip_Type) && kwargs.empty()) {
    std::vector<std::vector<ValuePtr>> lists;
    size_t n = SIZE_MAX;
    for (const auto& a : args) {
      auto items = items_of(a);
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
  if (is_type(PyReversed_Type) && args.size() == 1 && !args[0]->is_python_constant()) {
    auto items = items_of(args[0]);
    if (!items) return nullptr;
    return Value::iterator(std::vector<ValuePtr>(items->rbegin(), items->rend()), &PyReversed_Type);
  }
  if (name == "iter" && args.size() == 1) {
    if (args[0]->kind == ValueKind::iterator) return args[0];  // an iterator is its own iterator
    auto items = items_of(args[0]);
    if (!items) return nullptr;
    return Value::iterator(std::move(*items), args[0]->kind == ValueKind::list    ? &PyListIter_Type
                           : args[0]->kind == ValueKind::tuple ? &PyTupleIter_Type
                           : &PySeqIter_Type);
  }
  if ((name == "abs") && args.size() == 1 && args[0]->is_tensor()) return call_aten(*this, "aten::abs", {args[0]});
  if ((name == "max" || name == "min") && args.size() == 1 && args[0]->is_tensor())
    return call_aten(*this, "aten::" + name, {args[0]});
  if (name == "sum" && !args.empty() && !args[0]->is_python_constant()) {
    auto items = items_of(args[0]);
    if (!items) return nullptr;
    ValuePtr acc = args.size() == 2 ? args[1] : Value::constant_steal(PyLong_FromLong(0));
    for (const auto& item : *items) {
      if (acc->is_constant() && item->is_constant()) {
        PyObject* r = PyNumber_Add(acc->obj.get(), item->obj.get());
        if (!r) return unsupported("sum() of constants raised"), nullptr;
        acc = Value::constant_steal(r);
        continue;
      }
      // Python numbers add as numbers (an int stays an int)
      const bc::BinaryOpArg add = bc::binary_op(bc::BinaryOp::add);
      acc = is_python_number(acc) || is_python_number(item) ? number_binary_op(*this, add, acc, item)
                                                            : tensor_binary_op(*this, add, acc, item);
      if (!acc) return nullptr;
    }
    return acc;
  }
  if ((is_type(PyLong_Type) || is_type(PyFloat_Type) || is_type(PyBool_Type)) && args.size() == 1 && args[0]->is_tensor())
    return unsupported(name + "() of a tensor needs its data (data-dependent)"), nullptr;

  // The rest: fold pure builtins on constant arguments.
  bool constant_args = true;
  for (const auto& a : args) constant_args &= a->is_python_constant() || a->kind == ValueKind::callable || a->kind == ValueKind::partial ||
                                            a->kind == ValueKind::module;
  for (const auto& [k, a] : kwargs) constant_args &= a->is_python_constant();
  if (!is_pure_builtin(fn, name) || !constant_args)
    return unsupported("builtin " + name + "() with these arguments is not supported"), nullptr;
  PyRef r = call_with_constants(fn, args, kwargs);
  if (!r) return unsupported(name + "() raised at trace time"), nullptr;
  PyObject* result = r.get();
  if (PyList_CheckExact(result) || PyDict_CheckExact(result) || PyIter_Check(result)) {
    // Mutable results and iterators (enumerate, zip, reversed, and the
    // range_iterator of reversed(range(n))) become tracked values: a
    // folded iterator kept as a constant would be consumed by the first
    // call and empty on every later one.
    PyRef seq = PyRef::steal(PySequence_List(result));
    if (!seq) return unsupported(name + "() result cannot be listed"), nullptr;
    std::vector<ValuePtr> items;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(seq.get()); ++i)
      items.push_back(Value::constant(PyList_GET_ITEM(seq.get(), i)));
    if (PyList_CheckExact(result)) return Value::sequence(ValueKind::list, std::move(items));
    if (PyDict_CheckExact(result)) return unsupported("dict() result"), nullptr;
    return Value::iterator(std::move(items), Py_TYPE(result));  // a static type (enumerate, zip, ...)
  }
  return wrap_constant_result(std::move(r));
}

ValuePtr InstructionTranslator::locals_dict() {
  // What locals() shows: every bound local, cell and free variable by
  // name, in slot order, as it is now (cells by their content). A resume
  // function's own stack parameters (and kSuperSelf) are not the user's.
  PyCodeObject* co = frame_.code;
  bool resume = is_resume_code(co);
  int first_free = co->co_nlocalsplus - co->co_nfreevars;
  ValuePtr d = Value::dict({}, {});
  for (int slot = 0; slot < co->co_nlocalsplus; ++slot) {
    PyObject* name = PyTuple_GET_ITEM(co->co_localsplusnames, slot);
    if (resume && (utf8(name).starts_with("___stack") || utf8(name) == kSuperSelf)) continue;
    ValuePtr v = load_local(slot);
    if (failed()) return nullptr;
    if (!v && slot >= first_free && !inlined_) v = frame_free_cell(slot, true);
    if (failed()) return nullptr;
    if (v && v->kind == ValueKind::cell) v = v->items[0];
    if (!v) continue;
    d->keys.push_back(Value::constant(name));
    d->items.push_back(v);
  }
  return d;
}

}  // namespace tj::tracer
