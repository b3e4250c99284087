// `loss.backward()` traced into a graph (issue 42, item 3): one operator
//
//   %g = tracejit::autograd_grad(%loss, [%leaf_0, ...], %grad_output?, retain_graph=False)
//   %g_i = getitem(%g, i)
//
// (`retain_graph=True`: the nodes' saved tensors are kept for a later
// backward through them, as `loss.backward(retain_graph=True)`.)
// returns the gradient eager's engine hands to each leaf's AccumulateGrad,
// as AccumulateGrad stores it when the leaf's `.grad` is None: stolen when
// nothing else holds it and it obeys the gradient layout contract
// (torch/csrc/autograd/utils/grad_layout_contract.h), else a copy laid out
// as the leaf. The tracer then writes `.grad` (None: set; a tensor: add_
// under no_grad), as AccumulateGrad does.
//
// It is a real operator (`torch.ops.tracejit.autograd_grad`), registered
// CompositeImplicitAutograd so that it runs above autograd: on real tensors
// (the interpreter) it calls `torch::autograd::grad` on the values the
// graph computed with grad mode on; on AOT's functional proxies the same
// call records the backward ops into the functional graph; on meta tensors
// it gives the results' metas. Every gradient must come out defined,
// strided and not requiring grad (the tracer refused what could make it
// otherwise); if not, it throws (the runtime then reruns the frame).
#pragma once

#include <functional>

namespace tj::graph {

inline constexpr const char* kAutogradGradOp = "tracejit::autograd_grad";

// Registers the operator with the dispatcher (once; idempotent).
void register_autograd_grad_op();

// LibTorch's Python engine refuses to run while the calling thread holds
// the GIL: the layer that knows Python installs a wrapper that releases it
// around `body` when it is held (the graph layer has no CPython).
using WithoutGil = std::function<void(const std::function<void()>& body)>;
void set_autograd_grad_gil_release(WithoutGil release);

}  // namespace tj::graph
