// The pointwise ops the lowering fuses: one emitter per ATen overload
// (docs/adding_an_op.md says how to add one). Each reads its operands
// through the GroupBuilder (fusion_group.h), casts them to the dtype eager
// computes in and appends expressions; -1 when it cannot take the node (an
// argument it does not know, a dtype eager would treat differently).
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/result_type.h>

#include "graph/op_registry.h"
#include "jit/fusion_group.h"

namespace tj::jit {

namespace {

using c10::ScalarType;
using graph::Arg;
using graph::Node;
using graph::TensorMeta;
using loop::Op;


// The dtype eager computes a comparison in: at::result_type of the operands
// (meta tensors keep 0-d vs. dimensioned; numbers are wrapped scalars).
std::optional<ScalarType> promoted(GroupBuilder& b, const Arg& x, const Arg& y) {
  auto as_tensor = [](const Arg& a) -> std::optional<at::Tensor> {
    if (!a.is_node()) return std::nullopt;
    const TensorMeta* m = tensor_meta(a.node());
    if (!m) return std::nullopt;
    return at::empty(m->sizes, at::TensorOptions().dtype(m->dtype).device(at::kMeta));
  };
  auto as_scalar = [](const Arg& a) -> std::optional<c10::Scalar> {
    if (a.is<double>()) return c10::Scalar(a.as<double>());
    if (a.is<int64_t>()) return c10::Scalar(a.as<int64_t>());
    if (a.is<bool>()) return c10::Scalar(a.as<bool>());
    return std::nullopt;
  };
  (void)b;
  auto tx = as_tensor(x), ty = as_tensor(y);
  if (tx && ty) return at::result_type(*tx, *ty);
  if (tx) {
    auto sy = as_scalar(y);
    if (sy) return at::result_type(*tx, *sy);
  }
  if (ty) {
    auto sx = as_scalar(x);
    if (sx) return at::result_type(*sx, *ty);
  }
  return std::nullopt;
}

// unary op computed in the output dtype
Emitter unary(Op o, bool floats_only = true) {
  return [o, floats_only](GroupBuilder& b, const Node& n) {
    ScalarType t = out_dtype(n);
    if ((floats_only && !is_float(t)) || t == ScalarType::Bool || n.args().size() != 1) return -1;
    return b.op(o, t, {b.operand(n.args()[0], t)});
  };
}

// add/sub (Tensor and Scalar overloads, alpha), rsub
Emitter add_sub(Op o, bool reversed = false) {
  return [o, reversed](GroupBuilder& b, const Node& n) {
    ScalarType t = out_dtype(n);
    if (t == ScalarType::Bool || n.args().size() < 2) return -1;
    int x = b.operand(n.args()[0], t);
    int y = b.operand(n.args()[1], t);
    if (const Arg* alpha = arg_at(n, 2, "alpha")) {
      if (!alpha->is<double>() && !alpha->is<int64_t>()) return -1;
      double a = alpha->is<double>() ? alpha->as<double>() : static_cast<double>(alpha->as<int64_t>());
      if (a != 1 && (t == ScalarType::Float || t == ScalarType::Double)) {
        // ATen's add/sub kernel is fmadd(other, ±alpha, self): one rounding
        // (an optimizer's `p.add_(buf, alpha=-lr)` matches eager bit for bit)
        const int scaled = reversed ? x : y, base = reversed ? y : x;
        return b.op(Op::fma, t, {scaled, b.constant(o == Op::sub ? -a : a, t), base});
      }
      if (a != 1) {
        if (reversed) {
          x = b.op(Op::mul, t, {x, b.constant(a, t)});
        } else {
          y = b.op(Op::mul, t, {y, b.constant(a, t)});
        }
      }
    }
    return reversed ? b.op(o, t, {y, x}) : b.op(o, t, {x, y});
  };
}

// a binary op computed in the output dtype (mul, div, maximum, minimum, pow)
Emitter binary(Op o, bool floats_only = false) {
  return [o, floats_only](GroupBuilder& b, const Node& n) {
    ScalarType t = out_dtype(n);
    if (t == ScalarType::Bool || (floats_only && !is_float(t)) || n.args().size() != 2 || !n.kwargs().empty())
      return -1;
    return b.op(o, t, {b.operand(n.args()[0], t), b.operand(n.args()[1], t)});
  };
}

Emitter compare(Op o) {
  return [o](GroupBuilder& b, const Node& n) {
    if (n.args().size() != 2) return -1;
    auto c = promoted(b, n.args()[0], n.args()[1]);
    if (!c || !supported_dtype(*c)) return -1;
    int r = b.op(o, ScalarType::Bool, {b.operand(n.args()[0], *c), b.operand(n.args()[1], *c)});
    return b.cast(r, out_dtype(n));
  };
}

Emitter logical(Op o) {
  return [o](GroupBuilder& b, const Node& n) {
    size_t arity = o == Op::logical_not ? 1 : 2;
    if (n.args().size() != arity) return -1;
    std::vector<int> xs;
    for (const Arg& a : n.args()) xs.push_back(b.operand(a, ScalarType::Bool));
    return b.cast(b.op(o, ScalarType::Bool, xs), out_dtype(n));
  };
}

int pow_scalar(GroupBuilder& b, int x, double p, ScalarType t) {
  if (p == 1) return x;
  if (p == 2) return b.op(Op::mul, t, {x, x});
  if (p == 3) return b.op(Op::mul, t, {b.op(Op::mul, t, {x, x}), x});
  if (p == 0.5) return b.op(Op::sqrt, t, {x});
  if (p == -0.5) return b.op(Op::rsqrt, t, {x});
  if (p == -1) return b.op(Op::reciprocal, t, {x});
  if (p == -2) return b.op(Op::reciprocal, t, {b.op(Op::mul, t, {x, x})});
  return b.op(Op::pow, t, {x, b.constant(p, t)});
}

int sigmoid_of(GroupBuilder& b, int x, ScalarType t) { return b.op(Op::sigmoid, t, {x}); }

// gelu's `approximate` argument: true for "tanh", false for "none" or no
// argument, nullopt for anything else (not lowered).
std::optional<bool> gelu_tanh_form(const Arg* approx) {
  if (!approx || approx->is_none()) return false;
  if (!approx->is<std::string>()) return std::nullopt;
  if (approx->as<std::string>() == "tanh") return true;
  if (approx->as<std::string>() == "none") return false;
  return std::nullopt;
}

int gelu_of(GroupBuilder& b, int x, ScalarType t, bool tanh_approx) {
  int half = b.constant(0.5, t);
  int one = b.constant(1, t);
  int inner;
  if (tanh_approx) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    int x3 = b.op(Op::mul, t, {b.op(Op::mul, t, {x, x}), x});
    int poly = b.op(Op::add, t, {x, b.op(Op::mul, t, {b.constant(0.044715, t), x3})});
    inner = b.op(Op::tanh, t, {b.op(Op::mul, t, {b.constant(0.7978845608028654, t), poly})});
  } else {
    // 0.5 x (1 + erf(x / sqrt 2))
    inner = b.op(Op::erf, t, {b.op(Op::mul, t, {x, b.constant(0.7071067811865476, t)})});
  }
  return b.op(Op::mul, t, {b.op(Op::mul, t, {half, x}), b.op(Op::add, t, {one, inner})});
}

bool none_or(const Arg* a, const std::function<bool(const Arg&)>& ok) { return !a || a->is_none() || ok(*a); }

const std::unordered_map<std::string, Emitter>& emitters() {
  static const std::unordered_map<std::string, Emitter> table = [] {
    std::unordered_map<std::string, Emitter> m;
    for (const char* name : {"aten::add.Tensor", "aten::add.Scalar"}) m[name] = add_sub(Op::add);
    for (const char* name : {"aten::sub.Tensor", "aten::sub.Scalar"}) m[name] = add_sub(Op::sub);
    for (const char* name : {"aten::rsub.Tensor", "aten::rsub.Scalar"}) m[name] = add_sub(Op::sub, true);
    for (const char* name : {"aten::mul.Tensor", "aten::mul.Scalar"}) m[name] = binary(Op::mul);
    for (const char* name : {"aten::div.Tensor", "aten::div.Scalar"}) m[name] = binary(Op::div, true);
    m["aten::maximum"] = binary(Op::maximum);
    m["aten::minimum"] = binary(Op::minimum);
    m["aten::pow.Tensor_Tensor"] = binary(Op::pow, true);
    m["aten::pow.Tensor_Scalar"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (!is_float(t) || n.args().size() != 2) return -1;
      const Arg& p = n.args()[1];
      if (!p.is<double>() && !p.is<int64_t>()) return -1;
      double e = p.is<double>() ? p.as<double>() : static_cast<double>(p.as<int64_t>());
      return pow_scalar(b, b.operand(n.args()[0], t), e, t);
    };
    m["aten::neg"] = unary(Op::neg, false);
    m["aten::abs"] = unary(Op::abs, false);
    m["aten::relu"] = unary(Op::relu, false);
    for (auto [name, op] : std::initializer_list<std::pair<const char*, Op>>{
             {"aten::sigmoid", Op::sigmoid}, {"aten::tanh", Op::tanh}, {"aten::exp", Op::exp},
             {"aten::log", Op::log}, {"aten::sin", Op::sin}, {"aten::cos", Op::cos}, {"aten::sqrt", Op::sqrt},
             {"aten::rsqrt", Op::rsqrt}, {"aten::reciprocal", Op::reciprocal}, {"aten::erf", Op::erf}})
      m[name] = unary(op);
    m["aten::square"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (t == ScalarType::Bool) return -1;
      int x = b.operand(n.args()[0], t);
      return b.op(Op::mul, t, {x, x});
    };
    for (auto [name, op] : std::initializer_list<std::pair<const char*, Op>>{
             {"eq", Op::eq}, {"ne", Op::ne}, {"lt", Op::lt}, {"le", Op::le}, {"gt", Op::gt}, {"ge", Op::ge}}) {
      m[std::string("aten::") + name + ".Tensor"] = compare(op);
      m[std::string("aten::") + name + ".Scalar"] = compare(op);
    }
    m["aten::logical_and"] = logical(Op::logical_and);
    m["aten::logical_or"] = logical(Op::logical_or);
    m["aten::logical_xor"] = logical(Op::logical_xor);
    m["aten::logical_not"] = logical(Op::logical_not);
    m["aten::where.self"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (n.args().size() != 3) return -1;
      return b.op(Op::select, t,
                  {b.operand(n.args()[0], ScalarType::Bool), b.operand(n.args()[1], t), b.operand(n.args()[2], t)});
    };
    m["aten::masked_fill.Scalar"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (n.args().size() != 3) return -1;
      return b.op(Op::select, t,
                  {b.operand(n.args()[1], ScalarType::Bool), b.operand(n.args()[2], t), b.operand(n.args()[0], t)});
    };
    // masked_fill with a 0-dim value tensor (`att.masked_fill(mask, torch.tensor(-1e9))`): the value read as a
    // broadcast operand. Only a value of self's dtype: ATen converts the value's item to self's dtype with an
    // overflow check (a float64 -1e39 into float32 raises) that a cast does not make; a value of more dims is
    // ATen's error (-1: the op runs as ATen's).
    m["aten::masked_fill.Tensor"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (n.args().size() != 3 || !n.args()[2].is_node() || !n.kwargs().empty()) return -1;
      const TensorMeta* v = tensor_meta(n.args()[2].node());
      if (!v || !v->sizes.empty() || v->dtype != t) return -1;
      return b.op(Op::select, t,
                  {b.operand(n.args()[1], ScalarType::Bool), b.operand(n.args()[2], t), b.operand(n.args()[0], t)});
    };
    auto clamp = [](GroupBuilder& b, const Node& n, const Arg* lo, const Arg* hi) {
      ScalarType t = out_dtype(n);
      if (t == ScalarType::Bool) return -1;
      int x = b.operand(n.args()[0], t);
      auto number = [](const Arg* a) { return a && (a->is<double>() || a->is<int64_t>() || a->is_node()); };
      if (lo && !lo->is_none()) {
        if (!number(lo)) return -1;
        x = b.op(Op::maximum, t, {x, b.operand(*lo, t)});
      }
      if (hi && !hi->is_none()) {
        if (!number(hi)) return -1;
        x = b.op(Op::minimum, t, {x, b.operand(*hi, t)});
      }
      return x;
    };
    m["aten::clamp"] = [clamp](GroupBuilder& b, const Node& n) {
      return clamp(b, n, arg_at(n, 1, "min"), arg_at(n, 2, "max"));
    };
    m["aten::clamp.Tensor"] = m["aten::clamp"];
    m["aten::clamp_min"] = [clamp](GroupBuilder& b, const Node& n) { return clamp(b, n, arg_at(n, 1, "min"), nullptr); };
    m["aten::clamp_max"] = [clamp](GroupBuilder& b, const Node& n) { return clamp(b, n, nullptr, arg_at(n, 1, "max")); };
    m["aten::gelu"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (!is_float(t)) return -1;
      const Arg* approx = arg_at(n, 1, "approximate");
      const std::optional<bool> tanh_form = gelu_tanh_form(approx);
      if (!tanh_form) return -1;
      const bool tanh_approx = *tanh_form;
      return gelu_of(b, b.operand(n.args()[0], t), t, tanh_approx);
    };
    m["aten::silu"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (!is_float(t)) return -1;
      int x = b.operand(n.args()[0], t);
      return b.op(Op::mul, t, {x, sigmoid_of(b, x, t)});
    };
    m["aten::threshold_backward"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (n.args().size() != 3 || t == ScalarType::Bool) return -1;
      auto st = b.dtype_of(n.args()[1]);
      if (!st) return -1;
      int below = b.op(Op::le, ScalarType::Bool, {b.operand(n.args()[1], *st), b.operand(n.args()[2], *st)});
      return b.op(Op::select, t, {below, b.constant(0, t), b.operand(n.args()[0], t)});
    };
    // leaky_relu(x, slope) and its backward as ATen's CPU kernels compute them: `x > 0 ? x : x * slope`,
    // `x > 0 ? grad : grad * slope` (a NaN x takes the second branch in both). ATen rejects a backward with
    // self_is_result and a negative slope (in-place leaky_relu's): -1, its error.
    m["aten::leaky_relu"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      const Arg* slope = arg_at(n, 1, "negative_slope");
      if (!is_float(t) || n.args().size() > 2 || !n.kwargs().empty() ||
          (slope && !slope->is<double>() && !slope->is<int64_t>()))
        return -1;
      double a = !slope ? 0.01 : slope->is<double>() ? slope->as<double>() : static_cast<double>(slope->as<int64_t>());
      int x = b.operand(n.args()[0], t);
      int positive = b.op(Op::gt, ScalarType::Bool, {x, b.constant(0, t)});
      return b.op(Op::select, t, {positive, x, b.op(Op::mul, t, {x, b.constant(a, t)})});
    };
    m["aten::leaky_relu_backward"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (!is_float(t) || n.args().size() != 4 || !n.kwargs().empty()) return -1;
      const Arg& slope = n.args()[2];
      const Arg& self_is_result = n.args()[3];
      if ((!slope.is<double>() && !slope.is<int64_t>()) || !self_is_result.is<bool>()) return -1;
      double a = slope.is<double>() ? slope.as<double>() : static_cast<double>(slope.as<int64_t>());
      if (self_is_result.as<bool>() && a < 0) return -1;
      int g = b.operand(n.args()[0], t), x = b.operand(n.args()[1], t);
      int positive = b.op(Op::gt, ScalarType::Bool, {x, b.constant(0, t)});
      return b.op(Op::select, t, {positive, g, b.op(Op::mul, t, {g, b.constant(a, t)})});
    };
    // gelu_backward(grad, x, approximate) in the order of ATen's CPU kernel (GeluBackwardKernelImpl):
    // none: grad * (cdf + x * pdf), cdf = 0.5 (1 + erf(x / sqrt 2)), pdf = exp(-x^2 / 2) / sqrt(2 pi);
    // tanh: grad * (0.5 (1 + th) + 0.5 x (1 - th^2) beta (1 + 3 kappa x^2)), th = tanh(beta (x + kappa x^3)).
    m["aten::gelu_backward"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (!is_float(t) || n.args().size() < 2) return -1;
      const Arg* approx = arg_at(n, 2, "approximate");
      const std::optional<bool> tanh_form = gelu_tanh_form(approx);
      if (!tanh_form) return -1;
      const bool tanh_approx = *tanh_form;
      // float16/bfloat16: ATen's vector kernel rounds its constants and every step to the dtype: its op
      if (t != ScalarType::Float && t != ScalarType::Double) return -1;
      int g = b.operand(n.args()[0], t), x = b.operand(n.args()[1], t);
      int half = b.constant(0.5, t), one = b.constant(1, t);
      if (!tanh_approx) {
        int cdf = b.op(Op::mul, t, {half, b.op(Op::add, t, {one, b.op(Op::erf, t, {b.op(Op::mul, t,
                                                                                       {x, b.constant(M_SQRT1_2, t)})})})});
        int x2 = b.op(Op::mul, t, {b.op(Op::mul, t, {x, x}), b.constant(-0.5, t)});
        int pdf = b.op(Op::mul, t, {b.constant(M_2_SQRTPI * M_SQRT1_2 * 0.5, t), b.op(Op::exp, t, {x2})});
        return b.op(Op::mul, t, {g, b.op(Op::add, t, {cdf, b.op(Op::mul, t, {x, pdf})})});
      }
      const double beta = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
      int x_sq = b.op(Op::mul, t, {x, x});
      int x_cube = b.op(Op::mul, t, {x_sq, x});
      int inner = b.op(Op::mul, t, {b.constant(beta, t),
                                    b.op(Op::add, t, {x, b.op(Op::mul, t, {b.constant(kappa, t), x_cube})})});
      int th = b.op(Op::tanh, t, {inner});
      int left = b.op(Op::mul, t, {half, x});
      int left_derivative = b.op(Op::mul, t, {half, b.op(Op::add, t, {one, th})});
      int tanh_derivative = b.op(Op::sub, t, {one, b.op(Op::mul, t, {th, th})});
      int inner_derivative = b.op(Op::mul, t, {b.constant(beta, t),
                                               b.op(Op::add, t, {one, b.op(Op::mul, t, {b.constant(3 * kappa, t), x_sq})})});
      int right_derivative = b.op(Op::mul, t, {b.op(Op::mul, t, {left, tanh_derivative}), inner_derivative});
      return b.op(Op::mul, t, {g, b.op(Op::add, t, {left_derivative, right_derivative})});
    };
    m["aten::sigmoid_backward"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (!is_float(t) || n.args().size() != 2) return -1;
      int g = b.operand(n.args()[0], t), y = b.operand(n.args()[1], t);
      int one_minus = b.op(Op::sub, t, {b.constant(1, t), y});
      return b.op(Op::mul, t, {b.op(Op::mul, t, {g, one_minus}), y});
    };
    m["aten::tanh_backward"] = [](GroupBuilder& b, const Node& n) {
      ScalarType t = out_dtype(n);
      if (!is_float(t) || n.args().size() != 2) return -1;
      int g = b.operand(n.args()[0], t), y = b.operand(n.args()[1], t);
      return b.op(Op::mul, t, {g, b.op(Op::sub, t, {b.constant(1, t), b.op(Op::mul, t, {y, y})})});
    };
    m["aten::_to_copy"] = [](GroupBuilder& b, const Node& n) {
      if (n.args().size() != 1) return -1;
      for (const auto& [key, value] : n.kwargs()) {
        bool ok = key == "dtype" || key == "memory_format" || key == "non_blocking" ||
                  (key == "layout" && (value.is_none() || value.is<c10::Layout>())) ||
                  (key == "device" && (value.is_none() || (value.is<c10::Device>() && value.as<c10::Device>().is_cpu()))) ||
                  (key == "pin_memory" && (value.is_none() || (value.is<bool>() && !value.as<bool>())));
        if (!ok) return -1;
      }
      return b.operand(n.args()[0], out_dtype(n));
    };
    m["aten::clone"] = [](GroupBuilder& b, const Node& n) { return b.operand(n.args()[0], out_dtype(n)); };
    m["aten::addcmul"] = [](GroupBuilder& b, const Node& n) {
      // self + value * tensor1 * tensor2, multiplied in that order as ATen
      // does; ATen's CPU kernel (built with FP contraction) adds the last
      // product with one rounding: an fma for float32/float64.
      ScalarType t = out_dtype(n);
      if (n.args().size() < 3 || t == ScalarType::Bool) return -1;
      int product = b.operand(n.args()[1], t);
      if (const Arg* value = arg_at(n, 3, "value")) {
        if (!value->is<double>() && !value->is<int64_t>()) return -1;
        double v = value->is<double>() ? value->as<double>() : static_cast<double>(value->as<int64_t>());
        if (v != 1) product = b.op(Op::mul, t, {b.constant(v, t), product});
      }
      if (t == ScalarType::Float || t == ScalarType::Double)
        return b.op(Op::fma, t, {product, b.operand(n.args()[2], t), b.operand(n.args()[0], t)});
      product = b.op(Op::mul, t, {product, b.operand(n.args()[2], t)});
      return b.op(Op::add, t, {b.operand(n.args()[0], t), product});
    };
    m["aten::fill.Scalar"] = [](GroupBuilder& b, const Node& n) {
      if (n.args().size() != 2 || !none_or(&n.args()[1], [](const Arg& a) { return !a.is_node(); })) return -1;
      return b.operand(n.args()[1], out_dtype(n));
    };
    return m;
  }();
  return table;
}

}  // namespace

// The emitter for `node` if it is a pointwise op on supported CPU tensors.
const Emitter* pointwise_emitter(const Node* node) {
  if (node->kind() != graph::NodeKind::call_function || node->op()->is_getitem) return nullptr;
  if (!tensor_meta(node)) return nullptr;
  auto it = emitters().find(node->op()->qualified_name());
  if (it == emitters().end()) return nullptr;
  for (const Node* in : node->inputs())
    if (!tensor_meta(in)) return nullptr;
  return &it->second;
}


}  // namespace tj::jit
