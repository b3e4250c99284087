// Decompositions for fusing backends: composite ops rewritten as the
// pointwise ops they are, so a backend that fuses pointwise chains fuses
// them with their neighbours (TorchInductor's decomposition table, for the
// ops that matter here).
//
// Batch norm in inference (`native_batch_norm` with training=False on a 4-d
// input, BatchNorm2d, whose saved mean/invstd results are unused; ATen's
// 2-d/3-d paths round differently) becomes per-channel
//     alpha = weight / sqrt(running_var + eps)   (as reciprocal(sqrt(..)) * weight)
//     beta  = addcmul(bias, running_mean, alpha, value=-1)   (bias - mean * alpha)
//     out   = addcmul(beta[view C,1,..], x, alpha[view C,1,..])
// which is the formula and the order of operations of ATen's CPU kernel
// (`batch_norm_cpu_collect_linear_and_constant_terms`, then x * alpha + beta;
// g++ contracts both `bias - mean * alpha` and the AVX2 `x * alpha + beta`
// into fused multiply-adds: hence addcmul, whose kernel contracts the same
// way, and not mul + add/sub), so an op-by-op run
// of the result is bit-identical to it; a code generator must emit an FMA
// for addcmul to stay so. New nodes get their fake metadata from meta
// inference; where the result's strides would differ from eager's, the op is
// left alone.
//
// Max pooling (`max_pool2d_with_indices` whose indices are unused, windows
// of at most 16 elements) becomes the elementwise `maximum` of its window's
// strided views of the input padded with -inf (`constant_pad_nd`, also on
// the right where ceil_mode needs it): one fused kernel reading each window
// element through index arithmetic, where ATen's kernel computes indices
// nobody reads (90 ms of resnet18's 330 at batch 8). NaN propagates through
// `maximum` as through ATen's pooling.
//
// `addmm(bias, a, b)` (beta = alpha = 1) whose one reader is an activation
// or a pointwise op becomes `mm(a, b) + bias`: the bias add joins the
// activation's kernel, an epilogue of the extern matmul (the sum is rounded
// in another order than BLAS's bias-initialised accumulation: within
// float tolerance, not bit-identical).
//
// `add(zero(g), y)` (a gradient zeroed in place by `zero_grad` and then
// accumulated into, functionalized) becomes `add(y, 0.0)`: the same bits,
// and no zeroed copy allocated at zero_grad and held until the
// accumulation.
//
// `binary_cross_entropy(x, y)` (CPU float, no weight) becomes LibTorch
// 1.13's CPU formula, `(y - 1) * max(log(1 - x), -100) - y * max(log(x),
// -100)`, then its mean or sum: one fused kernel where ATen runs a scalar
// loop. ATen's range check stays as `_assert_async(all(x >= 0 & x <= 1))`:
// it fails where ATen's would (NaN included), and the failed call's op-by-op
// rerun raises ATen's own error. Its backward (raising on sizes only) is
// its pointwise formula. Returns the number of ops decomposed.
#pragma once

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::graph {

Expected<int> decompose_for_fusion(Graph& graph);

}  // namespace tj::graph
