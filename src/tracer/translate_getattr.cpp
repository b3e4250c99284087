// Opcode handlers for attribute reads and writes (LOAD_ATTR, LOAD_METHOD,
// STORE_ATTR) and get_attr, the attribute read on a value of any kind:
// tensors (tensor_attribute), structseq fields, modules, classes and
// functions (guarded through their sources), objects (nn.Module members
// read from their tables, a class's own __getattr__ traced, bound methods).
#include <cstring>

#include "tracer/attr_writes.h"
#include "tracer/py_str.h"
#include "support/tensor_bridge.h"
#include "tracer/torch_ops.h"
#include "tracer/append_log.h"
#include "tracer/translate_call.h"
#include "support/py_lookup.h"
#include "tracer/objects.h"

namespace tj::tracer {

namespace {
// `super().__init__` found object's own __init__ (a method-wrapper of object).
bool reaches_object_init(PyObject* attr) {
  PyRef owner = PyRef::steal(PyObject_GetAttrString(attr, "__objclass__"));
  if (!owner) PyErr_Clear();  // not a slot wrapper: not object's
  return owner.get() == reinterpret_cast<PyObject*>(&PyBaseObject_Type);
}

bool is_torch_module(PyObject* mod) {
  const char* name = PyModule_GetName(mod);
  if (!name) {
    PyErr_Clear();  // a module without a str __name__ (SystemError): not torch's
    return false;
  }
  return std::strcmp(name, "torch") == 0 || std::strncmp(name, "torch.", 6) == 0;
}

// An instance of a class defined in torch (torch._VF's VFModule, ...).
bool is_torch_object(PyObject* obj) {
  PyRef module = PyRef::steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(obj)), "__module__"));
  std::string m = module && PyUnicode_Check(module.get()) ? PyUnicode_AsUTF8(module.get()) : "";
  if (!clear_expected_error({PyExc_AttributeError})) return false;  // a metaclass raising: named by the trace
  return m == "torch" || m.starts_with("torch.");
}

// A class defined in torch (its __module__ is torch's), whose class
// attributes are as fixed as torch's module attributes.
bool class_of_torch(PyObject* cls) {
  PyRef module = PyRef::steal(PyObject_GetAttrString(cls, "__module__"));
  std::string m = module && PyUnicode_Check(module.get()) ? PyUnicode_AsUTF8(module.get()) : "";
  if (!clear_expected_error({PyExc_AttributeError})) return false;  // a metaclass raising: named by the trace
  return m == "torch" || m.starts_with("torch.");
}

// An attribute found neither on the instance nor on its class goes to the
// class's own __getattr__ (not nn.Module's, handled by module_member):
// that call is traced like any method. Null (no failure) otherwise.
ValuePtr custom_getattr(TraceContext cx, const ValuePtr& obj, const std::string& name) {
  PyObject* o = obj->obj.get();
  PyTypeObject* type = Py_TYPE(o);
  PyRef key = PyRef::steal(PyUnicode_FromString(name.c_str()));
  bool on_class = _PyType_Lookup(type, key.get()) != nullptr;
  PyRef dict = PyRef::steal(PyObject_GenericGetDict(o, nullptr));
  bool on_instance = dict && PyDict_Check(dict.get()) && PyDict_GetItem(dict.get(), key.get());
  if (!clear_expected_error({PyExc_AttributeError})) {  // no __dict__ is AttributeError
    return cx.unsupported("reading the __dict__ of a " + obj->type_name() + " raised"), nullptr;
  }
  PyRef getattr_name = PyRef::steal(PyUnicode_FromString("__getattr__"));
  PyObject* hook = _PyType_Lookup(type, getattr_name.get());  // borrowed
  ValuePtr result;
  if (!on_class && !on_instance && hook && PyFunction_Check(hook)) {
    auto* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(hook));
    std::string file = utf8(code->co_filename);
    bool torch_module_getattr = file.find("/torch/nn/modules/module.py") != std::string::npos;
    if (!torch_module_getattr) {
      ValuePtr fn = Value::bound_method(hook, obj, "");
      fn->source = Source::attr(Source::attr(obj->source, "__class__"), "__getattr__");
      result = cx.call_value(fn, {Value::constant(key.get())}, {});
      if (!result && !cx.failed()) cx.unsupported("__getattr__ failed");
    }
  }
  return result;
}

// An nn.Module's parameter, buffer or submodule, read from its
// _parameters / _buffers / _modules dict directly (as Module.__getattr__
// would, without running it), so guards and input loads stay in C.
ValuePtr module_member(TraceContext cx, const ValuePtr& obj, const std::string& name) {
  PyRef dict = PyRef::steal(PyObject_GenericGetDict(obj->obj.get(), nullptr));
  if (!dict) {
    clear_expected_error({PyExc_AttributeError});  // no __dict__; anything else is named by the trace
    return nullptr;
  }
  PyRef key = PyRef::steal(PyUnicode_FromString(name.c_str()));
  ValuePtr result;
  // Instance attributes win over these, and so do class attributes (a
  // method): Python calls Module.__getattr__ only when both miss.
  if (PyDict_Check(dict.get()) && !PyDict_GetItem(dict.get(), key.get()) &&
      !_PyType_Lookup(Py_TYPE(obj->obj.get()), key.get())) {
    // MODULE_MATCH: another instance resolves the name the same way (not
    // in its __dict__, nor in a table before the one it was found in).
    cx.note_module_name_absent(obj, ModuleTable::instance_dict, key.get());
    const std::pair<const char*, ModuleTable> tables[] = {
        {"_parameters", ModuleTable::parameters}, {"_buffers", ModuleTable::buffers}, {"_modules", ModuleTable::modules}};
    for (const auto& [table, which] : tables) {
      PyObject* members = PyDict_GetItemString(dict.get(), table);
      if (!members || !PyDict_Check(members)) continue;
      PyObject* member = PyDict_GetItem(members, key.get());
      if (!member) {
        cx.note_module_name_absent(obj, which, key.get());
        continue;
      }
      result = cx.wrap_input(member, Source::item(Source::attr(obj->source, table), key.get()));
      break;
    }
  }
  return result;
}

// get_attr's steps, one per kind of value.

// A list, dict or tuple: what the frame wrote on an OrderedDict made in it
// (op_store_attr), a torch.return_types structseq's field by name, else a
// method bound to it.
ValuePtr sequence_attr(TraceContext cx, const ValuePtr& obj, const std::string& name) {
  if (!obj->attr_overrides.empty()) {
    if (ValuePtr v = attr_written_in_frame(cx, obj, name)) return v;
    if (cx.failed()) return nullptr;
  }
  if (obj->kind == ValueKind::tuple && obj->obj && PyType_Check(obj->obj.get())) {
    // A torch.return_types structseq: fields by name.
    PyRef fields = PyRef::steal(PyObject_GetAttrString(obj->obj.get(), "__match_args__"));
    if (fields && PyTuple_Check(fields.get())) {
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields.get()) && static_cast<size_t>(i) < obj->items.size(); ++i)
        if (name == utf8(PyTuple_GET_ITEM(fields.get(), i))) return obj->items[static_cast<size_t>(i)];
    }
    clear_expected_error({PyExc_AttributeError});  // no __match_args__: a plain tuple type
  }
  return Value::tensor_method(obj, name);
}

// A Python module's attribute: torch's own are taken as fixed, without
// guards; others are guarded through the module's source.
ValuePtr module_attr(TraceContext cx, const ValuePtr& obj, const std::string& name) {
  PyRef attr = PyRef::steal(PyObject_GetAttrString(obj->obj.get(), name.c_str()));
  if (!attr) return cx.unsupported("module has no attribute '" + name + "'"), nullptr;
  if (is_torch_module(obj->obj.get()) || !obj->source) return cx.wrap_input(attr.get(), nullptr);
  return cx.wrap_input(attr.get(), Source::attr(obj->source, name));
}

// An attribute of a constant or of a function or class.
ValuePtr callable_attr(TraceContext cx, const ValuePtr& obj, const std::string& name) {
  if (obj->kind == ValueKind::constant && PyAnySet_CheckExact(obj->obj.get()))
    return Value::tensor_method(obj, name);  // set methods: translate_sets.cpp
  if (name == "__get__" && obj->kind == ValueKind::callable && PyFunction_Check(obj->obj.get()))
    return Value::tensor_method(obj, name);  // binding it: call_method_value
  bool sourced = obj->kind == ValueKind::callable && obj->source && !obj->bound_self();
  if (sourced) {  // written earlier in the frame (C.x = 1; C.x)
    ValuePtr written = attr_written_in_frame(cx, obj, name);
    if (written || cx.failed()) return written;
  }
  PyRef attr = PyRef::steal(PyObject_GetAttrString(obj->obj.get(), name.c_str()));
  if (!attr) return cx.unsupported(obj->type_name() + " has no attribute '" + name + "'"), nullptr;
  if (sourced) {
    // An attribute of a function or class read through a source may
    // change between calls (fn.calls += 1): guarded like any input.
    return cx.wrap_input(attr.get(), Source::attr(obj->source, name));
  }
  if (PyType_Check(obj->obj.get()) && (PyDict_CheckExact(attr.get()) || PyList_CheckExact(attr.get())) &&
      class_of_torch(obj->obj.get()))
    return cx.wrap_input(attr.get(), nullptr);  // a torch class's table (Normal.arg_constraints): fixed, unguarded
  const bool fixed = is_immutable_constant(attr.get()) || PyCFunction_Check(attr.get());
  ValuePtr v = obj->kind == ValueKind::constant && fixed ? Value::constant(attr.get()) : Value::callable(attr.get());
  if (obj->kind == ValueKind::callable && !PyCallable_Check(attr.get())) v = Value::constant(attr.get());
  return v;
}

// super().name: the class's function bound to the instance.
ValuePtr super_attr(TraceContext cx, const ValuePtr& obj, const std::string& name) {
  PyRef attr = PyRef::steal(PyObject_GetAttrString(obj->obj.get(), name.c_str()));
  if (!attr) return cx.unsupported("super() has no attribute '" + name + "'"), nullptr;
  ValuePtr v;
  if (PyMethod_Check(attr.get()) && PyFunction_Check(PyMethod_GET_FUNCTION(attr.get()))) {
    v = Value::bound_method(PyMethod_GET_FUNCTION(attr.get()), obj->super_self(), name);
  } else if (is_immutable_constant(attr.get())) {
    v = Value::constant(attr.get());
  } else if (PyObject* noop = name == "__init__" && reaches_object_init(attr.get())
                                  ? cached_module_attr("tracejit._polyfills", "object_init")
                                  : nullptr) {
    // object.__init__ does nothing without arguments (with some, the
    // polyfill's call does not bind: a break, and CPython raises).
    v = Value::callable(noop);
  } else {
    cx.unsupported("super()." + name + " is not a method");
  }
  return v;
}

// An object read from an input: an nn.Module's member, the class's own
// __getattr__, a method bound to it, or the real attribute (guarded).
ValuePtr input_object_attr(TraceContext cx, const ValuePtr& obj, const std::string& name) {
  if (ValuePtr v = module_member(cx, obj, name)) return v;
  if (cx.failed()) return nullptr;
  if (ValuePtr v = custom_getattr(cx, obj, name)) return v;
  if (cx.failed()) return nullptr;
  PyRef attr = PyRef::steal(PyObject_GetAttrString(obj->obj.get(), name.c_str()));
  if (!attr) return cx.unsupported(obj->type_name() + " has no attribute '" + name + "'"), nullptr;
  if (PyMethod_Check(attr.get()) && PyMethod_GET_SELF(attr.get()) == obj->obj.get() &&
      PyFunction_Check(PyMethod_GET_FUNCTION(attr.get()))) {
    // obj.method: the class's function bound to this value (no guard:
    // the object's type guard covers its class; a module's MODULE_MATCH
    // that no instance shadows it).
    PyRef key = PyRef::steal(PyUnicode_FromString(name.c_str()));
    if (key) cx.note_module_name_absent(obj, ModuleTable::instance_dict, key.get());
    ValuePtr v = Value::bound_method(PyMethod_GET_FUNCTION(attr.get()), obj, name);
    v->source = Source::attr(Source::attr(obj->source, "__class__"), name);
    return v;
  }
  ValuePtr v = cx.wrap_input(attr.get(), Source::attr(obj->source, name));
  if (v && name == "__dict__") return instance_dict_of(cx, obj, v);
  return v;
}

// An object: what the frame assigned, super()'s, one made in the frame,
// torch's own helper objects, or one read from an input.
ValuePtr object_attr(TraceContext cx, const ValuePtr& obj, const std::string& name) {
  if (ValuePtr v = attr_written_in_frame(cx, obj, name)) return v;  // assigned earlier in the trace
  if (cx.failed()) return nullptr;
  if (obj->super_self()) return super_attr(cx, obj, name);
  if (obj->object_class()) return fresh_object_attr(cx, obj, name);  // made in the frame
  if (!obj->source && is_torch_object(obj->obj.get())) {
    // torch's own helper objects (torch._VF, read by torch.functional)
    // are as fixed as torch's modules: their attributes are too.
    PyRef attr = PyRef::steal(PyObject_GetAttrString(obj->obj.get(), name.c_str()));
    if (!attr) return cx.unsupported(obj->type_name() + " has no attribute '" + name + "'"), nullptr;
    return cx.wrap_input(attr.get(), nullptr);
  }
  if (!obj->source) return cx.unsupported("attribute of an object without a source"), nullptr;
  return input_object_attr(cx, obj, name);
}

}  // namespace

ValuePtr get_attr(TraceContext cx, const ValuePtr& obj, const std::string& name) {
  if (is_append_log(*obj)) {  // read only by LOAD_METHOD append (append_log.h)
    if (name == "append") return Value::tensor_method(obj, name);
    return cx.unsupported("attribute '" + name + "' of a list logged for appends"), nullptr;
  }
  switch (obj->kind) {
    case ValueKind::tensor: return cx.tensor_attribute(obj, name);
    case ValueKind::list:
    case ValueKind::dict:
    case ValueKind::tuple: return sequence_attr(cx, obj, name);
    case ValueKind::module: return module_attr(cx, obj, name);
    case ValueKind::constant:
    case ValueKind::callable: return callable_attr(cx, obj, name);
    case ValueKind::object: return object_attr(cx, obj, name);
    default: return cx.unsupported("attribute '" + name + "' of a " + obj->type_name()), nullptr;
  }
}

bool InstructionTranslator::op_load_attr(const bc::Instruction& inst) {
  ValuePtr obj = pop();
  ValuePtr v = get_attr(*this, obj, utf8(inst.argval.get()));
  if (!v) return false;
  push(std::move(v));
  return true;
}

bool InstructionTranslator::op_store_attr(const bc::Instruction& inst) {
  ValuePtr owner = pop();
  ValuePtr value = pop();
  std::string name = utf8(inst.argval.get());
  if (owner->kind == ValueKind::object && owner->object_class()) return store_fresh_object_attr(*this, owner, name, value);
  if (owner->is_tensor()) return store_tensor_attr(*this, owner, name, value);
  if (owner->kind == ValueKind::dict && !owner->source && owner->obj && !PyDict_CheckExact(owner->obj.get()) &&
      Py_TYPE(owner->obj.get())->tp_dictoffset != 0) {
    // An attribute of an OrderedDict made in the frame (Module.state_dict's
    // `destination._metadata = OrderedDict()`): kept on the value, read
    // back by later loads, and set again on the dict rebuilt after the
    // graph (build_typed_dict_output).
    journal(owner);
    for (auto& [n, v] : owner->attr_overrides)
      if (n == name) return v = value, true;
    owner->attr_overrides.emplace_back(name, value);
    return true;
  }
  if ((owner->kind != ValueKind::object && owner->kind != ValueKind::callable) || !owner->source || owner->bound_self())
    return unsupported("attribute assignment on a " + owner->type_name());
  return record_attr_store(*this, owner, name, value);
}

bool InstructionTranslator::op_load_method(const bc::Instruction& inst) {
  ValuePtr obj = pop();
  ValuePtr v = get_attr(*this, obj, utf8(inst.argval.get()));
  if (!v) return false;
  push(Value::null());
  push(std::move(v));
  return true;
}

}  // namespace tj::tracer
