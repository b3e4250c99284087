// Decompositions for fusing backends; see decompose.h.
#include "graph/passes/decompose.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "graph/lint.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "support/log.h"

namespace tj::graph {

namespace {

const OpInfo& op(const char* name) {
  auto found = OpRegistry::instance().get(name);
  assert(found.ok() && "decompose: an ATen op LibTorch always has");
  return **found;
}

// The node's result used only through `getitem(node, 0)`, or nullptr.
Node* only_first_result(Node& node) {
  Node* first = nullptr;
  for (Node* user : node.users()) {
    if (!user->op() || !user->op()->is_getitem || user->args().at(1).as<int64_t>() != 0) return nullptr;
    if (first) return nullptr;  // two getitem(…, 0): CSE has not run; leave it
    first = user;
  }
  return first;
}

bool is_float_tensor(const Node* n) {
  const TensorMeta* m = n ? n->meta().tensor() : nullptr;
  return m && (m->dtype == c10::ScalarType::Float || m->dtype == c10::ScalarType::Double);
}

// One call node with its metadata inferred; nullptr (and `error`) if inference fails.
Node* emit(Graph& g, const char* target, std::vector<Arg> args, std::string& error, std::vector<Kwarg> kwargs = {}) {
  Node* n = g.call(op(target), std::move(args), std::move(kwargs));
  if (auto st = infer_meta(g, *n); !st) {
    error = st.error().message;
    return nullptr;
  }
  return n;
}

// Rewrites one inference batch norm; false (graph unchanged) when it does not apply.
Expected<bool> decompose_batch_norm(Graph& g, Node& bn) {
  const auto& a = bn.args();
  if (a.size() != 8 || !a[0].is_node() || !a[3].is_node() || !a[4].is_node() || !a[5].is<bool>() || a[5].as<bool>() ||
      !a[7].is<double>() || !bn.kwargs().empty())
    return false;
  Node* out_use = only_first_result(bn);
  Node* x = a[0].node();
  const TensorMeta* xm = x->meta().tensor();
  // 4-d only (BatchNorm2d): ATen's 2-d/3-d paths round differently.
  if (!out_use || !xm || xm->sizes.size() != 4 || !is_float_tensor(x)) return false;
  Node *weight = a[1].is_node() ? a[1].node() : nullptr, *bias = a[2].is_node() ? a[2].node() : nullptr;
  Node *mean = a[3].node(), *var = a[4].node();
  for (Node* p : {weight, bias, mean, var})
    if (p && (!is_float_tensor(p) || p->meta().tensor()->dtype != xm->dtype)) return false;

  std::vector<Arg> channel_shape = {Arg(xm->sizes[1])};
  for (size_t i = 2; i < xm->sizes.size(); ++i) channel_shape.emplace_back(int64_t{1});
  std::string error;
  g.set_insert_point(&bn);
  Node* var_eps = emit(g, "aten::add.Scalar", {var, a[7].as<double>()}, error);
  Node* std_dev = var_eps ? emit(g, "aten::sqrt", {var_eps}, error) : nullptr;
  Node* alpha = std_dev ? emit(g, "aten::reciprocal", {std_dev}, error) : nullptr;
  if (alpha && weight) alpha = emit(g, "aten::mul.Tensor", {alpha, weight}, error);
  Node* beta = nullptr;
  if (alpha && bias) {
    beta = emit(g, "aten::addcmul", {bias, mean, alpha, -1.0}, error);
  } else if (alpha) {
    Node* shift = emit(g, "aten::mul.Tensor", {mean, alpha}, error);
    beta = shift ? emit(g, "aten::neg", {shift}, error) : nullptr;
  }
  Node* alpha_c = beta ? emit(g, "aten::view", {alpha, Arg::list(channel_shape)}, error) : nullptr;
  Node* beta_c = alpha_c ? emit(g, "aten::view", {beta, Arg::list(channel_shape)}, error) : nullptr;
  Node* out = beta_c ? emit(g, "aten::addcmul", {beta_c, x, alpha_c}, error) : nullptr;
  g.set_insert_point(nullptr);
  if (!out) return Error{"decompose " + bn.name() + ": " + error};
  // Eager's layout or nothing (the unused new nodes go with the next DCE).
  if (out->meta().tensor()->strides != out_use->meta().tensor()->strides) return false;
  out->meta().loc = bn.meta().loc;
  out_use->replace_all_uses_with(out);
  g.erase(out_use);
  g.erase(&bn);
  return true;
}

// The ints of a list argument (one int means that many times `rank`), or nullopt.
std::optional<std::vector<int64_t>> int_list(const Arg* a, size_t rank, std::vector<int64_t> fallback) {
  if (!a || (a->is_list() && a->items().empty())) return fallback;
  if (a->is<int64_t>()) return std::vector<int64_t>(rank, a->as<int64_t>());
  if (!a->is_list()) return std::nullopt;
  std::vector<int64_t> out;
  for (const Arg& item : a->items()) {
    if (!item.is<int64_t>()) return std::nullopt;
    out.push_back(item.as<int64_t>());
  }
  if (out.size() == 1) out.assign(rank, out[0]);
  if (out.size() != rank) return std::nullopt;
  return out;
}

const Arg* arg_or_kwarg(const Node& n, size_t i, const char* name) {
  return i < n.args().size() ? &n.args()[i] : n.kwarg(name);
}

// Rewrites one max_pool2d whose indices are unused; false when it does not apply.
Expected<bool> decompose_max_pool(Graph& g, Node& pool) {
  Node* out_use = only_first_result(pool);
  if (!out_use || pool.args().empty() || !pool.args()[0].is_node()) return false;
  Node* x = pool.args()[0].node();
  const TensorMeta* xm = x->meta().tensor();
  const TensorMeta* om = out_use->meta().tensor();
  if (!xm || !om || !is_float_tensor(x) || (xm->sizes.size() != 4 && xm->sizes.size() != 3)) return false;
  auto kernel = int_list(arg_or_kwarg(pool, 1, "kernel_size"), 2, {});
  if (!kernel) return false;
  auto stride = int_list(arg_or_kwarg(pool, 2, "stride"), 2, *kernel);
  auto padding = int_list(arg_or_kwarg(pool, 3, "padding"), 2, {0, 0});
  auto dilation = int_list(arg_or_kwarg(pool, 4, "dilation"), 2, {1, 1});
  if (!stride || !padding || !dilation || (*kernel)[0] * (*kernel)[1] > 16) return false;
  const size_t rank = xm->sizes.size();
  // pads (left, right) per spatial dim so that every window lies inside the padded tensor
  std::vector<Arg> pads;  // constant_pad_nd: last dim first
  int64_t needed[2];
  bool any_pad = false;
  for (int j = 1; j >= 0; --j) {
    int64_t length = xm->sizes[rank - 2 + j], out = om->sizes[rank - 2 + j];
    needed[j] = (out - 1) * (*stride)[j] + ((*kernel)[j] - 1) * (*dilation)[j] + 1;
    int64_t right = std::max<int64_t>(0, needed[j] - length - (*padding)[j]);
    pads.emplace_back((*padding)[j]);
    pads.emplace_back(right);
    any_pad = any_pad || (*padding)[j] > 0 || right > 0;
  }
  std::string error;
  g.set_insert_point(&pool);
  Node* padded = x;
  if (any_pad) padded = emit(g, "aten::constant_pad_nd", {x, Arg::list(pads), -INFINITY}, error);
  Node* result = nullptr;
  for (int64_t kh = 0; padded && kh < (*kernel)[0]; ++kh) {
    for (int64_t kw = 0; kw < (*kernel)[1]; ++kw) {
      Node* view = padded;
      for (int j = 0; j < 2 && view; ++j) {
        int64_t start = (j == 0 ? kh : kw) * (*dilation)[j];
        view = emit(g, "aten::slice.Tensor",
                    {view, static_cast<int64_t>(rank - 2 + j), start, start + needed[j] - ((*kernel)[j] - 1) * (*dilation)[j],
                     (*stride)[j]},
                    error);
      }
      if (!view) break;
      result = result ? emit(g, "aten::maximum", {result, view}, error) : view;
      if (!result) break;
    }
  }
  g.set_insert_point(nullptr);
  if (!result || !error.empty()) return Error{"decompose " + pool.name() + ": " + error};
  if (result->meta().tensor()->sizes != om->sizes || result->meta().tensor()->strides != om->strides) return false;
  result->meta().loc = pool.meta().loc;
  out_use->replace_all_uses_with(result);
  g.erase(out_use);
  g.erase(&pool);
  return true;
}

// Rewrites addmm(bias, a, b) read by one pointwise activation as mm(a, b) +
// bias, so the bias add fuses with the activation (an epilogue of the
// extern matmul); false when it does not apply.
Expected<bool> decompose_addmm(Graph& g, Node& addmm) {
  static const char* const kEpilogues[] = {"aten::relu", "aten::gelu", "aten::silu", "aten::sigmoid", "aten::tanh",
                                           "aten::mul.Tensor", "aten::add.Tensor", "aten::clamp"};
  const auto& a = addmm.args();
  if (a.size() != 3 || !a[0].is_node() || !a[1].is_node() || !a[2].is_node()) return false;
  for (const auto& [key, value] : addmm.kwargs()) {
    bool one = (value.is<int64_t>() && value.as<int64_t>() == 1) || (value.is<double>() && value.as<double>() == 1.0);
    if ((key != "beta" && key != "alpha") || !one) return false;
  }
  if (addmm.users().size() != 1) return false;
  const Node* user = addmm.users().front();
  bool epilogue = false;
  for (const char* name : kEpilogues)
    epilogue = epilogue || (user->op() && user->op()->qualified_name() == name);
  const TensorMeta* out = addmm.meta().tensor();
  if (!epilogue || !out || !is_float_tensor(&addmm) || !is_float_tensor(a[0].node())) return false;
  std::string error;
  g.set_insert_point(&addmm);
  Node* mm = emit(g, "aten::mm", {a[1], a[2]}, error);
  Node* sum = mm ? emit(g, "aten::add.Tensor", {mm, a[0]}, error) : nullptr;
  g.set_insert_point(nullptr);
  if (!sum) return Error{"decompose " + addmm.name() + ": " + error};
  if (sum->meta().tensor()->sizes != out->sizes || sum->meta().tensor()->strides != out->strides ||
      sum->meta().tensor()->dtype != out->dtype)
    return false;
  sum->meta().loc = addmm.meta().loc;
  addmm.replace_all_uses_with(sum);
  g.erase(&addmm);
  return true;
}

// Rewrites binary_cross_entropy(x, y, None, reduction) on CPU float
// tensors as LibTorch 1.13's CPU kernel computes it, `(y - 1) *
// max(log(1 - x), -100) - y * max(log(x), -100)` then the mean or sum,
// as pointwise ops and a reduction that fuse (ATen's kernel is a scalar loop
// with two logs an element and a separate reduction), and keeps its error:
// `_assert_async(all(x >= 0 & x <= 1))` fails where ATen's range check does
// (NaN included), and the failed call's op-by-op rerun raises ATen's own
// message. ATen 1.13 does not check the target. False when it does not
// apply (a weight, other dtypes or devices, mismatched sizes).
Expected<bool> decompose_binary_cross_entropy(Graph& g, Node& bce) {
  const auto& a = bce.args();
  if (a.size() < 2 || a.size() > 4 || !a[0].is_node() || !a[1].is_node() || !bce.kwargs().empty()) return false;
  if (a.size() >= 3 && !a[2].is_none()) return false;  // a weight
  const int64_t reduction = a.size() == 4 ? (a[3].is<int64_t>() ? a[3].as<int64_t>() : -1) : 1;
  if (reduction < 0 || reduction > 2) return false;
  const TensorMeta* xm = a[0].node()->meta().tensor();
  const TensorMeta* ym = a[1].node()->meta().tensor();
  const TensorMeta* out = bce.meta().tensor();
  if (!xm || !ym || !out || !is_float_tensor(a[0].node()) || ym->dtype != xm->dtype || out->dtype != xm->dtype ||
      xm->sizes != ym->sizes || !xm->device.is_cpu() || !ym->device.is_cpu())
    return false;
  Node* x = a[0].node();
  Node* y = a[1].node();
  std::string error;
  g.set_insert_point(&bce);
  Node* ge = emit(g, "aten::ge.Scalar", {x, 0.0}, error);
  Node* le = ge ? emit(g, "aten::le.Scalar", {x, 1.0}, error) : nullptr;
  Node* in_range = le ? emit(g, "aten::logical_and", {ge, le}, error) : nullptr;
  Node* all = in_range ? emit(g, "aten::all", {in_range}, error) : nullptr;
  // No meta kernel, and no result to describe: called for its error only.
  Node* check = all ? g.call(op("aten::_assert_async"), {all}) : nullptr;
  Node* one_minus = check ? emit(g, "aten::rsub.Scalar", {x, 1.0}, error) : nullptr;
  Node* log0 = one_minus ? emit(g, "aten::log", {one_minus}, error) : nullptr;
  Node* l0 = log0 ? emit(g, "aten::clamp_min", {log0, -100.0}, error) : nullptr;
  Node* log1 = l0 ? emit(g, "aten::log", {x}, error) : nullptr;
  Node* l1 = log1 ? emit(g, "aten::clamp_min", {log1, -100.0}, error) : nullptr;
  Node* y_minus = l1 ? emit(g, "aten::sub.Scalar", {y, 1.0}, error) : nullptr;
  Node* t0 = y_minus ? emit(g, "aten::mul.Tensor", {y_minus, l0}, error) : nullptr;
  Node* t1 = t0 ? emit(g, "aten::mul.Tensor", {y, l1}, error) : nullptr;
  Node* loss = t1 ? emit(g, "aten::sub.Tensor", {t0, t1}, error) : nullptr;
  Node* result = !loss || reduction == 0 ? loss
                 : reduction == 1        ? emit(g, "aten::mean", {loss}, error)
                                         : emit(g, "aten::sum", {loss}, error);
  g.set_insert_point(nullptr);
  if (!result) return Error{"decompose " + bce.name() + ": " + error};
  if (result->meta().tensor()->sizes != out->sizes || result->meta().tensor()->dtype != out->dtype) {
    g.erase(check);  // a check is kept by DCE; the other new nodes are dead
    return false;
  }
  result->meta().loc = bce.meta().loc;
  check->meta().loc = bce.meta().loc;
  bce.replace_all_uses_with(result);
  g.erase(&bce);
  return true;
}

// Rewrites binary_cross_entropy_backward(g, x, y, None, reduction) on CPU
// float tensors as LibTorch 1.13's CPU kernel computes it, `g * (x - y) /
// max((1 - x) * x, 1e-12)`, divided by x's numel for a mean: pointwise, so
// it fuses with the gradient's next op (a sigmoid's backward). It raises on
// sizes only. False when it does not apply.
Expected<bool> decompose_binary_cross_entropy_backward(Graph& g, Node& bwd) {
  const auto& a = bwd.args();
  if (a.size() < 3 || a.size() > 5 || !a[0].is_node() || !a[1].is_node() || !a[2].is_node() || !bwd.kwargs().empty())
    return false;
  if (a.size() >= 4 && !a[3].is_none()) return false;  // a weight
  const int64_t reduction = a.size() == 5 ? (a[4].is<int64_t>() ? a[4].as<int64_t>() : -1) : 1;
  if (reduction < 0 || reduction > 2) return false;
  const TensorMeta* gm = a[0].node()->meta().tensor();
  const TensorMeta* xm = a[1].node()->meta().tensor();
  const TensorMeta* ym = a[2].node()->meta().tensor();
  const TensorMeta* out = bwd.meta().tensor();
  if (!gm || !xm || !ym || !out || !is_float_tensor(a[1].node()) || gm->dtype != xm->dtype ||
      ym->dtype != xm->dtype || out->dtype != xm->dtype || xm->sizes != ym->sizes || !xm->device.is_cpu() ||
      !ym->device.is_cpu() || !gm->device.is_cpu() || (reduction == 0 && gm->sizes != xm->sizes) ||
      (reduction != 0 && !gm->sizes.empty()))
    return false;
  Node* x = a[1].node();
  int64_t numel = 1;
  for (int64_t s : xm->sizes) numel *= s;
  std::string error;
  g.set_insert_point(&bwd);
  Node* one_minus = emit(g, "aten::rsub.Scalar", {x, 1.0}, error);
  Node* prod = one_minus ? emit(g, "aten::mul.Tensor", {one_minus, x}, error) : nullptr;
  Node* den = prod ? emit(g, "aten::clamp_min", {prod, 1e-12}, error) : nullptr;
  Node* diff = den ? emit(g, "aten::sub.Tensor", {x, a[2]}, error) : nullptr;
  Node* num = diff ? emit(g, "aten::mul.Tensor", {a[0], diff}, error) : nullptr;
  Node* grad = num ? emit(g, "aten::div.Tensor", {num, den}, error) : nullptr;
  Node* result = !grad || reduction != 1 ? grad : emit(g, "aten::div.Scalar", {grad, numel}, error);
  g.set_insert_point(nullptr);
  if (!result) return Error{"decompose " + bwd.name() + ": " + error};
  if (result->meta().tensor()->sizes != out->sizes || result->meta().tensor()->dtype != out->dtype) return false;
  result->meta().loc = bwd.meta().loc;
  bwd.replace_all_uses_with(result);
  g.erase(&bwd);
  return true;
}

// Rewrites `add.Tensor(zero(g), y)` (either order, alpha 1), a gradient
// zeroed by `zero_grad(set_to_none=False)` and then accumulated into, as
// `add(y, 0.0)`: the same sum (0 + y is y + 0 in IEEE arithmetic, -0.0
// included), without materialising the zeros, which a functional graph
// otherwise allocates at zero_grad and holds until the backward reaches the
// accumulation (a DCGAN step: the generator's zeroed gradients live through
// the discriminator's whole forward and backward, where eager zeroes in
// place); false when it does not apply.
Expected<bool> decompose_zero_add(Graph& g, Node& add) {
  const auto& a = add.args();
  if (a.size() != 2 || !a[0].is_node() || !a[1].is_node()) return false;
  for (const auto& [key, value] : add.kwargs()) {
    bool one = (value.is<int64_t>() && value.as<int64_t>() == 1) || (value.is<double>() && value.as<double>() == 1.0);
    if (key != "alpha" || !one) return false;
  }
  auto is_zero = [](const Node* n) { return n->op() && n->op()->qualified_name() == "aten::zero"; };
  const int z = is_zero(a[0].node()) ? 0 : is_zero(a[1].node()) ? 1 : -1;
  if (z < 0) return false;
  Node* y = a[1 - z].node();
  const TensorMeta* out = add.meta().tensor();
  const TensorMeta* zm = a[z].node()->meta().tensor();
  const TensorMeta* ym = y->meta().tensor();
  if (!out || !zm || !ym || !is_float_tensor(&add) || zm->dtype != out->dtype || ym->dtype != out->dtype ||
      zm->sizes != out->sizes || ym->sizes != out->sizes || zm->device != out->device || ym->device != out->device)
    return false;
  std::string error;
  g.set_insert_point(&add);
  Node* sum = emit(g, "aten::add.Tensor", {y, 0.0}, error);
  g.set_insert_point(nullptr);
  if (!sum) return Error{"decompose " + add.name() + ": " + error};
  if (sum->meta().tensor()->strides != out->strides || sum->meta().tensor()->dtype != out->dtype) {
    g.erase(sum);
    return false;
  }
  sum->meta().loc = add.meta().loc;
  add.replace_all_uses_with(sum);
  g.erase(&add);
  return true;
}

// Rewrites one self-attention `_native_multi_head_attention(x, x, x, E, H, w_in, b_in, w_out, b_out, None,
// need_weights=False)` (nn.MultiheadAttention's inference fast path, batch first) as the ops it computes:
//   qkv = addmm(b_in, x.view(B*T, E), w_in.t()).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4), contiguous
//   q, k, v = qkv.view(3, B*H, T, D)[0], [1], [2]
//   o = bmm(_softmax(bmm(q, k.transpose(1, 2)) * (1/sqrt(D)), -1), v).view(B, H, T, D).permute(0, 2, 1, 3)
//   out = addmm(b_out, o.contiguous().view(B*T, E), w_out.t()).view(B, T, E)
// (ATen's kernel scales q before its matmul; here the scale follows it: within a rounding); false when it
// does not apply (another mask, key or value not the query, weights asked for, shapes ATen rejects).
Expected<bool> decompose_self_attention(Graph& g, Node& mha) {
  const auto& a = mha.args();
  if (a.size() < 11 || a.size() > 13 || !mha.kwargs().empty()) return false;
  for (size_t i : {0, 1, 2, 5, 6, 7, 8})
    if (!a[i].is_node()) return false;
  Node* x = a[0].node();
  if (a[1].node() != x || a[2].node() != x || !a[3].is<int64_t>() || !a[4].is<int64_t>() || !a[9].is_none() ||
      !a[10].is<bool>() || a[10].as<bool>() || (a.size() > 11 && !a[11].is<bool>()) || (a.size() > 12 && !a[12].is_none()))
    return false;
  Node* out_use = only_first_result(mha);
  const TensorMeta* xm = x->meta().tensor();
  const TensorMeta* om = out_use ? out_use->meta().tensor() : nullptr;
  const int64_t e = a[3].as<int64_t>(), h = a[4].as<int64_t>();
  if (!out_use || !xm || !om || xm->dtype != c10::ScalarType::Float || !xm->device.is_cpu() ||
      xm->sizes.size() != 3 || xm->sizes[2] != e || h <= 0 || e % h != 0 || om->sizes != xm->sizes)
    return false;
  const std::vector<std::vector<int64_t>> shapes = {{3 * e, e}, {3 * e}, {e, e}, {e}};
  for (size_t i = 0; i < 4; ++i) {
    const TensorMeta* m = a[5 + i].node()->meta().tensor();
    if (!m || m->sizes != shapes[i] || m->dtype != xm->dtype || !m->device.is_cpu()) return false;
  }
  const int64_t b = xm->sizes[0], t = xm->sizes[1], d = e / h;
  if (b * t == 0) return false;
  std::string error;
  g.set_insert_point(&mha);
  auto contiguous = [&](Node* n) {
    return n ? emit(g, "aten::clone", {n}, error, {{"memory_format", Arg(c10::MemoryFormat::Contiguous)}}) : nullptr;
  };
  Node* x2 = emit(g, "aten::view", {x, Arg::ints({b * t, e})}, error);
  Node* w_in = x2 ? emit(g, "aten::t", {a[5]}, error) : nullptr;
  Node* qkv = w_in ? emit(g, "aten::addmm", {a[6], x2, w_in}, error) : nullptr;
  Node* qkv5 = qkv ? emit(g, "aten::view", {qkv, Arg::ints({b, t, 3, h, d})}, error) : nullptr;
  Node* heads = qkv5 ? contiguous(emit(g, "aten::permute", {qkv5, Arg::ints({2, 0, 3, 1, 4})}, error)) : nullptr;
  Node* split = heads ? emit(g, "aten::view", {heads, Arg::ints({3, b * h, t, d})}, error) : nullptr;
  Node *q = nullptr, *k = nullptr, *v = nullptr;
  if (split) q = emit(g, "aten::select.int", {split, int64_t{0}, int64_t{0}}, error);
  if (q) k = emit(g, "aten::select.int", {split, int64_t{0}, int64_t{1}}, error);
  if (k) v = emit(g, "aten::select.int", {split, int64_t{0}, int64_t{2}}, error);
  Node* kt = v ? emit(g, "aten::transpose.int", {k, int64_t{1}, int64_t{2}}, error) : nullptr;
  Node* scores = kt ? emit(g, "aten::bmm", {q, kt}, error) : nullptr;
  Node* scaled = scores ? emit(g, "aten::mul.Tensor", {scores, 1.0 / std::sqrt(static_cast<double>(d))}, error) : nullptr;
  Node* probs = scaled ? emit(g, "aten::_softmax", {scaled, int64_t{-1}, false}, error) : nullptr;
  Node* o = probs ? emit(g, "aten::bmm", {probs, v}, error) : nullptr;
  Node* o4 = o ? emit(g, "aten::view", {o, Arg::ints({b, h, t, d})}, error) : nullptr;
  Node* merged = o4 ? contiguous(emit(g, "aten::permute", {o4, Arg::ints({0, 2, 1, 3})}, error)) : nullptr;
  Node* o2 = merged ? emit(g, "aten::view", {merged, Arg::ints({b * t, e})}, error) : nullptr;
  Node* w_out = o2 ? emit(g, "aten::t", {a[7]}, error) : nullptr;
  Node* proj = w_out ? emit(g, "aten::addmm", {a[8], o2, w_out}, error) : nullptr;
  Node* out = proj ? emit(g, "aten::view", {proj, Arg::ints({b, t, e})}, error) : nullptr;
  g.set_insert_point(nullptr);
  if (!out) return Error{"decompose " + mha.name() + ": " + error};
  if (out->meta().tensor()->sizes != om->sizes || out->meta().tensor()->strides != om->strides) return false;
  out->meta().loc = mha.meta().loc;
  out_use->replace_all_uses_with(out);
  g.erase(out_use);
  g.erase(&mha);
  return true;
}

}  // namespace

Expected<int> decompose_for_fusion(Graph& graph) {
  int count = 0;
  // The candidates first: a decomposition erases its node's getitem users,
  // which a walk over every node would visit after they were freed.
  std::vector<Node*> candidates;
  for (Node* n : graph.nodes())
    if (n->kind() == NodeKind::call_function && n->op() && !n->op()->is_getitem) candidates.push_back(n);
  for (Node* n : candidates) {
    const std::string& op = n->op()->qualified_name();
    const char* what = op == "aten::native_batch_norm"         ? "inference batch norm"
                       : op == "aten::max_pool2d_with_indices" ? "max pooling"
                       : op == "aten::addmm"                   ? "addmm: mm + a bias add fused with its activation"
                       : op == "aten::_native_multi_head_attention" ? "self-attention: linears, bmm, softmax"
                       : op == "aten::add.Tensor"              ? "zero(g) + y: y + 0 (no zeros made)"
                       : op == "aten::binary_cross_entropy"    ? "binary_cross_entropy: pointwise, a mean, a range check"
                       : op == "aten::binary_cross_entropy_backward" ? "binary_cross_entropy_backward: pointwise"
                                                               : nullptr;
    if (!what) continue;
    std::string name = n->name();
    auto done = op == "aten::native_batch_norm"         ? decompose_batch_norm(graph, *n)
                : op == "aten::max_pool2d_with_indices" ? decompose_max_pool(graph, *n)
                : op == "aten::addmm"                   ? decompose_addmm(graph, *n)
                : op == "aten::add.Tensor"              ? decompose_zero_add(graph, *n)
                : op == "aten::binary_cross_entropy"    ? decompose_binary_cross_entropy(graph, *n)
                : op == "aten::binary_cross_entropy_backward" ? decompose_binary_cross_entropy_backward(graph, *n)
                                                        : decompose_self_attention(graph, *n);
    if (!done) return done.error();
    if (*done) {
      TJ_LOG(graph_code, "decompose: {} ({})", name, what);
      ++count;
    }
  }
  lint_in_debug(graph, "decompose_for_fusion");
  return count;
}

}  // namespace tj::graph
