// A graph with data-dependent sizes cut into stages that can each be
// compiled (issue 43 item 1).
//
// A data-dependent op (nonzero, x[mask], unique, ...; graph/unbacked_sizes.h)
// says how big its result is only when it runs, so no compile step may fold
// the sizes after it. The graph is cut in three: the head (every node that
// depends on no data-dependent size: its sizes are the inputs' sizes, so it
// compiles like any graph), the middle (the data-dependent ops the head
// feeds, and the getitems of their tuples: run op by op on the real
// tensors), and the tail (the rest: compiled once the middle ran and its
// sizes are known, per size signature; a tail that has data-dependent ops
// of its own is cut again then). A `sym_item` (a 0-d tensor's value used as
// a size, `x[:t]`) always goes to the tail: where it reads a placeholder it
// is bound to the value read at run time (bind_input_items), which the
// tail's signature includes. A random op after a draw that goes to the
// tail goes there too, so the draws keep eager's order (the head runs
// before the middle and the tail).
//
// The stages exchange values through numbered slots: slot i < placeholders
// is input i; each value a later stage or the output needs has a slot.
// Every value crossing a stage boundary is one tensor; a size node computed
// from the graph inputs' sizes alone is copied into each stage that uses it
// (with the inputs it reads), so the stages serve every size of the inputs;
// other size nodes that depend on no data-dependent size (a size of an
// intermediate) are folded to constants first (their values hold for the
// metas' sizes; folded_sizes counts them). Not split (an Error with the reason,
// and the graph runs op by op as before): a graph that writes its inputs or
// attributes, has custom autograd.Function bodies, or returns anything but
// tensors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "support/expected.h"

namespace tj::graph {

struct UnbackedStage {
  std::shared_ptr<Graph> graph;  // null when the stage has no node
  std::vector<int> inputs;       // one slot per placeholder
  std::vector<int> outputs;      // one slot per element of the output tuple
};

struct UnbackedStages {
  int slots = 0;
  UnbackedStage head;    // placeholders: every input of the graph, in order (inputs = 0..n-1)
  UnbackedStage middle;  // run op by op
  UnbackedStage tail;    // compiled per size signature
  std::vector<int> results;  // the graph's outputs, flattened
  std::string source;        // the first data-dependent op, for logs ("aten::nonzero (at f.py:3)")
  int folded_sizes = 0;      // size nodes folded to the metas' values (0: the stages hold for every size)
};

// `graph`'s metas must describe concrete inputs (the sizes it is compiled for).
Expected<UnbackedStages> split_at_unbacked(const Graph& graph);

// The sym_item nodes of `graph` that read a placeholder, with that
// placeholder's index: what a tail binds per call.
struct InputItem {
  Node* item = nullptr;
  int input = -1;
};
std::vector<InputItem> input_items(const Graph& graph);

// `graph` with each of its input_items read as a size instead: sym_item(t)
// becomes size 0 of a new placeholder, one per item in input_items' order,
// after the graph's own placeholders. Passed a [v, 0] tensor (no elements)
// for a value v >= 0, it computes what `graph` computes with v read, and
// its captures generalize over v as over any input size (an AOT size
// template over values, runtime/unbacked_stages.cpp). Null when it has none.
std::shared_ptr<Graph> items_as_input_sizes(const Graph& graph);

// Replaces the sym_item `item` by `value` in its users' arguments and
// erases it (a value read from the real tensor before the graph is
// compiled for it).
void bind_item(Graph& graph, Node* item, int64_t value);

}  // namespace tj::graph
