// `with` blocks: BEFORE_WITH and the context managers the tracer models.
//
// Grad mode (torch.no_grad(), torch.enable_grad(), torch.set_grad_enabled(b))
// is traced, not broken on: while tracing, the real grad mode is the traced
// code's (trace_frame restores the caller's), nodes made under a mode other
// than the frame's entry mode carry a `grad_enabled` tag the interpreter
// honours, and a mode left changed at the end of the graph (a break inside
// the block) becomes a `set_grad_enabled` side effect. The `__exit__` that
// BEFORE_WITH leaves on the stack is a real bound method of a private
// context-manager object whose `prev` is the mode to restore: a constant, so
// a break inside the block passes the same object to the resume function on
// every call (its guard holds), and CPython's own exception path through it
// restores the right mode. contextlib.nullcontext is modelled the same way;
// any other object's __enter__/__exit__ are inlined like Python methods.
#include <cstring>

#include "tracer/py_lookup.h"
#include "tracer/tensor_bridge.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

enum class ManagerKind { none, no_grad, enable_grad, set_grad_enabled, nullcontext };

ManagerKind manager_class(PyObject* cls) {
  if (!cls || !PyType_Check(cls)) return ManagerKind::none;
  if (cls == cached_module_attr("torch", "no_grad")) return ManagerKind::no_grad;
  if (cls == cached_module_attr("torch", "enable_grad")) return ManagerKind::enable_grad;
  if (cls == cached_module_attr("torch", "set_grad_enabled")) return ManagerKind::set_grad_enabled;
  if (cls == cached_module_attr("contextlib", "nullcontext")) return ManagerKind::nullcontext;
  return ManagerKind::none;
}

ManagerKind manager_instance(PyObject* obj) {
  return obj ? manager_class(reinterpret_cast<PyObject*>(Py_TYPE(obj))) : ManagerKind::none;
}

// A new grad-mode manager object of class `cls` that restores `prev` on
// exit (its __init__ is not run: set_grad_enabled's would switch the mode).
PyObject* make_grad_manager(PyObject* cls, bool prev, bool mode) {
  auto* type = reinterpret_cast<PyTypeObject*>(cls);
  PyObject* empty = PyTuple_New(0);
  PyObject* obj = empty && type->tp_new ? type->tp_new(type, empty, nullptr) : nullptr;
  Py_XDECREF(empty);
  if (!obj) {
    PyErr_Clear();
    return nullptr;
  }
  if (PyObject_SetAttrString(obj, "prev", prev ? Py_True : Py_False) < 0 ||
      PyObject_SetAttrString(obj, "mode", mode ? Py_True : Py_False) < 0) {
    Py_DECREF(obj);
    return nullptr;
  }
  return obj;
}

// The bound method obj.__exit__ as a constant value (null on failure).
ValuePtr exit_method(PyObject* obj) {
  PyObject* exit = PyObject_GetAttrString(obj, "__exit__");
  if (!exit) {
    PyErr_Clear();
    return nullptr;
  }
  return Value::constant_steal(exit);
}

std::optional<bool> constant_bool(const ValuePtr& v) {
  if (!v || !v->is_constant() || !PyBool_Check(v->obj.get())) return std::nullopt;
  return v->obj.get() == Py_True;
}

}  // namespace

ValuePtr InstructionTranslator::call_context_manager(const ValuePtr& fn, const std::vector<ValuePtr>& args,
                                                     const std::vector<std::pair<std::string, ValuePtr>>& kwargs,
                                                     bool& handled) {
  handled = false;
  PyObject* f = fn->obj.get();
  if (!f || (fn->kind != ValueKind::callable && fn->kind != ValueKind::constant) || fn->self_value) return nullptr;
  if (PyMethod_Check(f)) {
    // __exit__ of a manager made by the tracer (or passed to a resume function).
    PyObject* self = PyMethod_GET_SELF(f);
    ManagerKind kind = manager_instance(self);
    PyObject* func_name = PyObject_GetAttrString(PyMethod_GET_FUNCTION(f), "__name__");
    bool is_exit = func_name && PyUnicode_Check(func_name) && PyUnicode_CompareWithASCIIString(func_name, "__exit__") == 0;
    Py_XDECREF(func_name);
    PyErr_Clear();
    if (kind == ManagerKind::none || !is_exit) return nullptr;
    handled = true;
    if (kind != ManagerKind::nullcontext) {
      PyObject* prev = PyObject_GetAttrString(self, "prev");
      if (!prev || !PyBool_Check(prev)) {
        Py_XDECREF(prev);
        return unsupported("__exit__ of a grad-mode context manager that was never entered"), nullptr;
      }
      set_grad_mode_enabled(prev == Py_True);
      Py_DECREF(prev);
    }
    return Value::constant(Py_None);
  }
  ManagerKind kind = manager_class(f);
  if (kind == ManagerKind::none) return nullptr;
  handled = true;
  switch (kind) {
    case ManagerKind::no_grad:
    case ManagerKind::enable_grad: {
      if (!args.empty() || !kwargs.empty()) return unsupported("torch.no_grad/enable_grad with arguments"), nullptr;
      PyObject* obj = PyObject_CallNoArgs(f);
      if (!obj) return unsupported("cannot make a " + std::string(reinterpret_cast<PyTypeObject*>(f)->tp_name)), nullptr;
      ValuePtr v = Value::object(obj);
      Py_DECREF(obj);
      return v;
    }
    case ManagerKind::set_grad_enabled: {
      // Switches the mode at once (it is also used as a plain call); the
      // object's __exit__ switches it back.
      ValuePtr mode_value = args.size() == 1 && kwargs.empty() ? args[0]
                            : args.empty() && kwargs.size() == 1 && kwargs[0].first == "mode" ? kwargs[0].second
                                                                                               : nullptr;
      std::optional<bool> mode = constant_bool(mode_value);
      if (!mode) return unsupported("torch.set_grad_enabled with a mode not known at trace time"), nullptr;
      PyObject* obj = make_grad_manager(f, grad_mode_enabled(), *mode);
      if (!obj) return unsupported("cannot make a torch.set_grad_enabled"), nullptr;
      set_grad_mode_enabled(*mode);
      ValuePtr v = Value::object(obj);
      Py_DECREF(obj);
      return v;
    }
    case ManagerKind::nullcontext: {
      ValuePtr enter_result = Value::constant(Py_None);
      if (args.size() == 1 && kwargs.empty()) enter_result = args[0];
      else if (args.empty() && kwargs.size() == 1 && kwargs[0].first == "enter_result") enter_result = kwargs[0].second;
      else if (!args.empty() || !kwargs.empty()) return unsupported("contextlib.nullcontext with these arguments"), nullptr;
      PyObject* obj = PyObject_CallNoArgs(f);
      if (!obj) return unsupported("cannot make a contextlib.nullcontext"), nullptr;
      ValuePtr v = Value::object(obj);
      Py_DECREF(obj);
      v->items = {enter_result};
      return v;
    }
    case ManagerKind::none: break;
  }
  return nullptr;
}

bool InstructionTranslator::op_before_with(const bc::Instruction&) {
  ValuePtr manager = pop();
  PyObject* obj = manager->obj.get();
  ManagerKind kind = manager->kind == ValueKind::object ? manager_instance(obj) : ManagerKind::none;
  switch (kind) {
    case ManagerKind::no_grad:
    case ManagerKind::enable_grad: {
      bool mode = kind == ManagerKind::enable_grad;
      PyObject* private_manager = make_grad_manager(reinterpret_cast<PyObject*>(Py_TYPE(obj)), grad_mode_enabled(), mode);
      ValuePtr exit = private_manager ? exit_method(private_manager) : nullptr;
      Py_XDECREF(private_manager);
      if (!exit) return unsupported("cannot enter a grad-mode context manager");
      set_grad_mode_enabled(mode);
      push(exit);
      push(Value::constant(Py_None));
      return true;
    }
    case ManagerKind::set_grad_enabled: {
      // Its mode was set when it was made; only one made in the frame has
      // a `prev` the tracer knows.
      if (manager->source) return unsupported("with a torch.set_grad_enabled object made outside the frame");
      ValuePtr exit = exit_method(obj);
      if (!exit) return unsupported("cannot enter torch.set_grad_enabled");
      push(exit);
      push(Value::constant(Py_None));
      return true;
    }
    case ManagerKind::nullcontext: {
      if (manager->source) return unsupported("with a contextlib.nullcontext made outside the frame");
      ValuePtr exit = exit_method(obj);
      if (!exit) return unsupported("cannot enter contextlib.nullcontext");
      push(exit);
      push(manager->items.empty() ? Value::constant(Py_None) : manager->items[0]);
      return true;
    }
    case ManagerKind::none: break;
  }
  if (manager->kind != ValueKind::object)
    return unsupported("with a " + manager->type_name() + " (not a context manager the tracer models)");
  // Any other object: its __enter__ and __exit__ are called (inlined) like
  // methods; the bound __exit__ waits on the stack for the end of the block.
  ValuePtr enter = get_attr(manager, "__enter__");
  if (!enter) return failed() ? false : unsupported("with an object that has no __enter__");
  ValuePtr exit = get_attr(manager, "__exit__");
  if (!exit) return failed() ? false : unsupported("with an object that has no __exit__");
  ValuePtr entered = call_value(enter, {}, {});
  if (!entered) return false;
  push(exit);
  push(entered);
  return true;
}

}  // namespace tj::tracer
