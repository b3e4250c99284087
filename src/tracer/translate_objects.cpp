// Instances of user-defined classes made inside the traced frame: the
// objects family, free functions over a TraceContext (objects.h).
//
// `C(...)` of a plain Python class (object.__new__, generic attribute
// access, a __dict__, no __del__, metaclass `type`) is an object value that
// exists only in the trace: `obj` is an empty instance made at trace time
// for its type alone (isinstance, type(), `is`), its attributes live in
// `attr_overrides`, and `object_class` is the class value (read through its
// source, so class attributes are guarded). `__init__` is inlined with that
// value as self. Methods, classmethods, staticmethods and properties are
// found on the type and inlined; operators, subscripts, len(), truth and
// calls go to the class's dunder methods (`__add__`/`__radd__`/`__iadd__`,
// `__getitem__`, `__setitem__`, `__len__`, `__bool__`, `__call__`).
//
// Nothing of this is visible to Python until the object escapes (returned,
// stored into a pre-existing object, live at a graph break): it is then
// made again after the graph by `object.__new__(C)` plus its attributes in
// assignment order (the `_rebuild_object` template below), once per object
// even when it is reached twice. What does not fit (a class with __new__,
// __slots__, __getattr__ or __setattr__, a builtin base, an object that
// refers to itself) breaks the graph with the reason.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <utility>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Tensor.h>

#include "support/py_errors.h"
#include "support/py_lookup.h"
#include "support/tensor_bridge.h"
#include "tracer/objects.h"
#include "tracer/py_str.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

// (cls, names, *values) -> a new instance of cls with those attributes,
// made as object.__new__ makes it (no __init__ runs again).
PyObject* rebuild_object(PyObject*, PyObject* parts) {
  if (!PyTuple_Check(parts) || PyTuple_GET_SIZE(parts) < 2 || !PyType_Check(PyTuple_GET_ITEM(parts, 0)) ||
      !PyTuple_Check(PyTuple_GET_ITEM(parts, 1))) {
    PyErr_SetString(PyExc_TypeError, "tracejit: malformed object template");
    return nullptr;
  }
  auto* cls = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(parts, 0));
  PyObject* names = PyTuple_GET_ITEM(parts, 1);
  if (PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(parts) - 2) {
    PyErr_SetString(PyExc_TypeError, "tracejit: object template with mismatched attributes");
    return nullptr;
  }
  PyRef empty = PyRef::steal(PyTuple_New(0));
  PyRef obj = PyRef::steal(empty ? PyBaseObject_Type.tp_new(cls, empty.get(), nullptr) : nullptr);
  for (Py_ssize_t i = 0; obj && i < PyTuple_GET_SIZE(names); ++i)
    if (PyObject_GenericSetAttr(obj.get(), PyTuple_GET_ITEM(names, i), PyTuple_GET_ITEM(parts, i + 2)) < 0) obj = PyRef();
  return obj.release();  // a new reference, or null with the error set
}

PyMethodDef kRebuildObjectDef = {"_rebuild_object", rebuild_object, METH_O,
                                 "tracejit: an object made in a compiled frame, made again after its graph"};

PyObject* rebuild_object_function() {  // borrowed, alive for the process
  static PyObject* fn = PyCFunction_New(&kRebuildObjectDef, nullptr);
  return fn;
}

// Why instances of `type` cannot be modelled as trace-only objects; empty
// when they can.
std::string why_not_plain_class(PyTypeObject* type) {
  std::string name = type->tp_name;
  if (!(type->tp_flags & Py_TPFLAGS_HEAPTYPE)) return "a builtin type";
  if (Py_TYPE(type)->tp_call != PyType_Type.tp_call) return name + " has a metaclass with its own __call__";
  if (type->tp_new != PyBaseObject_Type.tp_new) return name + " defines or inherits __new__";
  for (Py_ssize_t i = 0; type->tp_mro && i < PyTuple_GET_SIZE(type->tp_mro); ++i) {
    auto* base = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(type->tp_mro, i));
    if (base != &PyBaseObject_Type && !(base->tp_flags & Py_TPFLAGS_HEAPTYPE))
      return name + " derives from the builtin " + base->tp_name;
  }
  if (type->tp_setattro != PyObject_GenericSetAttr) return name + " defines __setattr__";
  if (type->tp_getattro != PyObject_GenericGetAttr) return name + " defines __getattr__ or __getattribute__";
  if (type->tp_dictoffset == 0) return name + " has __slots__ and no __dict__";
  if (type->tp_finalize || type->tp_del) return name + " defines __del__";
  return "";
}

// The class attribute `name` found on the MRO of `type` (borrowed), or null.
PyObject* type_lookup(PyTypeObject* type, const char* name) {
  PyRef key = PyRef::steal(PyUnicode_InternFromString(name));
  return key ? _PyType_Lookup(type, key.get()) : nullptr;
}

bool is_not_implemented(const ValuePtr& v) { return v->is_constant() && v->obj.get() == Py_NotImplemented; }

}  // namespace

bool is_user_object(const ValuePtr& v) {
  if (v->kind != ValueKind::object || !v->obj || v->super_self()) return false;
  if (const TensorKeyPayload* key = v->tensor_key(); key && key->tensor) return false;
  if (v->object_class()) return true;
  // A pre-existing instance of a class written in Python (passed in).
  PyTypeObject* type = Py_TYPE(v->obj.get());
  return (type->tp_flags & Py_TPFLAGS_HEAPTYPE) && !PyObject_TypeCheck(v->obj.get(), &PySuper_Type);
}

namespace {
// The attribute `name` of `module` is a dict holding nothing but None
// (CrossEntropyLoss registers its `weight` buffer as None).
bool empty_table(PyObject* module, const char* name) {
  PyRef table = PyRef::steal(PyObject_GetAttrString(module, name));
  bool empty = table && PyDict_Check(table.get());
  Py_ssize_t pos = 0;
  PyObject *key, *value;
  while (empty && PyDict_Next(table.get(), &pos, &key, &value)) empty = value == Py_None;
  return empty;
}
// The tensor arguments of a torch.nn.modules.loss class's constructor
// (`nn.BCEWithLogitsLoss(pos_weight=t)`, `nn.CrossEntropyLoss(w)`): each
// moved to `buffers` under its parameter's name (positional ones named by
// __init__'s code) and replaced by None in the call. False for a tensor
// whose parameter cannot be named.
bool tensor_buffer_arguments(PyObject* cls, std::vector<ValuePtr>& args,
                             std::vector<std::pair<std::string, ValuePtr>>& kwargs,
                             std::vector<std::pair<std::string, ValuePtr>>& buffers) {
  auto is_tensor_arg = [](const ValuePtr& a) { return a->is_tensor() && !is_python_number(a); };
  for (auto& [k, a] : kwargs)
    if (is_tensor_arg(a)) buffers.emplace_back(k, std::exchange(a, Value::constant(Py_None)));
  if (std::none_of(args.begin(), args.end(), is_tensor_arg)) return true;
  PyObject* init = type_lookup(reinterpret_cast<PyTypeObject*>(cls), "__init__");
  PyRef code = PyRef::steal(init && PyFunction_Check(init) ? PyObject_GetAttrString(init, "__code__") : nullptr);
  PyRef names = PyRef::steal(code ? PyObject_GetAttrString(code.get(), "co_varnames") : nullptr);
  PyRef count = PyRef::steal(code ? PyObject_GetAttrString(code.get(), "co_argcount") : nullptr);
  if (!names || !count || !PyTuple_Check(names.get()) || !PyLong_Check(count.get())) return clear_probe_error(), false;
  const Py_ssize_t positional = std::min(PyLong_AsSsize_t(count.get()), PyTuple_GET_SIZE(names.get()));
  for (size_t i = 0; i < args.size(); ++i) {
    if (!is_tensor_arg(args[i])) continue;
    const Py_ssize_t at = static_cast<Py_ssize_t>(i) + 1;  // after self
    if (at >= positional || !PyUnicode_Check(PyTuple_GET_ITEM(names.get(), at))) return false;
    buffers.emplace_back(utf8(PyTuple_GET_ITEM(names.get(), at)), std::exchange(args[i], Value::constant(Py_None)));
  }
  return true;
}

// Each of `buffers` is a buffer of `module` holding None (registered from
// the None passed for its tensor).
bool has_none_buffers(PyObject* module, const std::vector<std::pair<std::string, ValuePtr>>& buffers) {
  if (buffers.empty()) return true;
  PyRef table = PyRef::steal(PyObject_GetAttrString(module, "_buffers"));
  if (!table || !PyDict_Check(table.get())) return clear_probe_error(), false;
  for (const auto& [name, tensor] : buffers) {
    PyObject* held = PyDict_GetItemString(table.get(), name.c_str());
    if (held != Py_None) return false;
  }
  return true;
}

}  // namespace

// A torch.nn module made in the frame from constants (`nn.MSELoss()`,
// `nn.ReLU()`, `nn.Flatten(1)`) that holds no parameters, buffers,
// submodules or hooks: made for real at trace time and used as a fixed
// object (its forward inlined, its attributes read without guards: only
// constants made them). Eager makes a new one per call, so it cannot leave
// the graph (returned or stored, rebuilding it is refused: a break).
ValuePtr construct_stateless_module(TraceContext cx, const ValuePtr& cls, std::vector<ValuePtr>& args,
                                    std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  PyObject* f = cls->obj.get();
  std::string name = reinterpret_cast<PyTypeObject*>(f)->tp_name;
  const std::string refused = "constructing the nn.Module " + name + " inside the traced function";
  PyRef module_name = PyRef::steal(PyObject_GetAttrString(f, "__module__"));
  std::string where = module_name && PyUnicode_Check(module_name.get()) ? utf8(module_name.get()) : "";
  if (!clear_expected_error({PyExc_AttributeError})) return cx.unsupported(refused + " (its __module__ raised)"), nullptr;
  if (!where.starts_with("torch.nn.modules.")) return cx.unsupported(refused + " (a user module class)"), nullptr;
  // A loss's tensor arguments (`pos_weight=`, `weight=`) are passed as None
  // and read back from the buffers of their names (tensor_buffer_arguments).
  std::vector<std::pair<std::string, ValuePtr>> buffers;
  if (where == "torch.nn.modules.loss" && !tensor_buffer_arguments(f, args, kwargs, buffers))
    return cx.unsupported(refused + " from tensors it does not take as buffers"), nullptr;
  for (const auto& a : args)
    if (!a->is_python_constant()) return cx.unsupported(refused + " from traced values"), nullptr;
  for (const auto& [k, a] : kwargs)
    if (!a->is_python_constant()) return cx.unsupported(refused + " from traced values"), nullptr;
  // Made to be looked at: a module with parameters initializes them from
  // the default generator, which eager then draws from once, at its own
  // construction (the frame's). The draws made here are taken back.
  at::Generator rng = at::detail::getDefaultCPUGenerator();
  at::Tensor rng_state;
  {
    std::lock_guard<std::mutex> lock(rng.mutex());
    rng_state = rng.get_state();
  }
  PyRef instance = call_with_constants(f, args, kwargs);
  {
    std::lock_guard<std::mutex> lock(rng.mutex());
    rng.set_state(rng_state);
  }
  if (!instance) return cx.unsupported(refused + ": its constructor raised"), nullptr;  // named by cx.unsupported()
  bool stateless = empty_table(instance.get(), "_parameters") && empty_table(instance.get(), "_buffers") &&
                   empty_table(instance.get(), "_modules") && module_hooks_empty(instance.get());
  clear_expected_error({PyExc_AttributeError});  // a missing table: not stateless
  if (stateless && !has_none_buffers(instance.get(), buffers))
    return cx.unsupported(refused + " (a tensor argument is not registered as its buffer)"), nullptr;
  ValuePtr v = stateless ? Value::object(instance.get()) : nullptr;
  if (!v) return cx.unsupported(refused + " (it holds parameters, buffers or submodules)"), nullptr;
  v->attr_overrides = std::move(buffers);  // self.pos_weight: the traced tensor (attr_written_in_frame)
  return v;
}

ValuePtr construct_object(TraceContext cx, const ValuePtr& cls, std::vector<ValuePtr>& args,
                          std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  PyObject* f = cls->obj.get();
  if (!f || !PyType_Check(f) || cls->bound_self()) return nullptr;
  auto* type = reinterpret_cast<PyTypeObject*>(f);
  if (!(type->tp_flags & Py_TPFLAGS_HEAPTYPE)) return nullptr;  // builtins: the callers' business
  if (PyObject* module_type = cached_module_attr("torch.nn", "Module");
      module_type && PyObject_IsSubclass(f, module_type) == 1)
    return construct_stateless_module(cx, cls, args, kwargs);
  if (!clear_expected_error({PyExc_TypeError}))  // a metaclass's __subclasscheck__ raising
    return cx.unsupported("checking whether " + std::string(type->tp_name) + " is an nn.Module raised"), nullptr;
  if (std::string why = why_not_plain_class(type); !why.empty())
    return cx.unsupported("instantiating " + std::string(type->tp_name) + ": " + why), nullptr;
  PyRef empty = PyRef::steal(PyTuple_New(0));
  PyRef shell = PyRef::steal(empty ? PyBaseObject_Type.tp_new(type, empty.get(), nullptr) : nullptr);
  if (!shell) {  // an abstract class: Python raises TypeError
    clear_expected_error({PyExc_TypeError});  // cx.unsupported() names anything else
    return cx.unsupported("instantiating " + std::string(type->tp_name) + " raises (an abstract class?)"), nullptr;
  }
  ValuePtr obj = Value::object(shell.get());
  obj->payload = FreshObjectPayload{cls};

  PyObject* init = type_lookup(type, "__init__");
  if (init && PyFunction_Check(init)) {
    ValuePtr bound = Value::bound_method(init, obj, "__init__");
    bound->source = cls->source ? Source::attr(cls->source, "__init__") : nullptr;
    ValuePtr r = cx.call_value(bound, std::move(args), std::move(kwargs));
    if (!r) return nullptr;
    if (!r->is_constant() || r->obj.get() != Py_None) return cx.unsupported("__init__() should return None"), nullptr;
    return obj;
  }
  if (init == type_lookup(&PyBaseObject_Type, "__init__")) {
    if (!args.empty() || !kwargs.empty())
      return cx.unsupported(std::string(type->tp_name) + "() takes no arguments (TypeError)"), nullptr;
    return obj;
  }
  return cx.unsupported("instantiating " + std::string(type->tp_name) + ": its __init__ is not a Python function"), nullptr;
}

ValuePtr fresh_object_attr(TraceContext cx, const ValuePtr& obj, const std::string& name) {
  auto* type = Py_TYPE(obj->obj.get());
  if (name == "__class__") return obj->object_class();
  if (name == "__dict__") {
    // `name in self.__dict__` (torch.distributions' argument validation):
    // a snapshot of the attributes, read at once by CONTAINS_OP, which
    // cannot write through it. Any other use would need the live mapping.
    const bc::Instruction* next = cx.next_instruction();
    if (!next || next->code() != bc::Opcode::CONTAINS_OP)
      return cx.unsupported("__dict__ of an object made in the traced function (other than `name in obj.__dict__`)"),
             nullptr;
    std::vector<ValuePtr> keys, items;
    for (const auto& [n, v] : obj->attr_overrides) {
      if (is_deleted_attr(v)) continue;
      PyRef key = PyRef::steal(PyUnicode_FromString(n.c_str()));
      if (!key) return clear_probe_error(), cx.unsupported("__dict__: an attribute name is not valid UTF-8"), nullptr;
      keys.push_back(Value::constant(key.get()));
      items.push_back(v);
    }
    return Value::dict(std::move(keys), std::move(items));
  }
  PyObject* found = type_lookup(type, name.c_str());
  if (!found)
    return cx.unsupported("'" + std::string(type->tp_name) + "' object has no attribute '" + name + "' (AttributeError)"),
           nullptr;
  SourcePtr class_source = obj->object_class()->source;
  auto bind = [&](PyObject* fn, ValuePtr self) {
    ValuePtr v = Value::bound_method(fn, std::move(self), name);
    v->source = class_source ? Source::attr(class_source, name) : nullptr;
    return v;
  };
  if (PyFunction_Check(found)) return bind(found, obj);
  if (PyObject_TypeCheck(found, &PyClassMethod_Type) || PyObject_TypeCheck(found, &PyStaticMethod_Type)) {
    PyRef fn = PyRef::steal(PyObject_GetAttrString(found, "__func__"));
    if (!fn) return cx.unsupported("a classmethod without __func__"), nullptr;  // cx.unsupported() clears its AttributeError
    if (PyObject_TypeCheck(found, &PyClassMethod_Type)) return bind(fn.get(), obj->object_class());
    ValuePtr v = Value::callable(fn.get());
    v->source = class_source ? Source::attr(class_source, name) : nullptr;
    return v;
  }
  if (PyObject_TypeCheck(found, &PyProperty_Type)) {
    PyRef getter = PyRef::steal(PyObject_GetAttrString(found, "fget"));
    if (!clear_expected_error({PyExc_AttributeError})) return cx.unsupported("reading a property's fget raised"), nullptr;
    if (!getter || !PyFunction_Check(getter.get()))
      return cx.unsupported("property '" + name + "' without a Python getter"), nullptr;
    return cx.call_value(Value::bound_method(getter.get(), obj, ""), {}, {});
  }
  if (PyObject* lazy = cached_module_attr("torch.distributions.utils", "lazy_property");
      lazy && Py_TYPE(found) == reinterpret_cast<PyTypeObject*>(lazy)) {
    // torch.distributions' lazy_property (Categorical's probs, Binomial's
    // logits): its __get__ computes the value under enable_grad and sets
    // it on the instance. Traced as that: under no_grad too, the call
    // traced under enable_grad (its nodes tagged with that mode).
    PyRef wrapped = PyRef::steal(PyObject_GetAttrString(found, "wrapped"));
    PyRef wrapped_name = PyRef::steal(wrapped ? PyObject_GetAttrString(wrapped.get(), "__name__") : nullptr);
    if (!wrapped || !PyFunction_Check(wrapped.get()) || !wrapped_name || !PyUnicode_Check(wrapped_name.get()) ||
        utf8(wrapped_name.get()) != name)
      return clear_probe_error(), cx.unsupported("lazy_property '" + name + "' that does not wrap a function of that name"),
             nullptr;
    // Under no_grad: traced under enable_grad as __get__ runs it (its
    // nodes tagged with that mode, as in a `with torch.enable_grad():`).
    const bool was_enabled = grad_mode_enabled();
    if (!was_enabled) set_grad_mode_enabled(true);
    ValuePtr value = cx.call_value(Value::callable(wrapped.get()), {obj}, {});
    if (!was_enabled) set_grad_mode_enabled(false);
    if (!value || !store_fresh_object_attr(cx, obj, name, value)) return nullptr;
    return value;
  }
  if (Py_TYPE(found)->tp_descr_get)
    return cx.unsupported("attribute '" + name + "' of " + type->tp_name + " is a descriptor the tracer does not model"), nullptr;
  // A plain class attribute: read through the class (guarded by its source).
  return cx.get_attr(obj->object_class(), name);
}

bool store_fresh_object_attr(TraceContext cx, const ValuePtr& owner, const std::string& name, const ValuePtr& value) {
  if (name == "__dict__" || name == "__class__") return cx.unsupported("assignment to " + name);
  PyObject* found = type_lookup(Py_TYPE(owner->obj.get()), name.c_str());
  if (found && Py_TYPE(found)->tp_descr_set)
    return cx.unsupported("assignment to '" + name + "', a property or descriptor of " + owner->type_name());
  // The object is new: nothing to replay, its final attributes are what
  // a rebuild after the graph sets.
  cx.journal(owner);
  for (auto& [n, v] : owner->attr_overrides)
    if (n == name) return v = value, true;
  owner->attr_overrides.emplace_back(name, value);
  return true;
}

ValuePtr bound_dunder(TraceContext, const ValuePtr& obj, const std::string& name) {
  if (!is_user_object(obj)) return nullptr;
  PyObject* found = type_lookup(Py_TYPE(obj->obj.get()), name.c_str());
  if (!found || !PyFunction_Check(found)) return nullptr;
  ValuePtr v = Value::bound_method(found, obj, name);
  SourcePtr class_source = obj->object_class() ? obj->object_class()->source
                           : obj->source     ? Source::attr(obj->source, "__class__")
                                             : nullptr;
  v->source = class_source ? Source::attr(class_source, name) : nullptr;
  return v;
}

ValuePtr call_dunder(TraceContext cx, const ValuePtr& obj, const std::string& name, std::vector<ValuePtr> args,
                     bool& handled) {
  ValuePtr method = bound_dunder(cx, obj, name);
  handled = method != nullptr;
  if (!method) return nullptr;
  return cx.call_value(method, std::move(args), {});
}

ValuePtr binary_dunder(TraceContext cx, bc::BinaryOpArg op, const ValuePtr& lhs, const ValuePtr& rhs, bool& handled) {
  handled = false;
  bool left = is_user_object(lhs), right = is_user_object(rhs);
  // tensor OP obj runs Tensor's operator first: left to the tensor path.
  if ((!left && !right) || lhs->is_tensor()) return nullptr;
  handled = true;
  const bc::BinaryOpInfo& row = *op.info;
  struct Try {
    std::string_view name;
    bool reflected;  // called on the right operand
  };
  std::vector<Try> tries;
  if (op.inplace && left) tries.push_back({row.inplace, false});
  if (left) tries.push_back({row.dunder, false});
  if (right) tries.push_back({row.reflected, true});
  for (const Try& attempt : tries) {
    const ValuePtr& self = attempt.reflected ? rhs : lhs;
    const ValuePtr& other = attempt.reflected ? lhs : rhs;
    bool found = false;
    ValuePtr r = call_dunder(cx, self, std::string(attempt.name), {other}, found);
    if (!found) continue;
    if (!r) return nullptr;
    if (!is_not_implemented(r)) return r;
  }
  const std::string_view stem = row.dunder.substr(2, row.dunder.size() - 4);  // "add" of "__add__"
  return cx.unsupported("operator " + std::string(stem) + " on " + lhs->type_name() + " and " + rhs->type_name() +
                     ": no dunder method handles them (TypeError)"),
         nullptr;
}

bool InstructionTranslator::build_fresh_object_output(const ValuePtr& v, OutputTemplate& out,
                                                      std::vector<graph::Arg>& outputs,
                                                      std::unordered_map<graph::Node*, int>& output_index) {
  using Kind = OutputTemplate::Kind;
  objects_being_built_.push_back(v.get());
  out.kind = Kind::tuple;
  out.constant = PyRef::borrow(rebuild_object_function());
  out.items.emplace_back();
  bool ok = build_output(v->object_class(), out.items.back(), outputs, output_index);
  PyObject* names = PyTuple_New(static_cast<Py_ssize_t>(v->attr_overrides.size()));
  for (size_t i = 0; names && i < v->attr_overrides.size(); ++i)
    PyTuple_SET_ITEM(names, static_cast<Py_ssize_t>(i), PyUnicode_FromString(v->attr_overrides[i].first.c_str()));
  out.items.emplace_back();
  out.items.back().kind = Kind::constant;
  out.items.back().constant = PyRef::steal(names);
  for (size_t i = 0; ok && i < v->attr_overrides.size(); ++i) {
    out.items.emplace_back();
    ok = build_output(v->attr_overrides[i].second, out.items.back(), outputs, output_index);
  }
  objects_being_built_.pop_back();
  return ok;
}

}  // namespace tj::tracer
