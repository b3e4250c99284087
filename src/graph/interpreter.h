// The eager engine: runs a graph node by node on real tensors through the
// boxed dispatcher (`OperatorHandle::callBoxed`), exactly as eager PyTorch
// would: in-place ops mutate the tensors they were given (graph inputs
// included), views share storage, and an output that is an input is that
// same tensor. It is the `eager` backend and the reference every compiled
// backend is compared against. Values are dropped after their last use.
//
// Errors: a graph that cannot run (wrong number of inputs, a missing
// attribute) is an `Error` value; an op that fails while running throws the
// exception ATen threw (a `c10::Error` such as `c10::IndexError`), unchanged,
// so the runtime can raise eager's own Python exception (jit/backend.h).
#pragma once

#include <vector>

#include <ATen/core/ivalue.h>

#include "graph/error.h"
#include "graph/graph.h"

namespace tj::graph {

// Runs `graph` on `inputs` (one per placeholder, in order). The result has
// the shape of the output node's argument: a tuple stays a tuple.
Expected<c10::IValue> interpret(const Graph& graph, const std::vector<c10::IValue>& inputs);

// The same with tensors in, and the output flattened to its tensors.
Expected<std::vector<at::Tensor>> interpret_tensors(const Graph& graph, const std::vector<at::Tensor>& inputs);

// The node whose op threw in this thread's last `interpret` that failed, or
// nullptr (reset when a run starts): the runtime names the user's line from
// it. Only compared with a live graph's nodes (`Graph::contains`).
const Node* last_failed_node();

// Every tensor in `value` (tuples and lists flattened, in order).
std::vector<at::Tensor> flatten_tensors(const c10::IValue& value);

}  // namespace tj::graph
