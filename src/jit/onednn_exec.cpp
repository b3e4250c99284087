// oneDNN steps at run time (see onednn_exec.h): memory descriptors from
// ATen tensors' strides, the primitive cache and the conv / inner-product
// calls with their post-ops (their weights packed by onednn_weights.h).
#include "jit/frozen_constants.h"
#include "jit/onednn_exec.h"
#include "jit/onednn_f43.h"
#include "jit/onednn_layout.h"
#include "jit/onednn_finite.h"
#include "jit/onednn_geometry.h"
#include "jit/onednn_memory.h"
#include "jit/onednn_buffers.h"
#include "jit/onednn_matmul.h"
#include "jit/onednn_pool.h"
#include "jit/onednn_post_ops.h"
#include "jit/onednn_weights.h"
#include "jit/onednn_winograd.h"

#include <atomic>
#include <cfloat>
#include <cmath>
#include <limits>
#include <list>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/record_function.h>
#include <c10/core/Storage.h>
#include <c10/util/intrusive_ptr.h>

namespace tj::jit::onednn {

namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

std::atomic<long long> g_refuse_after{-1};
std::mutex g_mutex;  // guards everything below
Stats g_stats;
// Stats::refused_not_finite since tracejit.reset (its counters are zeroed apart from onednn::reset).
long long g_not_finite_since_zero = 0;

// ---- primitive cache: key -> (primitive desc, primitive), least recently used dropped past kCapacity
struct CachedPrimitive {
  std::string refused;  // non-empty: oneDNN does not take this case (why), remembered
  dnnl::primitive_desc_base pd;
  dnnl::primitive prim;
  memory::desc src, weights, dst;
  // src and dst in a layout oneDNN chose (blocked: Winograd's), reordered from and to the tensors' strides
  bool blocked = false;
  // a direct primitive of a Winograd-shaped convolution: the output pixels it computed before Winograd's turn
  // (winograd_after(), onednn_winograd.h)
  std::atomic<int64_t> direct_pixels{0};
  // src and dst plain (NCHW, contiguous): a 1x1 convolution of a plain input (see plain_1x1)
  bool plain = false;
  // a direct convolution on blocked src and dst (blocked_direct_shape, onednn_winograd.h), run as Winograd's
  bool blocked_direct = false;
};
constexpr size_t kCapacity = 1024;
std::list<std::pair<std::string, std::shared_ptr<CachedPrimitive>>> g_lru;
std::unordered_map<std::string, decltype(g_lru)::iterator> g_primitives;

std::shared_ptr<CachedPrimitive> find_primitive(const std::string& key) {
  auto it = g_primitives.find(key);
  if (it == g_primitives.end()) return nullptr;
  g_lru.splice(g_lru.begin(), g_lru, it->second);
  return it->second->second;
}

void keep_primitive(const std::string& key, std::shared_ptr<CachedPrimitive> p) {
  g_lru.emplace_front(key, std::move(p));
  g_primitives[key] = g_lru.begin();
  ++g_stats.primitives_created;
  if (g_lru.size() > kCapacity) {
    g_primitives.erase(g_lru.back().first);
    g_lru.pop_back();
  }
}

// The primitive cached under `key`, else the one `build` makes (a refusal
// too: `refused` set), kept in the cache. `build` runs without the lock
// (two threads may build the same primitive; the later one is kept).
template <class Build>
std::shared_ptr<CachedPrimitive> primitive_for(const std::string& key, Build&& build) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (std::shared_ptr<CachedPrimitive> p = find_primitive(key)) return p;
  }
  auto c = std::make_shared<CachedPrimitive>();
  try {
    build(*c);
  } catch (const dnnl::error& e) {
    c->refused = std::string("oneDNN: ") + e.what();
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  keep_primitive(key, c);
  return c;
}


// The bounds of a step's operands (onednn_finite.h); `operands`: of its binary post-ops. Bounds remembered
// for them are worst cases that grow from step to step: when they prove too little (a value not proved finite
// before a NaN-losing post-op, or a result too large for Winograd), the operands are scanned and it is tried
// again.
Bounds bounds_of(const Plan& p, const at::Tensor& x, double gain, const at::Tensor* bias, const at::Tensor* residual,
                 const Operands& operands) {
  std::vector<const at::Tensor*> binary;
  for (const auto& [index, t] : operands.tensors) binary.push_back(&t);
  bool x_remembered = false;
  Bounds b = step_bounds(p, abs_bound(x, &x_remembered), gain, bias, residual, binary);
  if ((x_remembered || b.remembered) && !(b.proved && b.head < kBoundLimit))
    b = step_bounds(p, scanned_bound(x), gain, bias, residual, binary, /*scan=*/true);
  return b;
}

const char* kNanLosing =
    "a NaN, an inf or a value near FLT_MAX may reach a relu/clamp/hardsigmoid/hardswish post-op (oneDNN's "
    "differ from ATen's there)";

std::string key_of(const Plan& plan, c10::IntArrayRef x, c10::IntArrayRef w, bool x_channels_last) {
  std::string k = plan.describe() + (x_channels_last ? " cl" : "") + " x";
  for (int64_t s : x) k += "," + std::to_string(s);
  k += " w";
  for (int64_t s : w) k += "," + std::to_string(s);
  return k;
}

// oneDNN's reference implementations are orders of magnitude slower than
// ATen's kernels (a blocked conv with binary post-ops: seconds): refused.
constexpr const char* kReferenceOnly = "oneDNN has only its reference implementation";
bool reference_impl(const dnnl::primitive_desc_base& pd, std::string* why) {
  const std::string impl = pd.impl_info_str();
  if (impl.rfind("ref", 0) != 0) return false;
  *why = std::string(kReferenceOnly) + " (" + impl + ") for this case";
  return true;
}

// A 1x1 convolution (stride 1, unpadded, one group) of a plain (NCHW) input of 14x14 or more runs on the plain
// layouts (oneDNN's gemm convolution: a matrix product per image) instead of reordering its input to
// channels-last for brgconv_1x1: measured 1.2-1.9x faster, reorder included (densenet's 1x1 convs after the
// cat and its batch norm + relu kernel; one thread). At 7x7 the channels-last one is as fast or faster. Only
// with no post-op but relu, a scale or a residual: with every 1x1 conv on the plain layouts mobilenet_v3_large
// went from 1.31x to 0.91x eager's speed and efficientnet_b0 from 1.05x to 0.55x (their 1x1 convs carry
// hardswish / silu post-ops, which the gemm convolution likely applies element by element).
bool plain_1x1(const Plan& p, const at::Tensor& x, const at::Tensor& w) {
  for (const PostOp& q : p.post)
    if (q.kind == PostOp::Kind::binary_mul || q.kind == PostOp::Kind::binary_add ||
        (q.kind == PostOp::Kind::eltwise && q.alg != Eltwise::relu && q.alg != Eltwise::scale))
      return false;
  return !p.transposed && p.groups == 1 && x.dim() == 4 && w.size(2) == 1 && w.size(3) == 1 &&
         p.stride == std::vector<int64_t>{1, 1} && p.padding == std::vector<int64_t>{0, 0} &&
         p.dilation == std::vector<int64_t>{1, 1} && x.size(2) * x.size(3) >= 196 && x.size(1) > 1 &&
         x.is_contiguous() && !x.is_contiguous(at::MemoryFormat::ChannelsLast);
}

// Whether the step may write its result into the residual's buffer (Plan::residual_last_use): the step reads it
// last, it lies as the destination does (`strides`, dense), and nothing but its slot holds the tensor or its
// storage (no view of it, not the input: the caller's or a graph output's tensors are held elsewhere).
bool sum_in_place(const Plan& p, const at::Tensor& residual, const at::Tensor& x, c10::IntArrayRef strides) {
  const bool ok = p.residual_last_use && residual.has_storage() && residual.is_non_overlapping_and_dense() &&
         same_layout(residual, strides) && residual.storage_offset() == 0 && residual.use_count() == 1 &&
         residual.storage().use_count() == 1 && !residual.is_same(x) && !residual.requires_grad() &&
         residual.scalar_type() == at::kFloat;
  if (ok) {
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_stats.sums_in_place;
  }
  return ok;
}

void add_operand_args(std::unordered_map<int, memory>& args, const Operands& operands, size_t rank) {
  for (const auto& [index, t] : operands.tensors)
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(index) | DNNL_ARG_SRC_1, wrap(post_op_operand_md(t, rank), t));
}

// The strides a conv step's result gets: channels-last when every reader is a oneDNN step, else eager's (a
// size-generic program's other sizes: contiguous).
std::vector<int64_t> result_strides(const Plan& p, const graph::TensorMeta& eager, const std::vector<int64_t>& sizes) {
  if (p.keep_channels_last) return channels_last_strides(sizes);
  if (eager.sizes == sizes) return eager.strides;
  std::vector<int64_t> contiguous(sizes.size(), 1);
  for (size_t d = sizes.size() - 1; d > 0; --d) contiguous[d - 1] = contiguous[d] * sizes[d];
  return contiguous;
}

// A buffer for oneDNN memory of this descriptor, from ATen's allocator (as every other tensor of the program).
memory scratch_memory(const memory::desc& md, at::Tensor* holder) {
  *holder = at::empty({static_cast<int64_t>((md.get_size() + sizeof(float) - 1) / sizeof(float))},
                      at::TensorOptions().dtype(at::kFloat));
  return memory(md, engine(), holder->data_ptr());
}

void record_run(const CachedPrimitive& prim) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_stats.steps_run;
  if (prim.blocked) ++g_stats.winograd_steps;
  if (prim.blocked_direct) ++g_stats.blocked_direct_steps;
  g_stats.last_impl = prim.pd.impl_info_str();
}

// A convolution whose primitive works on oneDNN's own (blocked) layouts (Winograd's, or a direct one's where
// they pay: blocked_direct_shape): the input reordered into it (or its
// blocked twin), the residual into the destination (the sum post-op; or copied from its twin), the result
// reordered out to its strides; a result internal to the program only when a reader needs it (a pending twin).
at::Tensor run_blocked_conv(const Plan& p, const CachedPrimitive& prim, const at::Tensor& x, const memory& wmem,
                            const at::Tensor* bias, const at::Tensor* residual, const Operands& operands,
                            const graph::TensorMeta& eager, const std::vector<int64_t>& out_sizes, dnnl::stream& s) {
  at::Tensor src_buffer, dst_buffer;
  memory dst = scratch_memory(prim.dst, &dst_buffer);
  memory src;
  if (const BlockedTwin* twin = twin_of(x, prim.src)) {
    src_buffer = twin->buffer;
    src = memory(prim.src, engine(), src_buffer.data_ptr());
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_stats.blocked_inputs_reused;
  } else {
    materialize(x);
    src = scratch_memory(prim.src, &src_buffer);
    RECORD_FUNCTION("tj::onednn reorder", c10::ArrayRef<const c10::IValue>{});
    memory from = wrap(strided_md(x), x);
    dnnl::reorder(from, src).execute(s, from, src);
  }
  if (residual) {
    RECORD_FUNCTION("tj::onednn residual reorder", c10::ArrayRef<const c10::IValue>{});
    if (const BlockedTwin* twin = twin_of(*residual, prim.dst)) {  // the same layout: a copy
      memory r(prim.dst, engine(), twin->buffer.data_ptr());
      dnnl::reorder(r, dst).execute(s, r, dst);
    } else {
      materialize(*residual);
      memory r = wrap(strided_md(*residual), *residual);
      dnnl::reorder(r, dst).execute(s, r, dst);
    }
  }
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wmem}, {DNNL_ARG_DST, dst}};
  at::Tensor b;
  if (bias) {
    b = bias->contiguous();
    args.emplace(DNNL_ARG_BIAS, wrap(memory::desc({out_sizes[1]}, dt::f32, tag::x), b));
  }
  add_operand_args(args, operands, out_sizes.size());
  {
    RECORD_FUNCTION("tj::onednn conv primitive", c10::ArrayRef<const c10::IValue>{});
    prim.prim.execute(s, args);
  }
  at::Tensor out = at::empty_strided(out_sizes, result_strides(p, eager, out_sizes), x.options());
  // only a value internal to the program (every reader a oneDNN step, each materializing what it reads):
  // nobody outside reads or writes it, so its reorder out waits for a reader that needs it
  const bool defer = p.keep_channels_last && !p.kernels_read && !out.is_inference();
  if (defer) {
    s.wait();
    remember_twin(out, prim.dst, std::move(dst_buffer), true, strided_md(out));
  } else {
    RECORD_FUNCTION("tj::onednn reorder", c10::ArrayRef<const c10::IValue>{});
    memory to = wrap(strided_md(out), out);
    dnnl::reorder(dst, to).execute(s, dst, to);
    s.wait();
  }
  record_run(prim);
  return out;
}

// Builds the convolution primitive of `p` for these operands into `c`: Winograd (blocked layouts) where asked and
// oneDNN has it, else the direct one on channels-last (or, `plain`, NCHW) memory; a case only oneDNN's reference
// implementation takes leaves `c.refused` set.
void build_conv(CachedPrimitive& c, const Plan& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor* bias,
                const Operands& operands, const std::vector<int64_t>& out_sizes, bool winograd, bool plain) {
  const size_t rank = out_sizes.size();
  using dnnl::algorithm;
  using dnnl::prop_kind;
  memory::dims strides(p.stride.begin(), p.stride.end()), dil, pad_l, pad_r;
  for (size_t d = 0; d < rank - 2; ++d) {
    dil.push_back(p.dilation[d] - 1);
    pad_l.push_back(p.padding[d]);
    const int64_t i = x.size(d + 2), o = out_sizes[d + 2], k = (w.size(d + 2) - 1) * p.dilation[d] + 1;
    // the right padding that makes oneDNN's size equation hold (ATen floors it away)
    pad_r.push_back(p.transposed ? (i - 1) * p.stride[d] + k - o - p.padding[d]
                                 : (o - 1) * p.stride[d] + k - i - p.padding[d]);
  }
  const tag cl = channels_last_tag(rank);
  memory::desc wany(conv_weight_md(p, w).dims(), dt::f32, tag::any);
  memory::desc bmd = bias ? memory::desc({out_sizes[1]}, dt::f32, tag::x) : memory::desc();
  dnnl::primitive_attr attr = attr_of(p, operands, rank);
  const memory::desc sany(dims_of(x.sizes()), dt::f32, tag::any), dany(dims_of(out_sizes), dt::f32, tag::any);
  // a primitive on the layouts oneDNN picks (blocked), and `c` taking one
  auto on_any = [&](algorithm alg) {
    return dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(prop_kind::forward_inference, alg, sany, wany, bmd, dany, strides, dil, pad_l,
                                        pad_r),
        attr, engine());
  };
  auto take = [&](const dnnl::convolution_forward::primitive_desc& pd) {
    c.src = pd.src_desc();
    c.dst = pd.dst_desc();
    c.weights = pd.weights_desc();
    c.pd = pd;
    c.prim = dnnl::convolution_forward(pd);
  };
  try {  // where oneDNN has no Winograd for the case (channels, post-ops), the direct one below
    std::string ref;
    if (winograd && winograd_shape(p, w))
      if (auto pd = on_any(algorithm::convolution_winograd); !reference_impl(pd, &ref)) {
        take(pd);
        c.blocked = true;
        return;
      }
  } catch (const dnnl::error&) {
  }
  try {  // a strided direct conv on the blocked layout where oneDNN's kernel there is the one measured faster
    if (!plain && operands.tensors.empty() && blocked_direct_shape(p, x, w))
      if (auto pd = on_any(algorithm::convolution_direct);
          std::string(pd.impl_info_str()) == kBlockedDirectImpl &&
          pd.src_desc() != memory::desc(dims_of(x.sizes()), dt::f32, cl)) {
        take(pd);
        c.blocked_direct = true;
        return;
      }
  } catch (const dnnl::error&) {
  }
  c.plain = plain;
  c.src = memory::desc(dims_of(x.sizes()), dt::f32, plain ? tag::nchw : cl);
  c.dst = memory::desc(dims_of(out_sizes), dt::f32, plain ? tag::nchw : cl);
  if (p.transposed) {
    dnnl::deconvolution_forward::desc d(prop_kind::forward_inference, algorithm::deconvolution_direct, c.src, wany,
                                        bmd, c.dst, strides, dil, pad_l, pad_r);
    dnnl::deconvolution_forward::primitive_desc pd(d, attr, engine());
    c.weights = pd.weights_desc();
    c.pd = pd;
    if (!reference_impl(pd, &c.refused)) c.prim = dnnl::deconvolution_forward(pd);
  } else {
    dnnl::convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct, c.src, wany, bmd,
                                      c.dst, strides, dil, pad_l, pad_r);
    dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
    c.weights = pd.weights_desc();
    c.pd = pd;
    if (!reference_impl(pd, &c.refused)) c.prim = dnnl::convolution_forward(pd);
  }
}

// A Winograd-shaped convolution where oneDNN has no Winograd (AVX2 hosts) as our own F(4x4, 3x3)
// (onednn_f43.h), under the NaN rule of oneDNN's: nullopt (the direct convolution) when its operands are not
// proved finite or it has a post-op run_f43 does not apply.
std::optional<at::Tensor> run_own_winograd(const Plan& p, const at::Tensor& x, const at::Tensor& w,
                                           const at::Tensor* bias, const at::Tensor* residual,
                                           const Operands& operands, const graph::TensorMeta& eager,
                                           const std::vector<int64_t>& out_sizes, dnnl::stream& s) {
  if (!f43_takes(p) || !operands.tensors.empty()) return std::nullopt;
  double w_bound = 0;
  memory u = packed_weight(w, conv_weight_md(p, w), f43_weight_md(w), p.cache_weight, p.frozen_weight, s, 0,
                           &w_bound, f43_transform_weight);
  const Bounds bounds = bounds_of(p, x, w_bound, bias, residual, operands);
  if (!(bounds.head < kBoundLimit && bounds.proved)) return std::nullopt;
  materialize(x);
  if (residual) materialize(*residual);
  const std::vector<int64_t> cl = channels_last_strides(out_sizes);
  at::Tensor src = relaid(x, channels_last_strides(x.sizes()), s), res, dst;
  if (residual && sum_in_place(p, *residual, x, cl)) {
    dst = res = *residual;  // read and written pixel by pixel: each output reads only its own residual value
    if (!dst.is_inference()) dst.unsafeGetTensorImpl()->bump_version();
  } else {
    if (residual) res = relaid(*residual, cl, s);
    dst = at::empty_strided(out_sizes, cl, x.options());
  }
  const at::Tensor b = bias ? bias->contiguous() : at::Tensor();
  run_f43(p, src, static_cast<const float*>(u.get_data_handle()), bias ? b.data_ptr<float>() : nullptr,
          residual ? &res : nullptr, dst);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_stats.steps_run;
    ++g_stats.winograd_steps;
    ++g_stats.own_winograd_steps;
    g_stats.last_impl = "tracejit winograd f43";
  }
  if (p.keep_channels_last) {
    remember_bound(dst, bounds.out);
    return dst;
  }
  return relaid(dst, result_strides(p, eager, out_sizes), s);
}

std::optional<at::Tensor> run_conv(const Plan& p, const at::Tensor& x, const at::Tensor& w, const at::Tensor* bias,
                                   const at::Tensor* residual, const Operands& operands,
                                   const graph::TensorMeta& eager, std::string* why) {
  std::vector<int64_t> out_sizes;
  if (!conv_shapes(p, x, w, bias, &out_sizes, why)) return std::nullopt;
  if (residual && residual->sizes() != c10::IntArrayRef(out_sizes)) {
    *why = "the residual's sizes differ from the output's";
    return std::nullopt;
  }
  const size_t rank = out_sizes.size();
  const std::string key = key_of(p, x.sizes(), w.sizes(), false) + operands.key;
  auto build = [&](bool winograd, bool plain = false) {
    return [&, winograd, plain](CachedPrimitive& c) {
      build_conv(c, p, x, w, bias, operands, out_sizes, winograd, plain);
    };
  };
  std::shared_ptr<CachedPrimitive> prim;
  if (winograd_after() > 0 && winograd_shape(p, w)) {
    // direct until it has computed winograd_after() output pixels: a one-off call never pays Winograd's
    // weight transform (onednn_winograd.h)
    std::shared_ptr<CachedPrimitive> direct = primitive_for(key + " direct", build(false));
    const int64_t pixels = out_sizes[0] * out_sizes[2] * out_sizes[3];
    if (direct->direct_pixels.load() < winograd_after()) {
      direct->direct_pixels += pixels;
      prim = std::move(direct);
      std::lock_guard<std::mutex> lock(g_mutex);
      ++g_stats.direct_before_winograd;
    }
  }
  const bool direct_first = prim != nullptr;
  if (!prim && plain_1x1(p, x, w)) {
    std::shared_ptr<CachedPrimitive> plain = primitive_for(key + " plain", build(false, true));
    if (plain->refused.empty()) prim = std::move(plain);  // else the channels-last one
  }
  if (!prim) prim = primitive_for(key, build(true));
  dnnl::stream s(engine());
  // (also where the direct one is refused for its post-ops: run_f43 applies a sum after another post-op)
  if (!direct_first && !prim->blocked && winograd_shape(p, w) &&
      (prim->refused.empty() || prim->refused.rfind(kReferenceOnly, 0) == 0))
    if (auto out = run_own_winograd(p, x, w, bias, residual, operands, eager, out_sizes, s)) return out;
  const bool losing = any_nan_losing(p);
  const int64_t out_dim = p.transposed ? -1 : 0;  // a transposed weight's dim 0 is the input's channels
  Bounds bounds;
  bool have_bounds = false;
  if (prim->refused.empty() && prim->blocked) {
    // Winograd's transforms spread a NaN or an inf over a whole tile (eager's convolution keeps it to the
    // outputs that read it): only inputs and weights proved finite (and far from overflowing) take it; the
    // others the direct convolution
    double w_bound = 0;
    memory wmem =
        packed_weight(w, conv_weight_md(p, w), prim->weights, p.cache_weight, p.frozen_weight, s, out_dim, &w_bound);
    bounds = bounds_of(p, x, w_bound, bias, residual, operands);
    have_bounds = true;
    if (bounds.head < kBoundLimit && bounds.proved) {
      at::Tensor out = run_blocked_conv(p, *prim, x, wmem, bias, residual, operands, eager, out_sizes, s);
      if (p.keep_channels_last) remember_bound(out, bounds.out);
      return out;
    }
    prim = primitive_for(key + " direct", build(false));
  }
  if (!prim->refused.empty()) {
    *why = prim->refused;
    return std::nullopt;
  }
  double w_bound = 0;
  memory wmem = packed_weight(w, conv_weight_md(p, w), prim->weights, p.cache_weight, p.frozen_weight, s, out_dim,
                              losing && !have_bounds ? &w_bound : nullptr);
  if (losing) {
    if (!have_bounds) bounds = bounds_of(p, x, w_bound, bias, residual, operands);
    if (!bounds.proved) {
      *why = kNanLosing;
      note_refused_not_finite();
      return std::nullopt;
    }
  }
  if (prim->blocked_direct) {
    at::Tensor out = run_blocked_conv(p, *prim, x, wmem, bias, residual, operands, eager, out_sizes, s);
    if (p.keep_channels_last && (losing || have_bounds)) remember_bound(out, bounds.out);
    return out;
  }
  materialize(x);
  if (residual) materialize(*residual);
  at::Tensor src = prim->plain ? x : relaid(x, channels_last_strides(x.sizes()), s);
  const std::vector<int64_t> dst_strides =
      prim->plain ? contiguous_strides(out_sizes) : channels_last_strides(out_sizes);
  at::Tensor dst;
  if (residual && sum_in_place(p, *residual, x, dst_strides)) {
    dst = *residual;  // the sum post-op accumulates into the residual's own buffer
    if (!dst.is_inference()) dst.unsafeGetTensorImpl()->bump_version();  // written: a blocked twin is stale
  } else {
    dst = at::empty_strided(out_sizes, dst_strides, x.options());
    if (residual) {
      RECORD_FUNCTION("tj::onednn residual reorder", c10::ArrayRef<const c10::IValue>{});
      memory from = wrap(strided_md(*residual), *residual), to = wrap(prim->dst, dst);
      dnnl::reorder(from, to).execute(s, from, to);
    }
  }
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, wrap(prim->src, src)}, {DNNL_ARG_WEIGHTS, wmem}, {DNNL_ARG_DST, wrap(prim->dst, dst)}};
  at::Tensor b;
  if (bias) {
    b = bias->contiguous();
    args.emplace(DNNL_ARG_BIAS, wrap(memory::desc({out_sizes[1]}, dt::f32, tag::x), b));
  }
  add_operand_args(args, operands, rank);
  {
    RECORD_FUNCTION("tj::onednn conv primitive", c10::ArrayRef<const c10::IValue>{});
    prim->prim.execute(s, args);
    s.wait();
  }
  record_run(*prim);
  if (p.keep_channels_last) {
    if (losing || have_bounds) remember_bound(dst, bounds.out);
    return dst;
  }
  return relaid(dst, result_strides(p, eager, out_sizes), s);
}

std::optional<at::Tensor> run_linear(const Plan& p, const at::Tensor& x_in, const at::Tensor& wt,
                                     const at::Tensor* bias, const at::Tensor* residual, const Operands& operands,
                                     const graph::TensorMeta& eager, std::string* why) {
  // x [M, K] @ wt [K, N]: oneDNN's inner product takes the weight as [N, K]
  if (x_in.dim() != 2 || wt.dim() != 2 || x_in.size(1) != wt.size(0) ||
      (bias && (bias->dim() != 1 || bias->size(0) != wt.size(1)))) {
    *why = "the operands' shapes do not agree";
    return std::nullopt;
  }
  const int64_t m = x_in.size(0), n = wt.size(1), k = x_in.size(1);
  if (m == 0 || n == 0 || k == 0) {
    *why = "an empty operand";
    return std::nullopt;
  }
  if (residual && residual->sizes() != c10::IntArrayRef({m, n})) {
    *why = "the residual's sizes differ from the output's";
    return std::nullopt;
  }
  if (!p.out_view.empty()) {  // [M, N] viewed as [..., N] (onednn_plan.h)
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < p.out_view.size(); ++d) rows *= p.out_view[d];
    if (rows != m || p.out_view.back() != n) {
      *why = "the planned view does not split these rows";
      return std::nullopt;
    }
  }
  const std::string key = key_of(p, x_in.sizes(), wt.sizes(), false) + operands.key;
  const memory::desc wmd({n, k}, dt::f32, {wt.stride(1), wt.stride(0)});
  std::shared_ptr<CachedPrimitive> prim = primitive_for(key, [&](CachedPrimitive& c) {
    memory::desc src({m, k}, dt::f32, tag::ab), dst({m, n}, dt::f32, tag::ab);
    memory::desc wany({n, k}, dt::f32, tag::any);
    memory::desc bmd = bias ? memory::desc({n}, dt::f32, tag::x) : memory::desc();
    dnnl::inner_product_forward::desc d(dnnl::prop_kind::forward_inference, src, wany, bmd, dst);
    dnnl::inner_product_forward::primitive_desc pd(d, attr_of(p, operands, 2), engine());
    c.weights = pd.weights_desc();
    c.src = pd.src_desc();
    c.dst = pd.dst_desc();
    c.pd = pd;
    if (!reference_impl(pd, &c.refused)) c.prim = dnnl::inner_product_forward(pd);
    if (c.refused.empty() && (!(c.src == src) || !(c.dst == dst)))
      c.refused = "oneDNN's inner product wants another activation layout";
  });
  if (!prim->refused.empty()) {
    *why = prim->refused;
    return std::nullopt;
  }
  dnnl::stream s(engine());
  at::Tensor x = x_in.is_contiguous() ? x_in : x_in.contiguous();
  const bool losing = any_nan_losing(p);
  double w_bound = 0;
  memory wmem = packed_weight(wt, wmd, prim->weights, p.cache_weight, p.frozen_weight, s, 1, losing ? &w_bound : nullptr);
  if (losing) {
    if (!bounds_of(p, x, w_bound, bias, residual, operands).proved) {
      *why = kNanLosing;
      note_refused_not_finite();
      return std::nullopt;
    }
  }
  at::Tensor dst;
  const int64_t contiguous_mn[2] = {n, 1};
  if (residual && sum_in_place(p, *residual, x, contiguous_mn)) {
    dst = *residual;
    if (!dst.is_inference()) dst.unsafeGetTensorImpl()->bump_version();
  } else {
    dst = recycled_empty({m, n}, x.options());
    if (residual) dst.copy_(*residual);
  }
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, wrap(prim->src, x)}, {DNNL_ARG_WEIGHTS, wmem}, {DNNL_ARG_DST, wrap(prim->dst, dst)}};
  at::Tensor b;
  if (bias) {
    b = bias->contiguous();
    args.emplace(DNNL_ARG_BIAS, wrap(memory::desc({n}, dt::f32, tag::x), b));
  }
  add_operand_args(args, operands, 2);
  {
    RECORD_FUNCTION("tj::onednn inner product primitive", c10::ArrayRef<const c10::IValue>{});
    prim->prim.execute(s, args);
    s.wait();
  }
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_stats.steps_run;
    g_stats.last_impl = prim->pd.impl_info_str();
  }
  if (!p.out_view.empty()) return dst.view(p.out_view);  // contiguous, as the planned view's value
  if (eager.sizes == std::vector<int64_t>{m, n} && !same_layout(dst, eager.strides))
    return relaid(dst, eager.strides, s);
  return dst;
}

}  // namespace

std::optional<at::Tensor> run(const Plan& plan, const std::vector<const at::Tensor*>& reads,
                              const graph::TensorMeta& eager, std::string* why) {
  bool f32 = reads.size() >= 4 && reads[0] && (reads[1] || plan.op == Plan::Op::pool);
  for (const at::Tensor* t : reads)
    f32 = f32 && (!t || (t->defined() && t->scalar_type() == at::kFloat && t->device().is_cpu() &&
                         t->layout() == at::kStrided));
  const at::Tensor *bias = f32 ? reads[2] : nullptr, *residual = f32 ? reads[3] : nullptr;
  // a read internal value may be a Winograd result whose bytes are only in its blocked twin: written out before
  // anything reads them (a convolution's input and residual: in run_conv, which may read the twin instead)
  for (size_t i = 0; i < reads.size(); ++i)
    if (reads[i] && !(plan.op == Plan::Op::conv && (i == 0 || i == 3))) materialize(*reads[i]);
  std::optional<at::Tensor> out;
  try {
    if (g_refuse_after == 0) {
      *why = "refused for a test";
    } else if (!f32) {
      *why = "an operand is not a float32 CPU tensor";
    } else if (plan.op == Plan::Op::matmul) {
      out = run_matmul(plan, reads, eager, why);
    } else if (plan.op == Plan::Op::pool) {
      out = run_pool(plan, *reads[0], eager, why);
      if (out) {
        std::lock_guard<std::mutex> lock(g_mutex);
        ++g_stats.steps_run;
      }
    } else if (plan.op == Plan::Op::conv) {
      const at::Tensor &x = *reads[0], &w = *reads[1];
      if (x.dim() < 3 || x.dim() > 5 || w.dim() != x.dim() || plan.stride.size() != static_cast<size_t>(x.dim() - 2))
        *why = "the input's rank is not the planned one";
      else
        out = run_conv(plan, x, w, bias, residual, operands_of(plan, reads), eager, why);
    } else {
      out = run_linear(plan, *reads[0], *reads[1], bias, residual, operands_of(plan, reads), eager, why);
    }
  } catch (const dnnl::error& e) {
    *why = std::string("oneDNN: ") + e.what();
    out.reset();
  }
  if (!out) {
    for (const at::Tensor* t : reads)  // the step's nodes run as ATen ops on them
      if (t) materialize(*t);
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_stats.refused;
    if (why->rfind(kReferenceOnly, 0) == 0) ++g_stats.refused_reference_only;
  } else if (g_refuse_after > 0) {
    --g_refuse_after;
  }
  return out;
}

void refuse_after(long long n) { g_refuse_after = n; }

void note_off_for_training() {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_stats.off_for_training;
}

void note_refused_not_finite() {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_stats.refused_not_finite;
  ++g_not_finite_since_zero;
}

long long not_finite_refusals() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_not_finite_since_zero;
}

void zero_not_finite_refusals() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_not_finite_since_zero = 0;
}

Stats stats() {
  Stats out;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    out = g_stats;
  }
  const WeightCounts w = weight_counts();
  out.weight_packs = w.packs;
  out.weight_hits = w.hits;
  const TwinCounts t = twin_counts();
  out.results_deferred = t.deferred;
  out.results_materialized = t.materialized;
  out.outputs_recycled = recycle_counts().reused;
  return out;
}

void reset() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_stats = Stats{};
  g_primitives.clear();
  g_lru.clear();
  forget_packed_weights();
  forget_twins();
  forget_bounds();
  matmul_reset();
  forget_recycled();
  forget_open_cat();
}

}  // namespace tj::jit::onednn
