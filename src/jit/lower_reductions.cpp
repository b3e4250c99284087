// The reductions the lowering fuses with the pointwise ops around them:
// sum, mean, amax/amin, argmax/argmin, var/std, softmax, log_softmax and
// layer_norm. Each entry says which dimensions of its input a node reduces
// (nullopt: not this call, the node goes extern) and emits the reduction
// as `reduce_*` expressions (loop_ir.h) over its input read in the full form.
//
// Float32 sums accumulate in double (the codegen's choice), which is closer
// to the exact sum than eager's own float cascade; var/std/layer_norm of
// float32 take their moments in one pass in double (sum and sum of squares:
// no cancellation that float32 inputs could expose), of float64 in two
// passes (the mean, then the squares around it). max/min-like reductions
// over an empty dimension raise in eager, so they stay extern there.
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <c10/core/ScalarType.h>

#include "graph/op_registry.h"
#include "jit/fusion_group.h"

namespace tj::jit {

namespace {

using c10::ScalarType;
using graph::Arg;
using graph::Node;
using graph::TensorMeta;
using loop::Op;

using DimsOf = std::function<std::optional<std::vector<bool>>(const Node&, const TensorMeta&)>;

struct Entry {
  DimsOf dims;
  Emitter emit;
};

// The dims named by `arg` (an int, a list of ints, None or [] for all) over a tensor of rank `rank`.
std::optional<std::vector<bool>> dims_from(const Arg* arg, size_t rank) {
  std::vector<bool> flags(rank, false);
  auto mark = [&](int64_t d) {
    int64_t r = static_cast<int64_t>(rank);
    if (d < -std::max<int64_t>(r, 1) || d >= std::max<int64_t>(r, 1)) return false;
    if (r == 0) return true;
    flags[static_cast<size_t>(d < 0 ? d + r : d)] = true;
    return true;
  };
  if (!arg || arg->is_none()) return std::vector<bool>(rank, true);
  if (arg->is<int64_t>()) {
    if (!mark(arg->as<int64_t>())) return std::nullopt;
    return flags;
  }
  if (!arg->is_list()) return std::nullopt;
  if (arg->items().empty()) return std::vector<bool>(rank, true);
  for (const Arg& a : arg->items())
    if (!a.is<int64_t>() || !mark(a.as<int64_t>())) return std::nullopt;
  return flags;
}

// The number of elements a row has, as a compile-time fact of the node's input.
int64_t row_numel(const TensorMeta& m, const std::vector<bool>& dims) {
  int64_t n = 1;
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d]) n *= m.sizes[d];
  return n;
}

bool is_false(const Arg* a) { return !a || a->is_none() || (a->is<bool>() && !a->as<bool>()); }

ScalarType in_dtype(const Node& n) { return n.args()[0].node()->meta().tensor()->dtype; }

// Only the kwargs in `known` (and the dtype kwarg when it is None or the output's dtype).
bool kwargs_within(const Node& n, std::initializer_list<const char*> known) {
  for (const auto& [key, value] : n.kwargs()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) return false;
  }
  return true;
}

// mean and m2 = sum((x - mean)^2) of `x` over the inner dims, both in `acc`.
std::pair<int, int> moments(GroupBuilder& b, int x, ScalarType t, ScalarType& acc) {
  int n;
  if (t == ScalarType::Float) {
    acc = ScalarType::Double;
    int xd = b.cast(x, acc);
    int sum = b.reduce(Op::reduce_sum, acc, xd);
    int squares = b.reduce(Op::reduce_sum, acc, b.op(Op::mul, acc, {xd, xd}));
    n = b.op(Op::inner_count, acc, {});
    int mean = b.op(Op::div, acc, {sum, n});
    int m2 = b.op(Op::sub, acc, {squares, b.op(Op::mul, acc, {sum, mean})});
    return {mean, b.op(Op::maximum, acc, {m2, b.constant(0, acc)})};
  }
  acc = t;
  n = b.op(Op::inner_count, t, {});
  int mean = b.op(Op::div, t, {b.reduce(Op::reduce_sum, t, x), n});
  int centered = b.op(Op::sub, t, {x, mean});
  return {mean, b.reduce(Op::reduce_sum, t, b.op(Op::mul, t, {centered, centered}))};
}

// var/std with `correction` (default 1): m2 / max(0, n - correction).
Emitter variance(bool root) {
  return [root](GroupBuilder& b, const Node& n) {
    ScalarType t = out_dtype(n);
    if (!is_float(t) || in_dtype(n) != t || !kwargs_within(n, {"correction", "keepdim"})) return -1;
    double correction = 1;
    if (const Arg* c = n.kwarg("correction"); c && !c->is_none()) {
      if (!c->is<int64_t>() && !c->is<double>()) return -1;
      correction = c->is<int64_t>() ? static_cast<double>(c->as<int64_t>()) : c->as<double>();
    }
    ScalarType acc;
    auto [mean, m2] = moments(b, b.operand(n.args()[0], t), t, acc);
    (void)mean;
    int count = b.op(Op::sub, acc, {b.op(Op::inner_count, acc, {}), b.constant(correction, acc)});
    int var = b.op(Op::div, acc, {m2, b.op(Op::maximum, acc, {count, b.constant(0, acc)})});
    if (root) var = b.op(Op::sqrt, acc, {var});
    return b.cast(var, t);
  };
}

Emitter sum_like(bool mean) {
  return [mean](GroupBuilder& b, const Node& n) {
    ScalarType t = out_dtype(n);
    if ((mean && !is_float(t)) || t == ScalarType::Bool || !kwargs_within(n, {"dtype", "keepdim"})) return -1;
    int s = b.reduce(Op::reduce_sum, t, b.operand(n.args()[0], t));
    return mean ? b.op(Op::div, t, {s, b.op(Op::inner_count, t, {})}) : s;
  };
}

Emitter extreme(Op o) {
  return [o](GroupBuilder& b, const Node& n) {
    ScalarType t = in_dtype(n);
    if (t == ScalarType::Bool || !kwargs_within(n, {"dim", "keepdim"})) return -1;
    ScalarType result = o == Op::reduce_argmax || o == Op::reduce_argmin ? ScalarType::Long : t;
    return b.reduce(o, result, b.operand(n.args()[0], t));
  };
}

Emitter softmax(bool log) {
  return [log](GroupBuilder& b, const Node& n) {
    ScalarType t = out_dtype(n);
    if (!is_float(t) || in_dtype(n) != t || n.args().size() != 3 || !is_false(&n.args()[2])) return -1;
    int x = b.operand(n.args()[0], t);
    int shifted = b.op(Op::sub, t, {x, b.reduce(Op::reduce_max, t, x)});
    int e = b.op(Op::exp, t, {shifted});
    int sum = b.reduce(Op::reduce_sum, t, e);
    if (log) return b.op(Op::sub, t, {shifted, b.op(Op::log, t, {sum})});
    return b.op(Op::mul, t, {e, b.op(Op::reciprocal, t, {sum})});
  };
}

bool contiguous(const TensorMeta& m) {
  int64_t expected = 1;
  for (size_t d = m.sizes.size(); d-- > 0;) {
    if (m.sizes[d] != 1 && m.strides[d] != expected) return false;
    expected *= m.sizes[d];
  }
  return true;
}

// _softmax_backward_data / _log_softmax_backward_data(grad, output, dim, input_dtype) as ATen's CPU kernels:
// softmax: output * (grad - sum(grad * output)); log_softmax: grad - exp(output) * sum(grad). Only an
// input_dtype of the output's own dtype (the half-to-float form has another rounding).
Emitter softmax_backward(bool log) {
  return [log](GroupBuilder& b, const Node& n) {
    ScalarType t = out_dtype(n);
    if (!is_float(t) || n.args().size() != 4 || !n.args()[1].is_node() || in_dtype(n) != t) return -1;
    const Arg& input_dtype = n.args()[3];
    if (input_dtype.is<c10::ScalarType>() ? input_dtype.as<c10::ScalarType>() != t
        : !input_dtype.is<int64_t>() || input_dtype.as<int64_t>() != static_cast<int64_t>(t))
      return -1;
    const TensorMeta* g = tensor_meta(n.args()[0].node());
    const TensorMeta* y = tensor_meta(n.args()[1].node());
    if (!g || !y || g->sizes != y->sizes || y->dtype != t) return -1;
    // LibTorch 1.13's softmax backward of non-contiguous operands is not the formula (another result): ATen's op
    if (!log && (!contiguous(*g) || !contiguous(*y))) return -1;
    int gx = b.operand(n.args()[0], t), yx = b.operand(n.args()[1], t);
    if (log) return b.op(Op::sub, t, {gx, b.op(Op::mul, t, {b.op(Op::exp, t, {yx}), b.reduce(Op::reduce_sum, t, gx)})});
    int dot = b.reduce(Op::reduce_sum, t, b.op(Op::mul, t, {gx, yx}));
    return b.op(Op::mul, t, {yx, b.op(Op::sub, t, {gx, dot})});
  };
}

// native_layer_norm(x, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd)
int layer_norm(GroupBuilder& b, const Node& n) {
  const TensorMeta* xm = tensor_meta(n.args()[0].node());
  if (!xm || !is_float(xm->dtype) || n.args().size() != 5 || !n.args()[4].is<double>()) return -1;
  ScalarType t = xm->dtype;
  int x = b.operand(n.args()[0], t);
  ScalarType acc;
  auto [mean, m2] = moments(b, x, t, acc);
  int var = b.op(Op::div, acc, {m2, b.op(Op::inner_count, acc, {})});
  int rstd = b.op(Op::rsqrt, acc, {b.op(Op::add, acc, {var, b.constant(n.args()[4].as<double>(), acc)})});
  // eager's Welford mean of a row with an inf is NaN, as its m2 is
  int mean_nan = b.op(Op::select, acc, {b.op(Op::eq, ScalarType::Bool, {m2, m2}), mean, b.constant(NAN, acc)});
  mean_nan = b.op(Op::select, acc,
                  {b.op(Op::lt, ScalarType::Bool, {m2, b.constant(INFINITY, acc)}), mean_nan, b.constant(NAN, acc)});
  int mean_t = b.cast(mean_nan, t), rstd_t = b.cast(rstd, t);
  int out = b.op(Op::mul, t, {b.op(Op::sub, t, {x, mean_t}), rstd_t});
  for (size_t i : {2, 3}) {
    const Arg& a = n.args()[i];
    if (a.is_none()) continue;
    if (!a.is_node()) return -1;
    out = b.op(i == 2 ? Op::mul : Op::add, t, {out, b.operand(a, t)});
  }
  if (out < 0) return -1;
  b.set_results(&n, {out, mean_t, rstd_t});
  return out;
}

const std::unordered_map<std::string, Entry>& entries() {
  static const std::unordered_map<std::string, Entry> table = [] {
    std::unordered_map<std::string, Entry> m;
    auto dim_list = [](size_t index, const char* name) {
      return [index, name](const Node& n, const TensorMeta& x) { return dims_from(arg_at(n, index, name), x.sizes.size()); };
    };
    auto all = [](const Node&, const TensorMeta& x) { return std::optional(std::vector<bool>(x.sizes.size(), true)); };
    m["aten::sum.dim_IntList"] = {dim_list(1, "dim"), sum_like(false)};
    m["aten::sum"] = {all, sum_like(false)};
    m["aten::mean.dim"] = {dim_list(1, "dim"), sum_like(true)};
    m["aten::mean"] = {all, sum_like(true)};
    m["aten::amax"] = {dim_list(1, "dim"), extreme(Op::reduce_max)};
    m["aten::amin"] = {dim_list(1, "dim"), extreme(Op::reduce_min)};
    // argmax(x, dim=None, keepdim=False): None flattens (and keepdim keeps rank: not here)
    auto arg_dims = [](const Node& n, const TensorMeta& x) -> std::optional<std::vector<bool>> {
      const Arg* dim = arg_at(n, 1, "dim");
      if ((!dim || dim->is_none()) && !is_false(arg_at(n, 2, "keepdim"))) return std::nullopt;
      return dims_from(dim, x.sizes.size());
    };
    m["aten::argmax"] = {arg_dims, extreme(Op::reduce_argmax)};
    m["aten::argmin"] = {arg_dims, extreme(Op::reduce_argmin)};
    m["aten::var.correction"] = {dim_list(1, "dim"), variance(false)};
    m["aten::std.correction"] = {dim_list(1, "dim"), variance(true)};
    m["aten::_softmax"] = {dim_list(1, "dim"), softmax(false)};
    m["aten::_log_softmax"] = {dim_list(1, "dim"), softmax(true)};
    m["aten::_softmax_backward_data"] = {dim_list(2, "dim"), softmax_backward(false)};
    m["aten::_log_softmax_backward_data"] = {dim_list(2, "dim"), softmax_backward(true)};
    m["aten::native_layer_norm"] = {[](const Node& n, const TensorMeta& x) -> std::optional<std::vector<bool>> {
                                      const Arg* shape = arg_at(n, 1, "normalized_shape");
                                      if (!shape || !shape->is_list() || shape->items().size() > x.sizes.size())
                                        return std::nullopt;
                                      std::vector<bool> dims(x.sizes.size(), false);
                                      for (size_t i = 0; i < shape->items().size(); ++i) dims[x.sizes.size() - 1 - i] = true;
                                      return dims;
                                    },
                                    layer_norm};
    return m;
  }();
  return table;
}

// sums_across_contiguous_rows: the kept contiguous dim spans at least a vector of float32,
// and the input is larger than kMaxFusedStridedBytes: an input that small stays in L1 and
// the fused loop's strided reads cost less than ATen's op (train_mlp's bias gradients,
// 64x32 float32: `sum(0)` 3.2 us fused, 4.2 us as ATen's; 128x64: 7.1 against 5.4 us).
constexpr int64_t kMinContiguousKept = 8;
constexpr int64_t kMaxFusedStridedBytes = 8 * 1024;

bool needs_nonempty_rows(const std::string& name) {
  return name == "aten::amax" || name == "aten::amin" || name == "aten::argmax" || name == "aten::argmin" ||
         name == "aten::native_layer_norm";
}

}  // namespace

std::optional<ReductionOp> reduction_op(const Node* node) {
  if (node->kind() != graph::NodeKind::call_function || !node->op() || node->op()->is_getitem) return std::nullopt;
  const std::string& name = node->op()->qualified_name();
  auto it = entries().find(name);
  if (it == entries().end() || node->args().empty() || !node->args()[0].is_node()) return std::nullopt;
  const TensorMeta* x = tensor_meta(node->args()[0].node());
  if (!x) return std::nullopt;
  if (node->meta().tensor() && !tensor_meta(node)) return std::nullopt;
  auto dims = it->second.dims(*node, *x);
  if (!dims) return std::nullopt;
  bool any = false;
  for (bool d : *dims) any = any || d;
  if (!any) return std::nullopt;  // reduces nothing (or a 0-d input): leave it to ATen
  if (needs_nonempty_rows(name) && row_numel(*x, *dims) == 0) return std::nullopt;
  return ReductionOp{node->args()[0].node(), *dims, &it->second.emit};
}

bool sums_across_contiguous_rows(const Node& node, const ReductionOp& r) {
  const std::string& name = node.op()->qualified_name();
  if (name != "aten::sum.dim_IntList" && name != "aten::mean.dim") return false;
  const TensorMeta* x = tensor_meta(r.input);
  if (!x || x->strides.size() != x->sizes.size()) return false;
  // the dimension read contiguously: the smallest stride among those of more than one element
  int fastest = -1;
  bool reduces_a_row = false;
  for (size_t d = 0; d < x->sizes.size(); ++d) {
    if (x->sizes[d] <= 1) continue;
    reduces_a_row = reduces_a_row || r.dims[d];
    if (fastest < 0 || x->strides[d] < x->strides[static_cast<size_t>(fastest)]) fastest = static_cast<int>(d);
  }
  if (fastest < 0 || !reduces_a_row || r.dims[static_cast<size_t>(fastest)]) return false;
  // a kept contiguous run of at least one vector
  if (x->strides[static_cast<size_t>(fastest)] != 1 || x->sizes[static_cast<size_t>(fastest)] < kMinContiguousKept)
    return false;
  int64_t bytes = static_cast<int64_t>(c10::elementSize(x->dtype));
  for (int64_t size : x->sizes) bytes *= size;
  return bytes > kMaxFusedStridedBytes;
}

}  // namespace tj::jit
