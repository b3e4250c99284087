// `CustomFunc.apply(*args)` of a torch.autograd.Function subclass.
//
// When no tensor argument requires grad, or grad mode is off, eager's
// apply only runs `forward(ctx, *args)` under no_grad and returns what it
// returns (no graph node, no backward): the tracer inlines `forward` the
// same way, with grad mode off, and `ctx` a trace-only object of a small
// class whose methods (save_for_backward, mark_dirty, ...) do nothing and
// whose `needs_input_grad` is all False. Otherwise backward would be the
// user's Python code under autograd's rules: the graph breaks with that
// reason and apply runs in CPython (gradients are eager's).
#include "tracer/py_lookup.h"
#include "tracer/py_str.h"
#include "tracer/tensor_bridge.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

// The ctx class (borrowed, alive for the process), or null.
PyObject* traced_ctx_class() {
  static PyObject* cls = [] {
    PyObject* globals = PyDict_New();
    if (!globals) return static_cast<PyObject*>(nullptr);
    PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
    PyObject* r = PyRun_String(
        "class FunctionCtx:\n"
        "    \"\"\"tracejit: ctx of an autograd.Function forward traced without grad.\"\"\"\n"
        "    def save_for_backward(self, *tensors):\n"
        "        self.saved_tensors = tensors\n"
        "    def mark_dirty(self, *args):\n"
        "        pass\n"
        "    def mark_non_differentiable(self, *args):\n"
        "        pass\n"
        "    def set_materialize_grads(self, value):\n"
        "        pass\n"
        "    def save_for_forward(self, *tensors):\n"
        "        pass\n",
        Py_file_input, globals, globals);
    Py_XDECREF(r);
    PyObject* found = r ? PyDict_GetItemString(globals, "FunctionCtx") : nullptr;
    Py_XINCREF(found);
    Py_DECREF(globals);
    PyErr_Clear();
    return found;
  }();
  return cls;
}

bool any_requires_grad(const ValuePtr& v) {
  if (v->is_tensor()) return v->meta().requires_grad;
  if (v->is_sequence() || v->kind == ValueKind::dict) {
    for (const auto& item : v->items)
      if (any_requires_grad(item)) return true;
  }
  return false;
}

}  // namespace

ValuePtr InstructionTranslator::call_autograd_function(PyObject* function_class, std::vector<ValuePtr> args,
                                                       std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  std::string name = reinterpret_cast<PyTypeObject*>(function_class)->tp_name;
  bool grad = grad_mode_enabled();
  bool needs_grad = false;
  for (const auto& a : args) needs_grad |= any_requires_grad(a);
  for (const auto& [k, a] : kwargs) needs_grad |= any_requires_grad(a);
  if (grad && needs_grad)
    return unsupported("call to " + name + ".apply: an input requires grad, so its backward (user code under "
                       "autograd's rules) runs in CPython"),
           nullptr;
  if (!kwargs.empty()) return unsupported(name + ".apply() takes no keyword arguments (TypeError)"), nullptr;
  PyObject* forward = PyObject_GetAttrString(function_class, "forward");
  PyObject* forward_fn = forward && PyMethod_Check(forward) ? PyMethod_GET_FUNCTION(forward) : forward;
  bool python_forward = forward_fn && PyFunction_Check(forward_fn);
  ValuePtr fn = python_forward ? Value::callable(forward_fn) : nullptr;
  Py_XDECREF(forward);
  PyErr_Clear();
  if (!fn) return unsupported(name + ".forward is not a Python staticmethod"), nullptr;
  PyObject* ctx_class = traced_ctx_class();
  if (!ctx_class) return unsupported("cannot make the ctx of " + name + ".forward"), nullptr;
  std::vector<ValuePtr> none;
  std::vector<std::pair<std::string, ValuePtr>> no_kwargs;
  ValuePtr ctx = construct_object(Value::callable(ctx_class), none, no_kwargs);
  if (!ctx) return nullptr;
  std::vector<ValuePtr> needs_input_grad(args.size(), Value::constant(Py_False));
  if (!store_fresh_object_attr(ctx, "needs_input_grad", Value::sequence(ValueKind::tuple, std::move(needs_input_grad))))
    return nullptr;
  args.insert(args.begin(), ctx);
  // Eager runs forward with grad mode off.
  set_grad_mode_enabled(false);
  ValuePtr result = call_value(fn, std::move(args), {});
  set_grad_mode_enabled(grad);
  return result;
}

}  // namespace tj::tracer
