// Constant folding: a call_function node whose inputs are all constants
// (literal args, or get_attr nodes) is run once, now, through the
// interpreter's boxed call, and replaced by a get_attr of the result (a new
// attribute named `_folded_<node>`). Side-effecting ops, ops with tuple
// results, values that may be written later, ops reading an attribute
// that the graph writes, and values the graph returns (or that a returned
// view aliases: each call must return tensors of its own) are left alone. Returns the number of nodes folded,
// or the error of a constant op that failed to run.
#pragma once

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::graph {

Expected<int> fold_constants(Graph& graph);

}  // namespace tj::graph
