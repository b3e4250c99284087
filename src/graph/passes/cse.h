// Common-subexpression elimination: a call_function (or get_attr) node
// equal to an earlier one — same target, same args and kwargs — is replaced
// by the earlier one and removed. Side-effecting ops are never merged, nor
// are values that may be written later (mutation.h), and a mutating op ends
// the range in which earlier results may be reused. Nodes traced under
// different grad modes differ, and two nodes the graph both returns stay two
// (eager returns distinct tensors). Returns the number of nodes removed.
#pragma once

#include "graph/graph.h"

namespace tj::graph {

int eliminate_common_subexpressions(Graph& graph);

}  // namespace tj::graph
