// Bounds that prove the values oneDNN steps read finite (see onednn_finite.h).
#include "jit/onednn_finite.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <ATen/ops/abs.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/max.h>
#include <ATen/ops/sum.h>
#include <ATen/record_function.h>
#include <c10/util/intrusive_ptr.h>

namespace tj::jit::onednn {

namespace {

struct Remembered {
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> impl;
  const c10::TensorImpl* address = nullptr;
  const void* data = nullptr;
  uint32_t version = 0;
  double bound = 0;
};
constexpr size_t kRemembered = 8;
thread_local std::vector<Remembered> t_bounds;

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

bool nan_losing(const PostOp& p) {
  if (p.kind != PostOp::Kind::eltwise) return false;
  switch (p.alg) {
    case Eltwise::relu:
    case Eltwise::clamp:
    case Eltwise::hardsigmoid:
    case Eltwise::hardswish: return true;  // ATen's x * min(max(x + 3, 0), 6) / 6 overflows past FLT_MAX / 6
    case Eltwise::leaky_relu: return p.alpha == 0;  // oneDNN's relu without a slope: vmaxps(x, 0)
    default: return false;
  }
}

double abs_bound(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0) return 0;
  if (!t.is_inference() && t.has_storage()) {
    const uint32_t version = t.unsafeGetTensorImpl()->version_counter().current_version();
    for (const Remembered& r : t_bounds)
      if (r.address == t.unsafeGetTensorImpl() && !r.impl.expired() && r.data == t.data_ptr() && r.version == version)
        return r.bound;
  }
  if (t.numel() <= 4096 && t.is_contiguous() && t.scalar_type() == at::kFloat) {
    // a bias or a per-channel operand: a loop costs less than a dispatched reduction
    const float* p = t.data_ptr<float>();
    double m = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = std::fabs(static_cast<double>(p[i]));
      if (!(v <= std::numeric_limits<double>::max())) return kInf;  // NaN or inf
      m = std::max(m, v);
    }
    return m;
  }
  RECORD_FUNCTION("tj::onednn finite check", c10::ArrayRef<const c10::IValue>{});
  // over the dense block as it lies (a reduction over a channels-last view would copy it first)
  const at::Tensor flat = t.is_non_overlapping_and_dense() ? t.as_strided({t.numel()}, {1}) : t.reshape({-1});
  auto [lo, hi] = at::aminmax(flat);  // NaN propagates into both
  const double a = lo.item<double>(), b = hi.item<double>();
  if (!std::isfinite(a) || !std::isfinite(b)) return kInf;
  return std::max(std::fabs(a), std::fabs(b));
}

double weight_gain(const at::Tensor& w, int64_t out_dim) {
  if (!w.defined() || w.numel() == 0) return 0;
  RECORD_FUNCTION("tj::onednn weight gain", c10::ArrayRef<const c10::IValue>{});
  const at::Tensor a = at::abs(w);
  double g = 0;
  if (out_dim < 0 || w.dim() < 2) {
    g = a.sum().item<double>();
  } else {
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < w.dim(); ++d)
      if (d != out_dim) dims.push_back(d);
    g = at::max(at::sum(a, dims)).item<double>();  // NaN propagates
  }
  // a float32 sum rounds: a little over it
  return std::isfinite(g) ? g * (1 + 1e-4) : kInf;
}

void remember_bound(const at::Tensor& out, double bound) {
  if (out.is_inference() || !out.has_storage() || !std::isfinite(bound)) return;
  for (auto it = t_bounds.begin(); it != t_bounds.end(); ++it)
    if (it->address == out.unsafeGetTensorImpl()) {
      t_bounds.erase(it);
      break;
    }
  if (t_bounds.size() == kRemembered) t_bounds.erase(t_bounds.begin());
  t_bounds.push_back(Remembered{c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(out.getIntrusivePtr()),
                                out.unsafeGetTensorImpl(), out.data_ptr(),
                                out.unsafeGetTensorImpl()->version_counter().current_version(), bound});
}

void forget_bounds() { t_bounds.clear(); }

double bound_after(const PostOp& p, double bound, double operand) {
  const double a = std::fabs(p.alpha), b = std::fabs(p.beta);
  switch (p.kind) {
    case PostOp::Kind::sum: return bound + a * operand;
    case PostOp::Kind::binary_mul: return bound * operand;
    case PostOp::Kind::binary_add: return bound + operand;
    case PostOp::Kind::eltwise: break;
  }
  switch (p.alg) {
    case Eltwise::scale: return bound * a;
    case Eltwise::clamp: {  // clamp(x, lo, hi): within the bound or at a finite limit
      double out = bound;
      if (std::isfinite(p.alpha)) out = std::max(out, a);
      if (std::isfinite(p.beta)) out = std::max(out, b);
      return out;
    }
    case Eltwise::sigmoid:
    case Eltwise::tanh:
    case Eltwise::hardsigmoid: return std::max(bound, 1.0);
    default:  // relu, leaky_relu, gelu, silu, hardswish, elu: |f(x)| <= |x| * max(1, |alpha|) + |alpha| + 1
      return bound * std::max(1.0, a) + a + b + 1;
  }
}

}  // namespace tj::jit::onednn
