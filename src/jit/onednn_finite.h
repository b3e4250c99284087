// NaN and inf around oneDNN steps (onednn_exec.cpp, onednn_pool.cpp): a
// bound on a tensor's magnitude that proves it finite, and the rule that
// says which steps need one.
//
// oneDNN's clamping post-ops (relu, leaky_relu with slope 0, clamp /
// hardtanh, and hardsigmoid, built from clip_v2) compute max/min with the
// constant as the second operand of vmaxps/vminps, so a NaN becomes the
// bound (and leaky_relu(-inf, 0) becomes 0 where ATen's gives NaN); ATen's
// keep NaN. ATen's hardswish, x * min(max(x + 3, 0), 6) / 6, overflows to
// inf for x past FLT_MAX / 6 where oneDNN's gives x. Its max pooling drops NaN and turns a window of -inf into
// -FLT_MAX. Winograd's transforms spread a NaN or an inf over a tile. So
// these steps run only when the value before the post-op is proved finite:
// every operand finite and small enough (kBoundLimit) that no sum of
// products can overflow. Else the step is refused and its nodes run as
// ATen ops (exact eager values). The other post-ops were checked with NaN,
// +inf and -inf against ATen (tests/e2e/onednn_nonfinite.py) and need no proof.
//
// Scanning an operand costs one pass over it (an AVX2 loop: ~0.19 ms for
// 8x64x56x56 on one thread, ~3 % of a Winograd conv of that shape), so a
// step that proved its result's bound remembers it for the tensor it
// returned (a value internal to the program, by identity and version
// counter, as Winograd's blocked twins): the next step reading it takes the
// bound without a scan while it stays under the limit.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "jit/onednn_plan.h"

namespace tj::jit::onednn {

// A bound this far under FLT_MAX proves that no sum of products (with a
// Winograd transform's growth, below 1e6) overflows.
constexpr double kBoundLimit = 1e30;

// Whether oneDNN computes this post-op otherwise than ATen for a NaN, an inf or a value near FLT_MAX.
bool nan_losing(const PostOp& p);

// max |t| over its elements; +inf when one is NaN or an inf. A bound
// remembered for `t` (remember_bound) is taken instead of a scan (and
// *remembered set, when given).
double abs_bound(const at::Tensor& t, bool* remembered = nullptr);
// max |t| from a scan of it, never a remembered bound. A remembered bound is
// a worst case carried from step to step (each multiplies it by its weight's
// gain), so down a deep net (resnet50's 16 bottlenecks) it passes
// kBoundLimit while the values stay small: a step whose proof fails on
// remembered bounds tries again on scanned ones before it refuses.
double scanned_bound(const at::Tensor& t);
// A bound on |sum_k w_k x_k| per unit of max |x| over the outputs of a
// convolution or Linear with weight `w`: the largest L1 norm of the weights
// one output reads (those of index i along `out_dim`; out_dim < 0: all of
// them). +inf when an element is not finite.
double weight_gain(const at::Tensor& w, int64_t out_dim);
// Remembers `bound` (>= max |out|, finite) for `out` at its current version.
void remember_bound(const at::Tensor& out, double bound);
// Drops this thread's bounds (onednn::reset).
void forget_bounds();

// The bound of a value after the post-op `p` given `bound` before it (and the
// bound of its operand, for sum and binary post-ops).
double bound_after(const PostOp& p, double bound, double operand);

// What the operands' bounds prove about a step's values: `head` bounds the
// primitive's own result (bias included), `proved` says that every value
// entering a nan_losing post-op is under kBoundLimit, `out` bounds the
// step's result (+inf: unknown); `remembered`: an operand's bound was a
// remembered one, not a scan (a scan may prove what it did not).
struct Bounds {
  double head = 0, out = 0;
  bool proved = true;
  bool remembered = false;
};

// Whether a post-op of `p` is nan_losing.
bool any_nan_losing(const Plan& p);

// The Bounds of a step (conv or Linear) from max |x|, the weight's gain
// (weight_gain), the bias, the residual (the sum post-op's) and the
// operands of its binary post-ops in order (abs_bound; `scan`: scanned_bound).
Bounds step_bounds(const Plan& p, double x_bound, double gain, const at::Tensor* bias, const at::Tensor* residual,
                   const std::vector<const at::Tensor*>& binary, bool scan = false);

}  // namespace tj::jit::onednn
