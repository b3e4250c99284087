// CPU autocast's casts during tracing (issue 18, item 19); see torch_ops.h.
#include <set>
#include <string>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/function_schema.h>

#include "graph/op_registry.h"
#include "support/tensor_bridge.h"
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


}  // namespace tj::tracer
