// Graph invariant checks; see lint.h.
#include "graph/lint.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "graph/autograd_function.h"
#include "graph/op_registry.h"
#include "graph/printer.h"

namespace tj::graph {

Status lint(const Graph& graph) {
  std::vector<Node*> nodes = graph.nodes();
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes.size(); ++i) position[nodes[i]] = i;
  auto fail = [](const Node* n, const std::string& what) { return Error{"lint: node '" + n->name() + "': " + what}; };

  std::unordered_set<std::string> names;
  size_t outputs = 0;
  // Computed users: node -> nodes that mention it.
  std::unordered_map<const Node*, std::vector<const Node*>> users;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node* n = nodes[i];
    if (n->graph() != &graph) return fail(n, "belongs to another graph");
    if (n->name().empty()) return Error{"lint: a node without a name"};
    if (!names.insert(n->name()).second) return fail(n, "name used twice");
    if (graph.find(n->name()) != n) return fail(n, "name table out of sync");
    if (n->kind() == NodeKind::output) ++outputs;
    if ((n->kind() == NodeKind::call_function) != (n->op() != nullptr))
      return fail(n, "only call_function nodes have an op");
    if (n->kind() == NodeKind::output && n->args().size() != 1) return fail(n, "output takes exactly one arg");
    if (n->op() && n->op()->is_getitem &&
        (n->args().size() != 2 || !n->args()[0].is_node() || !n->args()[1].is<int64_t>()))
      return fail(n, "getitem takes (node, int)");
    if (n->op() && n->op()->is_autograd_function)
      if (auto st = check_autograd_function(graph, *n); !st) return st;

    std::vector<const Node*> mentioned;
    auto visit = [&](Node* in) { mentioned.push_back(in); };
    for (const Arg& a : n->args()) a.for_each_node(visit);
    for (const Kwarg& kw : n->kwargs()) kw.second.for_each_node(visit);
    for (const Node* in : mentioned) {
      auto it = position.find(in);
      if (it == position.end()) return fail(n, "uses a node that is not in the graph (dangling)");
      if (it->second >= i) return fail(n, "uses '" + in->name() + "' before its definition");
      auto& list = users[in];
      if (std::find(list.begin(), list.end(), n) == list.end()) list.push_back(n);
    }
  }
  for (const Node* n : nodes) {
    const auto& expected = users[n];
    const auto& actual = n->users();
    for (const Node* u : actual) {
      if (std::count(actual.begin(), actual.end(), u) != 1) return fail(n, "users list names '" + u->name() + "' twice");
      if (std::find(expected.begin(), expected.end(), u) == expected.end())
        return fail(n, "users list names a node that does not use it");
    }
    if (actual.size() != expected.size()) return fail(n, "users list misses a user");
  }
  if (outputs != 1) return Error{"lint: graph has " + std::to_string(outputs) + " output nodes, expected 1"};
  if (nodes.back()->kind() != NodeKind::output) return Error{"lint: the output node is not the last node"};
  for (const std::string& name : graph.autograd_function_names()) {
    auto body = graph.autograd_function(name);
    if (!body->backward) continue;  // reported at the node
    if (auto st = lint(*body->backward); !st) return Error{"lint: backward of " + name + ": " + st.error().message};
  }
  return ok_status();
}

namespace {
thread_local int t_deferred = 0;  // live LintAtEnd scopes
}  // namespace

LintAtEnd::LintAtEnd(const Graph& graph, std::string_view pipeline)
    : graph_(graph), pipeline_(pipeline), deferring_(!std::getenv("TRACEJIT_LINT_EACH_PASS")) {
  t_deferred += deferring_ ? 1 : 0;
}

LintAtEnd::~LintAtEnd() {
  if (deferring_) --t_deferred;
}

void LintAtEnd::finish() {
  if (deferring_) --t_deferred;
  deferring_ = false;
  lint_in_debug(graph_, pipeline_);
}

void lint_in_debug(const Graph& graph, std::string_view after_pass) {
#ifndef NDEBUG
  if (t_deferred > 0) return;
  Status st = lint(graph);
  if (st) return;
  std::fprintf(stderr, "tracejit: internal error: graph invariant broken after %.*s: %s\n%s\n",
               static_cast<int>(after_pass.size()), after_pass.data(), st.error().message.c_str(),
               print_graph(graph).c_str());
  std::abort();
#else
  (void)graph;
  (void)after_pass;
#endif
}

}  // namespace tj::graph
