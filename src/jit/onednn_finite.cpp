// Bounds that prove the values oneDNN steps read finite (see onednn_finite.h).
#include "jit/onednn_finite.h"
#include "jit/onednn_winograd.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <ATen/Parallel.h>
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

#if defined(__x86_64__)
bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}

// The largest |x| of `n` float32 as bits (sign cleared): an unsigned maximum orders finite values as their
// magnitudes, and every inf or NaN (>= 0x7f800000) above them. One pass at memory speed (0.19 ms for
// 8x64x56x56 on one thread, against at::aminmax's 0.26 ms: ATen's kernels run at AVX2 width here too).
__attribute__((target("avx2"))) uint32_t abs_max_bits(const uint32_t* u, int64_t n) {
  const __m256i mask = _mm256_set1_epi32(0x7fffffff);
  __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
  int64_t i = 0;
  const auto* v = reinterpret_cast<const __m256i*>(u);
  for (; i + 32 <= n; i += 32, v += 4) {
    m0 = _mm256_max_epu32(m0, _mm256_and_si256(_mm256_loadu_si256(v), mask));
    m1 = _mm256_max_epu32(m1, _mm256_and_si256(_mm256_loadu_si256(v + 1), mask));
    m2 = _mm256_max_epu32(m2, _mm256_and_si256(_mm256_loadu_si256(v + 2), mask));
    m3 = _mm256_max_epu32(m3, _mm256_and_si256(_mm256_loadu_si256(v + 3), mask));
  }
  m0 = _mm256_max_epu32(_mm256_max_epu32(m0, m1), _mm256_max_epu32(m2, m3));
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), m0);
  uint32_t m = 0;
  for (uint32_t v : lanes) m = std::max(m, v);
  for (; i < n; ++i) m = std::max(m, u[i] & 0x7fffffffu);
  return m;
}
#else
bool have_avx2() { return false; }
uint32_t abs_max_bits(const uint32_t*, int64_t) { return 0xffffffffu; }  // not called
#endif

// max |t|: the bound remembered for `t` when `remembered` and there is one (*took set then), else a scan of it.
double bound_of(const at::Tensor& t, bool remembered, bool* took);

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

double abs_bound(const at::Tensor& t, bool* remembered) { return bound_of(t, true, remembered); }

double scanned_bound(const at::Tensor& t) { return bound_of(t, false, nullptr); }

namespace {

double bound_of(const at::Tensor& t, bool remembered, bool* took) {
  if (!t.defined() || t.numel() == 0) return 0;
  if (remembered && !t.is_inference() && t.has_storage()) {
    const uint32_t version = t.unsafeGetTensorImpl()->version_counter().current_version();
    for (const Remembered& r : t_bounds)
      if (r.address == t.unsafeGetTensorImpl() && !r.impl.expired() && r.data == t.data_ptr() && r.version == version) {
        if (took) *took = true;
        return r.bound;
      }
  }
  materialize(t);  // a Winograd result not yet reordered out (onednn_winograd.h)
  if (t.scalar_type() == at::kFloat && t.is_non_overlapping_and_dense() && t.has_storage() && have_avx2()) {
    // the dense block as it lies, from its lowest address (strides are not negative)
    const auto* bits = static_cast<const uint32_t*>(t.data_ptr());
    uint32_t m = 0;
    if (t.numel() <= 4096) {
      m = abs_max_bits(bits, t.numel());  // a bias or a per-channel operand
    } else {
      RECORD_FUNCTION("tj::onednn finite check", c10::ArrayRef<const c10::IValue>{});
      m = abs_max_bits(bits, t.numel());
    }
    if (m >= 0x7f800000u) return kInf;  // an inf or a NaN
    float f;
    std::memcpy(&f, &m, sizeof f);
    return f;
  }
  RECORD_FUNCTION("tj::onednn finite check", c10::ArrayRef<const c10::IValue>{});
  // over the dense block as it lies (a reduction over a channels-last view would copy it first)
  const at::Tensor flat = t.is_non_overlapping_and_dense() ? t.as_strided({t.numel()}, {1}) : t.reshape({-1});
  auto [lo, hi] = at::aminmax(flat);  // NaN propagates into both
  const double a = lo.item<double>(), b = hi.item<double>();
  if (!std::isfinite(a) || !std::isfinite(b)) return kInf;
  return std::max(std::fabs(a), std::fabs(b));
}

}  // namespace

namespace {

// weight_gain of a float32 weight whose rows (the weights one output reads) lie one after another: `rows` rows
// of `cols` elements from `w`, one read of it and no temporary (at::abs over a whole weight allocated and faulted
// in a copy of it: ~1.3 ms a layer, a sixth of resnet18's warm first call). Sums in double, rows in parallel.
double row_gain(const float* w, int64_t rows, int64_t cols) {
  std::vector<double> sums(static_cast<size_t>(rows), 0.0);
  at::parallel_for(0, rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(cols, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const float* row = w + r * cols;
      double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      int64_t c = 0;
      for (; c + 4 <= cols; c += 4) {
        s0 += std::fabs(row[c]);
        s1 += std::fabs(row[c + 1]);
        s2 += std::fabs(row[c + 2]);
        s3 += std::fabs(row[c + 3]);
      }
      for (; c < cols; ++c) s0 += std::fabs(row[c]);
      sums[static_cast<size_t>(r)] = (s0 + s1) + (s2 + s3);  // NaN when a NaN was read, inf when an inf
    }
  });
  double g = 0;
  for (double s : sums) {
    if (!std::isfinite(s)) return kInf;
    g = std::max(g, s);
  }
  return g;
}

}  // namespace

double weight_gain(const at::Tensor& w, int64_t out_dim) {
  if (!w.defined() || w.numel() == 0) return 0;
  RECORD_FUNCTION("tj::onednn weight gain", c10::ArrayRef<const c10::IValue>{});
  if (w.scalar_type() == at::kFloat && w.has_storage() && w.device().is_cpu()) {
    const auto* data = static_cast<const float*>(w.data_ptr());
    double g = -1;
    if ((out_dim < 0 || w.dim() < 2) && w.is_contiguous()) g = row_gain(data, 1, w.numel());
    else if (out_dim == 0 && w.is_contiguous()) g = row_gain(data, w.size(0), w.numel() / w.size(0));
    else if (out_dim == 1 && w.dim() == 2 && w.stride(0) == 1 && w.stride(1) == w.size(0))  // a Linear's [K, N] = W^T
      g = row_gain(data, w.size(1), w.size(0));
    // the rounding of a float32 sum (the bound oneDNN's accumulation is held to): a little over it
    if (g >= 0) return std::isfinite(g) ? g * (1 + 1e-4) : kInf;
  }
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

bool any_nan_losing(const Plan& p) {
  for (const PostOp& q : p.post)
    if (nan_losing(q)) return true;
  return false;
}

Bounds step_bounds(const Plan& p, double x_bound, double gain, const at::Tensor* bias, const at::Tensor* residual,
                   const std::vector<const at::Tensor*>& binary, bool scan) {
  Bounds b;
  auto bound = [scan, &b](const at::Tensor& t) { return scan ? scanned_bound(t) : abs_bound(t, &b.remembered); };
  double v = x_bound * gain + (bias ? abs_bound(*bias) : 0.0);
  if (std::isnan(v)) v = kInf;  // 0 * inf
  b.head = v;
  size_t next = 0;
  for (const PostOp& q : p.post) {
    if (nan_losing(q) && !(v < kBoundLimit)) b.proved = false;
    double operand = 0;
    if (q.kind == PostOp::Kind::sum) operand = residual ? bound(*residual) : kInf;
    else if (q.kind == PostOp::Kind::binary_mul || q.kind == PostOp::Kind::binary_add)
      operand = next < binary.size() ? bound(*binary[next++]) : kInf;
    v = bound_after(q, v, operand);
    if (std::isnan(v)) v = kInf;
  }
  b.out = v;
  return b;
}

}  // namespace tj::jit::onednn
