// A custom torch.autograd.Function traced into one graph.
//
// The tracer inlines the Function's forward as ordinary nodes (under
// no_grad) and outlines its backward into a body graph. One builtin node
//
//   %af = autograd_function("name", (inputs...), (outputs...), (saved...))
//   %o_j = getitem(%af, j)
//
// returns `outputs` (already computed, without history) with one fresh
// autograd node attached, whose next edges are `inputs` (eager's
// `_wrap_outputs`). When the engine reaches that node it runs the body on
// `(saved..., grads...)`: one grad placeholder per output, undefined grads
// materialized as zeros. The body returns one tensor per gradient that is
// not None; `grad_of_input` maps each input to one of them (-1: None).
//
// The interpreter (real tensors) and AOT capture (functional proxies, so the
// body's ops land in the joint graph) both attach the node through
// `apply_autograd_function`; each passes its own way to run the body.
// Not promised: double backward and forward-mode AD (jvp raises).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::graph {

struct AutogradFunctionBody {
  std::string class_name;                 // "ScaledExp": the node is named "ScaledExpBackward"
  std::shared_ptr<const Graph> backward;  // (saved_0.., grad_0..) -> tuple of gradients
  int num_inputs = 0;
  int num_outputs = 0;
  int num_saved = 0;
  std::vector<bool> non_differentiable;  // per output
  std::vector<int> grad_of_input;        // per input: index into backward's outputs, -1 = None
  bool materialize_grads = true;
};

// The three node lists of an autograd_function node (its args 1..3).
struct AutogradFunctionArgs {
  std::vector<Node*> inputs, outputs, saved;
};
AutogradFunctionArgs autograd_function_args(const Node& node);

// Runs a body on `saved` then `grads` (each defined: undefined ones were
// materialized already by `materialize`) -> one tensor per body output.
using BackwardRunner = std::function<std::vector<at::Tensor>(const AutogradFunctionBody& body,
                                                             std::vector<at::Tensor> inputs)>;
// Zeros shaped like an output (the capture records them as a node).
using ZerosMaker = std::function<at::Tensor(const TensorMeta& like)>;

// `outputs` were computed already, without history. Returns them wrapped as
// eager's apply does (a grad_fn on differentiable outputs, requires_grad off
// on non-differentiable ones) when grad mode is on and an input requires
// grad; else as they are.
std::vector<at::Tensor> apply_autograd_function(std::shared_ptr<const AutogradFunctionBody> body,
                                                const std::vector<at::Tensor>& inputs,
                                                const std::vector<at::Tensor>& outputs,
                                                const std::vector<at::Tensor>& saved, BackwardRunner run,
                                                ZerosMaker zeros);

// Checks an autograd_function node against its body (lint).
Status check_autograd_function(const Graph& graph, const Node& node);

}  // namespace tj::graph
