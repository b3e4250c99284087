// The arguments LibTorch 1.13's meta kernels get wrong, made as the CPU
// kernels make them: the copies of operands a TensorIterator op promotes,
// the dtype a factory infers from its Scalars (see meta_rules.h; the shape
// rules of meta_rules.cpp read promoted_copy too).
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <ATen/core/function_schema.h>
#include <ATen/native/TypeProperties.h>
#include <c10/core/DefaultDtype.h>

#include "graph/meta_rules.h"
#include "graph/op_registry.h"

namespace tj::graph::detail {

// The CPU's copy of an operand a TensorIterator op promotes to `common`
// (TensorIteratorBase::compute_types: `input.to(common)`); the output's
// layout follows the copies. A copy of a dense tensor keeps its strides, so
// only the others are made; meta kernels skip the copies.
at::Tensor promoted_copy(const at::Tensor& t, c10::ScalarType common) {
  return t.scalar_type() != common && !t.is_non_overlapping_and_dense() ? t.to(common) : t;
}

// See meta_rules.h.
void promote_like_cpu(const OpInfo& op, std::vector<c10::IValue>& s) {
  // TensorIterator ops built with promote_inputs_to_common_dtype (binary,
  // comparison and ternary ops, clamp with tensor bounds); where promotes
  // self and other (not the condition) with explicit copies, the same rule
  static const std::set<std::string, std::less<>> kPromoting = {
      "add", "sub", "rsub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "maximum",
      "minimum", "fmax", "fmin", "atan2", "hypot", "copysign", "xlogy", "logaddexp", "logaddexp2", "nextafter",
      "eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor", "__and__", "__or__",
      "__xor__", "clamp", "clamp_min", "clamp_max", "addcmul", "addcdiv", "where"};
  // ... that also promote integer inputs to the default float type
  static const std::set<std::string, std::less<>> kToFloat = {"true_divide", "atan2", "copysign", "xlogy"};
  const std::string base = op.base_name();
  if (!kPromoting.count(base)) return;
  const size_t first = base == "where" ? 1 : 0;
  if (s.size() < first + 2 || !s[first].isTensor()) return;
  // the operands: every tensor argument, and a number right after the first
  // (a binary op's Scalar overload); alpha, value and the like do not count
  std::vector<size_t> operands;
  at::native::ResultTypeState state{};
  for (size_t i = first; i < s.size(); ++i) {
    if (s[i].isTensor() && s[i].toTensor().defined()) {
      state = at::native::update_result_type_state(s[i].toTensor(), state);
      operands.push_back(i);
    } else if (i == first + 1 && s[i].isScalar()) {
      state = at::native::update_result_type_state(s[i].toScalar(), state);
    }
  }
  c10::ScalarType common = at::native::result_type(state);
  const bool true_division = (base == "div" && (s.size() < 3 || s[2].isNone())) || kToFloat.count(base);
  if (true_division && c10::isIntegralType(common, /*includeBool=*/true)) common = c10::get_default_dtype_as_scalartype();
  for (size_t i : operands) s[i] = promoted_copy(s[i].toTensor(), common);
}

// `full((2,), True)` is float on meta, `arange(3.0)` int64: the dtype the
// CPU kernel infers is passed instead (meta_rules.h).
void infer_factory_dtype(const OpInfo& op, std::vector<c10::IValue>& stack) {
  std::string base = op.base_name();
  if (base != "full" && base != "arange") return;
  const c10::FunctionSchema& schema = op.schema();
  auto dtype = schema.argumentIndexWithName("dtype");
  if (!dtype || !stack.at(*dtype).isNone()) return;
  auto scalar = [&](const char* name) -> std::optional<c10::Scalar> {
    auto i = schema.argumentIndexWithName(name);
    if (!i || !stack.at(*i).isScalar()) return std::nullopt;
    return stack[*i].toScalar();
  };
  c10::ScalarType default_dtype = c10::typeMetaToScalarType(c10::get_default_dtype());
  std::optional<c10::ScalarType> inferred;
  if (base == "full") {
    auto fill = scalar("fill_value");
    if (!fill) return;
    if (fill->isBoolean()) inferred = c10::ScalarType::Bool;
    else if (fill->isIntegral(false)) inferred = c10::ScalarType::Long;
    else if (fill->isComplex()) inferred = c10::toComplexType(default_dtype);
  } else {
    bool integral = true;
    for (const char* name : {"start", "end", "step"}) {
      auto v = scalar(name);
      if (schema.argumentIndexWithName(name) && !v) return;
      integral &= !v || v->isIntegral(/*includeBool=*/true);
    }
    inferred = integral ? c10::ScalarType::Long : default_dtype;
  }
  if (inferred) stack[*dtype] = c10::IValue(static_cast<int64_t>(*inferred));
}
}  // namespace tj::graph::detail
