// Dead-code elimination; see dce.h.
#include "graph/passes/dce.h"

#include "graph/lint.h"
#include "graph/op_registry.h"
#include "support/log.h"

namespace tj::graph {

int eliminate_dead_code(Graph& graph) {
  std::vector<Node*> nodes = graph.nodes();
  int removed = 0;
  // Reverse order: removing a user can make its inputs dead in the same walk.
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node* n = *it;
    bool removable = n->kind() == NodeKind::get_attr ||
                     (n->kind() == NodeKind::call_function && !n->op()->traits.side_effecting());
    if (!removable || !n->users().empty()) continue;
    TJ_LOG(graph_code, "dce: removing {}", n->name());
    graph.erase(n);
    ++removed;
  }
  lint_in_debug(graph, "eliminate_dead_code");
  return removed;
}

}  // namespace tj::graph
