// Output views replayed: a view of an input that AOT's wrapper makes again
// with the view ops that made it in the captured graph (select, slice,
// view, ...), not with `as_strided` of the geometry. Their autograd
// formulas are eager's; as_strided's backward spreads a gradient over the
// elements of an input that overlaps itself, so `b[0]` of an expanded
// (stride-0) `b` would give each of b's elements a share of the gradient
// instead of all of it to the first. Capture (aot/capture.h) asks for such
// a replay when an output that requires grad views an input that overlaps
// itself, and runs the graph as captured when there is none.
#pragma once

#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

#include "graph/graph.h"

namespace tj::graph::aot {

// Per tensor of `graph`'s output (flattened in order, as the interpreter
// flattens values): the node that makes it; null for an item of a node
// whose value is a sequence.
std::vector<const Node*> flat_output_nodes(const Graph& graph);

// A graph of one placeholder (standing for `input`) running the chain of
// view ops that makes `out` from `input` in their graph, with the same
// arguments; null when `out` is made otherwise (an op that is no view, an
// argument that is another node, a chain from another node).
std::unique_ptr<Graph> view_chain_from(const Node* input, const Node* out);

// The node that `out`'s chain of view ops (those view_chain_from replays)
// starts from; `out` itself when it is made by no such op.
const Node* view_chain_start(const Node* out);

// `replay` (a view_chain_from graph) run on `from`, when it makes the view
// of `from`'s storage with these sizes, strides and offset (as as_strided
// would); else an undefined tensor.
at::Tensor replay_view(const Graph& replay, const at::Tensor& from, c10::IntArrayRef sizes,
                       c10::IntArrayRef strides, int64_t offset);

}  // namespace tj::graph::aot
