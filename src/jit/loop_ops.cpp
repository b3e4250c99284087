// The table of loop-IR ops; see loop_ops.h.
#include "jit/loop_ops.h"

#include <array>
#include <cassert>

namespace tj::jit::loop {

namespace {

using namespace dtypes;
using c10::ScalarType;

constexpr OpKind L = OpKind::leaf, P = OpKind::pointwise, R = OpKind::reduction;
constexpr ResultRule same = ResultRule::computed, boolean = ResultRule::boolean, index = ResultRule::index,
                     given = ResultRule::given;
constexpr bool wraps = true, no = false;
constexpr Cost cheap = Cost::cheap, costly = Cost::transcendental;

// clang-format off
constexpr std::array kOps = {
//       op                 name             kind arity dtypes     result   NaN                 ints   cost    combine           identity           condition
  OpInfo{Op::load,          "load",          L, 0, kAll,      given,   NanRule::none,      no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::constant,      "constant",      L, 0, kAll,      given,   NanRule::none,      no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::cast,          "cast",          P, 1, kAll,      given,   NanRule::ieee,      no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::neg,           "neg",           P, 1, kNumbers,  same,    NanRule::ieee,      wraps, cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::abs,           "abs",           P, 1, kNumbers,  same,    NanRule::ieee,      wraps, cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::relu,          "relu",          P, 1, kNumbers,  same,    NanRule::ieee,      no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::sigmoid,       "sigmoid",       P, 1, kFloats,   same,    NanRule::ieee,      no,    costly, Combine::none,    Identity::none,    no},
  OpInfo{Op::tanh,          "tanh",          P, 1, kFloats,   same,    NanRule::ieee,      no,    costly, Combine::none,    Identity::none,    no},
  OpInfo{Op::exp,           "exp",           P, 1, kFloats,   same,    NanRule::ieee,      no,    costly, Combine::none,    Identity::none,    no},
  OpInfo{Op::log,           "log",           P, 1, kFloats,   same,    NanRule::ieee,      no,    costly, Combine::none,    Identity::none,    no},
  OpInfo{Op::sin,           "sin",           P, 1, kFloats,   same,    NanRule::ieee,      no,    costly, Combine::none,    Identity::none,    no},
  OpInfo{Op::cos,           "cos",           P, 1, kFloats,   same,    NanRule::ieee,      no,    costly, Combine::none,    Identity::none,    no},
  OpInfo{Op::sqrt,          "sqrt",          P, 1, kFloats,   same,    NanRule::ieee,      no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::rsqrt,         "rsqrt",         P, 1, kFloats,   same,    NanRule::ieee,      no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::reciprocal,    "reciprocal",    P, 1, kFloats,   same,    NanRule::ieee,      no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::erf,           "erf",           P, 1, kFloats,   same,    NanRule::ieee,      no,    costly, Combine::none,    Identity::none,    no},
  OpInfo{Op::logical_not,   "logical_not",   P, 1, kBool,     same,    NanRule::none,      no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::inner_count,   "inner_count",   L, 0, kNumbers,  same,    NanRule::none,      no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::reduce_sum,    "reduce_sum",    R, 1, kNumbers,  same,    NanRule::ieee,      wraps, cheap,  Combine::add,     Identity::zero,    no},
  OpInfo{Op::reduce_max,    "reduce_max",    R, 1, kNumbers,  same,    NanRule::keep,      no,    cheap,  Combine::max,     Identity::lowest,  no},
  OpInfo{Op::reduce_min,    "reduce_min",    R, 1, kNumbers,  same,    NanRule::keep,      no,    cheap,  Combine::min,     Identity::highest, no},
  OpInfo{Op::reduce_argmax, "reduce_argmax", R, 1, kNumbers,  index,   NanRule::first,     no,    cheap,  Combine::argmax,  Identity::lowest,  no},
  OpInfo{Op::reduce_argmin, "reduce_argmin", R, 1, kNumbers,  index,   NanRule::first,     no,    cheap,  Combine::argmin,  Identity::highest, no},
  OpInfo{Op::add,           "add",           P, 2, kCompute,  same,    NanRule::ieee,      wraps, cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::sub,           "sub",           P, 2, kNumbers,  same,    NanRule::ieee,      wraps, cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::mul,           "mul",           P, 2, kCompute,  same,    NanRule::ieee,      wraps, cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::div,           "div",           P, 2, kFloats,   same,    NanRule::ieee,      no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::pow,           "pow",           P, 2, kFloats,   same,    NanRule::ieee,      no,    costly, Combine::none,    Identity::none,    no},
  OpInfo{Op::maximum,       "maximum",       P, 2, kCompute,  same,    NanRule::either,    no,    cheap,  Combine::max,     Identity::none,    no},
  OpInfo{Op::minimum,       "minimum",       P, 2, kCompute,  same,    NanRule::either,    no,    cheap,  Combine::min,     Identity::none,    no},
  OpInfo{Op::eq,            "eq",            P, 2, kCompute,  boolean, NanRule::unordered, no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::ne,            "ne",            P, 2, kCompute,  boolean, NanRule::unordered, no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::lt,            "lt",            P, 2, kCompute,  boolean, NanRule::unordered, no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::le,            "le",            P, 2, kCompute,  boolean, NanRule::unordered, no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::gt,            "gt",            P, 2, kCompute,  boolean, NanRule::unordered, no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::ge,            "ge",            P, 2, kCompute,  boolean, NanRule::unordered, no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::logical_and,   "logical_and",   P, 2, kBool,     same,    NanRule::none,      no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::logical_or,    "logical_or",    P, 2, kBool,     same,    NanRule::none,      no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::logical_xor,   "logical_xor",   P, 2, kBool,     same,    NanRule::none,      no,    cheap,  Combine::none,    Identity::none,    no},
  OpInfo{Op::select,        "select",        P, 3, kAll,      same,    NanRule::pass,      no,    cheap,  Combine::none,    Identity::none,    true},
  OpInfo{Op::fma,           "fma",           P, 3, kNumbers,  same,    NanRule::ieee,      wraps, cheap,  Combine::none,    Identity::none,    no},
};
// clang-format on

constexpr bool in_enum_order() {
  for (size_t i = 0; i < kOps.size(); ++i)
    if (static_cast<size_t>(kOps[i].op) != i) return false;
  return kOps.size() == static_cast<size_t>(kLastOp) + 1;
}
static_assert(in_enum_order(), "one row per loop::Op, in the enum's order");

}  // namespace

Dtypes dtype_bit(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return kBool;
    case ScalarType::Int: return kInt;
    case ScalarType::Long: return kLong;
    case ScalarType::Float: return kFloat;
    case ScalarType::Double: return kDouble;
    case ScalarType::Half: return kHalf;
    case ScalarType::BFloat16: return kBFloat16;
    default: return 0;
  }
}

const OpInfo& info(Op op) {
  assert(static_cast<size_t>(op) < kOps.size() && "an op of the enum");
  return kOps[static_cast<size_t>(op)];
}

std::span<const OpInfo> all_ops() { return kOps; }

const char* op_name(Op op) {
  return static_cast<size_t>(op) < kOps.size() ? kOps[static_cast<size_t>(op)].name : "?";
}

bool is_reduction(Op op) { return info(op).kind == OpKind::reduction; }

bool is_costly(Op op) { return info(op).cost == Cost::transcendental; }

bool computes_in(Op op, ScalarType t) { return (info(op).dtypes & dtype_bit(t)) != 0; }

ScalarType result_dtype(Op op, ScalarType t) {
  switch (info(op).result) {
    case ResultRule::boolean: return ScalarType::Bool;
    case ResultRule::index: return ScalarType::Long;
    default: return t;
  }
}

}  // namespace tj::jit::loop
