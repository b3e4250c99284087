// Max pooling as a oneDNN step: the decomposed pattern recognised, and the
// pooling primitive run (see onednn_pool.h).
#include "jit/onednn_pool.h"
#include "jit/onednn_memory.h"
#include "jit/onednn_exec.h"
#include "jit/onednn_finite.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include <oneapi/dnnl/dnnl.hpp>

#include <ATen/ops/empty_strided.h>
#include <ATen/record_function.h>

#include "graph/op_registry.h"

namespace tj::jit::onednn {

namespace {

using graph::Arg;
using graph::Node;
using graph::TensorMeta;

std::string name_of(const Node* n) {
  return n->kind() == graph::NodeKind::call_function && n->op() ? n->op()->qualified_name() : std::string();
}

const TensorMeta* f32_4d(const Node* n) {
  const TensorMeta* m = n->meta().tensor();
  return m && m->defined && m->dtype == c10::ScalarType::Float && m->device.is_cpu() && m->sizes.size() == 4 ? m
                                                                                                             : nullptr;
}

bool int_arg(const Node& n, size_t i, int64_t* out) {
  if (i >= n.args().size() || !n.args()[i].is<int64_t>()) return false;
  *out = n.args()[i].as<int64_t>();
  return true;
}

// slice.Tensor(src, dim, start, end, step) with int arguments: its source and (dim, start, end, step).
struct Slice {
  const Node* src = nullptr;
  int64_t dim = 0, start = 0, end = 0, step = 1;
};
std::optional<Slice> slice_of(const Node* n) {
  Slice s;
  if (name_of(n) != "aten::slice.Tensor" || n->args().size() != 5 || !n->kwargs().empty() ||
      !n->args()[0].is_node() || !int_arg(*n, 1, &s.dim) || !int_arg(*n, 2, &s.start) || !int_arg(*n, 3, &s.end) ||
      !int_arg(*n, 4, &s.step) || s.step < 1 || s.start < 0)
    return std::nullopt;
  s.src = n->args()[0].node();
  return s;
}

// Window offsets {0, d, 2d, ...}: their count and spacing.
bool evenly_spaced(const std::set<int64_t>& starts, int64_t* count, int64_t* spacing) {
  *count = static_cast<int64_t>(starts.size());
  *spacing = *count > 1 ? *std::next(starts.begin()) - *starts.begin() : 1;
  int64_t expect = 0;
  for (int64_t s : starts) {
    if (s != expect) return false;
    expect += *spacing;
  }
  return *spacing >= 1;
}

std::mutex g_mutex;
std::map<std::string, std::shared_ptr<dnnl::pooling_v2_forward>> g_primitives;  // by plan and input sizes

std::vector<int64_t> channels_last(c10::IntArrayRef sizes) {
  return {sizes[1] * sizes[2] * sizes[3], 1, sizes[3] * sizes[1], sizes[1]};
}

dnnl::memory::desc md_of(const at::Tensor& t) {
  return dnnl::memory::desc(dnnl::memory::dims(t.sizes().begin(), t.sizes().end()), dnnl::memory::data_type::f32,
                            dnnl::memory::dims(t.strides().begin(), t.strides().end()));
}

}  // namespace

std::unique_ptr<Match> match_max_pool(const Node& maximum, const std::unordered_set<const Node*>& taken,
                                      const std::unordered_set<const Node*>& excluded) {
  auto is_max = [](const Node* n) { return name_of(n) == "aten::maximum" && n->args().size() == 2 && n->kwargs().empty(); };
  if (!is_max(&maximum)) return nullptr;
  // the chain's root: climb while the one reader is the next maximum, reading this one first
  const Node* root = &maximum;
  while (root->users().size() == 1 && is_max(root->users()[0]) && root->users()[0]->args()[0].is_node() &&
         root->users()[0]->args()[0].node() == root)
    root = root->users()[0];
  const TensorMeta* out = f32_4d(root);
  if (!out) return nullptr;
  // the leaves, each slice(slice(P, 2, ...), 3, ...)
  std::vector<const Node*> nodes, leaves, maximums, inner;
  const Node* cur = root;
  while (true) {
    if (!cur->args()[1].is_node() || !cur->args()[0].is_node()) return nullptr;
    nodes.push_back(cur);
    maximums.push_back(cur);
    leaves.push_back(cur->args()[1].node());
    const Node* left = cur->args()[0].node();
    if (!is_max(left)) {
      leaves.push_back(left);
      break;
    }
    cur = left;
  }
  const Node* padded = nullptr;
  std::set<int64_t> starts[2];
  std::set<std::pair<int64_t, int64_t>> windows;
  int64_t step[2] = {0, 0};
  for (const Node* leaf : leaves) {
    auto w = slice_of(leaf);
    auto h = w ? slice_of(w->src) : std::nullopt;
    const TensorMeta* lm = f32_4d(leaf);
    if (!w || !h || w->dim != 3 || h->dim != 2 || (padded && h->src != padded) || !lm || lm->sizes != out->sizes)
      return nullptr;
    padded = h->src;
    for (int j = 0; j < 2; ++j) {
      const Slice& s = j == 0 ? *h : *w;
      if (step[j] != 0 && step[j] != s.step) return nullptr;
      step[j] = s.step;
      starts[j].insert(s.start);
    }
    if (!windows.insert({h->start, w->start}).second) return nullptr;
    nodes.push_back(leaf);
    if (std::find(inner.begin(), inner.end(), w->src) == inner.end()) {
      inner.push_back(w->src);
      nodes.push_back(w->src);
    }
  }
  auto plan = std::make_shared<Plan>();
  plan->op = Plan::Op::pool;
  plan->kernel.resize(2);
  plan->dilation.resize(2);
  for (int j = 0; j < 2; ++j)
    if (!evenly_spaced(starts[j], &plan->kernel[j], &plan->dilation[j]) || plan->dilation[j] != 1)
      return nullptr;  // dilated: oneDNN 2.6 has only its reference pooling (the fused kernel is faster)
  if (static_cast<int64_t>(windows.size()) != plan->kernel[0] * plan->kernel[1]) return nullptr;
  plan->stride = {step[0], step[1]};
  // the padding: constant_pad_nd(x, [w_left, w_right, h_left, h_right], -inf), or none
  const Node* x = padded;
  plan->padding = {0, 0};
  if (name_of(padded) == "aten::constant_pad_nd") {
    const auto& a = padded->args();
    if (a.size() != 3 || !a[0].is_node() || !a[1].is_list() || a[1].items().size() != 4) return nullptr;
    double value = 0;
    if (a[2].is<double>()) value = a[2].as<double>();
    else return nullptr;
    if (!(std::isinf(value) && value < 0)) return nullptr;
    std::vector<int64_t> pads;
    for (const Arg& p : a[1].items()) {
      if (!p.is<int64_t>() || p.as<int64_t>() < 0) return nullptr;
      pads.push_back(p.as<int64_t>());
    }
    plan->padding = {pads[2], pads[0]};
    x = a[0].node();
    nodes.push_back(padded);
  }
  const TensorMeta* in = f32_4d(x);
  if (!in || in->sizes[0] != out->sizes[0] || in->sizes[1] != out->sizes[1]) return nullptr;
  plan->pool_input = in->sizes;
  // oneDNN's right padding: what the output's last window needs past the input
  plan->padding_r.resize(2);
  for (int j = 0; j < 2; ++j) {
    const int64_t extent = (plan->kernel[j] - 1) * plan->dilation[j] + 1;
    plan->padding_r[j] = (out->sizes[2 + j] - 1) * plan->stride[j] + extent - in->sizes[2 + j] - plan->padding[j];
    // every window must hold an input element (ATen's pooling asks padding <= kernel / 2)
    if (plan->padding_r[j] < 0 || plan->padding[j] >= extent || plan->padding_r[j] >= extent) return nullptr;
  }
  // every node but the root is read only inside the pattern
  std::unordered_set<const Node*> inside(nodes.begin(), nodes.end());
  for (const Node* n : nodes) {
    if (taken.count(n) || excluded.count(n)) return nullptr;
    if (n == root) continue;
    for (const Node* user : n->users())
      if (!inside.count(user)) return nullptr;
  }
  auto m = std::make_unique<Match>();
  m->plan = std::move(plan);
  // in an order a fallback can run them: the pad, the slices along H, those along W, the maximums bottom up
  std::vector<const Node*> ordered;
  if (x != padded) ordered.push_back(padded);
  for (const Node* n : inner) ordered.push_back(n);
  for (const Node* n : leaves) ordered.push_back(n);
  for (auto it = maximums.rbegin(); it != maximums.rend(); ++it) ordered.push_back(*it);
  m->nodes = std::move(ordered);
  m->reads = {x, nullptr, nullptr, nullptr};
  return m;
}

namespace {

// Argument `i` (or keyword `name`) of `n`: ints as a list of `dims` (one int repeated), absent: `fallback`.
bool ints_arg(const Node& n, size_t i, const char* name, size_t dims, std::vector<int64_t> fallback,
              std::vector<int64_t>* out) {
  const Arg* a = i < n.args().size() ? &n.args()[i] : nullptr;
  for (const auto& [key, value] : n.kwargs())
    if (key == name) a = &value;
  std::vector<int64_t> v;
  if (!a || a->is_none()) v = std::move(fallback);
  else if (a->is<int64_t>()) v = {a->as<int64_t>()};
  else if (a->is_list())
    for (const Arg& item : a->items()) {
      if (!item.is<int64_t>()) return false;
      v.push_back(item.as<int64_t>());
    }
  else return false;
  if (v.size() == 1) v.resize(dims, v[0]);
  if (v.size() != dims) return false;
  *out = std::move(v);
  return true;
}

// Bool argument `i` (or keyword `name`) of `n`, absent: `fallback`.
bool bool_arg(const Node& n, size_t i, const char* name, bool fallback, bool* out) {
  const Arg* a = i < n.args().size() ? &n.args()[i] : nullptr;
  for (const auto& [key, value] : n.kwargs())
    if (key == name) a = &value;
  *out = fallback;
  if (!a || a->is_none()) return true;
  if (!a->is<bool>()) return false;
  *out = a->as<bool>();
  return true;
}

}  // namespace

std::unique_ptr<Match> match_avg_pool(const Node& avg, const std::unordered_set<const Node*>& taken,
                                      const std::unordered_set<const Node*>& excluded) {
  // avg_pool2d(self, kernel_size, stride=[], padding=0, ceil_mode=False, count_include_pad=True,
  //            divisor_override=None)
  const TensorMeta* out = f32_4d(&avg);
  if (name_of(&avg) != "aten::avg_pool2d" || !out || avg.args().empty() || !avg.args()[0].is_node() ||
      taken.count(&avg) || excluded.count(&avg))
    return nullptr;
  const Node* x = avg.args()[0].node();
  const TensorMeta* in = f32_4d(x);
  auto plan = std::make_shared<Plan>();
  bool ceil_mode = false, include_pad = true;
  if (!in || in->sizes[0] != out->sizes[0] || in->sizes[1] != out->sizes[1] ||
      !ints_arg(avg, 1, "kernel_size", 2, {}, &plan->kernel) ||
      !ints_arg(avg, 2, "stride", 2, plan->kernel, &plan->stride) ||
      !ints_arg(avg, 3, "padding", 2, {0}, &plan->padding) || !bool_arg(avg, 4, "ceil_mode", false, &ceil_mode) ||
      !bool_arg(avg, 5, "count_include_pad", true, &include_pad) || ceil_mode)
    return nullptr;
  const Arg* divisor = avg.args().size() > 6 ? &avg.args()[6] : nullptr;
  for (const auto& [key, value] : avg.kwargs())
    if (key == "divisor_override") divisor = &value;
  if (divisor && !divisor->is_none()) return nullptr;
  if (plan->stride.empty()) plan->stride = plan->kernel;  // stride=[]: the kernel's
  plan->op = Plan::Op::pool;
  plan->pool = include_pad ? Plan::Pool::avg_include_pad : Plan::Pool::avg_exclude_pad;
  plan->dilation = {1, 1};
  plan->pool_input = in->sizes;
  plan->padding_r.resize(2);
  for (int j = 0; j < 2; ++j) {
    if (plan->kernel[j] < 1 || plan->stride[j] < 1 || plan->padding[j] < 0 || 2 * plan->padding[j] > plan->kernel[j])
      return nullptr;
    // oneDNN's right padding: what the output's last window needs past the input (floor mode: at most the left)
    plan->padding_r[j] = (out->sizes[2 + j] - 1) * plan->stride[j] + plan->kernel[j] - in->sizes[2 + j] -
                         plan->padding[j];
    if (plan->padding_r[j] < 0 || plan->padding_r[j] > plan->padding[j]) return nullptr;
  }
  auto m = std::make_unique<Match>();
  m->plan = std::move(plan);
  m->nodes = {&avg};
  m->reads = {x, nullptr, nullptr, nullptr};
  return m;
}

std::optional<at::Tensor> run_pool(const Plan& p, const at::Tensor& x, const TensorMeta& eager, std::string* why) {
  if (x.sizes() != c10::IntArrayRef(p.pool_input) || eager.sizes.size() != 4) {
    *why = "the input's sizes are not the planned ones";  // a program for every size: its paddings would differ
    return std::nullopt;
  }
  // oneDNN's max pooling drops a NaN (ATen's propagates it) and makes a window of -inf -FLT_MAX: an input
  // not proved finite (onednn_finite.h) runs the pattern as ATen ops (an average propagates both as ATen's)
  const bool max = p.pool == Plan::Pool::max;
  const double bound = max ? abs_bound(x) : 0;
  if (!std::isfinite(bound)) {
    note_refused_not_finite();
    *why = "the input holds a NaN or an inf (oneDNN's max pooling does not treat them as ATen's does)";
    return std::nullopt;
  }
  const std::vector<int64_t> out_sizes = eager.sizes;
  at::Tensor src = x;
  const std::vector<int64_t> cl = channels_last(x.sizes());
  dnnl::stream s(engine());
  std::string key = p.describe();
  for (int64_t v : x.sizes()) key += "," + std::to_string(v);
  for (int64_t v : out_sizes) key += ";" + std::to_string(v);
  std::shared_ptr<dnnl::pooling_v2_forward> prim;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_primitives.find(key);
    if (it != g_primitives.end()) prim = it->second;
  }
  using tag = dnnl::memory::format_tag;
  const dnnl::memory::desc src_md(dnnl::memory::dims(x.sizes().begin(), x.sizes().end()), dnnl::memory::data_type::f32,
                                  tag::nhwc);
  const dnnl::memory::desc dst_md(dnnl::memory::dims(out_sizes.begin(), out_sizes.end()), dnnl::memory::data_type::f32,
                                  tag::nhwc);
  if (!prim) {
    dnnl::memory::dims dil = {p.dilation[0] - 1, p.dilation[1] - 1};
    const dnnl::algorithm alg = max                                    ? dnnl::algorithm::pooling_max
                                : p.pool == Plan::Pool::avg_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                                                        : dnnl::algorithm::pooling_avg_exclude_padding;
    dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, src_md, dst_md,
                                     {p.stride[0], p.stride[1]}, {p.kernel[0], p.kernel[1]}, dil,
                                     {p.padding[0], p.padding[1]}, {p.padding_r[0], p.padding_r[1]});
    dnnl::pooling_v2_forward::primitive_desc pd(d, engine());
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) {
      *why = std::string("oneDNN has only its reference pooling (") + pd.impl_info_str() + ")";
      return std::nullopt;
    }
    prim = std::make_shared<dnnl::pooling_v2_forward>(pd);
    std::lock_guard<std::mutex> lock(g_mutex);
    g_primitives.emplace(key, prim);
  }
  if (!same_layout(x, cl)) {
    RECORD_FUNCTION("tj::onednn reorder", c10::ArrayRef<const c10::IValue>{});
    src = at::empty_strided(x.sizes(), cl, x.options());
    dnnl::memory from(md_of(x), engine(), x.data_ptr()), to(src_md, engine(), src.data_ptr());
    dnnl::reorder(from, to).execute(s, from, to);
  }
  at::Tensor dst = at::empty_strided(out_sizes, channels_last(out_sizes), x.options());
  {
    RECORD_FUNCTION("tj::onednn pool primitive", c10::ArrayRef<const c10::IValue>{});
    dnnl::memory a(src_md, engine(), src.data_ptr()), b(dst_md, engine(), dst.data_ptr());
    prim->execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_DST, b}});
  }
  if (p.keep_channels_last || same_layout(dst, eager.strides)) {
    s.wait();
    if (p.keep_channels_last && max) remember_bound(dst, bound);  // a maximum of its inputs
    return dst;
  }
  RECORD_FUNCTION("tj::onednn reorder", c10::ArrayRef<const c10::IValue>{});
  at::Tensor out = at::empty_strided(out_sizes, eager.strides, x.options());
  dnnl::memory from(dst_md, engine(), dst.data_ptr()), to(md_of(out), engine(), out.data_ptr());
  dnnl::reorder(from, to).execute(s, from, to);
  s.wait();
  return out;
}

}  // namespace tj::jit::onednn
