// Outlining a suffix of a graph into a graph of its own (the backward body
// of a custom autograd.Function, graph/autograd_function.h).
//
// The region is every node from position `start` on except placeholders
// (those are inputs of the whole frame, and stay). Nodes outside the region
// that it reads become the body's placeholders `saved_0..` in first-use
// order (`externals`); region nodes listed in `stand_ins` become
// placeholders `grad_0..` after them; the body returns `results` as a tuple.
// The region is erased from `graph`. Fails, leaving `graph` unchanged, when
// an external is not a single tensor (a size) or the region has a get_attr.
#pragma once

#include <memory>
#include <vector>

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::graph {

struct OutlinedRegion {
  std::shared_ptr<Graph> body;
  std::vector<Node*> externals;  // in `graph`, one per `saved_i`
};

Expected<OutlinedRegion> outline_region(Graph& graph, size_t start, const std::vector<Node*>& stand_ins,
                                        const std::vector<Node*>& results);

}  // namespace tj::graph
