// The autograd engine's sums, told apart while a backward is recorded; see
// engine_sums.h.
#include "compile/aot/engine_sums.h"

#include <algorithm>
#include <deque>
#include <utility>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>

#include "compile/aot/proxy.h"
#include "graph/op_registry.h"

namespace tj::graph::aot::detail {

namespace {

using torch::autograd::variable_list;

// The engine calls a node's pre-hooks, its apply, then (after checking
// the outputs) its post-hooks, on one thread; it adds the outputs to the
// next nodes' input buffers after the post-hooks.
struct Enter : torch::autograd::FunctionPreHook {
  explicit Enter(std::shared_ptr<EngineSums> s) : sums(std::move(s)) {}
  variable_list operator()(const variable_list& grads) override {
    ++sums->depth;
    return grads;
  }
  std::shared_ptr<EngineSums> sums;
};

bool same_edge(const torch::autograd::Edge& a, const torch::autograd::Edge& b) {
  return a.function && a.function == b.function && a.input_nr == b.input_nr;
}

// (Before the depth goes down: what finding a value's node records is the
// formula's.)
struct Leave : torch::autograd::FunctionPostHook {
  Leave(std::shared_ptr<EngineSums> s, const torch::autograd::Node* n) : sums(std::move(s)), node(n) {}
  variable_list operator()(const variable_list& outputs, const variable_list& /*inputs*/) override {
    for (size_t i = 0; i < outputs.size() && i < node->num_outputs() && sums->recorded_node; ++i) {
      if (!outputs[i].defined()) continue;
      for (size_t w = 0; w < sums->targets.size(); ++w) {
        if (!same_edge(node->next_edge(i), sums->targets[w])) continue;
        if (const Node* v = sums->recorded_node(outputs[i])) {
          uint64_t& seq = sums->handed[{v, w}];
          seq = std::max(seq, node->sequence_nr() + 1);
        }
      }
    }
    --sums->depth;
    return outputs;
  }
  std::shared_ptr<EngineSums> sums;
  const torch::autograd::Node* node;  // owns this hook
};

// Every node reachable from `roots`' gradient edges.
std::vector<torch::autograd::Node*> reachable(const std::vector<at::Tensor>& roots) {
  std::unordered_set<torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> order, todo;
  for (const at::Tensor& r : roots)
    if (auto* fn = torch::autograd::impl::gradient_edge(r).function.get(); fn && seen.insert(fn).second)
      todo.push_back(fn);
  while (!todo.empty()) {
    torch::autograd::Node* m = todo.back();
    todo.pop_back();
    order.push_back(m);
    for (const auto& e : m->next_edges())
      if (e.function && seen.insert(e.function.get()).second) todo.push_back(e.function.get());
  }
  return order;
}

bool is_engine_add(const Node* n, const EngineSums& sums) {
  if (!sums.nodes.count(n) || !n->op() || n->op()->qualified_name() != "aten::add.Tensor") return false;
  return n->args().size() == 2 && n->kwargs().empty() && n->args()[0].is_node() && n->args()[1].is_node();
}

}  // namespace

EngineSumScope::EngineSumScope(Recorder& rec, const std::vector<at::Tensor>& roots, const std::vector<at::Tensor>& wrt,
                               std::function<const Node*(const at::Tensor&)> recorded_node)
    : rec_(rec), sums_(std::make_shared<EngineSums>()) {
  for (const at::Tensor& w : wrt) sums_->targets.push_back(torch::autograd::impl::gradient_edge(w));
  sums_->recorded_node = std::move(recorded_node);
  for (torch::autograd::Node* n : reachable(roots)) {
    n->add_pre_hook(std::make_unique<Enter>(sums_));
    n->add_post_hook(std::make_unique<Leave>(sums_, n));
  }
  rec_.engine_sums = sums_.get();
}

EngineSumScope::~EngineSumScope() {
  rec_.engine_sums = nullptr;
  sums_->recorded_node = nullptr;  // the hooks outlive the capture's driver
  sums_->targets.clear();
}

std::vector<int> contribution_counts(const std::vector<at::Tensor>& roots, const std::vector<at::Tensor>& wrt) {
  std::vector<int> counts(wrt.size(), 0);
  std::vector<torch::autograd::Edge> targets;
  for (const at::Tensor& w : wrt) targets.push_back(torch::autograd::impl::gradient_edge(w));
  for (torch::autograd::Node* n : reachable(roots))
    for (const auto& e : n->next_edges())
      for (size_t u = 0; u < targets.size(); ++u)
        if (same_edge(e, targets[u])) ++counts[u];
  return counts;
}

std::vector<Node*> contributions(Node* grad, int count, const EngineSums& sums) {
  std::deque<Node*> parts;
  Node* sum = grad;
  for (int k = 1; k < count && is_engine_add(sum, sums); ++k) {
    parts.push_front(sum->args()[1].node());
    sum = sum->args()[0].node();
  }
  parts.push_front(sum);
  return {parts.begin(), parts.end()};
}

int edges_into(const std::vector<at::Tensor>& roots, const at::Tensor& target,
               const torch::autograd::Edge* repoint_to) {
  const torch::autograd::Edge into = torch::autograd::impl::gradient_edge(target);
  if (!into.function) return 0;
  std::unordered_set<torch::autograd::Node*> seen{into.function.get()};
  std::vector<torch::autograd::Node*> todo;
  for (const at::Tensor& r : roots)
    if (auto* fn = torch::autograd::impl::gradient_edge(r).function.get(); fn && seen.insert(fn).second)
      todo.push_back(fn);
  int found = 0;
  while (!todo.empty()) {
    torch::autograd::Node* m = todo.back();
    todo.pop_back();
    for (size_t i = 0; i < m->num_outputs(); ++i) {
      const torch::autograd::Edge& e = m->next_edge(i);
      if (same_edge(e, into)) {
        ++found;
        // (not set_next_edge, which refuses a node with a parent: the leaf's
        // accumulator has topological number 0, below every node's)
        if (repoint_to) m->next_edges()[i] = *repoint_to;
      } else if (e.function && seen.insert(e.function.get()).second) {
        todo.push_back(e.function.get());
      }
    }
  }
  return found;
}

uint64_t handing_node(const at::Tensor& out, const at::Tensor& input) {
  const torch::autograd::Edge target = torch::autograd::impl::gradient_edge(input);
  const torch::autograd::Edge root = torch::autograd::impl::gradient_edge(out);
  if (!root.function || same_edge(root, target)) return 0;
  std::unordered_set<torch::autograd::Node*> seen{root.function.get()};
  std::vector<torch::autograd::Node*> todo{root.function.get()};
  uint64_t seq = 0;
  while (!todo.empty()) {
    torch::autograd::Node* m = todo.back();
    todo.pop_back();
    for (const auto& e : m->next_edges()) {
      if (same_edge(e, target)) seq = std::max(seq, m->sequence_nr() + 1);
      else if (e.function && e.function != target.function && seen.insert(e.function.get()).second)
        todo.push_back(e.function.get());
    }
  }
  return seq;
}

}  // namespace tj::graph::aot::detail
