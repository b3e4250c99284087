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

#include <memory>
#include <unordered_set>
#include <vector>

#include <ATen/core/Tensor.h>

#include "graph/graph.h"

namespace tj::graph::aot::detail {

struct Recorder;

// What the recorder notes while an EngineSumScope is alive: the nodes
// recorded while no autograd node of the backward runs its apply.
struct EngineSums {
  int depth = 0;  // autograd nodes whose apply runs now
  std::unordered_set<const Node*> nodes;
};

// Hooks every autograd node reachable from `roots` and makes the recorder
// note the engine's own ops while alive.
class EngineSumScope {
 public:
  EngineSumScope(Recorder& rec, const std::vector<at::Tensor>& roots);
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

}  // namespace tj::graph::aot::detail
