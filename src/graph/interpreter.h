// The eager engine: runs a graph node by node on real tensors through the
// boxed dispatcher (`OperatorHandle::callBoxed`), exactly as eager PyTorch
// would: in-place ops mutate the tensors they were given (graph inputs
// included), views share storage, and an output that is an input is that
// same tensor. It is the `eager` backend and the reference every compiled
// backend is compared against. Values are dropped after their last use.
//
// A graph that runs many times is prepared once (`PreparedGraph`): every
// node's argument stack is boxed ahead of time with its constants already
// converted, each value lives in a numbered slot, and the slots a node frees
// are listed; a run then only copies node values into the stacks and calls
// the operators. `interpret` prepares and runs once.
//
// Errors: a graph that cannot run (wrong number of inputs, a missing
// attribute) is an `Error` value; an op that fails while running throws the
// exception ATen threw (a `c10::Error` such as `c10::IndexError`), unchanged,
// so the runtime can raise eager's own Python exception (jit/backend.h).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include <ATen/core/ivalue.h>

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::graph {

class PreparedGraph {
 public:
  // `graph` must outlive the result (backends keep it with the closure).
  static Expected<PreparedGraph> prepare(const Graph& graph);

  // Runs on `inputs` (one per placeholder, in order). The result has the
  // shape of the output node's argument: a tuple stays a tuple.
  Expected<c10::IValue> run(const std::vector<c10::IValue>& inputs) const;
  // Tensors in, the output flattened to its tensors.
  Expected<std::vector<at::Tensor>> run_tensors(c10::ArrayRef<at::Tensor> inputs) const;

  struct Step;

 private:
  template <class Input>
  Expected<c10::IValue> run_impl(c10::ArrayRef<Input> inputs, std::vector<at::Tensor>* flat) const;

  const Graph* graph_ = nullptr;
  size_t num_inputs_ = 0;
  size_t num_slots_ = 0;
  std::shared_ptr<const std::vector<Step>> steps_;
};

// Runs `graph` on `inputs` once (prepares, then runs).
Expected<c10::IValue> interpret(const Graph& graph, const std::vector<c10::IValue>& inputs);

// The same with tensors in, and the output flattened to its tensors.
Expected<std::vector<at::Tensor>> interpret_tensors(const Graph& graph, const std::vector<at::Tensor>& inputs);

// interpret_tensors for a compiled function's fallback: an error is thrown
// (std::runtime_error with its message), as a failing kernel's would be.
std::vector<at::Tensor> interpret_or_throw(const Graph& graph, c10::ArrayRef<at::Tensor> inputs);

// The node whose op threw in this thread's last run that failed, or
// nullptr (reset when a run starts): the runtime names the user's line from
// it. Only compared with a live graph's nodes (`Graph::contains`).
const Node* last_failed_node();

// Every tensor in `value` (tuples and lists flattened, in order).
std::vector<at::Tensor> flatten_tensors(const c10::IValue& value);

}  // namespace tj::graph
