// Internal to the passes: which nodes' values may be written after they are
// computed. A node is "possibly mutated" when a user takes it as an
// argument its schema marks written (`Tensor(a!)`; any argument of a
// mutating op without a schema), or a view of it is possibly mutated: the
// source of `x.scatter_add_(0, index, src)` and its index are read only. Passes must not merge, fold or reorder
// such values.
#pragma once

#include <unordered_set>

#include "graph/graph.h"

namespace tj::graph::detail {

std::unordered_set<const Node*> possibly_mutated(const Graph& graph);

}  // namespace tj::graph::detail
