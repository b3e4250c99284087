// Which graph nodes one oneDNN step computes (see onednn_plan.h): a
// convolution or a Linear and the single-use chain of post-ops after it.
// Only what the node metas prove is planned (float32 on the CPU, constant
// arguments, a residual of the output's own sizes); everything else stays
// with the llvm lowering (fused kernels) or ATen.
#include "jit/onednn_plan.h"

#include <atomic>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "graph/op_registry.h"
#include "jit/onednn_matmul.h"
#include "jit/onednn_memory.h"
#include "jit/onednn_pool.h"
#include "support/log.h"

namespace tj::jit::onednn {

namespace {

using graph::Arg;
using graph::Node;
using graph::TensorMeta;

std::atomic<int> g_enabled{-1};  // -1: not read yet
std::atomic<int> g_linear_mode{-1};  // a LinearMode; -1: TRACEJIT_ONEDNN_LINEAR not read yet

std::string name_of(const Node& n) {
  return n.kind() == graph::NodeKind::call_function && n.op() ? n.op()->qualified_name() : std::string();
}

// Positional argument `i`, else the keyword `name`; null when absent.
const Arg* arg_at(const Node& n, size_t i, const char* name) {
  if (i < n.args().size()) return &n.args()[i];
  return n.kwarg(name);
}

bool number(const Arg* a, double* out) {
  if (!a) return false;
  if (a->is<double>()) *out = a->as<double>();
  else if (a->is<int64_t>()) *out = static_cast<double>(a->as<int64_t>());
  else if (a->is<bool>()) *out = a->as<bool>() ? 1.0 : 0.0;
  else return false;
  return true;
}

// A number argument, `fallback` when absent; false when it is something else.
bool number_or(const Node& n, size_t i, const char* name, double fallback, double* out) {
  const Arg* a = arg_at(n, i, name);
  if (!a || a->is_none()) {
    *out = fallback;
    return true;
  }
  return number(a, out);
}

bool ints(const Arg* a, std::vector<int64_t>* out) {
  if (!a || !a->is_list()) return false;
  out->clear();
  for (const Arg& item : a->items()) {
    if (!item.is<int64_t>()) return false;
    out->push_back(item.as<int64_t>());
  }
  return true;
}

const TensorMeta* f32_cpu(const Node* n) {
  const TensorMeta* m = n ? n->meta().tensor() : nullptr;
  return m && m->defined && m->dtype == c10::ScalarType::Float && m->device.is_cpu() ? m : nullptr;
}

const TensorMeta* value_meta(const Node* n) { return f32_cpu(n); }

bool is_input(const Node* n) {
  return n->kind() == graph::NodeKind::placeholder || n->kind() == graph::NodeKind::get_attr;
}

bool frozen_constant(const Node* n) {
  return n->kind() == graph::NodeKind::placeholder && n->meta().tags.frozen_constant;
}

std::unique_ptr<Match> match_conv(const Node& n) {
  const TensorMeta *x = nullptr, *w = nullptr, *out = f32_cpu(&n);
  if (n.args().size() != 9 || !out || !n.args()[0].is_node() || !n.args()[1].is_node()) return nullptr;
  x = f32_cpu(n.args()[0].node());
  w = f32_cpu(n.args()[1].node());
  const size_t rank = x ? x->sizes.size() : 0;
  if (!x || !w || rank < 3 || rank > 5 || w->sizes.size() != rank || out->sizes.size() != rank) return nullptr;
  auto plan = std::make_shared<Plan>();
  plan->op = Plan::Op::conv;
  const Arg& bias = n.args()[2];
  if (!bias.is_none() && !(bias.is_node() && f32_cpu(bias.node()) && f32_cpu(bias.node())->sizes.size() == 1))
    return nullptr;
  plan->has_bias = bias.is_node();
  if (!ints(&n.args()[3], &plan->stride) || !ints(&n.args()[4], &plan->padding) ||
      !ints(&n.args()[5], &plan->dilation) || !n.args()[6].is<bool>() || !ints(&n.args()[7], &plan->output_padding) ||
      !n.args()[8].is<int64_t>())
    return nullptr;
  plan->transposed = n.args()[6].as<bool>();
  plan->groups = n.args()[8].as<int64_t>();
  const size_t spatial = rank - 2;
  for (auto* v : {&plan->stride, &plan->padding, &plan->dilation, &plan->output_padding})
    if (v->size() == 1 && spatial > 1) v->assign(spatial, (*v)[0]);
  if (plan->stride.size() != spatial || plan->padding.size() != spatial || plan->dilation.size() != spatial ||
      (plan->transposed && plan->output_padding.size() != spatial) || plan->groups < 1)
    return nullptr;
  for (int64_t s : out->sizes)
    if (s <= 0) return nullptr;  // empty: ATen's
  plan->cache_weight = is_input(n.args()[1].node());
  plan->frozen_weight = frozen_constant(n.args()[1].node());
  auto m = std::make_unique<Match>();
  m->plan = std::move(plan);
  m->nodes = {&n};
  m->reads = {n.args()[0].node(), n.args()[1].node(), bias.is_node() ? bias.node() : nullptr, nullptr};
  return m;
}

// The parameter under `w` when it is one seen through a transpose (`t`, `transpose(0, 1)`, `permute([1, 0])`).
const Node* parameter_under(const Node* w) {
  if (is_input(w)) return w;
  const std::string name = name_of(*w);
  if ((name == "aten::t" || name == "aten::transpose.int" || name == "aten::permute") && !w->inputs().empty() &&
      is_input(w->inputs()[0]))
    return w->inputs()[0];
  return nullptr;
}

std::unique_ptr<Match> match_linear(const Node& n, bool addmm) {
  // Below these, oneDNN's fixed cost per call is not won back against the BLAS ATen calls.
  constexpr int64_t kMinRows = 16, kMinWork = int64_t{1} << 22;
  const size_t first = addmm ? 1 : 0;
  if (n.args().size() != first + 2) return nullptr;
  for (const auto& [key, value] : n.kwargs())  // beta=1, alpha=1 only
    if (!((key == "beta" || key == "alpha") && value.is<int64_t>() && value.as<int64_t>() == 1)) return nullptr;
  for (const Arg& a : n.args())
    if (!a.is_node()) return nullptr;
  const Node* xn = n.args()[first].node();
  const Node* wn = n.args()[first + 1].node();
  const TensorMeta *x = f32_cpu(xn), *w = f32_cpu(wn), *out = f32_cpu(&n);
  if (!x || !w || !out || x->sizes.size() != 2 || w->sizes.size() != 2 || !parameter_under(wn)) return nullptr;
  const int64_t m = x->sizes[0], k = x->sizes[1], cols = w->sizes[1];
  if (w->sizes[0] != k || m < kMinRows || m * k * cols < kMinWork || !linears_enabled(m, k)) return nullptr;
  const Node* bn = addmm ? n.args()[0].node() : nullptr;
  if (bn) {
    const TensorMeta* b = f32_cpu(bn);
    if (!b || b->sizes != std::vector<int64_t>{cols} || b->strides != std::vector<int64_t>{1}) return nullptr;
  }
  auto plan = std::make_shared<Plan>();
  plan->op = Plan::Op::linear;
  plan->has_bias = bn != nullptr;
  plan->cache_weight = true;
  plan->frozen_weight = frozen_constant(wn) || (wn != parameter_under(wn) && frozen_constant(parameter_under(wn)));
  auto match = std::make_unique<Match>();
  match->plan = std::move(plan);
  match->nodes = {&n};
  match->reads = {xn, wn, bn, nullptr};
  return match;
}

// `t` broadcasts along the channels of `value` (conv: dim 1; linear: the last dim): one value per channel or one in all.
bool per_channel(const Match& m, const TensorMeta& value, const Node* t) {
  const TensorMeta* tm = f32_cpu(t);
  if (!tm || tm->sizes.size() > value.sizes.size()) return false;
  const size_t rank = value.sizes.size(), lead = rank - tm->sizes.size();
  const size_t channel = m.plan->op == Plan::Op::conv ? 1 : rank - 1;
  for (size_t d = lead; d < rank; ++d) {
    const int64_t s = tm->sizes[d - lead];
    if (s != 1 && !(d == channel && s == value.sizes[channel])) return false;
  }
  return true;
}

void add_binary(Match& m, PostOp::Kind kind, const Node* operand) {
  PostOp p;
  p.kind = kind;
  p.operand = static_cast<int>(m.reads.size());
  m.reads.push_back(operand);
  m.plan->post.push_back(p);
}

// The elementwise post-op `user` applies to `cur` (p's alg and factors): true when oneDNN's matches it, false when
// it does not, none when `user` is no such op.
std::optional<bool> eltwise_post_op(const Node* cur, const Node& user, const std::string& name, PostOp& p) {
  auto first_is_cur = [&] { return user.args()[0].is_node() && user.args()[0].node() == cur; };
  auto unary = [&](Eltwise alg) {
    p.alg = alg;
    return first_is_cur() && user.args().size() == 1 && user.kwargs().empty();
  };
  if (name == "aten::relu") return unary(Eltwise::relu);
  if (name == "aten::silu") return unary(Eltwise::silu);
  if (name == "aten::sigmoid") return unary(Eltwise::sigmoid);
  if (name == "aten::tanh") return unary(Eltwise::tanh);
  if (name == "aten::hardswish") return unary(Eltwise::hardswish);
  if (name == "aten::hardsigmoid") return unary(Eltwise::hardsigmoid);
  if (name == "aten::leaky_relu") {
    p.alg = Eltwise::leaky_relu;
    return first_is_cur() && number_or(user, 1, "negative_slope", 0.01, &p.alpha);
  } else if (name == "aten::elu") {
    double scale = 0, input_scale = 0;
    p.alg = Eltwise::elu;
    return first_is_cur() && number_or(user, 1, "alpha", 1.0, &p.alpha) && number_or(user, 2, "scale", 1.0, &scale) &&
           number_or(user, 3, "input_scale", 1.0, &input_scale) && scale == 1.0 && input_scale == 1.0;
  } else if (name == "aten::gelu") {
    const Arg* a = arg_at(user, 1, "approximate");
    const std::string approximate = a && a->is<std::string>() ? a->as<std::string>() : "none";
    p.alg = approximate == "tanh" ? Eltwise::gelu_tanh : Eltwise::gelu_erf;
    return first_is_cur() && (approximate == "none" || approximate == "tanh");
  } else if (name == "aten::clamp" || name == "aten::hardtanh" || name == "aten::clamp_min" ||
             name == "aten::clamp_max") {
    const bool hardtanh = name == "aten::hardtanh";
    const double inf = std::numeric_limits<double>::infinity();
    p.alg = Eltwise::clamp;
    const Arg* lo = name == "aten::clamp_max" ? nullptr : arg_at(user, 1, "min");
    const Arg* hi = name == "aten::clamp_min" ? nullptr : arg_at(user, name == "aten::clamp_max" ? 1 : 2, "max");
    p.alpha = hardtanh ? -1.0 : -inf;
    p.beta = hardtanh ? 1.0 : inf;
    return first_is_cur() && (!lo || lo->is_none() || number(lo, &p.alpha)) &&
           (!hi || hi->is_none() || number(hi, &p.beta)) && p.alpha <= p.beta;
  }
  return std::nullopt;
}

// Extends `m` by `user` (the one reader of its value `cur`) when oneDNN can apply it as a post-op.
bool absorb(Match& m, const Node* cur, const Node& user) {
  const TensorMeta* value = f32_cpu(cur);
  const TensorMeta* out = f32_cpu(&user);
  if (!value || !out || user.args().empty()) return false;
  const std::string name = name_of(user);
  // a Linear on a [..., K] input: addmm's [M, N] viewed back as [..., N] (contiguous), then its activation; the
  // primitive computes [M, N] and its result is given the view's sizes (run_linear)
  const bool viewed = !m.plan->out_view.empty();
  if (m.plan->op == Plan::Op::linear && !viewed && value->sizes.size() == 2 &&
      (name == "aten::view" || name == "aten::_unsafe_view" || name == "aten::reshape") &&
      user.args()[0].is_node() && user.args()[0].node() == cur && out->sizes.size() >= 3 && out->is_contiguous() &&
      out->sizes.back() == value->sizes[1]) {
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < out->sizes.size(); ++d) rows *= out->sizes[d];
    if (rows != value->sizes[0]) return false;
    m.plan->out_view = out->sizes;
    m.nodes.push_back(&user);
    return true;
  }
  if (out->sizes != value->sizes) return false;
  // after the view only the bias (a [N] add right after it: a traced `linear` on a 3-d input is mm, view, add)
  // and elementwise post-ops (no operand of the 2-d shape, no residual)
  if (viewed) {
    bool bias = false;
    if (name == "aten::add.Tensor" && !m.plan->has_bias && m.plan->post.empty() && user.args().size() == 2) {
      const Arg& a = user.args()[0];
      const Arg& other = a.is_node() && a.node() == cur ? user.args()[1] : a;
      const TensorMeta* r = other.is_node() && other.node() != cur ? f32_cpu(other.node()) : nullptr;
      double alpha = 1;
      bias = r && number_or(user, 2, "alpha", 1.0, &alpha) && alpha == 1.0 &&
             r->sizes == std::vector<int64_t>{value->sizes.back()} && r->strides == std::vector<int64_t>{1};
    }
    if (!bias && (name == "aten::addcmul" || name == "aten::add.Tensor" ||
                  (name == "aten::mul.Tensor" &&
                   !(user.args().size() == 2 && (!user.args()[0].is_node() || !user.args()[1].is_node())))))
      return false;
  }
  PostOp p;
  bool ok = false;
  if (std::optional<bool> eltwise = eltwise_post_op(cur, user, name, p)) {
    ok = *eltwise;
  } else if (name == "aten::addcmul" && user.args().size() >= 3 && user.args()[0].is_node() &&
             user.args()[1].is_node() && user.args()[2].is_node()) {
    // self + value * t1 * t2 with cur one factor: an inference batch norm's scale and shift
    double value = 1;
    const Node* self = user.args()[0].node();
    const Node* t1 = user.args()[1].node();
    const Node* t2 = user.args()[2].node();
    const Node* factor = t1 == cur ? t2 : t2 == cur ? t1 : nullptr;
    if (!number_or(user, 3, "value", 1.0, &value) || value != 1.0 || !factor || self == cur || factor == cur ||
        !per_channel(m, *value_meta(cur), factor) || !per_channel(m, *value_meta(cur), self))
      return false;
    add_binary(m, PostOp::Kind::binary_mul, factor);
    add_binary(m, PostOp::Kind::binary_add, self);
    m.nodes.push_back(&user);
    return true;
  } else if (name == "aten::mul.Tensor" || name == "aten::mul.Scalar") {
    p.alg = Eltwise::scale;
    const Arg& a = user.args()[0];
    const Arg* b = user.args().size() == 2 ? &user.args()[1] : nullptr;
    ok = b && ((a.is_node() && a.node() == cur && number(b, &p.alpha)) ||
               (b->is_node() && b->node() == cur && number(&a, &p.alpha)));
    if (!ok && b && name == "aten::mul.Tensor") {  // by a per-channel tensor
      const Arg& other = a.is_node() && a.node() == cur ? *b : a;
      if (!other.is_node() || other.node() == cur || !per_channel(m, *value, other.node())) return false;
      add_binary(m, PostOp::Kind::binary_mul, other.node());
      m.nodes.push_back(&user);
      return true;
    }
  } else if (name == "aten::add.Tensor" && user.args().size() == 2 && [&] {
               // a per-channel tensor: a Linear's bias (decompose_for_fusion's mm + bias) or a binary add
               double alpha = 1;
               const Arg& a = user.args()[0];
               const Arg& b = user.args()[1];
               const Arg& other = a.is_node() && a.node() == cur ? b : a;
               const TensorMeta* r = other.is_node() ? f32_cpu(other.node()) : nullptr;
               return number_or(user, 2, "alpha", 1.0, &alpha) && alpha == 1.0 && r && other.node() != cur &&
                      r->sizes != value->sizes && per_channel(m, *value, other.node());
             }()) {
    const Arg& a = user.args()[0];
    const Node* other = (a.is_node() && a.node() == cur ? user.args()[1] : a).node();
    const TensorMeta* r = f32_cpu(other);
    if (m.plan->op == Plan::Op::linear && !m.plan->has_bias && m.plan->post.empty() &&
        r->sizes == std::vector<int64_t>{value->sizes.back()} && r->strides == std::vector<int64_t>{1}) {
      m.plan->has_bias = true;
      m.reads[2] = other;
    } else {
      add_binary(m, PostOp::Kind::binary_add, other);
    }
    m.nodes.push_back(&user);
    return true;
  } else if (name == "aten::add.Tensor" && !m.plan->has_residual && user.args().size() == 2) {
    double alpha = 1;
    if (!number_or(user, 2, "alpha", 1.0, &alpha)) return false;
    const Arg& a = user.args()[0];
    const Arg& b = user.args()[1];
    const bool cur_first = a.is_node() && a.node() == cur;
    const Arg& other = cur_first ? b : a;
    if (!other.is_node() || other.node() == cur || !(cur_first || (b.is_node() && b.node() == cur))) return false;
    const TensorMeta* r = f32_cpu(other.node());
    // a + alpha * b: the residual's factor only when the residual is b
    if (!r || r->sizes != value->sizes || (!cur_first && alpha != 1.0)) return false;
    p.kind = PostOp::Kind::sum;
    p.alpha = cur_first ? alpha : 1.0;
    m.plan->has_residual = true;
    m.reads[3] = other.node();
    ok = true;
  }
  if (!ok) return false;
  m.plan->post.push_back(p);
  m.nodes.push_back(&user);
  return true;
}

const char* eltwise_name(Eltwise e) {
  switch (e) {
    case Eltwise::relu: return "relu";
    case Eltwise::leaky_relu: return "leaky_relu";
    case Eltwise::gelu_erf: return "gelu";
    case Eltwise::gelu_tanh: return "gelu_tanh";
    case Eltwise::silu: return "silu";
    case Eltwise::sigmoid: return "sigmoid";
    case Eltwise::tanh: return "tanh";
    case Eltwise::hardswish: return "hardswish";
    case Eltwise::hardsigmoid: return "hardsigmoid";
    case Eltwise::elu: return "elu";
    case Eltwise::clamp: return "clamp";
    case Eltwise::scale: return "scale";
  }
  return "?";
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return "[" + s + "]";
}

}  // namespace

bool enabled() {
  int v = g_enabled.load();
  if (v < 0) {
    const char* env = std::getenv("TRACEJIT_ONEDNN");
    v = env && std::string(env) == "0" ? 0 : 1;
    g_enabled = v;
  }
  return v == 1;
}

void set_enabled(bool on) { g_enabled = on ? 1 : 0; }

bool in_training() {
  static const bool all = [] {
    const char* env = std::getenv("TRACEJIT_ONEDNN");
    return env && std::string(env) == "all";
  }();
  return all && enabled();
}

std::string inner_product_impl() {
  using dnnl::memory;
  try {
    const memory::desc src({64, 512}, memory::data_type::f32, memory::format_tag::ab);
    const memory::desc weights({512, 512}, memory::data_type::f32, memory::format_tag::any);
    const memory::desc dst({64, 512}, memory::data_type::f32, memory::format_tag::ab);
    const dnnl::inner_product_forward::desc d(dnnl::prop_kind::forward_inference, src, weights, dst);
    return dnnl::inner_product_forward::primitive_desc(d, engine()).impl_info_str();
  } catch (const dnnl::error&) {
    return std::string();
  }
}

void set_linear_mode(LinearMode mode) { g_linear_mode = static_cast<int>(mode); }

LinearMode linear_mode() {
  int mode = g_linear_mode.load();
  if (mode < 0) {
    const char* env = std::getenv("TRACEJIT_ONEDNN_LINEAR");
    const std::string v = env ? env : "";
    mode = static_cast<int>(v == "1" ? LinearMode::always : v == "0" ? LinearMode::never : LinearMode::auto_);
    g_linear_mode = mode;
  }
  return static_cast<LinearMode>(mode);
}

bool linears_enabled(int64_t rows, int64_t depth) {
  if (const LinearMode mode = linear_mode(); mode != LinearMode::auto_) return mode == LinearMode::always;
  static const std::string impl = inner_product_impl();
  static const bool brgemm = impl.rfind("brg", 0) == 0;
  // the tall, shallow rule was measured on oneDNN's own sgemm only (not on
  // a reference or pre-AVX2 kernel)
  static const bool sgemm = impl.find("gemm:jit") != std::string::npos;
  static const bool logged = [] {
    if (!brgemm)
      TJ_LOG(perf, "oneDNN's inner product on this CPU is {}, slower than the BLAS ATen calls: Linears run as "
                   "ATen's addmm/mm{} (TRACEJIT_ONEDNN_LINEAR=1 forces oneDNN)",
                   impl.empty() ? "unavailable" : impl,
                   sgemm ? fmt::format(" but for tall ones over at most {} input features", kShallowDepth) : "");
    return true;
  }();
  (void)logged;
  return brgemm || (sgemm && rows >= kShallowRows && depth <= kShallowDepth);
}

std::string Plan::describe() const {
  std::string s = op == Op::conv     ? (transposed ? "conv_transpose" : "conv")
                  : op == Op::matmul ? "matmul"
                  : op == Op::pool   ? std::string(pool == Pool::max               ? "max_pool"
                                                : pool == Pool::avg_include_pad ? "avg_pool"
                                                                                : "avg_pool exclude-pad") +
                                         " kernel=" + join(kernel) + " stride=" + join(stride) +
                                         " padding=" + join(padding) + "," + join(padding_r) +
                                         " dilation=" + join(dilation)
                                     : "linear";
  if ((op == Op::matmul || op == Op::linear) && !out_view.empty()) s += " view=" + join(out_view);
  if (op == Op::matmul && !out_perm.empty()) s += " permuted=" + join(out_perm);
  if (op == Op::matmul && !a_view.empty()) s += " a-strided";
  if (op == Op::matmul && !b_view.empty()) s += " b-strided";
  if (op == Op::conv) {
    s += " stride=" + join(stride) + " padding=" + join(padding) + " dilation=" + join(dilation);
    if (transposed) s += " output_padding=" + join(output_padding);
    s += " groups=" + std::to_string(groups);
  }
  s += has_bias ? " +bias" : "";
  for (const PostOp& p : post)
    s += p.kind == PostOp::Kind::sum          ? " +sum(" + std::to_string(p.alpha) + ")"
         : p.kind == PostOp::Kind::binary_mul ? " *binary" + std::to_string(p.operand)
         : p.kind == PostOp::Kind::binary_add ? " +binary" + std::to_string(p.operand)
                                              : std::string(" +") + eltwise_name(p.alg) + "(" + std::to_string(p.alpha) +
                                                    "," + std::to_string(p.beta) + ")";
  s += cache_weight ? (frozen_weight ? " frozen-weight" : " cached-weight") : "";
  s += keep_channels_last ? " channels-last" : "";
  return s;
}

std::unique_ptr<Match> match(const Node& head, const std::unordered_set<const Node*>& taken,
                             const std::unordered_set<const Node*>& excluded) {
  const std::string name = name_of(head);
  if (excluded.count(&head) || taken.count(&head)) return nullptr;
  if (name == "aten::bmm" || name == "aten::baddbmm") return match_matmul(head, taken, excluded);
  if (name == "aten::maximum") return match_max_pool(head, taken, excluded);
  if (name == "aten::avg_pool2d") return match_avg_pool(head, taken, excluded);
  std::unique_ptr<Match> m = name == "aten::convolution" ? match_conv(head)
                             : name == "aten::addmm"     ? match_linear(head, true)
                             : name == "aten::mm"        ? match_linear(head, false)
                                                         : nullptr;
  if (!m) return nullptr;
  const Node* cur = &head;
  while (cur->users().size() == 1) {
    const Node* user = cur->users()[0];
    if (user->kind() != graph::NodeKind::call_function || taken.count(user) || excluded.count(user)) break;
    // the value read twice by its one user (x * x, x + x) is not a post-op
    size_t reads = 0;
    for (const Node* in : user->inputs()) reads += in == cur;
    if (reads != 1 || !absorb(*m, cur, *user)) break;
    cur = user;
  }
  // a view with no post-op after it stays a view of the step's [M, N] value
  if (m->plan->op == Plan::Op::linear && !m->plan->out_view.empty()) {
    const std::string last = name_of(*m->nodes.back());
    if (last == "aten::view" || last == "aten::_unsafe_view" || last == "aten::reshape") {
      m->nodes.pop_back();
      m->plan->out_view.clear();
    }
  }
  return m;
}

}  // namespace tj::jit::onednn
