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
      if (!op) continue;
      // An element of a tuple of views (split, unbind) is a view too.
      bool aliases = op->is_getitem || op->traits.view;
      if (op->traits.mutates || (aliases && mutated.count(user))) {
        mutated.insert(n);
        break;
      }
    }
  }
  return mutated;
}

}  // namespace tj::graph::detail
