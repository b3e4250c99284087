// Transposed convolutions of the llvm backend's extern steps through
// ATen's oneDNN (mkldnn) convolution path (issue 41 item 3).
//
// LibTorch 1.13 runs a float transposed convolution on the CPU, forward
// and backward, with its generic `slow_conv_transpose2d` (im2col + gemm):
// in a DCGAN training step its generator's 4x4 deconvolutions took 2-3x
// what the same arithmetic takes as a plain convolution's oneDNN
// backward. A transposed convolution is a convolution's input gradient,
// and its gradients are a plain convolution (input) and a convolution's
// weight gradient, so an extern step running `aten::convolution` or
// `aten::convolution_backward` with `transposed=True` runs them so:
//   y  = convolution_backward(x, <y's shape>, w, ..., transposed=False)[0]  (+ bias)
//   gx = convolution(gy, w, ..., transposed=False)
//   gw = convolution_backward(x, gy, w, ..., transposed=False)[1]
//   gb = gy.sum over every dim but 1
// where ATen picks its mkldnn backend for them as eager does for a plain
// convolution. The values are the same sums in another order (as
// oneDNN's plain convolutions in eager; within float rounding of eager's).
// Chosen at lowering for 2-d float32 nodes with groups 1 that do not
// record autograd; at run time a call whose tensors are not contiguous
// float32 CPU tensors of 4 dims runs ATen's op as it is. The forward is
// taken only for 16 or more output channels (measured: a 64 -> 3 channel
// deconvolution is faster in ATen's generic path). TRACEJIT_TCONV=0 keeps
// ATen's ops. A call that takes the rewrite shows in torch.profiler as
// `tj::transposed conv forward` / `tj::transposed conv backward`.
#pragma once

#include <optional>

#include <ATen/core/ivalue.h>

#include "graph/boxing.h"
#include "graph/graph.h"

namespace tj::jit::tconv {

enum class Form { none, forward, backward };

// Which rewrite `node` gets (Form::none: ATen's op as it is).
Form form_of(const graph::Node& node);

// Runs `node` in `form`; nullopt when this call's tensors do not qualify
// (the caller then runs ATen's op).
std::optional<c10::IValue> run(Form form, const graph::Node& node, const graph::detail::ValueOf& value_of);

}  // namespace tj::jit::tconv
