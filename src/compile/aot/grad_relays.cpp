// Relay nodes that deliver the compiled backward's contributions in eager's
// order; see grad_relays.h.
#include "compile/aot/grad_relays.h"

#include <algorithm>
#include <string>
#include <tuple>

namespace tj::jit::aot_rt {

namespace {

using torch::autograd::variable_list;

// Hands its gradient on as it came (the engine delivers it at this node's
// sequence number).
struct CompiledFunctionBackwardRelay : torch::autograd::Node {
  variable_list apply(variable_list&& grads) override { return std::move(grads); }
  std::string name() const override { return "CompiledFunctionBackwardRelay"; }
};

// Unique input `u` may take part: one tensor of its own, neither written
// nor restrided by the graph (its views are made before the epilogue), with
// a size-1 dim (elsewhere AccumulateGrad lays the gradient out in the
// input's strides whatever the order).
bool relayable(const Plan& p, int u, const std::vector<at::Tensor>& unique) {
  const auto& in = p.inputs[static_cast<size_t>(u)];
  if (in.synthetic_base || in.data_mutated || in.meta_mutated) return false;
  const at::Tensor& t = unique[static_cast<size_t>(u)];
  if (!t.defined() || !t.requires_grad()) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) == 1) return true;
  return false;
}

}  // namespace

std::vector<std::shared_ptr<torch::autograd::Node>> make_relays(const Plan& p, const std::vector<at::Tensor>& unique,
                                                                const std::function<void(size_t)>& make_output) {
  if (p.has_duplicates || p.grad_order.size() != p.grad_inputs.size()) return {};
  // (order, 0 view output k / 1 relay of edge k, k) for the inputs viewed
  // by an output and receiving a contribution
  std::vector<std::tuple<int, int, size_t>> events;
  std::vector<bool> viewed(p.inputs.size(), false), relayed(p.inputs.size(), false);
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    const auto& o = p.outputs[k];
    if (o.kind == graph::aot::OutputKind::view_of_input && o.grad_order > 0 && o.replay_from < 0 && !o.detached)
      viewed[static_cast<size_t>(p.unique_of[static_cast<size_t>(o.source)])] = true;
  }
  for (size_t e = 0; e < p.grad_inputs.size(); ++e) {
    const int u = p.grad_inputs[e];
    if (p.grad_defined[e] && !graph::aot::Capture::is_cut_edge(u) && p.grad_order[e] > 0 && viewed[static_cast<size_t>(u)] && relayable(p, u, unique)) {
      relayed[static_cast<size_t>(u)] = true;
      events.emplace_back(p.grad_order[e], 1, e);
    }
  }
  if (events.empty()) return {};
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    const auto& o = p.outputs[k];
    if (o.kind == graph::aot::OutputKind::view_of_input && o.grad_order > 0 && o.replay_from < 0 && !o.detached &&
        relayed[static_cast<size_t>(p.unique_of[static_cast<size_t>(o.source)])])
      events.emplace_back(o.grad_order, 0, k);
  }
  std::sort(events.begin(), events.end());
  std::vector<std::shared_ptr<torch::autograd::Node>> relays(p.grad_inputs.size());
  for (const auto& event : events) {
    const size_t k = std::get<2>(event);
    if (std::get<1>(event) == 0) {
      make_output(k);
      continue;
    }
    const at::Tensor& input = unique[static_cast<size_t>(p.grad_inputs[k])];
    auto node = std::shared_ptr<CompiledFunctionBackwardRelay>(new CompiledFunctionBackwardRelay(),
                                                               torch::autograd::deleteNode);
    node->add_input_metadata(input);
    node->set_next_edges({torch::autograd::impl::gradient_edge(input)});
    relays[k] = std::move(node);
  }
  return relays;
}

}  // namespace tj::jit::aot_rt
