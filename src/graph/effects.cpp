// What a graph does outside its own values; see effects.h.
#include "graph/effects.h"

#include <set>
#include <string>

#include "graph/op_registry.h"
#include "graph/passes/mutation.h"

namespace tj::graph {

namespace {

// In-place ops that change a tensor's sizes or strides, not only its data.
bool changes_metadata(const std::string& name) {
  static const std::set<std::string> names = {"t_", "transpose_", "squeeze_", "unsqueeze_", "as_strided_",
                                              "resize_", "resize_as_", "swapdims_", "swapaxes_", "set_"};
  return names.count(name) > 0;
}

}  // namespace

GraphEffects effects_of(const Graph& graph) {
  GraphEffects out;
  auto mutated = detail::possibly_mutated(graph);
  int placeholder = 0;
  for (const Node* n : graph.nodes()) {
    if (n->kind() == NodeKind::placeholder || n->kind() == NodeKind::get_attr) {
      bool written = mutated.count(n) > 0;
      out.writes_inputs |= written;
      if (written && n->kind() == NodeKind::placeholder) out.written_inputs.push_back(placeholder);
      if (written && n->kind() == NodeKind::get_attr) out.writes_attrs = true;
      if (n->kind() == NodeKind::placeholder) ++placeholder;
      continue;
    }
    if (n->op() && n->op()->traits.mutates && changes_metadata(n->op()->base_name())) out.changes_metadata = true;
    if (!n->op() || n->op()->is_getitem || !n->op()->traits.random) continue;
    out.draws_random = true;
    if (n->meta().fake.empty()) out.random_only_on_cpu = false;
    for (const TensorMeta& t : n->meta().fake) out.random_only_on_cpu &= t.device.is_cpu();
  }
  return out;
}

}  // namespace tj::graph
