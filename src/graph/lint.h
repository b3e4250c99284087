// lint(): checks every invariant of a Graph and says which one broke.
//   - every node belongs to this graph and has a unique, non-empty name;
//   - every node an arg mentions is in this graph (no dangling node) and is
//     defined before its user;
//   - each node's users list is exactly the set of nodes that use it;
//   - exactly one output node, and it is the last node;
//   - call_function nodes have an op, other kinds none; getitem is (node, int).
// Passes call lint_in_debug() after they run: in builds without NDEBUG it
// prints the graph and the broken invariant and aborts.
#pragma once

#include <string_view>

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::graph {

Status lint(const Graph& graph);

void lint_in_debug(const Graph& graph, std::string_view after_pass);

}  // namespace tj::graph
