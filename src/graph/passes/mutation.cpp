// Possibly-mutated analysis; see mutation.h.
#include "graph/passes/mutation.h"

#include "graph/op_registry.h"

namespace tj::graph::detail {

std::unordered_set<const Node*> possibly_mutated(const Graph& graph) {
  std::unordered_set<const Node*> mutated;
  std::vector<Node*> nodes = graph.nodes();
  // Users come after their inputs, so one reverse walk settles view chains.
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node* n = *it;
    for (const Node* user : n->users()) {
      const OpInfo* op = user->op();
      if (!op || op->is_getitem) continue;
      if (op->traits.mutates || (op->traits.view && mutated.count(user))) {
        mutated.insert(n);
        break;
      }
    }
  }
  return mutated;
}

}  // namespace tj::graph::detail
