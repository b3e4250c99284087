// Dead-code elimination: removes call_function and get_attr nodes whose
// results nobody uses, unless running them has an effect — writing an
// argument (in-place ops, `out=` ops, `copy_`) or drawing random numbers
// (removing one would shift the random stream of every later op).
// Placeholders and the output stay. Returns the number of nodes removed.
#pragma once

#include "graph/graph.h"

namespace tj::graph {

int eliminate_dead_code(Graph& graph);

}  // namespace tj::graph
