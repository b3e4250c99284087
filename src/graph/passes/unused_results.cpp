// Unused results kept as extra outputs; see unused_results.h.
#include "graph/passes/unused_results.h"

#include "graph/lint.h"
#include "graph/op_registry.h"

namespace tj::graph {

namespace {

// The op producing the tuple a getitem node reads, or null.
const OpInfo* producer(const Node* getitem) {
  const std::vector<Node*> in = getitem->inputs();
  return in.empty() ? nullptr : in.front()->op();
}

bool may_fail_unseen(const Node* n) {
  if (n->kind() != NodeKind::call_function || !n->op() || !n->users().empty()) return false;
  if (!n->meta().tensor()) return false;  // not a single tensor (a tuple, a scalar, None)
  const OpInfo* op = n->op();
  if (op->is_getitem) op = producer(n);  // one result of a multi-result op (max.dim, sort)
  return op && !op->is_getitem && !op->traits.view && !op->traits.side_effecting();
}

}  // namespace

int expose_unused_results(Graph& graph) {
  Node* out = graph.output_node();
  if (!out || out->args().size() != 1) return 0;
  std::vector<Arg> extra;
  for (Node* n : graph.nodes())
    if (may_fail_unseen(n)) extra.emplace_back(n);
  if (extra.empty()) return 0;
  const Arg& result = out->args()[0];
  if (!result.is_list() && !result.is_node()) return 0;
  std::vector<Arg> items = result.is_list() ? result.items() : std::vector<Arg>{result};
  int added = static_cast<int>(extra.size());
  items.insert(items.end(), extra.begin(), extra.end());
  out->set_args({Arg::tuple(std::move(items))});
  lint_in_debug(graph, "expose_unused_results");
  return added;
}

}  // namespace tj::graph
