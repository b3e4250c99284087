// `CustomFunc.apply(*args)` of a torch.autograd.Function subclass.
//
// When no tensor argument requires grad, or grad mode is off, eager's apply
// only runs `forward(ctx, *args)` under no_grad and returns what it returns
// (no graph node, no backward): the tracer inlines `forward` the same way,
// with grad mode off, and `ctx` a trace-only object whose methods record
// what they are told (the no-grad path ignores the records).
//
// With grad (translate_autograd_function_grad.cpp), forward is inlined the
// same way, backward is traced at the call into a body graph, and one
// `autograd_function` node (graph/autograd_function.h) attaches them.
#include "tracer/autograd_function_ctx.h"
#include "support/py_lookup.h"
#include "tracer/py_str.h"
#include "support/tensor_bridge.h"
#include "tracer/translator.h"

namespace tj::tracer {

PyObject* traced_ctx_class() {
  static PyObject* cls = [] {
    PyRef globals = PyRef::steal(PyDict_New());
    if (!globals) return static_cast<PyObject*>(nullptr);
    PyDict_SetItemString(globals.get(), "__builtins__", PyEval_GetBuiltins());
    PyRef r = PyRef::steal(PyRun_String(
        "class FunctionCtx:\n"
        "    \"\"\"tracejit: ctx of an autograd.Function forward being traced.\"\"\"\n"
        "    saved_tensors = ()\n"
        "    _tj_non_differentiable = ()\n"
        "    _tj_dirty = ()\n"
        "    _tj_materialize_grads = True\n"
        "    def save_for_backward(self, *tensors):\n"
        "        self.saved_tensors = tensors\n"
        "    @property\n"
        "    def saved_variables(self):\n"
        "        return self.saved_tensors\n"
        "    def mark_dirty(self, *args):\n"
        "        self._tj_dirty = args\n"
        "    def mark_non_differentiable(self, *args):\n"
        "        self._tj_non_differentiable = self._tj_non_differentiable + args\n"
        "    def set_materialize_grads(self, value):\n"
        "        self._tj_materialize_grads = value\n"
        "    def save_for_forward(self, *tensors):\n"
        "        pass\n",
        Py_file_input, globals.get(), globals.get()));
    PyRef found = r ? PyRef::borrow(PyDict_GetItemString(globals.get(), "FunctionCtx")) : PyRef();
    PyErr_Clear();  // once per process, best effort: without FunctionCtx no ctx is modelled
    return found.release();  // kept for the process
  }();
  return cls;
}

PyObject* plain_static_function(PyObject* function_class, const char* name) {
  PyRef attr = PyRef::steal(PyObject_GetAttrString(function_class, name));
  PyObject* fn = attr && PyMethod_Check(attr.get()) ? PyMethod_GET_FUNCTION(attr.get()) : attr.get();
  bool plain = fn && PyFunction_Check(fn);  // fn stays alive without attr: the class keeps it
  clear_expected_error({PyExc_AttributeError});  // not defined: not a plain one
  return plain ? fn : nullptr;
}

ValuePtr call_autograd_function(TraceContext cx, const ValuePtr& apply_fn, PyObject* function_class,
                                std::vector<ValuePtr> args, std::vector<std::pair<std::string, ValuePtr>> kwargs) {
  std::string name = reinterpret_cast<PyTypeObject*>(function_class)->tp_name;
  // Eager's apply makes a graph node when grad mode is on and a tensor
  // argument (not one inside a container) requires grad.
  bool needs_grad = false;
  for (const auto& a : args) needs_grad |= a->is_tensor() && a->meta().requires_grad;
  if (!kwargs.empty()) return cx.unsupported(name + ".apply() takes no keyword arguments (TypeError)"), nullptr;
  PyObject* forward_fn = plain_static_function(function_class, "forward");
  if (!forward_fn) return cx.unsupported(name + ".forward is not a Python staticmethod"), nullptr;
  if (apply_fn && apply_fn->source)
    cx.add_guard(Guard{GuardKind::id_match, Source::attr(Source::attr(apply_fn->source, "__self__"), "forward"),
                       PyRef::borrow(forward_fn)});
  if (grad_mode_enabled() && needs_grad) return call_autograd_function_with_grad(cx, apply_fn, function_class, std::move(args));
  ValuePtr ctx = make_autograd_ctx(cx, args, /*real_needs_input_grad=*/false);
  if (!ctx) return nullptr;
  args.insert(args.begin(), ctx);
  // Eager runs forward with grad mode off.
  bool grad = grad_mode_enabled();
  set_grad_mode_enabled(false);
  ValuePtr result = cx.call_value(Value::callable(forward_fn), std::move(args), {});
  set_grad_mode_enabled(grad);
  return result;
}

ValuePtr make_autograd_ctx(TraceContext cx, const std::vector<ValuePtr>& args, bool real_needs_input_grad) {
  PyObject* ctx_class = traced_ctx_class();
  if (!ctx_class) return cx.unsupported("cannot make the ctx of an autograd.Function"), nullptr;
  std::vector<ValuePtr> none;
  std::vector<std::pair<std::string, ValuePtr>> no_kwargs;
  ValuePtr ctx = construct_object(cx, Value::callable(ctx_class), none, no_kwargs);
  if (!ctx) return nullptr;
  std::vector<ValuePtr> needs_input_grad;
  for (const auto& a : args)
    needs_input_grad.push_back(
        Value::constant(real_needs_input_grad && a->is_tensor() && a->meta().requires_grad ? Py_True : Py_False));
  if (!store_fresh_object_attr(cx, ctx, "needs_input_grad", Value::sequence(ValueKind::tuple, std::move(needs_input_grad))))
    return nullptr;
  return ctx;
}

}  // namespace tj::tracer
