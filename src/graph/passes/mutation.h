// Internal to the passes: which nodes' values may be written after they are
// computed. A node is "possibly mutated" when a user writes an argument
// (any mutating op that takes it: conservative about which argument), or a
// view of it is possibly mutated. Passes must not merge, fold or reorder
// such values.
#pragma once

#include <unordered_set>

#include "graph/graph.h"

namespace tj::graph::detail {

std::unordered_set<const Node*> possibly_mutated(const Graph& graph);

}  // namespace tj::graph::detail
