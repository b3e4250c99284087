// Whether a graph acts outside its own values; see effects.h.
#include "graph/effects.h"

#include "graph/op_registry.h"
#include "graph/passes/mutation.h"

namespace tj::graph {

bool acts_outside(const Graph& graph) {
  auto mutated = detail::possibly_mutated(graph);
  for (const Node* n : graph.nodes()) {
    if (n->kind() == NodeKind::placeholder || n->kind() == NodeKind::get_attr) {
      if (mutated.count(n)) return true;
      continue;
    }
    if (n->op() && !n->op()->is_getitem && n->op()->traits.random) return true;
  }
  return false;
}

}  // namespace tj::graph
