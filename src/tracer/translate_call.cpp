// Opcode handlers for attribute reads and calls, and the builtins the
// tracer evaluates itself (len, isinstance, range, min, max, ...).
#include <cstring>

#include "tracer/tensor_bridge.h"
#include "tracer/torch_ops.h"
#include "tracer/py_lookup.h"
#include "tracer/py_str.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

std::string callable_name(PyObject* fn) {
  PyObject* q = PyObject_GetAttrString(fn, "__qualname__");
  if (!q) {
    PyErr_Clear();
    q = PyObject_GetAttrString(fn, "__name__");
  }
  std::string out = q && PyUnicode_Check(q) ? utf8(q) : std::string(Py_TYPE(fn)->tp_name);
  Py_XDECREF(q);
  PyErr_Clear();
  return out;
}

bool is_torch_module(PyObject* mod) {
  const char* name = PyModule_GetName(mod);
  if (!name) {
    PyErr_Clear();
    return false;
  }
  return std::strcmp(name, "torch") == 0 || std::strncmp(name, "torch.", 6) == 0;
}

// An instance of a class defined in torch (torch._VF's VFModule, ...).
bool is_torch_object(PyObject* obj) {
  PyObject* module = PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(obj)), "__module__");
  std::string m = module && PyUnicode_Check(module) ? PyUnicode_AsUTF8(module) : "";
  Py_XDECREF(module);
  PyErr_Clear();
  return m == "torch" || m.starts_with("torch.");
}

// Immutable builtin values whose methods may be called at trace time.
bool is_immutable_constant(PyObject* o) {
  return o == Py_None || PyLong_Check(o) || PyFloat_Check(o) || PyUnicode_Check(o) || PyTuple_Check(o) ||
         PyBytes_Check(o) || PyRange_Check(o) || PySlice_Check(o) || as_dtype(o) || as_device(o) || is_size(o);
}

// Types that may be called with constant arguments at trace time.
bool is_foldable_type(PyObject* fn) {
  if (!PyType_Check(fn)) return false;
  auto* t = reinterpret_cast<PyTypeObject*>(fn);
  return t == &PyLong_Type || t == &PyFloat_Type || t == &PyBool_Type || t == &PyUnicode_Type ||
         t == &PyTuple_Type || t == &PyRange_Type || t == &PySlice_Type || t == &PyComplex_Type ||
         std::strcmp(t->tp_name, "torch.device") == 0 || std::strcmp(t->tp_name, "torch.Size") == 0 ||
         std::strcmp(t->tp_name, "torch.finfo") == 0 || std::strcmp(t->tp_name, "torch.iinfo") == 0;
}

// Functions of C modules without side effects (math.floor, operator.add).
bool is_pure_module_function(PyObject* fn) {
  if (!PyCFunction_Check(fn)) return false;
  PyObject* self = PyCFunction_GET_SELF(fn);
  if (!self || !PyModule_Check(self)) return false;
  const char* name = PyModule_GetName(self);
  if (!name) {
    PyErr_Clear();
    return false;
  }
  return std::strcmp(name, "math") == 0 || std::strcmp(name, "_operator") == 0 || std::strcmp(name, "cmath") == 0;
}

// torch functions whose result is fixed for traced code: torch-function
// overrides and scripting/tracing checks (borrowed result, or null).
PyObject* torch_constant_call(PyObject* fn) {
  PyObject* name = PyObject_GetAttrString(fn, "__name__");
  std::string n = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : "";
  Py_XDECREF(name);
  PyObject* module = PyObject_GetAttrString(fn, "__module__");
  std::string m = module && PyUnicode_Check(module) ? PyUnicode_AsUTF8(module) : "";
  Py_XDECREF(module);
  PyErr_Clear();
  bool torch_module = m == "torch" || m == "torch._C" || m.starts_with("torch.");
  if (!torch_module) return nullptr;
  if (n == "_has_torch_function" || n == "_has_torch_function_unary" || n == "_has_torch_function_variadic" ||
      n == "has_torch_function" || n == "has_torch_function_unary" || n == "has_torch_function_variadic" ||
      n == "is_scripting" || n == "is_tracing" || n == "_is_tracing")
    return Py_False;
  if (n == "is_in_onnx_export" || n == "is_fx_tracing") return Py_False;
  if (n == "_get_tracing_state") return Py_None;
  // Usage telemetry (torchvision calls it in every op): nothing a program observes.
  if (n == "_log_api_usage_once") return Py_None;
  // Global-state queries: grad mode is guarded (GRAD_MODE); autocast is
  // taken as it is at trace time.
  if (n == "is_grad_enabled" || n == "is_autocast_enabled" || n == "is_autocast_cpu_enabled") {
    PyObject* r = PyObject_CallNoArgs(fn);
    PyErr_Clear();
    if (!r) return nullptr;
    Py_DECREF(r);  // a bool singleton: stays alive
    return r;
  }
  return nullptr;
}

PyObject* builtin(const char* name) {
  PyObject* b = PyEval_GetBuiltins();
  return PyDict_GetItemString(b, name);
}

// Calls a Python callable on constant values. New value or null + unsupported.
ValuePtr fold_call(InstructionTranslator& t, PyObject* fn, const std::vector<ValuePtr>& args,
                   const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  PyObject* r = call_with_constants(fn, args, kwargs);
  if (!r) return t.unsupported("calling " + callable_name(fn) + " at trace time failed"), nullptr;
  return t.wrap_constant_result(r);
}

// collections.namedtuple / typing.NamedTuple classes called in the frame:
// a tuple value whose `obj` is the class (fields read by name through
// __match_args__; rebuilt with the class's _make). Null when `f` is not one.
ValuePtr construct_namedtuple(InstructionTranslator& t, PyObject* f, const std::vector<ValuePtr>& args,
                              const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  if (!PyType_Check(f) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(f), &PyTuple_Type)) return nullptr;
  PyObject* fields = PyObject_GetAttrString(f, "_fields");
  PyObject* defaults = fields ? PyObject_GetAttrString(f, "_field_defaults") : nullptr;
  PyObject* new_fn = fields ? PyObject_GetAttrString(f, "__new__") : nullptr;
  PyErr_Clear();
  // Only the generated __new__ (a subclass overriding it runs user code).
  bool generated = new_fn && PyFunction_Check(new_fn) &&
                   PyDict_GetItemString(PyFunction_GET_GLOBALS(new_fn), "_tuple_new") != nullptr;
  Py_XDECREF(new_fn);
  if (!fields || !PyTuple_Check(fields) || !defaults || !PyDict_Check(defaults) || !generated) {
    Py_XDECREF(fields);
    Py_XDECREF(defaults);
    return nullptr;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(fields);
  std::vector<ValuePtr> items(static_cast<size_t>(n));
  bool ok = static_cast<Py_ssize_t>(args.size()) <= n;
  for (size_t i = 0; ok && i < args.size(); ++i) items[i] = args[i];
  for (const auto& [k, v] : kwargs) {
    bool found = false;
    for (Py_ssize_t i = 0; i < n; ++i)
      if (utf8(PyTuple_GET_ITEM(fields, i)) == k) {
        ok &= !items[static_cast<size_t>(i)];
        items[static_cast<size_t>(i)] = v;
        found = true;
      }
    ok &= found;
  }
  for (Py_ssize_t i = 0; ok && i < n; ++i) {
    if (items[static_cast<size_t>(i)]) continue;
    PyObject* d = PyDict_GetItem(defaults, PyTuple_GET_ITEM(fields, i));
    if (d) items[static_cast<size_t>(i)] = Value::constant(d);
    ok = d != nullptr;
  }
  Py_DECREF(fields);
  Py_DECREF(defaults);
  if (!ok) return t.unsupported("a namedtuple call with arguments that do not match its fields (raises TypeError)"), nullptr;
  ValuePtr v = Value::sequence(ValueKind::tuple, std::move(items));
  v->obj = PyRef::borrow(f);
  return v;
}

bool all_constant(const std::vector<ValuePtr>& args, const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  for (const auto& a : args)
    if (!a->is_python_constant()) return false;
  for (const auto& [n, a] : kwargs)
    if (!a->is_python_constant()) return false;
  return true;
}

}  // namespace

PyObject* call_with_constants(PyObject* fn, const std::vector<ValuePtr>& args,
                              const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  PyObject* pargs = PyTuple_New(static_cast<Py_ssize_t>(args.size()));
  PyObject* pkw = kwargs.empty() ? nullptr : PyDict_New();
  bool ok = pargs && (kwargs.empty() || pkw);
  for (size_t i = 0; ok && i < args.size(); ++i) {
    PyObject* o = args[i]->as_python();
    ok = o != nullptr;
    if (ok) PyTuple_SET_ITEM(pargs, static_cast<Py_ssize_t>(i), o);
  }
  for (const auto& [name, v] : kwargs) {
    PyObject* o = ok ? v->as_python() : nullptr;
    ok = o && PyDict_SetItemString(pkw, name.c_str(), o) == 0;
    Py_XDECREF(o);
  }
  PyObject* r = ok ? PyObject_Call(fn, pargs, pkw) : nullptr;
  Py_XDECREF(pargs);
  Py_XDECREF(pkw);
  if (!r) PyErr_Clear();
  return r;
}

// ------------------------------------------------------------ attributes

// An attribute found neither on the instance nor on its class goes to the
// class's own __getattr__ (not nn.Module's, handled by module_member):
// that call is traced like any method. Null (no failure) otherwise.
ValuePtr InstructionTranslator::custom_getattr(const ValuePtr& obj, const std::string& name) {
  PyObject* o = obj->obj.get();
  PyTypeObject* type = Py_TYPE(o);
  PyObject* key = PyUnicode_FromString(name.c_str());
  bool on_class = _PyType_Lookup(type, key) != nullptr;
  PyObject* dict = PyObject_GenericGetDict(o, nullptr);
  bool on_instance = dict && PyDict_Check(dict) && PyDict_GetItem(dict, key);
  Py_XDECREF(dict);
  PyErr_Clear();
  PyObject* getattr_name = PyUnicode_FromString("__getattr__");
  PyObject* hook = _PyType_Lookup(type, getattr_name);  // borrowed
  Py_DECREF(getattr_name);
  ValuePtr result;
  if (!on_class && !on_instance && hook && PyFunction_Check(hook)) {
    auto* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(hook));
    std::string file = utf8(code->co_filename);
    bool torch_module_getattr = file.find("/torch/nn/modules/module.py") != std::string::npos;
    if (!torch_module_getattr) {
      ValuePtr fn = Value::callable(hook);
      fn->source = Source::attr(Source::attr(obj->source, "__class__"), "__getattr__");
      fn->self_value = obj;
      result = call_value(fn, {Value::constant(key)}, {});
      if (!result && !failed()) unsupported("__getattr__ failed");
    }
  }
  Py_DECREF(key);
  return result;
}

// An nn.Module's parameter, buffer or submodule, read from its
// _parameters / _buffers / _modules dict directly (as Module.__getattr__
// would, without running it), so guards and input loads stay in C.
ValuePtr InstructionTranslator::module_member(const ValuePtr& obj, const std::string& name) {
  PyObject* dict = PyObject_GenericGetDict(obj->obj.get(), nullptr);
  if (!dict) {
    PyErr_Clear();
    return nullptr;
  }
  PyObject* key = PyUnicode_FromString(name.c_str());
  ValuePtr result;
  if (PyDict_Check(dict) && !PyDict_GetItem(dict, key)) {  // instance attributes win over these
    for (const char* table : {"_parameters", "_buffers", "_modules"}) {
      PyObject* members = PyDict_GetItemString(dict, table);
      if (!members || !PyDict_Check(members)) continue;
      PyObject* member = PyDict_GetItem(members, key);
      if (!member) continue;
      result = wrap_input(member, Source::item(Source::attr(obj->source, table), key));
      break;
    }
  }
  Py_DECREF(key);
  Py_DECREF(dict);
  return result;
}

ValuePtr InstructionTranslator::get_attr(const ValuePtr& obj, const std::string& name) {
  switch (obj->kind) {
    case ValueKind::tensor: return tensor_attribute(*this, obj, name);
    case ValueKind::list:
    case ValueKind::dict:
    case ValueKind::tuple:
      if (obj->kind == ValueKind::tuple && obj->obj && PyType_Check(obj->obj.get())) {
        // A torch.return_types structseq: fields by name.
        PyObject* fields = PyObject_GetAttrString(obj->obj.get(), "__match_args__");
        if (fields && PyTuple_Check(fields)) {
          for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields) && static_cast<size_t>(i) < obj->items.size(); ++i) {
            if (name == utf8(PyTuple_GET_ITEM(fields, i))) {
              Py_DECREF(fields);
              return obj->items[static_cast<size_t>(i)];
            }
          }
        }
        Py_XDECREF(fields);
        PyErr_Clear();
      }
      return Value::tensor_method(obj, name);
    case ValueKind::module: {
      PyObject* attr = PyObject_GetAttrString(obj->obj.get(), name.c_str());
      if (!attr) return unsupported("module has no attribute '" + name + "'"), nullptr;
      ValuePtr v;
      if (is_torch_module(obj->obj.get()) || !obj->source) {
        // torch's own attributes are taken as fixed, without guards.
        v = wrap_input(attr, nullptr);
      } else {
        v = wrap_input(attr, Source::attr(obj->source, name));
      }
      Py_DECREF(attr);
      return v;
    }
    case ValueKind::constant:
      if (PyAnySet_CheckExact(obj->obj.get())) return Value::tensor_method(obj, name);  // set methods: translate_sets.cpp
      [[fallthrough]];
    case ValueKind::callable: {
      bool sourced = obj->kind == ValueKind::callable && obj->source && !obj->self_value;
      if (sourced) {  // written earlier in the frame (C.x = 1; C.x)
        ValuePtr written = attr_written_in_frame(obj, name);
        if (written || failed()) return written;
      }
      PyObject* attr = PyObject_GetAttrString(obj->obj.get(), name.c_str());
      if (!attr) return unsupported(obj->type_name() + " has no attribute '" + name + "'"), nullptr;
      if (sourced) {
        // An attribute of a function or class read through a source may
        // change between calls (fn.calls += 1): guarded like any input.
        ValuePtr v = wrap_input(attr, Source::attr(obj->source, name));
        Py_DECREF(attr);
        return v;
      }
      ValuePtr v = obj->kind == ValueKind::constant && (is_immutable_constant(attr) || PyCFunction_Check(attr))
                       ? Value::constant(attr)
                       : Value::callable(attr);
      if (obj->kind == ValueKind::callable && !PyCallable_Check(attr)) v = Value::constant(attr);
      Py_DECREF(attr);
      return v;
    }
    case ValueKind::object: {
      if (ValuePtr v = attr_written_in_frame(obj, name)) return v;  // assigned earlier in the trace
      if (failed()) return nullptr;
      if (PyObject_TypeCheck(obj->obj.get(), &PySuper_Type) && obj->self_value) {
        // super().name: the class's function bound to the instance.
        PyObject* attr = PyObject_GetAttrString(obj->obj.get(), name.c_str());
        if (!attr) return unsupported("super() has no attribute '" + name + "'"), nullptr;
        ValuePtr v;
        if (PyMethod_Check(attr) && PyFunction_Check(PyMethod_GET_FUNCTION(attr))) {
          v = Value::callable(PyMethod_GET_FUNCTION(attr));
          v->self_value = obj->self_value;
          v->name = name;
        } else if (is_immutable_constant(attr)) {
          v = Value::constant(attr);
        } else {
          unsupported("super()." + name + " is not a method");
        }
        Py_DECREF(attr);
        return v;
      }
      if (obj->object_class) return fresh_object_attr(obj, name);  // made in the frame
      if (!obj->source && is_torch_object(obj->obj.get())) {
        // torch's own helper objects (torch._VF, read by torch.functional)
        // are as fixed as torch's modules: their attributes are too.
        PyObject* attr = PyObject_GetAttrString(obj->obj.get(), name.c_str());
        if (!attr) return unsupported(obj->type_name() + " has no attribute '" + name + "'"), nullptr;
        ValuePtr v = wrap_input(attr, nullptr);
        Py_DECREF(attr);
        return v;
      }
      if (!obj->source) return unsupported("attribute of an object without a source"), nullptr;
      if (ValuePtr v = module_member(obj, name)) return v;
      if (failed()) return nullptr;
      if (ValuePtr v = custom_getattr(obj, name)) return v;
      if (failed()) return nullptr;
      PyObject* attr = PyObject_GetAttrString(obj->obj.get(), name.c_str());
      if (!attr) return unsupported(obj->type_name() + " has no attribute '" + name + "'"), nullptr;
      if (PyMethod_Check(attr) && PyMethod_GET_SELF(attr) == obj->obj.get() && PyFunction_Check(PyMethod_GET_FUNCTION(attr))) {
        // obj.method: the class's function bound to this value (no guard:
        // the object's identity or type guard covers its class).
        ValuePtr v = Value::callable(PyMethod_GET_FUNCTION(attr));
        v->source = Source::attr(Source::attr(obj->source, "__class__"), name);
        v->self_value = obj;
        v->name = name;
        Py_DECREF(attr);
        return v;
      }
      ValuePtr v = wrap_input(attr, Source::attr(obj->source, name));
      Py_DECREF(attr);
      if (v && name == "__dict__") return instance_dict_of(obj, v);
      return v;
    }
    default: return unsupported("attribute '" + name + "' of a " + obj->type_name()), nullptr;
  }
}

bool InstructionTranslator::op_load_attr(const bc::Instruction& inst) {
  ValuePtr obj = pop();
  ValuePtr v = get_attr(obj, utf8(inst.argval.get()));
  if (!v) return false;
  push(std::move(v));
  return true;
}

bool InstructionTranslator::op_store_attr(const bc::Instruction& inst) {
  ValuePtr owner = pop();
  ValuePtr value = pop();
  std::string name = utf8(inst.argval.get());
  if (owner->kind == ValueKind::object && owner->object_class) return store_fresh_object_attr(owner, name, value);
  if ((owner->kind != ValueKind::object && owner->kind != ValueKind::callable) || !owner->source || owner->self_value)
    return unsupported("attribute assignment on a " + owner->type_name());
  return record_attr_store(owner, name, value);
}

// `import a.b` / `from a import b` of a module that is already imported
// (importing for the first time runs code: that is left to CPython).
bool InstructionTranslator::op_load_method(const bc::Instruction& inst) {
  ValuePtr obj = pop();
  ValuePtr v = get_attr(obj, utf8(inst.argval.get()));
  if (!v) return false;
  push(Value::null());
  push(std::move(v));
  return true;
}

// ------------------------------------------------------------ calls

bool InstructionTranslator::op_kw_names(const bc::Instruction& inst) {
  kw_names_.clear();
  PyObject* names = inst.argval.get();
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); ++i) kw_names_.push_back(utf8(PyTuple_GET_ITEM(names, i)));
  return true;
}

bool InstructionTranslator::op_call(const bc::Instruction& inst) {
  auto args = pop_n(static_cast<size_t>(inst.arg));
  ValuePtr second = pop();
  ValuePtr first = pop();
  ValuePtr fn = second;
  if (first->kind != ValueKind::null) {  // [method, self, args...]
    fn = first;
    args.insert(args.begin(), second);
  }
  std::vector<std::pair<std::string, ValuePtr>> kwargs;
  size_t nkw = kw_names_.size();
  for (size_t i = 0; i < nkw; ++i) kwargs.emplace_back(kw_names_[i], args[args.size() - nkw + i]);
  args.resize(args.size() - nkw);
  kw_names_.clear();
  ValuePtr result = call_value(fn, std::move(args), std::move(kwargs));
  if (!result) {
    if (!inlined_) name_user_call(fn);
    return false;
  }
  push(std::move(result));
  return true;
}

bool InstructionTranslator::op_call_function_ex(const bc::Instruction& inst) {
  ValuePtr kw = (inst.arg & 1) ? pop() : nullptr;
  ValuePtr star = pop();
  ValuePtr fn = pop();
  ValuePtr null = pop();
  if (null->kind != ValueKind::null) return unsupported("CALL_FUNCTION_EX on a bound method layout");
  if (!star->is_sequence()) {
    if (!star->is_constant() || !PyTuple_Check(star->obj.get())) return unsupported("*args of a " + star->type_name());
  }
  std::vector<ValuePtr> args;
  if (star->is_sequence()) {
    args = star->items;
  } else {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(star->obj.get()); ++i)
      args.push_back(Value::constant(PyTuple_GET_ITEM(star->obj.get(), i)));
  }
  std::vector<std::pair<std::string, ValuePtr>> kwargs;
  if (kw) {
    if (kw->kind != ValueKind::dict) return unsupported("**kwargs of a " + kw->type_name());
    for (size_t i = 0; i < kw->keys.size(); ++i) {
      if (!PyUnicode_Check(kw->keys[i]->obj.get())) return unsupported("keywords must be strings");
      kwargs.emplace_back(utf8(kw->keys[i]->obj.get()), kw->items[i]);
    }
  }
  ValuePtr result = call_value(fn, std::move(args), std::move(kwargs));
  if (!result) {
    if (!inlined_) name_user_call(fn);
    return false;
  }
  push(std::move(result));
  return true;
}

namespace {

// Methods of lists and dicts created in (or read by) the frame.
ValuePtr call_container_method(InstructionTranslator& t, const ValuePtr& self, const std::string& name,
                               std::vector<ValuePtr>& args) {
  if ((self->is_constant() && PyAnySet_CheckExact(self->obj.get())) || is_keyed_set(self))
    return t.call_set_method(self, name, args);
  t.journal(self);
  static const char* kMutators[] = {"append", "extend", "pop", "insert", "reverse", "update", "clear", "setdefault"};
  for (const char* m : kMutators)
    if (name == m) t.record_container_mutation(self);
  if (self->kind == ValueKind::dict) {
    if (name == "update" && args.size() == 1 && args[0]->kind == ValueKind::dict) {
      for (size_t i = 0; i < args[0]->keys.size(); ++i) {
        if (int j = t.find_dict_key(*self, args[0]->keys[i]); j >= 0) {
          self->items[static_cast<size_t>(j)] = args[0]->items[i];
        } else {
          self->keys.push_back(args[0]->keys[i]);
          self->items.push_back(args[0]->items[i]);
        }
      }
      return Value::constant(Py_None);
    }
    if (name == "pop" && (args.size() == 1 || args.size() == 2)) {
      ValuePtr key = t.dict_key(args[0]);
      if (!key) return nullptr;
      if (int i = t.find_dict_key(*self, key); i >= 0) {
        ValuePtr v = self->items[static_cast<size_t>(i)];
        self->keys.erase(self->keys.begin() + i);
        self->items.erase(self->items.begin() + i);
        return v;
      }
      if (args.size() == 2) return args[1];
      return t.unsupported("dict.pop() of a missing key raises KeyError"), nullptr;
    }
    if (name == "setdefault" && (args.size() == 1 || args.size() == 2)) {
      ValuePtr key = t.dict_key(args[0]);
      if (!key) return nullptr;
      if (int i = t.find_dict_key(*self, key); i >= 0) return self->items[static_cast<size_t>(i)];
      self->keys.push_back(key);
      self->items.push_back(args.size() == 2 ? args[1] : Value::constant(Py_None));
      return self->items.back();
    }
    if (name == "clear" && args.empty()) {
      self->keys.clear();
      self->items.clear();
      return Value::constant(Py_None);
    }
  }
  if (self->kind == ValueKind::list) {
    if (name == "clear" && args.empty()) {
      self->items.clear();
      return Value::constant(Py_None);
    }
    if (name == "append" && args.size() == 1) {
      self->items.push_back(args[0]);
      return Value::constant(Py_None);
    }
    if (name == "extend" && args.size() == 1 && args[0]->is_sequence()) {
      for (auto& v : args[0]->items) self->items.push_back(v);
      return Value::constant(Py_None);
    }
    if (name == "pop" && args.size() <= 1 && !self->items.empty()) {
      if (!args.empty()) args[0] = t.specialize(args[0]);  // l.pop(n) of a size: by the number
      if (!args.empty() && !(args[0]->is_constant() && PyLong_Check(args[0]->obj.get())))
        return t.unsupported("list.pop() with an index of type " + args[0]->type_name()), nullptr;
      long idx = args.empty() ? -1 : PyLong_AsLong(args[0]->obj.get());
      long n = static_cast<long>(self->items.size());
      if (idx < 0) idx += n;
      if (idx < 0 || idx >= n) return t.unsupported("pop index out of range"), nullptr;
      ValuePtr v = self->items[static_cast<size_t>(idx)];
      self->items.erase(self->items.begin() + idx);
      return v;
    }
    if (name == "insert" && args.size() == 2 && (args[0] = t.specialize(args[0]))->is_constant()) {
      long idx = PyLong_AsLong(args[0]->obj.get());
      long n = static_cast<long>(self->items.size());
      if (idx < 0) idx = std::max(0L, idx + n);
      idx = std::min(idx, n);
      self->items.insert(self->items.begin() + idx, args[1]);
      return Value::constant(Py_None);
    }
    if (name == "copy" && args.empty()) return Value::sequence(ValueKind::list, self->items);
    if (name == "reverse" && args.empty()) {
      std::reverse(self->items.begin(), self->items.end());
      return Value::constant(Py_None);
    }
  }
  if (self->kind == ValueKind::dict) {
    // Views are live: they read the dict at each use.
    if ((name == "keys" || name == "values" || name == "items") && args.empty()) return Value::dict_view(self, name);
    if (name == "get" && (args.size() == 1 || args.size() == 2)) {
      ValuePtr key = t.dict_key(args[0]);
      if (!key) return nullptr;
      if (int i = t.find_dict_key(*self, key); i >= 0) return self->items[static_cast<size_t>(i)];
      return args.size() == 2 ? args[1] : Value::constant(Py_None);
    }
    if (name == "copy" && args.empty()) {
      ValuePtr copy = Value::dict(self->keys, self->items);
      if (self->obj && !PyDict_CheckExact(self->obj.get())) {  // an OrderedDict/defaultdict copies as its type
        PyObject* empty = PyObject_CallNoArgs(reinterpret_cast<PyObject*>(Py_TYPE(self->obj.get())));
        if (!empty) return PyErr_Clear(), t.unsupported("copy() of a " + self->type_name()), nullptr;
        copy->obj = PyRef::steal(empty);
        copy->default_factory = self->default_factory;
      }
      return copy;
    }
  }
  if (self->kind == ValueKind::tuple || self->kind == ValueKind::list) {
    if ((name == "index" || name == "count") && args.size() == 1 && (args[0]->is_constant() || args[0]->is_symint())) {
      long count = 0, first = -1;
      for (size_t i = 0; i < self->items.size() && !(name == "index" && first >= 0); ++i) {
        const auto& v = self->items[i];
        ValuePtr same = t.compare_sizes(Py_EQ, v, args[0]);  // a size: the comparison is a fact
        if (!same && (!v->is_constant() || !args[0]->is_constant()))
          return t.unsupported(self->type_name() + "." + name + "() comparing a " + v->type_name()), nullptr;
        if (same ? same->obj.get() == Py_True : PyObject_RichCompareBool(v->obj.get(), args[0]->obj.get(), Py_EQ) == 1) {
          if (first < 0) first = static_cast<long>(i);
          ++count;
        }
      }
      PyErr_Clear();
      if (name == "count") return Value::constant_steal(PyLong_FromLong(count));
      if (first < 0) return t.unsupported("value not in sequence"), nullptr;
      return Value::constant_steal(PyLong_FromLong(first));
    }
  }
  if (self->kind == ValueKind::tuple && self->obj.get() == size_type() && name == "numel" && args.empty())
    if (ValuePtr n = t.size_product(self->items)) return n;  // x.size().numel()
  return t.unsupported(self->type_name() + "." + name + "() is not supported"), nullptr;
}

}  // namespace

ValuePtr InstructionTranslator::call_value(const ValuePtr& fn_in, std::vector<ValuePtr> args,
                                           std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  ValuePtr fn = fn_in;
  if (!fn->bound_args.empty() || !fn->bound_kwargs.empty()) {  // a partial made in the frame
    args.insert(args.begin(), fn->bound_args.begin(), fn->bound_args.end());
    std::vector<std::pair<std::string, ValuePtr>> merged = fn->bound_kwargs;
    for (auto& kv : kwargs) {
      bool replaced = false;
      for (auto& m : merged)
        if (m.first == kv.first) m.second = kv.second, replaced = true;
      if (!replaced) merged.push_back(kv);
    }
    kwargs = std::move(merged);
    auto plain = std::make_shared<Value>(*fn);
    plain->bound_args.clear();
    plain->bound_kwargs.clear();
    fn = plain;
  }
  if (fn->kind == ValueKind::callable && std::strcmp(Py_TYPE(fn->obj.get())->tp_name, "type") == 0 &&
      std::strcmp(reinterpret_cast<PyTypeObject*>(fn->obj.get())->tp_name, "functools.partial") == 0 && !args.empty()) {
    // functools.partial(f, *args, **kwargs) made in the frame.
    auto partial = std::make_shared<Value>(*args[0]);
    partial->source = nullptr;
    partial->bound_args.insert(partial->bound_args.end(), args.begin() + 1, args.end());
    for (auto& kv : kwargs) partial->bound_kwargs.push_back(kv);
    return partial;
  }
  bool handled = false;
  if (ValuePtr v = call_context_manager(fn, args, kwargs, handled); handled) return v;
  if (fn->kind == ValueKind::tensor_method) {
    if (fn->self_value->is_tensor()) return call_tensor_method(*this, fn->self_value, fn->name, std::move(args), std::move(kwargs));
    if (!kwargs.empty()) return unsupported(fn->self_value->type_name() + "." + fn->name + " with keywords"), nullptr;
    return call_container_method(*this, fn->self_value, fn->name, args);
  }
  if (fn->kind == ValueKind::constant && PyCFunction_Check(fn->obj.get())) {
    // A method of an immutable constant ("{}".format, (1, 2).index, ...).
    PyObject* self = PyCFunction_GET_SELF(fn->obj.get());
    if (self && !PyModule_Check(self) && is_immutable_constant(self) && all_constant(args, kwargs))
      return fold_call(*this, fn->obj.get(), args, kwargs);
  }
  if (fn->kind == ValueKind::list && fn->name == "<module slice>") {  // a sliced nn.Sequential: chain the calls
    if (args.size() != 1 || !kwargs.empty()) return unsupported("a sliced Sequential takes one input"), nullptr;
    ValuePtr x = args[0];
    for (const auto& module : fn->items) {
      x = call_value(module, {x}, {});
      if (!x) return nullptr;
    }
    return x;
  }
  if (fn->kind == ValueKind::function) return call_python(fn, std::move(args), std::move(kwargs));
  if (fn->kind == ValueKind::object) return call_python(fn, std::move(args), std::move(kwargs));
  if (fn->kind != ValueKind::callable && fn->kind != ValueKind::constant)
    return unsupported("calling a " + fn->type_name()), nullptr;
  if (fn->self_value) return call_python(fn, std::move(args), std::move(kwargs));
  PyObject* f = fn->obj.get();
  if (kwargs.empty())
    if (ValuePtr v = call_on_sizes(f, args, handled); handled) return v;  // int(n), max(a, b), operator.mul(a, b)...
  if (ValuePtr v = number_function(*this, f, args, handled); handled) return v;  // float(n), math.sqrt(n)
  std::string tp = Py_TYPE(f)->tp_name;
  if (tp == "tracejit.DisabledFunction")
    return unsupported("call to " + callable_name(f) + ", which tracejit.disable excludes from tracing"), nullptr;
  if (tp == "tracejit.CompiledFunction")
    return unsupported("call to a tracejit-compiled function " + callable_name(f) + " (nested compile)"), nullptr;
  if (ValuePtr v = call_iterable_function(f, args, kwargs, handled); handled) return v;
  // Other C functions and builtin types (math.sqrt(n), range(n), float(n)) take a size as the number it is;
  // isinstance, type and len only look at its type (int) or its container.
  bool c_callable = PyCFunction_Check(f) || (PyType_Check(f) && !(reinterpret_cast<PyTypeObject*>(f)->tp_flags & Py_TPFLAGS_HEAPTYPE));
  bool reads_type = (f == builtin("isinstance") || f == builtin("len") || f == reinterpret_cast<PyObject*>(&PyType_Type)) &&
                    std::none_of(args.begin(), args.end(), [](const ValuePtr& a) { return a->kind == ValueKind::size_text; });
  if (c_callable && !reads_type && !is_torch_callable(f)) {
    for (auto& a : args) a = specialize(a);
    for (auto& kw : kwargs) kw.second = specialize(kw.second);
  }
  if (PyCFunction_Check(f) && PyCFunction_GET_SELF(f) && PyModule_Check(PyCFunction_GET_SELF(f)) &&
      std::strcmp(PyModule_GetName(PyCFunction_GET_SELF(f)) ? PyModule_GetName(PyCFunction_GET_SELF(f)) : "", "builtins") == 0) {
    return call_builtin(f, std::move(args), std::move(kwargs));
  }
  if (PyType_Check(f) && (reinterpret_cast<PyTypeObject*>(f) == &PyList_Type ||
                          reinterpret_cast<PyTypeObject*>(f) == &PyTuple_Type ||
                          reinterpret_cast<PyTypeObject*>(f) == &PyDict_Type ||
                          reinterpret_cast<PyTypeObject*>(f) == &PyBool_Type ||
                          reinterpret_cast<PyTypeObject*>(f) == &PyLong_Type ||
                          reinterpret_cast<PyTypeObject*>(f) == &PyFloat_Type ||
                          reinterpret_cast<PyTypeObject*>(f) == &PyRange_Type ||
                          reinterpret_cast<PyTypeObject*>(f) == &PyEnum_Type ||
                          reinterpret_cast<PyTypeObject*>(f) == &PyReversed_Type ||
                          reinterpret_cast<PyTypeObject*>(f) == &PySuper_Type ||
                          (reinterpret_cast<PyTypeObject*>(f) == &PyType_Type && args.size() == 1) ||
                          reinterpret_cast<PyTypeObject*>(f) == &PyZip_Type)) {
    return call_builtin(f, std::move(args), std::move(kwargs));
  }
  if (ValuePtr v = construct_namedtuple(*this, f, args, kwargs); v || failed()) return v;
  if ((f == reinterpret_cast<PyObject*>(&PySet_Type) || f == reinterpret_cast<PyObject*>(&PyFrozenSet_Type)) &&
      args.size() <= 1 && kwargs.empty()) {
    std::vector<ValuePtr> items;
    if (args.size() == 1) {
      auto it = iterable_items(args[0], "set()");
      if (!it) return nullptr;
      consume(args[0], it->size());
      items = std::move(*it);
    }
    return make_set(items, f == reinterpret_cast<PyObject*>(&PyFrozenSet_Type));
  }
  if (f == cached_module_attr("collections", "namedtuple") && all_constant(args, kwargs))
    return fold_call(*this, f, args, kwargs);  // a new class, made once at trace time
  if (f == cached_module_attr("collections", "OrderedDict") || f == cached_module_attr("collections", "defaultdict"))
    return make_typed_dict(f, args, kwargs);
  if (ValuePtr v = construct_object(fn, args, kwargs); v || failed()) return v;
  if (PyObject* function_type = cached_module_attr("torch.autograd", "Function");
      function_type && PyCFunction_Check(f) && PyCFunction_GET_SELF(f) && PyType_Check(PyCFunction_GET_SELF(f)) &&
      PyObject_IsSubclass(PyCFunction_GET_SELF(f), function_type) == 1 &&
      std::strcmp(PyCFunction_GET_FUNCTION(f) ? reinterpret_cast<PyCFunctionObject*>(f)->m_ml->ml_name : "", "apply") == 0)
    return call_autograd_function(fn, PyCFunction_GET_SELF(f), std::move(args), std::move(kwargs));
  PyErr_Clear();
  if (auto constant = torch_constant_call(f)) return Value::constant(constant);
  if (is_torch_callable(f)) return call_torch_callable(*this, f, std::move(args), std::move(kwargs));
  if (is_foldable_type(f) && all_constant(args, kwargs)) return fold_call(*this, f, args, kwargs);
  if (is_pure_module_function(f) && all_constant(args, kwargs)) return fold_call(*this, f, args, kwargs);
  if (f == cached_module_attr("torch", "manual_seed")) return call_manual_seed(args, kwargs);
  if (f == cached_module_attr("torch", "seed")) return call_torch_seed(args, kwargs);
  if (PyCFunction_Check(f) && PyCFunction_GET_SELF(f) && PyType_Check(PyCFunction_GET_SELF(f)) &&
      std::strcmp(reinterpret_cast<PyCFunctionObject*>(f)->m_ml->ml_name, "__subclasses__") == 0 && args.empty() &&
      kwargs.empty()) {
    // The class's live subclasses: an input read by calling it, so its
    // length and each class are guarded (a new subclass retraces).
    if (!fn->source || fn->source->kind != SourceKind::attr)
      return unsupported("__subclasses__() of a class read without a source"), nullptr;
    PyObject* subclasses = PyObject_CallMethodNoArgs(PyCFunction_GET_SELF(f), fn->source->key.get());
    if (!subclasses) return PyErr_Clear(), unsupported("__subclasses__() raised"), nullptr;
    ValuePtr v = wrap_input(subclasses, Source::call(fn->source->base, "__subclasses__"));
    Py_DECREF(subclasses);
    return v;
  }
  if (PyFunction_Check(f))
    if (ValuePtr v = call_torch_python_function(*this, f, args, kwargs)) return v;
  if (failed()) return nullptr;
  if (PyFunction_Check(f) || PyMethod_Check(f) || std::strcmp(Py_TYPE(f)->tp_name, "functools.partial") == 0)
    return call_python(fn, std::move(args), std::move(kwargs));
  if (f == builtin("print")) return unsupported("print() (a side effect)"), nullptr;
  if (f == cached_module_attr("sys", "_getframe") || f == cached_module_attr("inspect", "currentframe")) {
    // The frame object would be the transformed code's (its f_lineno,
    // f_locals, f_code): no graph break keeps it faithful.
    shared_->run_unchanged = true;
    return unsupported("call to " + callable_name(f) + ": the frame runs unchanged"), nullptr;
  }
  return unsupported("call to " + callable_name(f) + ", which the tracer does not model"), nullptr;
}

}  // namespace tj::tracer
