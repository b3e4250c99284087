// The autograd engine's own sums, told apart while AOT records a backward.
//
// LibTorch 1.13's engine adds the gradients a node receives from several
// edges in its InputBuffer, out of place (`old + new`), in the order they
// arrive, and TensorIterator lays each sum out from its operands' layouts.
// Eager's leaf gradient is the last of those sums, and AccumulateGrad keeps
// its strides on size-1 dims. A compiled node that hands the engine one
// gradient per input (the recorded sum of its contributions) makes the
// engine add it to the contributions of other nodes in another order, with
// other layouts (fuzz seed 9961556: `x.sum() + x.sum()` before a graph
// break, `x.floor()` after it). So the capture tells the engine's sums apart
// from its formulas' ops (a pre-hook and a post-hook on every node of the
// recorded autograd graph: what is recorded outside a node's apply is the
// engine's), and a gradient of an input with a size-1 dim that is such a
// sum is returned as its contributions, one node edge each, which the
// engine adds as it adds eager's (capture.cpp, Driver::backward).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/edge.h>

#include "graph/graph.h"

namespace tj::graph::aot::detail {

struct Recorder;

// What the recorder notes while an EngineSumScope is alive: the nodes
// recorded while no autograd node of the backward runs its apply.
struct EngineSums {
  int depth = 0;  // autograd nodes whose apply runs now
  std::unordered_set<const Node*> nodes;
  // Per value an autograd node handed to the gradient edge of `wrt[w]`
  // (its recorded node, w): 1 + the highest sequence number of a node
  // that handed it (a thread's first node has number 0), which says where
  // eager's engine delivers that contribution among the others
  // (Capture::grad_order).
  std::map<std::pair<const Node*, size_t>, uint64_t> handed;
  std::vector<torch::autograd::Edge> targets;                  // per wrt: its gradient edge
  std::function<const Node*(const at::Tensor&)> recorded_node;  // a handed value's node (null: none)
};

// Hooks every autograd node reachable from `roots` and makes the recorder
// note the engine's own ops while alive.
class EngineSumScope {
 public:
  // Notes (EngineSums::handed) what the nodes hand to the gradient edges of
  // `wrt`, the values' recorded nodes found by `recorded_node`.
  EngineSumScope(Recorder& rec, const std::vector<at::Tensor>& roots, const std::vector<at::Tensor>& wrt,
                 std::function<const Node*(const at::Tensor&)> recorded_node);
  ~EngineSumScope();
  EngineSumScope(const EngineSumScope&) = delete;
  EngineSumScope& operator=(const EngineSumScope&) = delete;
  const EngineSums& sums() const { return *sums_; }

 private:
  Recorder& rec_;
  std::shared_ptr<EngineSums> sums_;
};

// Per tensor of `wrt`: how many edges of the autograd graph reachable from
// `roots` lead to its gradient edge (the contributions its InputBuffer may
// add up).
std::vector<int> contribution_counts(const std::vector<at::Tensor>& roots, const std::vector<at::Tensor>& wrt);

// `grad` (an input's recorded gradient) as the contributions the engine
// added up, in arrival order: at most `count` of them, peeled off the
// left-nested chain of the engine's `add` sums (`(c1 + c2) + c3`); `grad`
// alone where it is no such sum.
std::vector<Node*> contributions(Node* grad, int count, const EngineSums& sums);

// 1 + the highest sequence number of an autograd node that `out`'s graph
// (a view of `input`) reaches and that has an edge to `input`'s gradient
// edge: where eager's engine delivers the view's gradient; 0 where none.
uint64_t handing_node(const at::Tensor& out, const at::Tensor& input);

// How many edges of the autograd graph reachable from `roots` (those
// whose gradient edge is not `target`'s own) lead to `target`'s gradient
// edge, not walking through its node; each such edge is pointed at
// `repoint_to` where that is given (a cut: CaptureOptions::cut_returned).
int edges_into(const std::vector<at::Tensor>& roots, const at::Tensor& target,
               const torch::autograd::Edge* repoint_to);

}  // namespace tj::graph::aot::detail
