// A training step as one graph; see joint_step.h.
#include "compile/aot/joint_step.h"

#include <memory>
#include <string>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include "graph/op_registry.h"

namespace tj::graph::aot {

namespace {

struct FreedGraphBackward : torch::autograd::Node {
  torch::autograd::variable_list apply(torch::autograd::variable_list&& /*grads*/) override {
    TORCH_CHECK(false,
                "Trying to backward through the graph a second time (or directly access saved tensors after they "
                "have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph "
                "a second time or if you need to access saved tensors after calling backward.");
  }
  std::string name() const override { return "FreedGraphBackward"; }
};

}  // namespace

bool runs_backward_inside(const Graph& graph) {
  for (const Node* n : graph.nodes())
    if (n->kind() == NodeKind::call_function && n->op() && n->op()->traits.backward) return true;
  return false;
}

at::Tensor with_freed_history(const at::Tensor& t) {
  at::Tensor d = t.detach();
  if (!c10::isFloatingType(d.scalar_type()) && !c10::isComplexType(d.scalar_type())) return d;
  auto node = std::shared_ptr<FreedGraphBackward>(new FreedGraphBackward(), torch::autograd::deleteNode);
  torch::autograd::create_gradient_edge(d, node);
  return d;
}

}  // namespace tj::graph::aot
