// A Python number from Tensor.item()/.tolist() (symbolic_numbers.cpp) as
// an operand of a tensor op: eager passes the Python scalar, which takes
// part in type promotion as a wrapped number (it does not promote the
// tensors: `int_tensor + 2.5` is float32, `float32_tensor * 2.5` float32)
// and is read in the op's common dtype. The graph holds the number as a
// 0-d float64/int64/bool node; passed as it is, that node would promote
// like a tensor (float64 results). So the number is cast to the dtype
// eager reads the scalar in, where the cast gives eager's value; where it
// cannot (a Half/BFloat16 op, whose kernels read scalars in float or
// refuse them; a narrow int dtype; a checked conversion that raises in
// eager when the float overflows; pow's special-cased exponents; an op
// whose reading of a scalar is not modelled) the graph breaks there and
// CPython runs the op with the Python number.
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/empty.h>

#include <string_view>
#include <unordered_map>

#include "tracer/torch_ops.h"
#include "tracer/torch_ops_support.h"

namespace tj::tracer {

namespace {

// How an op reads a scalar operand. `wrapped`: as a wrapped-number tensor
// in TensorIterator's common dtype, unchecked (arithmetic, comparisons:
// `ones(2) * 1e300` is inf). `checked`: converted with c10's overflow
// check (where, clamp, masked_fill, ...: `ones(2).clamp(max=1e300)`
// raises). `self_dtype`: checked, in the first tensor's dtype (a fill
// value) rather than the common one.
enum class ScalarRead { wrapped, checked, self_dtype };

const std::unordered_map<std::string_view, ScalarRead>& scalar_reads() {
  using R = ScalarRead;
  static const std::unordered_map<std::string_view, ScalarRead> reads = {
      {"add", R::wrapped},         {"sub", R::wrapped},       {"subtract", R::wrapped},     {"mul", R::wrapped},
      {"multiply", R::wrapped},    {"div", R::wrapped},       {"divide", R::wrapped},       {"true_divide", R::wrapped},
      {"floor_divide", R::wrapped}, {"remainder", R::wrapped}, {"fmod", R::wrapped},        {"rsub", R::wrapped},
      {"eq", R::wrapped},          {"ne", R::wrapped},        {"lt", R::wrapped},           {"le", R::wrapped},
      {"gt", R::wrapped},          {"ge", R::wrapped},        {"greater", R::wrapped},      {"less", R::wrapped},
      {"greater_equal", R::wrapped}, {"less_equal", R::wrapped}, {"not_equal", R::wrapped},
      {"where", R::checked},       {"clamp", R::checked},     {"clip", R::checked},         {"clamp_min", R::checked},
      {"clamp_max", R::checked},   {"lerp", R::checked},      {"masked_fill", R::self_dtype}, {"fill", R::self_dtype},
      {"index_fill", R::self_dtype}, {"full_like", R::self_dtype},
  };
  return reads;
}

bool is_number_arg(const ValuePtr& v) { return is_python_number(v) && !v->number()->dynamic_int; }
bool is_real_tensor(const ValuePtr& v) { return v && v->is_tensor() && !is_python_number(v); }

// A Python scalar of the number's type (its value does not matter to promotion).
c10::Scalar example_scalar(const ValuePtr& number) {
  const c10::ScalarType d = number->meta().dtype;
  if (d == c10::ScalarType::Bool) return c10::Scalar(true);
  if (c10::isIntegralType(d, false)) return c10::Scalar(int64_t{1});
  return c10::Scalar(1.0);
}

std::optional<c10::Scalar> constant_scalar(const ValuePtr& v) {
  if (!v || !v->is_constant()) return std::nullopt;
  PyObject* o = v->obj.get();
  if (PyBool_Check(o)) return c10::Scalar(o == Py_True);
  if (PyLong_CheckExact(o)) return c10::Scalar(int64_t{1});
  if (PyFloat_CheckExact(o)) return c10::Scalar(1.0);
  return std::nullopt;
}

}  // namespace

c10::ScalarType scalar_common_dtype(const std::vector<ValuePtr>& operands) {
  at::native::ResultTypeState state{};
  for (const ValuePtr& v : operands) {
    if (!v) continue;
    if (is_python_number(v)) {
      state = at::native::update_result_type_state(example_scalar(v), state);
    } else if (v->is_tensor()) {
      const graph::TensorMeta& m = v->meta();
      at::Tensor like = at::empty(std::vector<int64_t>(m.sizes.size(), 1), at::TensorOptions().dtype(m.dtype).device(c10::kMeta));
      state = at::native::update_result_type_state(like, state);
    } else if (auto s = constant_scalar(v)) {
      state = at::native::update_result_type_state(*s, state);
    }
  }
  return at::native::result_type(state);
}

ValuePtr number_read_as(InstructionTranslator& t, const ValuePtr& number, c10::ScalarType dtype, bool checked,
                        const std::string& what) {
  const c10::ScalarType nd = number->meta().dtype;
  const bool float_number = c10::isFloatingType(nd);
  const char* why = nullptr;
  if (dtype == c10::ScalarType::Half || dtype == c10::ScalarType::BFloat16 || c10::isComplexType(dtype))
    why = "reads it in a reduced-precision or complex dtype (eager's kernels read such scalars differently or refuse them)";
  else if (c10::isIntegralType(dtype, true) && dtype != c10::ScalarType::Long && dtype != c10::ScalarType::Bool)
    why = "reads it in a narrow int dtype (eager's conversion may wrap or raise)";
  else if (dtype == c10::ScalarType::Bool && nd != c10::ScalarType::Bool)
    why = "reads it as a bool";
  else if (float_number && c10::isIntegralType(dtype, true))
    why = "reads a float in an int dtype (eager's conversion raises for nan, inf and out-of-range values)";
  else if (checked && float_number && dtype != c10::ScalarType::Double && !t.in_optimizer_code())
    why = "converts it with eager's overflow check (a float beyond the dtype's range raises in eager)";
  if (why)
    return t.unsupported("a Python number from Tensor.item() as an argument of " + what + ", which " + why +
                         " (data-dependent)"),
           nullptr;
  if (nd == dtype) return number;
  return call_aten(t, "aten::_to_copy", {number}, {{"dtype", dtype_constant(dtype)}});
}

bool numbers_as_operands(InstructionTranslator& t, const std::string& aten_name, std::vector<ValuePtr>& args,
                         Kwargs& kwargs) {
  bool any = false;
  for (const ValuePtr& a : args) any = any || is_number_arg(a);
  for (const auto& kv : kwargs) any = any || is_number_arg(kv.second);
  if (!any) return true;
  std::string_view base = std::string_view(aten_name).substr(aten_name.rfind(':') + 1);
  if (base.size() > 1 && base.back() == '_') base.remove_suffix(1);
  auto found = scalar_reads().find(base);
  // torch.optim's own numbers (bias corrections, step sizes) keep the
  // graph's arithmetic there (optimizer steps were checked against eager).
  if (found == scalar_reads().end() && t.in_optimizer_code()) return true;
  if (found == scalar_reads().end())
    return t.unsupported("a Python number from Tensor.item() as an argument of " + aten_name +
                         " (eager passes a Python scalar; how this op reads one is not modelled: data-dependent)"),
           false;
  // The operands of the promotion: all but where's condition, masked_fill's
  // mask, index_fill's dim and index.
  std::vector<ValuePtr> operands;
  for (size_t i = 0; i < args.size(); ++i)
    if (!(base == "where" && i == 0) && !((base == "masked_fill" || base == "index_fill") && i > 0 && i + 1 < args.size()))
      operands.push_back(args[i]);
  for (const auto& [k, v] : kwargs)
    if (k != "condition" && k != "mask" && k != "index" && k != "dim" && k != "dtype") operands.push_back(v);
  const ScalarRead read = found->second;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  if (read == ScalarRead::self_dtype) {
    const ValuePtr* self = nullptr;
    for (const ValuePtr& a : args)
      if (!self && is_real_tensor(a)) self = &a;
    for (const auto& [k, v] : kwargs)
      if (k == "dtype" && v->is_constant() && v->obj.get() != Py_None) return t.unsupported("a Python number from Tensor.item() as " + aten_name + "'s value with a dtype (data-dependent)"), false;
    if (!self) return t.unsupported("a Python number from Tensor.item() as an argument of " + aten_name + " (data-dependent)"), false;
    dtype = (*self)->meta().dtype;
  } else {
    dtype = scalar_common_dtype(operands);
  }
  auto convert = [&](ValuePtr& v) {
    if (!is_number_arg(v)) return true;
    v = number_read_as(t, v, dtype, read != ScalarRead::wrapped, aten_name);
    return v != nullptr;
  };
  for (ValuePtr& a : args)
    if (!convert(a)) return false;
  for (auto& kv : kwargs)
    if (!convert(kv.second)) return false;
  return true;
}

}  // namespace tj::tracer
