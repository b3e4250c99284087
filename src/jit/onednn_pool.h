// Max (and average: match_avg_pool) pooling as a oneDNN step (issue 41: pooling between convolutions in
// oneDNN's layouts). decompose_for_fusion (graph/passes/decompose.h) has
// already rewritten `max_pool2d` as the `maximum` of its window's strided
// views of the input padded with -inf; this step recognises that pattern
// (`constant_pad_nd(x, pads, -inf)`, two `slice`s per window element, a
// left-deep chain of `maximum`s) and runs it as one oneDNN pooling
// primitive on the input's channels-last layout, so that a convolution's
// channels-last result feeds the pooling and the pooling the next
// convolutions without reorders, and the padded copy (a fresh 26 MB buffer
// filled with -inf in resnet18) is never made.
//
// oneDNN's max pooling does not propagate NaN as ATen's does (and as the
// pattern's `maximum` does): an input holding a NaN is refused at run time
// (one read of it), and the pattern's nodes run as ATen ops.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_set>

#include <ATen/core/Tensor.h>

#include "graph/graph.h"
#include "jit/onednn_plan.h"

namespace tj::jit::onednn {

// The pooling step whose pattern holds `maximum` (any `maximum` of its
// chain), or none. Nodes in `taken` or `excluded` are not absorbed.
std::unique_ptr<Match> match_max_pool(const graph::Node& maximum, const std::unordered_set<const graph::Node*>& taken,
                                      const std::unordered_set<const graph::Node*>& excluded);

// The pooling step of `aten::avg_pool2d` node `avg` (float32, 4-d; not ceil_mode, no divisor_override, the
// padding at most half the kernel as ATen asks), or none. Average pooling propagates a NaN as ATen's does: no
// finite check. densenet's transitions: ATen's avg_pool2d on the NCHW result the convolution before it had to
// write took 7.6 ms (8x128x56x56, one thread) against 0.95 ms on channels-last; as a oneDNN step it reads the
// convolution's channels-last result and writes channels-last for the next block's kernels.
std::unique_ptr<Match> match_avg_pool(const graph::Node& avg, const std::unordered_set<const graph::Node*>& taken,
                                      const std::unordered_set<const graph::Node*>& excluded);

// The pooled value of `x` (channels-last when the plan keeps it, else `eager`'s strides), or nullopt with `why`.
std::optional<at::Tensor> run_pool(const Plan& plan, const at::Tensor& x, const graph::TensorMeta& eager,
                                   std::string* why);

}  // namespace tj::jit::onednn
