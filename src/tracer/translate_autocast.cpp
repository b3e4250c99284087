// CPU autocast during tracing (issue 18, item 19): the casts eager's
// autocast makes of an op's arguments (see torch_ops.h), and the autocast
// family of autocast.h: torch.autocast objects made, entered and left in
// traced code, the state queries, the real calls replayed after the graph.
#include <algorithm>
#include <set>
#include <string>

#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/function_schema.h>

#include "graph/op_registry.h"
#include "support/py_lookup.h"
#include "support/tensor_bridge.h"
#include "tracer/autocast.h"
#include "tracer/torch_ops.h"
#include "tracer/translator.h"

namespace tj::tracer {

namespace {

// What eager's CPU autocast does to an op's tensor arguments: the ops with
// an AutocastCPU kernel (the dispatcher says which) run in the autocast
// dtype (matmuls, convolutions, linear), widest-type (cat, stack,
// index_copy) or float32 (everything else it lists: losses, linear
// algebra, fft, 3-d pooling, ...). Eligible arguments are CPU floating
// tensors other than double; the casts are `aten::_to_copy` nodes (always
// a new tensor, as eager's casts of a different dtype are).
enum class CastPolicy { none, lower_precision, widest, fp32 };

CastPolicy autocast_policy(const graph::OpInfo& op) {
  if (!op.handle().hasKernelForDispatchKey(c10::DispatchKey::AutocastCPU)) return CastPolicy::none;
  static const std::set<std::string> lower = {"conv1d", "conv2d", "conv3d", "_convolution", "conv_tbc",
                                              "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                                              "bmm", "mm", "baddbmm", "addmm", "addbmm", "linear", "matmul"};
  static const std::set<std::string> widest = {"cat", "stack", "index_copy"};
  std::string name = op.schema().name();
  if (name.starts_with("aten::")) name = name.substr(6);
  if (lower.count(name)) return CastPolicy::lower_precision;
  if (widest.count(name)) return CastPolicy::widest;
  return CastPolicy::fp32;
}

bool cast_eligible(const ValuePtr& v) {
  if (!v->is_tensor()) return false;
  const graph::TensorMeta& m = v->meta();
  return m.device.is_cpu() && c10::isFloatingType(m.dtype) && m.dtype != c10::ScalarType::Double;
}

// Applies `f` to every tensor argument (inside lists too); false stops.
template <class F>
bool each_tensor_arg(std::vector<ValuePtr>& args, Kwargs& kwargs, F&& f) {
  auto visit = [&](ValuePtr& v) {
    if (v->is_tensor()) return f(v);
    if (!v->is_sequence()) return true;
    bool has_tensor = false;
    for (const auto& item : v->items) has_tensor |= item->is_tensor();
    if (!has_tensor) return true;
    auto copy = std::make_shared<Value>(*v);  // the user's list is not changed
    copy->source = nullptr;
    for (auto& item : copy->items)
      if (item->is_tensor() && !f(item)) return false;
    v = copy;
    return true;
  };
  for (auto& a : args)
    if (!visit(a)) return false;
  for (auto& kv : kwargs)
    if (!visit(kv.second)) return false;
  return true;
}

}  // namespace

bool autocast_applies(const graph::OpInfo& op) { return autocast_policy(op) != CastPolicy::none; }

bool autocast_casts(InstructionTranslator& t, const graph::OpInfo& op, std::vector<ValuePtr>& args,
                    Kwargs& kwargs) {
  CastPolicy policy = autocast_policy(op);
  if (policy == CastPolicy::none) return true;
  c10::ScalarType target = policy == CastPolicy::fp32 ? c10::ScalarType::Float : t.autocast_state().dtype;
  if (policy == CastPolicy::widest) {
    bool mixed = false;
    each_tensor_arg(args, kwargs, [&](ValuePtr& v) {
      if (!cast_eligible(v)) return true;
      c10::ScalarType d = v->meta().dtype;
      if (d == c10::ScalarType::Float || target == c10::ScalarType::Float) target = c10::ScalarType::Float;
      else if (d != target) mixed = true;
      return true;
    });
    if (mixed) return t.unsupported(op.qualified_name() + " under autocast with two lower-precision dtypes");
  }
  return each_tensor_arg(args, kwargs, [&](ValuePtr& v) {
    if (!cast_eligible(v) || v->meta().dtype == target) return true;
    ValuePtr cast = call_aten(t, "aten::_to_copy", {v}, {{"dtype", Value::constant_steal(dtype_object(target))}});
    if (!cast) return false;
    v = cast;
    return true;
  });
}


namespace {

// The device a torch.autocast object is for ("cpu", "cuda", ...), or "".
std::string autocast_device(PyObject* manager) {
  PyRef device = PyRef::steal(PyObject_GetAttrString(manager, "device"));
  clear_expected_error({PyExc_AttributeError});  // torch.autocast's own attributes: absent on others
  const char* text = device && PyUnicode_Check(device.get()) ? PyUnicode_AsUTF8(device.get()) : nullptr;
  std::string out = text ? text : "";
  clear_expected_error({PyExc_UnicodeError});  // a device name that does not encode: none
  return out;
}

// A torch.autocast for another device that its __init__ disabled (CUDA on
// a build without it, which eager warns about): entering it changes
// nothing a CPU graph computes.
bool disabled_other_device(PyObject* manager) {
  if (autocast_device(manager) == "cpu") return false;
  PyRef enabled = PyRef::steal(PyObject_GetAttrString(manager, "_enabled"));
  clear_expected_error({PyExc_AttributeError});  // as in autocast_device
  return enabled.get() == Py_False;
}

// The state a torch.autocast object switches to, read from the attributes
// its __init__ set; nullopt unless it is a CPU one.
std::optional<AutocastState> autocast_target(PyObject* manager) {
  PyRef device = PyRef::steal(PyObject_GetAttrString(manager, "device"));
  PyRef enabled = PyRef::steal(PyObject_GetAttrString(manager, "_enabled"));
  PyRef dtype = PyRef::steal(PyObject_GetAttrString(manager, "fast_dtype"));
  clear_expected_error({PyExc_AttributeError});  // as in autocast_device
  std::optional<AutocastState> state;
  auto d = dtype ? as_dtype(dtype.get()) : std::nullopt;
  if (device && PyUnicode_Check(device.get()) && PyUnicode_CompareWithASCIIString(device.get(), "cpu") == 0 &&
      enabled && PyBool_Check(enabled.get()) && d)
    state = AutocastState{enabled.get() == Py_True, *d};
  return state;
}

// The state a torch.autocast object entered for real restores on exit.
std::optional<AutocastState> autocast_previous(PyObject* manager) {
  PyRef prev = PyRef::steal(PyObject_GetAttrString(manager, "prev"));
  PyRef dtype = PyRef::steal(PyObject_GetAttrString(manager, "prev_fastdtype"));
  clear_expected_error({PyExc_AttributeError});  // not entered for real
  std::optional<AutocastState> state;
  auto d = dtype ? as_dtype(dtype.get()) : std::nullopt;
  if (prev && PyBool_Check(prev.get()) && d) state = AutocastState{prev.get() == Py_True, *d};
  return state;
}

}  // namespace

AutocastState real_autocast_state() {
  return AutocastState{at::autocast::is_cpu_enabled(), at::autocast::get_autocast_cpu_dtype()};
}

void add_autocast_side_effects(TraceContext cx) {
  // Blocks entered and left inside the graph need nothing real; what is
  // left is, in program order, the exits of blocks entered before the
  // frame and the enters of blocks still open.
  std::vector<std::pair<ValuePtr, bool>> calls;
  for (const auto& call : cx.autocast_calls()) {
    if (!call.second) {
      auto entered = std::find_if(calls.begin(), calls.end(), [&](const auto& c) { return c.second && c.first == call.first; });
      if (entered != calls.end()) {
        calls.erase(entered);
        continue;
      }
    }
    calls.push_back(call);
  }
  for (const auto& [manager, enter] : calls)
    cx.add_side_effect(
        SideEffect{SideEffect::Kind::call_method, nullptr, enter ? "__enter__" : "__exit__", manager});
}

bool exit_autocast(TraceContext cx, PyObject* manager) {
  auto& blocks = cx.autocast_blocks();
  if (!blocks.empty() && blocks.back().first->obj.get() == manager) {
    cx.autocast_state() = blocks.back().second;
    cx.autocast_calls().emplace_back(blocks.back().first, false);
    blocks.pop_back();
    return true;
  }
  for (const auto& block : blocks)
    if (block.first->obj.get() == manager) return cx.unsupported("torch.autocast blocks left out of order");
  // Entered for real before this frame (a resume function's block).
  if (disabled_other_device(manager)) {
    cx.autocast_calls().emplace_back(Value::constant(manager), false);
    return true;
  }
  auto previous = autocast_previous(manager);
  if (!previous) return cx.unsupported("__exit__ of a torch.autocast that was never entered");
  cx.autocast_state() = *previous;
  cx.autocast_calls().emplace_back(Value::constant(manager), false);
  return true;
}

ValuePtr make_autocast(TraceContext cx, PyObject* f, const std::vector<ValuePtr>& args,
                       const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  // Its __init__ only reads the state (and may warn, as eager does).
  for (const auto& a : args)
    if (!a->is_constant()) return cx.unsupported("torch.autocast with an argument not known at trace time"), nullptr;
  for (const auto& kv : kwargs)
    if (!kv.second->is_constant()) return cx.unsupported("torch.autocast with an argument not known at trace time"), nullptr;
  PyRef obj = call_with_constants(f, args, kwargs);
  if (!obj) {
    // A bad argument (RuntimeError from torch, ValueError, TypeError)
    // is why; unsupported() names anything else.
    clear_expected_error({PyExc_RuntimeError, PyExc_ValueError, PyExc_TypeError});
    return cx.unsupported("torch.autocast(...) failed at trace time"), nullptr;
  }
  if (!autocast_target(obj.get()) && !disabled_other_device(obj.get()))
    return cx.unsupported("torch.autocast enabled for a device other than the CPU"), nullptr;
  return Value::object(obj.get());
}

ValuePtr autocast_query(TraceContext cx, PyObject* f, const std::vector<ValuePtr>& args,
                        const std::vector<std::pair<std::string, ValuePtr>>& kwargs) {
  // Autocast-state queries answer the traced code's state.
  if (f == cached_module_attr("torch", "is_autocast_cpu_enabled") && args.empty() && kwargs.empty())
    return Value::constant(cx.autocast_state().enabled ? Py_True : Py_False);
  if (f == cached_module_attr("torch", "get_autocast_cpu_dtype") && args.empty() && kwargs.empty())
    return Value::constant_steal(dtype_object(cx.autocast_state().dtype));
  return nullptr;
}

std::optional<AutocastState> autocast_entry_state(TraceContext cx, const ValuePtr& manager) {
  PyObject* obj = manager->obj.get();
  // One made outside the frame (the `@torch.autocast(...)` decorator's
  // instance, a module attribute) is entered by what its attributes
  // say; they are guarded, not its identity, so a fresh object of the
  // same settings on the next call passes.
  if (manager->source) {
    cx.add_guard(Guard{GuardKind::type_match, manager->source,
                       PyRef::borrow(reinterpret_cast<PyObject*>(Py_TYPE(obj)))});
    for (const char* name : {"device", "_enabled", "fast_dtype"}) {
      PyObject* value = PyObject_GetAttrString(obj, name);
      if (!value) return cx.unsupported("a torch.autocast object without its attributes"), std::nullopt;  // it clears the AttributeError
      cx.add_guard(Guard{GuardKind::const_eq, Source::attr(manager->source, name), PyRef::steal(value)});
    }
  }
  std::optional<AutocastState> target = autocast_target(obj);
  if (!target && disabled_other_device(obj)) target = cx.autocast_state();
  return target;
}

void enter_autocast(TraceContext cx, PyObject* obj, const AutocastState& target) {
  cx.autocast_blocks().emplace_back(Value::constant(obj), cx.autocast_state());
  cx.autocast_calls().emplace_back(cx.autocast_blocks().back().first, true);
  // Entering with enabled=False keeps the dtype, as eager's does not
  // matter then (no casts).
  cx.autocast_state() = target;
}

}  // namespace tj::tracer
