// Opcode handlers for calls (KW_NAMES, CALL, CALL_FUNCTION_EX) and
// call_value, the one dispatch of a call on a value: partials, context
// managers, tensor and container methods, Python code (inlined), builtins,
// namedtuples, sets, user classes, torch callables and calls folded at
// trace time on constants. Attribute reads are in translate_getattr.cpp.
#include <cstring>

#include "support/tensor_bridge.h"
#include "tracer/sizes.h"
#include "tracer/torch_ops.h"
#include "support/py_errors.h"
#include "support/py_lookup.h"
#include "tracer/autograd_function_ctx.h"
#include "tracer/backward.h"
#include "tracer/builtins.h"
#include "tracer/number_facts.h"
#include "tracer/py_str.h"
#include "tracer/numpy_values.h"
#include "tracer/append_log.h"
#include "tracer/random_streams.h"
#include "tracer/translate_call.h"

namespace tj::tracer {

namespace {

// A name for messages. Best effort, and it keeps an error already pending
// (a failed call being reported) for the unsupported() that reports it.
std::string callable_name(PyObject* fn) {
  SavedError pending;  // best effort: the type's name
  PyRef q = PyRef::steal(PyObject_GetAttrString(fn, "__qualname__"));
  if (!q) {
    PyErr_Clear();  // no __qualname__: __name__ then
    q = PyRef::steal(PyObject_GetAttrString(fn, "__name__"));
  }
  return q && PyUnicode_Check(q.get()) ? utf8(q.get()) : std::string(Py_TYPE(fn)->tp_name);
}

}  // namespace

bool is_immutable_constant(PyObject* o) {
  return o == Py_None || PyLong_Check(o) || PyFloat_Check(o) || PyUnicode_Check(o) || PyTuple_Check(o) ||
         PyBytes_Check(o) || PyRange_Check(o) || PySlice_Check(o) || as_dtype(o) || as_device(o) || is_size(o);
}

namespace {

// Types that may be called with constant arguments at trace time.
bool is_foldable_type(PyObject* fn) {
  if (!PyType_Check(fn)) return false;
  auto* t = reinterpret_cast<PyTypeObject*>(fn);
  return t == &PyLong_Type || t == &PyFloat_Type || t == &PyBool_Type || t == &PyUnicode_Type ||
         t == &PyTuple_Type || t == &PyRange_Type || t == &PySlice_Type || t == &PyComplex_Type ||
         fn == cached_module_attr("torch", "device") || fn == cached_module_attr("torch", "Size") ||
         fn == cached_module_attr("torch", "finfo") || fn == cached_module_attr("torch", "iinfo");
}

// Functions of C modules without side effects (math.floor, operator.add).
bool is_pure_module_function(PyObject* fn) {
  if (!PyCFunction_Check(fn)) return false;
  PyObject* self = PyCFunction_GET_SELF(fn);
  if (!self || !PyModule_Check(self)) return false;
  const char* name = PyModule_GetName(self);
  if (!name) {
    PyErr_Clear();  // a module without a str __name__ (SystemError): not math
    return false;
  }
  return std::strcmp(name, "math") == 0 || std::strcmp(name, "_operator") == 0 || std::strcmp(name, "cmath") == 0;
}

// numpy's ufuncs (np.sqrt, np.exp) and scalar types (np.float32) called
// on Python numbers and numpy scalars: pure, folded at trace time when the
// result is a number again (an array result is not folded).
bool is_numpy_scalar_function(PyObject* fn, const std::vector<ValuePtr>& args,
                              const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  PyObject* ufunc = cached_module_attr("numpy", "ufunc");
  PyObject* number = cached_module_attr("numpy", "number");
  bool scalar_type = PyType_Check(fn) && number &&
                     (PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(fn), reinterpret_cast<PyTypeObject*>(number)) ||
                      fn == cached_module_attr("numpy", "bool_"));
  if (!(ufunc && PyObject_TypeCheck(fn, reinterpret_cast<PyTypeObject*>(ufunc))) && !scalar_type) return false;
  if (!kwargs.empty()) return false;
  return std::all_of(args.begin(), args.end(), [](const ValuePtr& a) {
    PyObject* o = a->is_constant() ? a->obj.get() : nullptr;
    return o && (PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyBool_Check(o) || is_numpy_scalar(o));
  });
}

// torch functions whose result is fixed for traced code: torch-function
// overrides and scripting/tracing checks (borrowed result, or null).
PyObject* torch_constant_call(PyObject* fn) {
  PyRef name = PyRef::steal(PyObject_GetAttrString(fn, "__name__"));
  std::string n = name && PyUnicode_Check(name.get()) ? PyUnicode_AsUTF8(name.get()) : "";
  PyRef module = PyRef::steal(PyObject_GetAttrString(fn, "__module__"));
  std::string m = module && PyUnicode_Check(module.get()) ? PyUnicode_AsUTF8(module.get()) : "";
  if (!clear_expected_error({PyExc_AttributeError})) return nullptr;  // a callable without these is no torch function
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
  // taken as it is at trace time; whether a device backend is available
  // (`x.cuda() if torch.cuda.is_available() else x`) is fixed for the process.
  const bool availability = n == "is_available" && (m == "torch.cuda" || m == "torch.backends.mps" ||
                                                    m == "torch.backends.cudnn" || m == "torch.backends.mkldnn");
  if (n == "is_grad_enabled" || n == "is_autocast_enabled" || n == "is_autocast_cpu_enabled" || availability) {
    PyRef r = PyRef::steal(PyObject_CallNoArgs(fn));
    if (availability && r && !PyBool_Check(r.get())) return nullptr;  // not the bool it is documented to be
    return r.get();  // a bool singleton, alive without r; null: its error stays set for the trace's reporting
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
  PyRef r = call_with_constants(fn, args, kwargs);
  if (!r) return t.unsupported("calling " + callable_name(fn) + " at trace time failed"), nullptr;
  return t.wrap_constant_result(std::move(r));
}

// torch.ops.<namespace>.<name>(...), an OpOverloadPacket (torchvision's nms
// and roi_align, torch.ops.aten.*): the op of its qualified name, its
// overload chosen by the arguments as for torch's own functions.
ValuePtr call_op_packet(InstructionTranslator& t, PyObject* packet, std::vector<ValuePtr>& args,
                        std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  PyRef name = PyRef::steal(PyObject_GetAttrString(packet, "_qualified_op_name"));
  if (!name || !PyUnicode_Check(name.get()))
    return clear_probe_error(), t.unsupported("a torch.ops packet without a qualified name"), nullptr;
  return call_aten(t, utf8(name.get()), std::move(args), std::move(kwargs));
}

// The dtype a legacy tensor class makes (nullopt: not one).
std::optional<c10::ScalarType> legacy_class_dtype(PyObject* cls) {
  if (cls == cached_module_attr("torch", "Tensor")) return default_dtype();
  static const std::pair<const char*, c10::ScalarType> kClasses[] = {
      {"FloatTensor", c10::kFloat}, {"DoubleTensor", c10::kDouble}, {"HalfTensor", c10::kHalf},
      {"LongTensor", c10::kLong},   {"IntTensor", c10::kInt},       {"ShortTensor", c10::kShort},
      {"ByteTensor", c10::kByte},   {"CharTensor", c10::kChar},     {"BoolTensor", c10::kBool}};
  for (const auto& [name, dtype] : kClasses)
    if (cls == cached_module_attr("torch", name)) return dtype;
  return std::nullopt;
}

// The legacy constructors of older public code: torch.Tensor(data) /
// torch.FloatTensor(data)... of a list or tuple of numbers (torch.tensor of
// the class's dtype, the default dtype for torch.Tensor) and
// torch.autograd.Variable(x[, requires_grad=b]) of a tensor (x.detach(),
// then requires_grad_(b)). `handled` false for other classes and arguments
// (torch.Tensor(2, 3) makes an uninitialized tensor).
ValuePtr legacy_tensor_constructor(InstructionTranslator& t, PyObject* cls, const std::vector<ValuePtr>& args,
                                   const std::vector<std::pair<std::string, ValuePtr>>& kwargs, bool& handled) {
  handled = false;
  if (cls == cached_module_attr("torch.autograd", "Variable")) {
    // requires_grad: absent (false) or a bool constant, else not handled
    const bool named = kwargs.size() == 1 && kwargs[0].first == "requires_grad" &&
                       kwargs[0].second->is_constant() && PyBool_Check(kwargs[0].second->obj.get());
    if (args.size() != 1 || !args[0]->is_tensor() || !(kwargs.empty() || named)) return nullptr;
    handled = true;
    ValuePtr detached = call_tensor_method(t, args[0], "detach", {}, {});
    if (!detached || !named || kwargs[0].second->obj.get() != Py_True) return detached;
    return call_tensor_method(t, detached, "requires_grad_", {Value::constant(Py_True)}, {});
  }
  std::optional<c10::ScalarType> dtype = legacy_class_dtype(cls);
  if (!dtype || args.size() != 1 || !kwargs.empty() || !args[0]->is_sequence()) return nullptr;
  handled = true;
  const std::vector<std::pair<std::string, ValuePtr>> with_dtype = {
      {"dtype", Value::constant_steal(dtype_object(*dtype))}};
  if (ValuePtr v = tensor_of_data(t, args[0], with_dtype)) return v;
  if (t.failed()) return nullptr;
  return t.unsupported("torch." + std::string(reinterpret_cast<PyTypeObject*>(cls)->tp_name) +
                       "(data) of data other than numbers (a tensor built from Python data)"),
         nullptr;
}

// collections.namedtuple / typing.NamedTuple classes called in the frame:
// a tuple value whose `obj` is the class (fields read by name through
// __match_args__; rebuilt with the class's _make). Null when `f` is not one.
// The fields and defaults of a collections.namedtuple class with its
// generated __new__ (a subclass overriding it runs user code); false for
// any other class, with `raised` set when reading them raised otherwise
// than with AttributeError (a metaclass __getattr__).
bool plain_namedtuple_fields(PyObject* f, PyRef& fields, PyRef& defaults, bool& raised) {
  raised = false;
  if (!PyType_Check(f) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(f), &PyTuple_Type)) return false;
  fields = PyRef::steal(PyObject_GetAttrString(f, "_fields"));
  defaults = PyRef::steal(fields ? PyObject_GetAttrString(f, "_field_defaults") : nullptr);
  PyRef new_fn = PyRef::steal(fields ? PyObject_GetAttrString(f, "__new__") : nullptr);
  // A tuple subclass without _fields is no namedtuple.
  if (!clear_expected_error({PyExc_AttributeError})) {
    raised = true;
    return false;
  }
  bool generated = new_fn && PyFunction_Check(new_fn.get()) &&
                   PyDict_GetItemString(PyFunction_GET_GLOBALS(new_fn.get()), "_tuple_new") != nullptr;
  return fields && PyTuple_Check(fields.get()) && defaults && PyDict_Check(defaults.get()) && generated;
}

ValuePtr construct_namedtuple(InstructionTranslator& t, PyObject* f, const std::vector<ValuePtr>& args,
                              const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  PyRef fields, defaults;
  bool raised = false;
  if (!plain_namedtuple_fields(f, fields, defaults, raised)) {
    if (raised)
      t.unsupported("reading the namedtuple fields of " + std::string(reinterpret_cast<PyTypeObject*>(f)->tp_name) + " raised");
    return nullptr;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(fields.get());
  std::vector<ValuePtr> items(static_cast<size_t>(n));
  bool ok = static_cast<Py_ssize_t>(args.size()) <= n;
  for (size_t i = 0; ok && i < args.size(); ++i) items[i] = args[i];
  for (const auto& [k, v] : kwargs) {
    bool found = false;
    for (Py_ssize_t i = 0; i < n; ++i)
      if (utf8(PyTuple_GET_ITEM(fields.get(), i)) == k) {
        ok &= !items[static_cast<size_t>(i)];
        items[static_cast<size_t>(i)] = v;
        found = true;
      }
    ok &= found;
  }
  for (Py_ssize_t i = 0; ok && i < n; ++i) {
    if (items[static_cast<size_t>(i)]) continue;
    PyObject* d = PyDict_GetItem(defaults.get(), PyTuple_GET_ITEM(fields.get(), i));
    if (d) items[static_cast<size_t>(i)] = Value::constant(d);
    ok = d != nullptr;
  }
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

bool is_plain_namedtuple_type(PyObject* f) {
  PyRef fields, defaults;
  bool raised = false;
  bool plain = plain_namedtuple_fields(f, fields, defaults, raised);
  if (raised) clear_unless_interruption();
  return plain;
}

PyRef call_with_constants(PyObject* fn, const std::vector<ValuePtr>& args,
                          const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  PyRef pargs = PyRef::steal(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  PyRef pkw = PyRef::steal(kwargs.empty() ? nullptr : PyDict_New());
  bool ok = pargs && (kwargs.empty() || pkw);
  for (size_t i = 0; ok && i < args.size(); ++i) {
    PyRef o = args[i]->as_python();
    ok = bool(o);
    if (ok) PyTuple_SET_ITEM(pargs.get(), static_cast<Py_ssize_t>(i), o.release());
  }
  for (const auto& [name, v] : kwargs) {
    PyRef o = ok ? v->as_python() : PyRef();
    ok = o && PyDict_SetItemString(pkw.get(), name.c_str(), o.get()) == 0;
  }
  // null: the call's error stays set for the caller's unsupported() (a probe's is cleared there)
  return PyRef::steal(ok ? PyObject_Call(fn, pargs.get(), pkw.get()) : nullptr);
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

ValuePtr InstructionTranslator::call_value(const ValuePtr& fn_in, std::vector<ValuePtr> args,
                                           std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  const ValuePtr& fn = fn_in;
  if (fn->kind == ValueKind::object && fn->obj && has_exact_type(fn->obj.get(), "torch._ops", "OpOverloadPacket"))
    return call_op_packet(*this, fn->obj.get(), args, kwargs);
  if (fn->obj && (fn->kind == ValueKind::function || fn->kind == ValueKind::object || fn->kind == ValueKind::callable ||
                  fn->kind == ValueKind::constant)) {
    bool handled = false;  // numpy arrays made from constants (translate_numpy.cpp)
    if (ValuePtr v = call_numpy(*this, fn, fn->obj.get(), args, kwargs, handled); handled) return v;
  }
  switch (fn->kind) {
    case ValueKind::callable:
    case ValueKind::constant: return call_callable(fn, std::move(args), std::move(kwargs));
    case ValueKind::tensor_method: return call_method_value(fn, std::move(args), std::move(kwargs));
    case ValueKind::partial: return call_partial(fn, std::move(args), std::move(kwargs));
    case ValueKind::object:  // numpy's ufuncs are objects: folded as callables are
      if (is_numpy_scalar_function(fn->obj.get(), args, kwargs)) return call_callable(fn, std::move(args), std::move(kwargs));
      if (PyWeakref_CheckRefExact(fn->obj.get()) && args.empty() && kwargs.empty()) {
        // A weak reference called (the LR schedulers' wrapper of
        // optimizer.step): its referent, an input read by calling it, so
        // a different (or dead) referent fails the guard.
        if (!fn->source) return unsupported("calling a weakref without a source"), nullptr;
        return wrap_input(PyWeakref_GetObject(fn->obj.get()), Source::call(fn->source, "__call__"));
      }
      return call_python(fn, std::move(args), std::move(kwargs));
    case ValueKind::function: return call_python(fn, std::move(args), std::move(kwargs));
    case ValueKind::list:
      if (fn->is_module_slice()) return call_module_slice(fn, std::move(args), std::move(kwargs));
      break;
    default: break;
  }
  return unsupported("calling a " + fn->type_name()), nullptr;
}

// A partial made in the frame: its callable with the bound arguments first
// (a keyword given at the call replaces a bound one).
ValuePtr InstructionTranslator::call_partial(const ValuePtr& fn, std::vector<ValuePtr> args,
                                             std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  const PartialPayload& partial = fn->as_partial();
  args.insert(args.begin(), partial.args.begin(), partial.args.end());
  std::vector<std::pair<std::string, ValuePtr>> merged = partial.kwargs;
  for (auto& kv : kwargs) {
    bool replaced = false;
    for (auto& m : merged)
      if (m.first == kv.first) m.second = kv.second, replaced = true;
    if (!replaced) merged.push_back(kv);
  }
  return call_value(partial.fn, std::move(args), std::move(merged));
}

// A method of a tensor, container or set value (`x.add(y)`, `xs.append(v)`).
ValuePtr InstructionTranslator::call_method_value(const ValuePtr& fn, std::vector<ValuePtr> args,
                                                  std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  const MethodPayload& method = fn->as_method();
  if (method.self->is_tensor()) return call_tensor_method(*this, method.self, method.name, std::move(args), std::move(kwargs));
  if (method.name == "__get__" && method.self->kind == ValueKind::callable && PyFunction_Check(method.self->obj.get())) {
    // func.__get__(instance[, cls]): the function bound to the instance
    // (torch.optim.lr_scheduler's step wrapper); of None, the function.
    if (args.empty() || args.size() > 2 || !kwargs.empty()) return unsupported("function.__get__ with these arguments"), nullptr;
    if (args[0]->is_constant() && args[0]->obj.get() == Py_None) return method.self;
    return Value::bound_method(method.self->obj.get(), args[0], "");
  }
  if (is_append_log(*method.self)) {  // a list only appended to (append_log.h): the value logged
    if (method.name != "append" || args.size() != 1 || !kwargs.empty())
      return unsupported("list." + method.name + "() with these arguments on a list logged for appends"), nullptr;
    journal(method.self);
    method.self->items.push_back(args[0]);
    record_container_mutation(method.self);
    return Value::constant(Py_None);
  }
  if (!kwargs.empty()) return unsupported(method.self->type_name() + "." + method.name + " with keywords"), nullptr;
  return call_container_method(*this, method.self, method.name, args);
}

// A sliced nn.Sequential: its modules called in order, each on the last one's result.
ValuePtr InstructionTranslator::call_module_slice(const ValuePtr& fn, std::vector<ValuePtr> args,
                                                  std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  if (args.size() != 1 || !kwargs.empty()) return unsupported("a sliced Sequential takes one input"), nullptr;
  ValuePtr x = args[0];
  for (const auto& module : fn->items) {
    x = call_value(module, {x}, {});
    if (!x) return nullptr;
  }
  return x;
}

namespace {
ValuePtr call_checkpoint(InstructionTranslator& t, std::vector<ValuePtr> args,
                         std::vector<std::pair<std::string, ValuePtr>> kwargs);
}  // namespace

// A Python callable or a constant's method: the first check that knows
// the callable decides, in this order (a partial being made, the context
// managers, methods of immutable constants, bound methods, calls on sizes
// and numbers, builtins, classes, torch functions, constant folding,
// Python code to inline).
ValuePtr InstructionTranslator::call_callable(const ValuePtr& fn, std::vector<ValuePtr> args,
                                              std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  bool handled = false;
  if (ValuePtr v = call_functools_idiom(fn, args, kwargs, handled); handled) return v;
  if (ValuePtr v = call_context_manager(*this, fn, args, kwargs, handled); handled) return v;
  if (fn->kind == ValueKind::constant && PyCFunction_Check(fn->obj.get())) {
    // A method of an immutable constant ("{}".format, (1, 2).index, ...).
    PyObject* self = PyCFunction_GET_SELF(fn->obj.get());
    if (self && !PyModule_Check(self) && is_immutable_constant(self) && all_constant(args, kwargs))
      return fold_call(*this, fn->obj.get(), args, kwargs);
  }
  if (ValuePtr v = call_disabled_logger(*this, fn, args, handled); handled) return v;  // logger.debug(...) when off
  if (fn->bound_self()) return call_python(fn, std::move(args), std::move(kwargs));
  PyObject* f = fn->obj.get();
  if (auto why = random_stream_call(f)) return unsupported(*why), nullptr;
  if ((f == builtin("min") || f == builtin("max")) && args.size() == 2 && kwargs.empty() &&
      (expr_of(args[0]) || expr_of(args[1]))) {
    // min(1.0, step / warmup) of a dynamic number and a constant (an LR
    // schedule's lambda): CPython's comparison (the second wins when it is
    // `<` the first for min, `>` for max), answered as a guarded fact.
    if (ValuePtr second_wins = compare_as_fact(*this, f == builtin("min") ? Py_LT : Py_GT, args[1], args[0]))
      return second_wins->obj.get() == Py_True ? args[1] : args[0];
    if (failed()) return nullptr;
  }
  if (kwargs.empty())
    if (ValuePtr v = call_on_sizes(*this, f, args, handled); handled) return v;  // int(n), max(a, b), operator.mul(a, b)...
  if (kwargs.empty())
    if (ValuePtr v = size_number_call(*this, f, args, handled); handled) return v;  // float(n), math.sqrt(n)
  if (ValuePtr v = number_function(*this, f, args, handled); handled) return v;  // float(n), math.sqrt(n)
  if (ValuePtr v = call_c_callable(f, args, kwargs, handled); handled) return v;
  if (ValuePtr v = call_constructor(fn, args, kwargs, handled); handled) return v;
  // What the checks above probed (a subclass check, a lookup) may fail;
  // unsupported() names an error none of them expects.
  if (!clear_probe_error()) return unsupported("calling " + callable_name(f) + " raised while it was looked at"), nullptr;
  if (f == cached_module_attr("torch.autograd", "backward"))
    return trace_backward(*this, std::move(args), std::move(kwargs), /*tensor_method=*/false);
  if (f == cached_module_attr("torch.autograd", "grad")) return trace_autograd_grad(*this, std::move(args), std::move(kwargs));
  if (f == cached_module_attr("torch.utils.checkpoint", "checkpoint"))
    return call_checkpoint(*this, std::move(args), std::move(kwargs));
  if (auto constant = torch_constant_call(f)) return Value::constant(constant);
  if (is_torch_callable(f)) return call_torch_callable(*this, f, std::move(args), std::move(kwargs));
  if (is_foldable_type(f) && all_constant(args, kwargs)) return fold_call(*this, f, args, kwargs);
  if (is_pure_module_function(f) && all_constant(args, kwargs)) return fold_call(*this, f, args, kwargs);
  if (is_numpy_scalar_function(f, args, kwargs)) {
    ValuePtr v = fold_call(*this, f, args, kwargs);
    if (!v || is_numpy_scalar(v->obj.get()) || PyFloat_CheckExact(v->obj.get()) || PyLong_CheckExact(v->obj.get())) return v;
    return unsupported("numpy call " + callable_name(f) + " made an array"), nullptr;
  }
  if (f == cached_module_attr("torch", "manual_seed")) return call_manual_seed(*this, args, kwargs);
  if (f == cached_module_attr("warnings", "warn")) return call_warn(*this, args, kwargs);
  if (f == cached_module_attr("torch", "seed")) return call_torch_seed(*this, args, kwargs);
  if (PyCFunction_Check(f) && PyCFunction_GET_SELF(f) && PyType_Check(PyCFunction_GET_SELF(f)) &&
      std::strcmp(reinterpret_cast<PyCFunctionObject*>(f)->m_ml->ml_name, "__subclasses__") == 0 && args.empty() &&
      kwargs.empty()) {
    // The class's live subclasses: an input read by calling it, so its
    // length and each class are guarded (a new subclass retraces).
    if (!fn->source || fn->source->kind != SourceKind::attr)
      return unsupported("__subclasses__() of a class read without a source"), nullptr;
    PyRef subclasses = PyRef::steal(PyObject_CallMethodNoArgs(PyCFunction_GET_SELF(f), fn->source->key.get()));
    if (!subclasses) return unsupported("__subclasses__() raised"), nullptr;  // unsupported() names its error
    return wrap_input(subclasses.get(), Source::call(fn->source->base, "__subclasses__"));
  }
  if (PyFunction_Check(f))
    if (ValuePtr v = call_torch_python_function(*this, f, args, kwargs)) return v;
  if (failed()) return nullptr;
  if (PyFunction_Check(f) || PyMethod_Check(f) || has_exact_type(f, "functools", "partial"))
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

// torch.utils.checkpoint.checkpoint(function, *args, use_reentrant=True,
// preserve_rng_state=True, **kwargs) (HF's and timm's gradient
// checkpointing): eager runs `function` once in the forward and again, with
// the forward's RNG and autocast state, in the backward; its outputs and
// gradients are those of a plain `function(*args)`, so the call is inlined
// (the graph keeps the activations: the memory saving is not kept);
// `preserve_rng_state=False` breaks (eager's recomputation draws other
// random numbers than its forward did). The
// reentrant form (the default) differs from a plain call when no tensor
// argument requires grad (eager warns, and with grad mode on its outputs do
// not require grad) and refuses keyword arguments (eager raises): those
// break the graph and run eager's checkpoint.
namespace {

ValuePtr call_checkpoint(InstructionTranslator& t, std::vector<ValuePtr> args,
                         std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  if (args.empty()) return t.unsupported("torch.utils.checkpoint.checkpoint without a function"), nullptr;
  bool reentrant = true;
  std::vector<std::pair<std::string, ValuePtr>> rest;
  for (auto& [name, v] : kwargs) {
    if (name != "use_reentrant" && name != "preserve_rng_state") {
      rest.emplace_back(name, v);
      continue;
    }
    if (!v || !v->is_constant() || !PyBool_Check(v->obj.get()))
      return t.unsupported("torch.utils.checkpoint.checkpoint with " + name + " not a constant bool"), nullptr;
    if (name == "use_reentrant") reentrant = v->obj.get() == Py_True;
    if (name == "preserve_rng_state" && v->obj.get() == Py_False)
      return t.unsupported("torch.utils.checkpoint.checkpoint(preserve_rng_state=False): eager's recomputation in "
                           "the backward draws other random numbers than the forward"),
             nullptr;
  }
  if (reentrant) {
    if (!rest.empty())
      return t.unsupported("torch.utils.checkpoint.checkpoint(use_reentrant=True) with keyword arguments (eager raises)"),
             nullptr;
    // Eager's check_backward_validity looks at the tensor arguments only.
    bool any_requires_grad = false;
    for (size_t i = 1; i < args.size(); ++i)
      if (args[i]->is_tensor()) any_requires_grad |= args[i]->meta().requires_grad;
    if (!any_requires_grad)
      return t.unsupported("torch.utils.checkpoint.checkpoint (reentrant) with no tensor argument that requires grad: "
                         "eager warns, and with grad mode on its outputs do not require grad"),
             nullptr;
  }
  ValuePtr function = args[0];
  args.erase(args.begin());
  return t.call_value(function, std::move(args), std::move(rest));
}

}  // namespace

// functools.partial / wraps / update_wrapper, copy.deepcopy, typing.cast.
ValuePtr InstructionTranslator::call_functools_idiom(const ValuePtr& fn, std::vector<ValuePtr>& args,
                                                     std::vector<std::pair<std::string, ValuePtr>>& kwargs, bool& handled) {
  handled = true;
  if (fn->kind == ValueKind::callable && fn->obj.get() == cached_module_attr("functools", "partial") && !args.empty()) {
    // functools.partial(f, *args, **kwargs) made in the frame.
    auto callable = std::make_shared<Value>(*args[0]);
    callable->source = nullptr;
    return Value::partial(std::move(callable), std::vector<ValuePtr>(args.begin() + 1, args.end()), std::move(kwargs));
  }
  if (fn->kind == ValueKind::callable && fn->obj.get() == cached_module_attr("functools", "wraps") &&
      args.size() == 1 && kwargs.empty()) {
    // functools.wraps(wrapped): partial(update_wrapper, wrapped=wrapped),
    // as functools spells it; update_wrapper is modelled below.
    ValuePtr update = Value::callable(cached_module_attr("functools", "update_wrapper"));
    return Value::partial(std::move(update), {}, {{"wrapped", args[0]}});
  }
  if (fn->kind == ValueKind::callable && fn->obj.get() == cached_module_attr("functools", "update_wrapper") &&
      args.size() == 1 && kwargs.size() == 1 && kwargs[0].first == "wrapped") {
    // update_wrapper(wrapper, wrapped) on a function made in the frame:
    // the metadata it copies is kept as attribute writes on the function,
    // which then cannot leave the graph (no attribute of a made function
    // is read in the trace, and rebuilding it refuses written attributes).
    ValuePtr wrapper = args[0];
    if (wrapper->kind != ValueKind::function)
      return unsupported("functools.wraps applied to a " + wrapper->type_name() + " (not a function made in the frame)"),
             nullptr;
    journal(wrapper);
    wrapper->attr_overrides.emplace_back("__wrapped__", kwargs[0].second);
    return wrapper;
  }
  if (fn->kind == ValueKind::callable && fn->obj.get() == cached_module_attr("copy", "deepcopy"))
    return call_deepcopy(*this, args, kwargs);  // translate_copy.cpp
  if (fn->kind == ValueKind::callable && fn->obj.get() == cached_module_attr("typing", "cast") && args.size() == 2 &&
      kwargs.empty())
    return args[1];  // typing.cast(type, value) returns value (torch.utils._pytree calls it)
  handled = false;
  return nullptr;
}

// Calls a disabled or compiled function refuses, the iterable functions,
// and builtins (sizes passed to C functions specialized first).
ValuePtr InstructionTranslator::call_c_callable(PyObject* f, std::vector<ValuePtr>& args,
                                                std::vector<std::pair<std::string, ValuePtr>>& kwargs, bool& handled) {
  handled = true;
  if (is_disabled_function(f))
    return unsupported("call to " + callable_name(f) + ", which tracejit.disable excludes from tracing"), nullptr;
  if (is_compiled_function(f))
    return unsupported("call to a tracejit-compiled function " + callable_name(f) + " (nested compile)"), nullptr;
  bool iterable = false;
  if (ValuePtr v = call_iterable_function(*this, f, args, kwargs, iterable); iterable) return v;
  // Other C functions and builtin types (math.sqrt(n), range(n), float(n)) take a size as the number it is;
  // isinstance, type and len only look at its type (int) or its container.
  bool c_callable = PyCFunction_Check(f) || (PyType_Check(f) && !(reinterpret_cast<PyTypeObject*>(f)->tp_flags & Py_TPFLAGS_HEAPTYPE));
  bool reads_type = (f == builtin("isinstance") || f == builtin("len") || f == reinterpret_cast<PyObject*>(&PyType_Type)) &&
                    std::none_of(args.begin(), args.end(), [](const ValuePtr& a) { return a->kind == ValueKind::size_text; });
  if (c_callable && !reads_type && !is_torch_callable(f)) {
    shared_->specialize_why = "passed to " + callable_name(f);
    for (auto& a : args) a = specialize(*this, a);
    for (auto& kw : kwargs) kw.second = specialize(*this, kw.second);
    shared_->specialize_why.clear();
  }
  if (PyCFunction_Check(f) && PyCFunction_GET_SELF(f) && PyCFunction_GET_SELF(f) == builtins_module()) {
    return call_builtin(*this, f, std::move(args), std::move(kwargs));
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
    return call_builtin(*this, f, std::move(args), std::move(kwargs));
  }
  handled = false;
  return nullptr;
}

// Classes and factories: namedtuple classes, set()/frozenset(),
// collections.namedtuple/OrderedDict/defaultdict, user classes, and a
// torch.autograd.Function's apply.
ValuePtr InstructionTranslator::call_constructor(const ValuePtr& fn, std::vector<ValuePtr>& args,
                                                 std::vector<std::pair<std::string, ValuePtr>>& kwargs, bool& handled) {
  handled = true;
  PyObject* f = fn->obj.get();
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
    return make_set(*this, items, f == reinterpret_cast<PyObject*>(&PyFrozenSet_Type));
  }
  if (f == cached_module_attr("collections", "namedtuple") && all_constant(args, kwargs))
    return fold_call(*this, f, args, kwargs);  // a new class, made once at trace time
  if (f == cached_module_attr("collections", "OrderedDict") || f == cached_module_attr("collections", "defaultdict"))
    return make_typed_dict(*this, f, args, kwargs);
  bool legacy = false;
  if (ValuePtr v = legacy_tensor_constructor(*this, f, args, kwargs, legacy); legacy) return v;
  if (ValuePtr v = construct_object(*this, fn, args, kwargs); v || failed()) return v;
  if (PyObject* function_type = cached_module_attr("torch.autograd", "Function");
      function_type && PyCFunction_Check(f) && PyCFunction_GET_SELF(f) && PyType_Check(PyCFunction_GET_SELF(f)) &&
      PyObject_IsSubclass(PyCFunction_GET_SELF(f), function_type) == 1 &&
      std::strcmp(PyCFunction_GET_FUNCTION(f) ? reinterpret_cast<PyCFunctionObject*>(f)->m_ml->ml_name : "", "apply") == 0)
    return call_autograd_function(*this, fn, PyCFunction_GET_SELF(f), std::move(args), std::move(kwargs));
  handled = false;
  return nullptr;
}

}  // namespace tj::tracer
