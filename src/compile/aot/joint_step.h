// A training step as one graph (issue 42, item 3): a captured graph that
// holds a traced backward (`tracejit::autograd_grad`, graph/autograd_grad.h)
// is captured with its backward inside the one functional graph.
//
// The capture gives the inputs that require grad `requires_grad` on their
// functional wrappers and records the forward with grad mode on; at the
// node, the operator itself calls `torch::autograd::grad` on those
// wrappers, so LibTorch's derivative formulas record the backward ops into
// the same functional graph, followed by what the step does with the
// gradients (clipping, the optimizer's update, zero_grad). Nothing of it
// requires grad afterwards (the tracer let no tensor requiring grad leave
// the graph), so the plan runs whole under no_grad, no backward is
// partitioned off, and the optimizer's in-place writes to parameters that
// require grad are plain input mutations, copied back by the wrapper.
#pragma once

#include <ATen/core/Tensor.h>

#include "graph/graph.h"

namespace tj::graph::aot {

// Whether `graph` runs a traced backward (then: CaptureOptions::backward_inside).
bool runs_backward_inside(const Graph& graph);

// An output that, in eager, requires grad with a grad_fn whose saved
// values the traced backward freed (the loss a step returns): `t` detached,
// with a grad_fn that raises eager's "backward through the graph a second
// time" error when a backward reaches it. (Eager would raise only on
// reaching a node that had saved values; a loss made of nodes that saved
// nothing is the one case where it would backward again instead.)
at::Tensor with_freed_history(const at::Tensor& t);

}  // namespace tj::graph::aot
