// Common-subexpression elimination; see cse.h.
#include "graph/passes/cse.h"

#include <string>
#include <unordered_map>

#include "graph/lint.h"
#include "graph/op_registry.h"
#include "graph/passes/mutation.h"
#include "graph/printer.h"
#include "support/log.h"

namespace tj::graph {

namespace {
// Node names are unique, so the printed call is a faithful key.
std::string cse_key(const Node& n) {
  std::string key = std::string(node_kind_name(n.kind())) + "|" + n.target() + "|" + format_arg(Arg::tuple(n.args()));
  for (const Kwarg& kw : n.kwargs()) key += "|" + kw.first + "=" + format_arg(kw.second);
  // A node traced under no_grad is not the same value as one under grad.
  if (auto mode = n.meta().tags.grad_enabled) key += *mode ? "|grad=1" : "|grad=0";
  return key;
}

// Whether `n`'s result may share memory with its user's: a view op
// (an alias annotation that does not write), the untracked `_unsafe_view`,
// or a getitem of a view op's sequence.
bool may_view(const Node& user) {
  if (user.kind() != NodeKind::call_function || !user.op()) return false;
  if (user.op()->is_getitem) return true;
  return user.op()->traits.view || user.op()->qualified_name() == "aten::_unsafe_view";
}

// Returned, or viewed by a returned value: two such nodes are two tensors
// in eager, which the outputs must stay.
bool is_returned(const Node& n) {
  for (const Node* user : n.users()) {
    if (user->kind() == NodeKind::output) return true;
    if (may_view(*user) && is_returned(*user)) return true;
  }
  return false;
}
}  // namespace

int eliminate_common_subexpressions(Graph& graph) {
  auto mutated = detail::possibly_mutated(graph);
  std::unordered_map<std::string, Node*> seen;
  int removed = 0;
  for (Node* n : graph.nodes()) {
    if (n->kind() != NodeKind::call_function && n->kind() != NodeKind::get_attr) continue;
    if (n->op() && n->op()->traits.side_effecting()) {
      if (n->op()->traits.mutates) seen.clear();  // earlier results may be stale now
      continue;
    }
    if (mutated.count(n)) continue;
    // Two custom Functions each run their own backward (one that is not
    // linear in its grad would change if merged).
    if (n->op() && n->op()->is_autograd_function) continue;
    auto [it, inserted] = seen.emplace(cse_key(*n), n);
    if (inserted) continue;
    // Two returned values stay two tensors, as eager returns them: writing
    // into one must not change the other.
    if (is_returned(*n) && is_returned(*it->second)) continue;
    TJ_LOG(graph_code, "cse: {} is {}", n->name(), it->second->name());
    n->replace_all_uses_with(it->second);
    graph.erase(n);
    ++removed;
  }
  lint_in_debug(graph, "eliminate_common_subexpressions");
  return removed;
}

}  // namespace tj::graph
