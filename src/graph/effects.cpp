// What a graph does outside its own values; see effects.h.
#include "graph/effects.h"

#include "graph/op_registry.h"
#include "graph/passes/mutation.h"

namespace tj::graph {

GraphEffects effects_of(const Graph& graph) {
  GraphEffects out;
  auto mutated = detail::possibly_mutated(graph);
  for (const Node* n : graph.nodes()) {
    if (n->kind() == NodeKind::placeholder || n->kind() == NodeKind::get_attr) {
      out.writes_inputs |= mutated.count(n) > 0;
      continue;
    }
    if (!n->op() || n->op()->is_getitem || !n->op()->traits.random) continue;
    out.draws_random = true;
    if (n->meta().fake.empty()) out.random_only_on_cpu = false;
    for (const TensorMeta& t : n->meta().fake) out.random_only_on_cpu &= t.device.is_cpu();
  }
  return out;
}

}  // namespace tj::graph
