// Constant folding; see constant_fold.h.
#include "graph/passes/constant_fold.h"

#include <unordered_map>
#include <unordered_set>

#include <ATen/core/dispatch/Dispatcher.h>

#include "graph/boxing.h"
#include "graph/lint.h"
#include "graph/op_registry.h"
#include "graph/passes/dce.h"
#include "graph/passes/mutation.h"
#include "support/log.h"

namespace tj::graph {

namespace {
// Values the graph returns, or that a returned view aliases: folded, they
// would be one tensor shared by every call's result (a caller writing into
// one call's result would change the next call's).
std::unordered_set<const Node*> returned_storage(const Graph& graph) {
  std::unordered_set<const Node*> seen;
  const Node* out = graph.output_node();
  if (!out) return seen;
  std::vector<Node*> outs = out->inputs();
  std::vector<const Node*> work(outs.begin(), outs.end());
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    if (!seen.insert(n).second) continue;
    bool view = n->kind() == NodeKind::call_function && (n->op()->is_getitem || n->op()->traits.view);
    if (view)
      for (const Node* in : n->inputs()) work.push_back(in);
  }
  return seen;
}
}  // namespace

Expected<int> fold_constants(Graph& graph) {
  auto mutated = detail::possibly_mutated(graph);
  auto returned = returned_storage(graph);
  std::unordered_map<const Node*, c10::IValue> constants;  // get_attr node -> its tensor
  int folded = 0;
  for (Node* n : graph.nodes()) {
    if (n->kind() == NodeKind::get_attr) {
      if (const at::Tensor* t = graph.attr(n->target()); t && !mutated.count(n)) constants[n] = *t;
      continue;
    }
    if (n->kind() != NodeKind::call_function || n->op()->is_getitem || n->op()->traits.side_effecting() ||
        mutated.count(n) || returned.count(n))
      continue;
    bool all_constant = true;
    for (const Node* in : n->inputs()) all_constant &= constants.count(in) > 0;
    if (!all_constant || n->op()->schema().returns().size() != 1) continue;

    detail::ValueOf value_of = [&](const Node* in) -> const c10::IValue& { return constants.at(in); };
    auto stack = detail::box_arguments(*n, value_of);
    if (!stack) return stack.error();
    try {
      n->op()->handle().callBoxed(*stack);
    } catch (const std::exception& e) {
      return detail::exception_error("constant folding " + n->name() + " (" + n->target() + "): ", e);
    }
    c10::IValue result = detail::unbox_returns(*n, *stack);
    if (!result.isTensor()) continue;

    std::string attr_name = graph.unique_name("_folded_" + n->name());
    graph.set_attr(attr_name, result.toTensor());
    Node* saved_insert_point = graph.insert_point();
    graph.set_insert_point(n);
    Node* replacement = graph.get_attr(attr_name);
    graph.set_insert_point(saved_insert_point);
    graph.rename(replacement, attr_name);
    replacement->meta().loc = n->meta().loc;
    constants[replacement] = result;
    TJ_LOG(graph_code, "constant_fold: {} -> self.{}", n->name(), attr_name);
    n->replace_all_uses_with(replacement);
    graph.erase(n);
    ++folded;
  }
  eliminate_dead_code(graph);  // get_attr nodes only the folded ops read
  lint_in_debug(graph, "fold_constants");
  return folded;
}

}  // namespace tj::graph
