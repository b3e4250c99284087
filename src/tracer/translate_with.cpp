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
//
// CPU autocast (torch.autocast("cpu"), torch.cpu.amp.autocast) is traced
// too: the tracer keeps the autocast state the traced code is in and
// inserts into the graph the casts eager's autocast would make
// (torch_ops.cpp, autocast_casts), so the graph is plain ATen ops that
// every backend, AOT included, runs as it is (the runtime runs graphs with
// the autocast dispatch key excluded: the casts are already there). The
// real state is never switched while tracing. A block left open at a graph
// break is entered for real after the graph (its real __enter__, a
// `call_method` side effect), so the resume function starts in it and its
// `with` exit (or CPython's exception path) calls the real __exit__; an
// __exit__ traced in a resume function of a block entered that way is
// replayed for real after its graph. The state at frame entry is guarded
// (AUTOCAST_CPU). The autocast family itself (making, entering, leaving,
// the queries, the replayed calls) is autocast.h's.
//
// torch.inference_mode() is traced when its block begins before the graph's
// first tensor op (as `with torch.inference_mode(): return model(x)` or the
// decorator's wrapper): the block's ops are traced under no grad and the
// whole graph runs in c10::InferenceMode (an `inference_mode` side effect
// the runtime honours), so its tensors are inference tensors as eager's.
// Tensor work after the block's exit breaks the graph (it would run in
// inference mode too); so does a block after tensor work of the same graph
// (its resume function is then entered in the real block). A break inside
// the block enters it for real after the graph (the private manager's real
// __enter__, a `call_method` side effect) and the resume function's `with`
// exit leaves it for real.
//
// torch.manual_seed(n) is the other piece of global state traced here:
// called before the graph has drawn a random number, it becomes a
// `manual_seed` side effect that the runtime replays *before* running the
// graph, so the graph's random ops draw from the seeded generator exactly
// as eager's do. After a random op it stays a graph break (the graph would
// have to reseed between two draws). torch.seed() is replayed the same way;
// what it returned is torch.initial_seed() after the graph.
#include <cstring>

#include "graph/op_registry.h"
#include "support/py_lookup.h"
#include "support/tensor_bridge.h"
#include "tracer/autocast.h"
#include "tracer/sizes.h"
#include "tracer/translate_call.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

enum class ManagerKind { none, no_grad, enable_grad, set_grad_enabled, nullcontext, autocast, inference_mode };

ManagerKind manager_class(PyObject* cls) {
  if (!cls || !PyType_Check(cls)) return ManagerKind::none;
  if (cls == cached_module_attr("torch", "no_grad")) return ManagerKind::no_grad;
  if (cls == cached_module_attr("torch", "enable_grad")) return ManagerKind::enable_grad;
  if (cls == cached_module_attr("torch", "set_grad_enabled")) return ManagerKind::set_grad_enabled;
  if (cls == cached_module_attr("contextlib", "nullcontext")) return ManagerKind::nullcontext;
  if (cls == cached_module_attr("torch", "inference_mode")) return ManagerKind::inference_mode;
  // Only torch's own classes: a subclass may do anything in __enter__.
  if (cls == cached_module_attr("torch", "autocast") || cls == cached_module_attr("torch.cpu.amp", "autocast"))
    return ManagerKind::autocast;
  return ManagerKind::none;
}

ManagerKind manager_instance(PyObject* obj) {
  return obj ? manager_class(reinterpret_cast<PyObject*>(Py_TYPE(obj))) : ManagerKind::none;
}

// A new grad-mode manager object of class `cls` that restores `prev` on
// exit (its __init__ is not run: set_grad_enabled's would switch the mode).
PyRef make_grad_manager(PyObject* cls, bool prev, bool mode) {
  auto* type = reinterpret_cast<PyTypeObject*>(cls);
  PyRef empty = PyRef::steal(PyTuple_New(0));
  PyRef obj = PyRef::steal(empty && type->tp_new ? type->tp_new(type, empty.get(), nullptr) : nullptr);
  if (!obj) return {};  // torch's own class failing to allocate: its error is named by the trace
  if (PyObject_SetAttrString(obj.get(), "prev", prev ? Py_True : Py_False) < 0 ||
      PyObject_SetAttrString(obj.get(), "mode", mode ? Py_True : Py_False) < 0)
    return {};
  return obj;
}

// The bound method obj.__exit__ as a constant value (null on failure).
ValuePtr exit_method(PyObject* obj) {
  PyObject* exit = PyObject_GetAttrString(obj, "__exit__");
  if (!exit) {
    clear_expected_error({PyExc_AttributeError});  // none; anything else is named by the trace
    return nullptr;
  }
  return Value::constant_steal(exit);
}

std::optional<bool> constant_bool(const ValuePtr& v) {
  if (!v || !v->is_constant() || !PyBool_Check(v->obj.get())) return std::nullopt;
  return v->obj.get() == Py_True;
}

// torch.inference_mode(mode=True) made in the frame: a real manager (its
// __init__ only stores the mode); only mode True is traced.
ValuePtr make_inference_mode(TraceContext cx, PyObject* cls, const std::vector<ValuePtr>& args,
                             const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  ValuePtr mode_value = args.size() == 1 && kwargs.empty()   ? args[0]
                        : args.empty() && kwargs.size() == 1 && kwargs[0].first == "mode" ? kwargs[0].second
                        : args.empty() && kwargs.empty()     ? Value::constant(Py_True)
                                                             : nullptr;
  if (constant_bool(mode_value) != std::optional<bool>(true))
    return cx.unsupported("torch.inference_mode with a mode other than True"), nullptr;
  PyRef obj = PyRef::steal(PyObject_CallNoArgs(cls));
  if (!obj) return cx.unsupported("cannot make a torch.inference_mode"), nullptr;  // the trace names its error
  return Value::object(obj.get());
}

// BEFORE_WITH on a torch.inference_mode() made in the frame: the bound
// __exit__ of a private manager to leave on the stack, or null + unsupported.
ValuePtr enter_inference_mode(TraceContext cx, const ValuePtr& manager) {
  if (manager->source) return cx.unsupported("with a torch.inference_mode object made outside the frame"), nullptr;
  if (cx.shared().inference.manager)
    return cx.unsupported("a second torch.inference_mode block in one graph (nested, or after the first)"), nullptr;
  for (const graph::Node* n : cx.graph().nodes())
    if (n->kind() == graph::NodeKind::call_function)
      return cx.unsupported("torch.inference_mode block after tensor work of the same graph (those ops would run in "
                            "inference mode)"),
             nullptr;
  PyObject* cls = reinterpret_cast<PyObject*>(Py_TYPE(manager->obj.get()));
  PyRef private_manager = PyRef::steal(PyObject_CallNoArgs(cls));
  ValuePtr exit = private_manager ? exit_method(private_manager.get()) : nullptr;
  if (!exit) return cx.unsupported("cannot enter a torch.inference_mode"), nullptr;
  cx.shared().inference = {Value::constant(private_manager.get()), false, grad_mode_enabled()};
  cx.add_side_effect(SideEffect{SideEffect::Kind::inference_mode, nullptr, "", Value::constant(Py_None)});
  set_grad_mode_enabled(false);
  return exit;
}

// The traced __exit__ of the block enter_inference_mode entered: grad mode
// as it was; later tensor work breaks (call_aten).
ValuePtr exit_inference_mode(TraceContext cx, PyObject* manager) {
  auto& block = cx.shared().inference;
  if (!block.manager || block.closed || block.manager->obj.get() != manager)
    return cx.unsupported("leaving a torch.inference_mode block entered before this graph"), nullptr;
  set_grad_mode_enabled(block.prev_grad);
  block.closed = true;
  return Value::constant(Py_None);
}

}  // namespace

ValuePtr call_context_manager(TraceContext cx, const ValuePtr& fn, const std::vector<ValuePtr>& args,
                              const std::vector<std::pair<std::string, ValuePtr>>& kwargs, bool& handled) {
  handled = false;
  PyObject* f = fn->obj.get();
  if (!f || (fn->kind != ValueKind::callable && fn->kind != ValueKind::constant) || fn->bound_self()) return nullptr;
  if (PyMethod_Check(f)) {
    // __exit__ of a manager made by the tracer (or passed to a resume function).
    PyObject* self = PyMethod_GET_SELF(f);
    ManagerKind kind = manager_instance(self);
    PyRef func_name = PyRef::steal(PyObject_GetAttrString(PyMethod_GET_FUNCTION(f), "__name__"));
    bool is_exit = func_name && PyUnicode_Check(func_name.get()) &&
                   PyUnicode_CompareWithASCIIString(func_name.get(), "__exit__") == 0;
    clear_expected_error({PyExc_AttributeError});  // a function without __name__: not __exit__
    if (kind == ManagerKind::none || !is_exit) return nullptr;
    handled = true;
    if (kind == ManagerKind::autocast) return exit_autocast(cx, self) ? Value::constant(Py_False) : nullptr;
    if (kind == ManagerKind::inference_mode) return exit_inference_mode(cx, self);
    if (kind != ManagerKind::nullcontext) {
      PyRef prev = PyRef::steal(PyObject_GetAttrString(self, "prev"));
      if (!prev || !PyBool_Check(prev.get()))
        return cx.unsupported("__exit__ of a grad-mode context manager that was never entered"), nullptr;
      set_grad_mode_enabled(prev.get() == Py_True);
    }
    return Value::constant(Py_None);
  }
  if (ValuePtr state = autocast_query(cx, f, args, kwargs)) {
    handled = true;
    return state;
  }
  if (f == cached_module_attr("torch.autograd.profiler", "record_function")) {
    // A profiler label (optimizer.step() opens one): nothing a program
    // computes depends on it, so it is a contextlib.nullcontext while no
    // profiler runs. (`with record_function(n) as r` then binds None.)
    handled = true;
    PyObject* profiling = cached_module_attr("torch.autograd", "_profiler_enabled");
    PyRef on = PyRef::steal(profiling ? PyObject_CallNoArgs(profiling) : nullptr);
    bool quiet = on.get() == Py_False;
    clear_unless_interruption();  // asking the profiler is best effort: any failure counts as "it runs"
    if (!quiet) return cx.unsupported("torch.autograd.profiler.record_function while the profiler runs"), nullptr;
    PyObject* null_cls = cached_module_attr("contextlib", "nullcontext");
    PyRef obj = PyRef::steal(null_cls ? PyObject_CallNoArgs(null_cls) : nullptr);
    if (!obj) return cx.unsupported("cannot make a contextlib.nullcontext"), nullptr;  // it names the error
    ValuePtr v = Value::object(obj.get());
    v->items = {Value::constant(Py_None)};
    return v;
  }
  ManagerKind kind = manager_class(f);
  if (kind == ManagerKind::none) return nullptr;
  handled = true;
  switch (kind) {
    case ManagerKind::autocast: return make_autocast(cx, f, args, kwargs);
    case ManagerKind::inference_mode: return make_inference_mode(cx, f, args, kwargs);
    case ManagerKind::no_grad:
    case ManagerKind::enable_grad: {
      if (!args.empty() || !kwargs.empty()) return cx.unsupported("torch.no_grad/enable_grad with arguments"), nullptr;
      PyRef obj = PyRef::steal(PyObject_CallNoArgs(f));
      if (!obj) return cx.unsupported("cannot make a " + std::string(reinterpret_cast<PyTypeObject*>(f)->tp_name)), nullptr;
      return Value::object(obj.get());
    }
    case ManagerKind::set_grad_enabled: {
      // Switches the mode at once (it is also used as a plain call); the
      // object's __exit__ switches it back.
      ValuePtr mode_value = args.size() == 1 && kwargs.empty() ? args[0]
                            : args.empty() && kwargs.size() == 1 && kwargs[0].first == "mode" ? kwargs[0].second
                                                                                               : nullptr;
      std::optional<bool> mode = constant_bool(mode_value);
      if (!mode) return cx.unsupported("torch.set_grad_enabled with a mode not known at trace time"), nullptr;
      PyRef obj = make_grad_manager(f, grad_mode_enabled(), *mode);
      if (!obj) return cx.unsupported("cannot make a torch.set_grad_enabled"), nullptr;
      set_grad_mode_enabled(*mode);
      return Value::object(obj.get());
    }
    case ManagerKind::nullcontext: {
      ValuePtr enter_result = Value::constant(Py_None);
      if (args.size() == 1 && kwargs.empty()) enter_result = args[0];
      else if (args.empty() && kwargs.size() == 1 && kwargs[0].first == "enter_result") enter_result = kwargs[0].second;
      else if (!args.empty() || !kwargs.empty()) return cx.unsupported("contextlib.nullcontext with these arguments"), nullptr;
      PyRef obj = PyRef::steal(PyObject_CallNoArgs(f));
      if (!obj) return cx.unsupported("cannot make a contextlib.nullcontext"), nullptr;
      ValuePtr v = Value::object(obj.get());
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
      PyRef private_manager = make_grad_manager(reinterpret_cast<PyObject*>(Py_TYPE(obj)), grad_mode_enabled(), mode);
      ValuePtr exit = private_manager ? exit_method(private_manager.get()) : nullptr;
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
    case ManagerKind::autocast: {
      std::optional<AutocastState> target = autocast_entry_state(*this, manager);
      if (failed()) return false;
      ValuePtr exit = target ? exit_method(obj) : nullptr;
      if (!exit) return unsupported("cannot enter a torch.autocast enabled for a device other than the CPU");
      enter_autocast(*this, obj, *target);
      push(exit);
      push(Value::constant(Py_None));  // torch.autocast.__enter__ returns None
      return true;
    }
    case ManagerKind::inference_mode: {
      ValuePtr exit = enter_inference_mode(*this, manager);
      if (!exit) return false;
      push(exit);
      push(Value::constant(Py_None));  // inference_mode.__enter__ returns None
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
  ValuePtr enter = get_attr(*this, manager, "__enter__");
  if (!enter) return failed() ? false : unsupported("with an object that has no __enter__");
  ValuePtr exit = get_attr(*this, manager, "__exit__");
  if (!exit) return failed() ? false : unsupported("with an object that has no __exit__");
  ValuePtr entered = call_value(enter, {}, {});
  if (!entered) return false;
  push(exit);
  push(entered);
  return true;
}

namespace {
bool draws_random(const graph::Graph& g) {
  for (const graph::Node* n : g.nodes())
    if (n->kind() == graph::NodeKind::call_function && n->op()->traits.random) return true;
  return false;
}

PyObject* initial_seed_of(PyObject*, PyObject*) {
  PyRef torch = PyRef::steal(PyImport_ImportModule("torch"));
  return torch ? PyObject_CallMethod(torch.get(), "initial_seed", nullptr) : nullptr;  // a new reference
}
PyMethodDef kInitialSeedOf = {"_initial_seed_of", initial_seed_of, METH_O,
                              "tracejit: torch.seed()'s result, read after the graph as torch.initial_seed()"};
}  // namespace

ValuePtr call_torch_seed(TraceContext cx, const std::vector<ValuePtr>& args,
                         const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  if (!args.empty() || !kwargs.empty()) return cx.unsupported("torch.seed() with arguments (it raises)"), nullptr;
  if (draws_random(cx.graph()))
    return cx.unsupported("torch.seed() after a random op of the same graph (it would reseed between two draws)"), nullptr;
  cx.add_side_effect(SideEffect{SideEffect::Kind::seed, nullptr, "", Value::constant(Py_None)});
  auto v = std::make_shared<Value>();
  v->kind = ValueKind::seed_result;
  v->obj = PyRef::borrow(reinterpret_cast<PyObject*>(&PyLong_Type));  // for type() and isinstance()
  v->position = cx.effect_counts().side_effects - 1;
  return v;
}

bool InstructionTranslator::build_seed_output(const ValuePtr& v, OutputTemplate& out) {
  const auto& effects = shared_->side_effects;
  for (size_t i = v->position + 1; i < effects.size(); ++i)
    if (effects[i].kind == SideEffect::Kind::seed || effects[i].kind == SideEffect::Kind::manual_seed)
      return unsupported("the result of a torch.seed() that a later reseed of the same graph follows");
  static PyObject* fn = PyCFunction_New(&kInitialSeedOf, nullptr);
  out.kind = OutputTemplate::Kind::tuple;  // fn(()) after the graph
  out.constant = PyRef::borrow(fn);
  return true;
}

ValuePtr call_manual_seed(TraceContext cx, const std::vector<ValuePtr>& args,
                          const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  ValuePtr seed;
  if (args.size() == 1 && kwargs.empty()) seed = args[0];
  if (args.empty() && kwargs.size() == 1 && kwargs[0].first == "seed") seed = kwargs[0].second;
  if (!seed) return cx.unsupported("torch.manual_seed with other arguments than one seed"), nullptr;
  seed = specialize(cx, seed);
  if (!seed->is_python_constant() || !PyLong_Check(seed->obj.get()))
    return cx.unsupported("torch.manual_seed with a seed that is not an int known at trace time"), nullptr;
  // The generator takes what fits 64 bits, signed or not; anything else raises in CPython.
  int overflow = 0;
  PyLong_AsLongLongAndOverflow(seed->obj.get(), &overflow);
  if (overflow > 0) {
    PyLong_AsUnsignedLongLong(seed->obj.get());
    overflow = PyErr_Occurred() ? 1 : 0;
  }
  clear_expected_error({PyExc_OverflowError});  // what the flag above says
  if (overflow) return cx.unsupported("torch.manual_seed with a seed beyond 64 bits (it raises)"), nullptr;
  if (draws_random(cx.graph()))
    return cx.unsupported("torch.manual_seed after a random op of the same graph (it would reseed between two draws)"),
           nullptr;
  PyObject* generator = cached_module_attr("torch", "default_generator");
  if (!generator) return cx.unsupported("torch.default_generator is missing"), nullptr;
  cx.add_side_effect(SideEffect{SideEffect::Kind::manual_seed, nullptr, "", seed});
  return Value::constant(generator);
}

}  // namespace tj::tracer
