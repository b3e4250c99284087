// Possibly-mutated analysis; see mutation.h.
#include "graph/passes/mutation.h"

#include <ATen/core/function_schema.h>

#include "graph/op_registry.h"

namespace tj::graph::detail {

namespace {

bool mentions(const Arg& a, const Node* n) {
  bool found = false;
  a.for_each_node([&](const Node* m) { found = found || m == n; });
  return found;
}

// Whether `user`, an op that writes some argument, may write `n`: `n` is
// one of the arguments its schema marks written (`Tensor(a!) self`,
// `Tensor(a!) out`, `Tensor(a!)[] self`); any argument of an op without a
// schema (a builtin) or whose arguments do not line up with its schema.
bool writes(const Node& user, const Node* n) {
  const OpInfo* op = user.op();
  if (op->is_builtin()) return true;
  const std::vector<c10::Argument>& params = op->schema().arguments();
  if (user.args().size() > params.size()) return true;
  auto written = [](const c10::Argument& p) { return p.alias_info() && p.alias_info()->isWrite(); };
  for (size_t i = 0; i < user.args().size(); ++i)
    if (mentions(user.args()[i], n) && written(params[i])) return true;
  for (const Kwarg& kw : user.kwargs()) {
    if (!mentions(kw.second, n)) continue;
    bool named = false;
    for (const c10::Argument& p : params)
      if (p.name() == kw.first) {
        named = true;
        if (written(p)) return true;
      }
    if (!named) return true;
  }
  return false;
}

}  // namespace

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
      if ((op->traits.mutates && writes(*user, n)) || (aliases && mutated.count(user))) {
        mutated.insert(n);
        break;
      }
    }
  }
  return mutated;
}

}  // namespace tj::graph::detail
