// Winograd's F(4x4, 3x3) of our own, for hosts where oneDNN 2.6 has none
// (its jit_wino_4x3 is AVX-512 only: on an AVX2 host every 3x3 convolution
// ran oneDNN's direct jit:avx2 kernel, as eager's does, so a conv net's
// compiled call was barely faster than eager's). Lavin & Gray's algorithm:
// the weight transformed once (G g Gᵀ, 6x6 per output/input channel pair,
// cached as a packed weight: onednn_weights.h), each 6x6 input tile
// (stride 4) transformed (Bᵀ d B), 36 matrix products of [tiles x C] by
// [C x K] as one batched oneDNN matmul, and each 6x6 product transformed
// back to a 4x4 output tile (Aᵀ m A) with the bias and the post-ops applied
// as it is written. 4x fewer multiplications than the direct convolution.
// The interpolation points 0, ±√2/2, ±√2: in a float32 simulation their error against float64 was 3x
// smaller at its worst than with Lavin's 0, ±1, ±2, still ~4x the direct
// convolution's on average (tests/unit/jit/test_onednn_f43.cpp bounds it).
// The tiles go in passes whose transforms and products stay in cache.
//
// onednn_exec.cpp's run_conv takes it for a Winograd-shaped convolution
// (onednn_winograd.h's winograd_shape, TRACEJIT_WINOGRAD=0: never) when
// oneDNN offers no Winograd of its own, under the same NaN rule (operands
// proved finite: the transforms spread a NaN over a tile).
#pragma once

#include <cstdint>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include <ATen/core/Tensor.h>

#include "jit/onednn_plan.h"

namespace tj::jit::onednn {

// Whether run_f43 applies every post-op of `p` (relu, leaky_relu, clamp, a scale, the residual's sum; no binary
// post-op).
bool f43_takes(const Plan& p);

// The transformed weight's layout: [36][C][K] (the matmul's weights), float32, as oneDNN memory.
dnnl::memory::desc f43_weight_md(const at::Tensor& w);
// Writes G g Gᵀ of `w` ([K, C, 3, 3], any strides) into `out`, laid out as f43_weight_md(w).
void f43_transform_weight(const at::Tensor& w, float* out);

// The convolution (stride 1, undilated, one group, 3x3, p.padding): `x` [N, C, H, W] and `dst`
// [N, K, OH, OW] dense channels-last, `u` the transformed weight, `bias` [K] or null, `residual` (the sum
// post-op's) dense channels-last or null (it may be `dst` itself).
void run_f43(const Plan& p, const at::Tensor& x, const float* u, const float* bias, const at::Tensor* residual,
             const at::Tensor& dst);

}  // namespace tj::jit::onednn
