// Eager's arrival order of a leaf's gradients next to the views the AOT
// wrapper makes again.
//
// LibTorch 1.13's engine runs the ready node with the highest sequence
// number first, and adds the gradients a leaf receives out of place in the
// order they arrive; TensorIterator lays each sum out from its operands and
// AccumulateGrad keeps the last sum's strides on size-1 dims. In eager each
// contribution arrives from the node of the op that made it, so in program
// order (the latest op first). The compiled call hands over its
// contributions from one CompiledFunctionBackward node, while the views of
// inputs it returns are made again after it (higher sequence numbers),
// which reordered them (fuzz seeds 9976106, 9984901, `--dynamic` 9963230:
// a leaf returned as is, through `contiguous()` and through a view).
//
// So for an input with a size-1 dim that both receives the node's
// contributions and is viewed by outputs, the wrapper makes those views and
// one relay node per contribution (an identity node between the backward
// node's edge and the input) in the program order the capture noted
// (Capture::grad_order, OutputInfo::grad_order), and only then the backward
// node, whose sequence number is above all of them: the node runs as soon
// as its gradients came, each contribution is delivered at its own op's
// place among the views' nodes.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/function.h>

#include "compile/aot/backward_node.h"

namespace tj::jit::aot_rt {

// For one call (the caller's `args`, the unique inputs `unique`): makes the
// outputs that view such an input (by `make_output(k)`) and the relay nodes
// in program order; returns per gradient edge its relay (null: none), or
// an empty vector where no input needs them.
std::vector<std::shared_ptr<torch::autograd::Node>> make_relays(const Plan& p, const std::vector<at::Tensor>& unique,
                                                                const std::function<void(size_t)>& make_output);

}  // namespace tj::jit::aot_rt
