// What running a graph does outside its own values.
//
// A graph writes its inputs when an op writes a tensor that may be (a view
// of) a graph input or attribute; it draws random numbers when an op
// consumes them (from the default generator of the tensors' device). Running
// a prefix of such a graph and stopping at an op that fails leaves a trace
// (a changed input, an advanced generator). A graph that leaves none, or
// only draws from a generator whose state the runtime saved, can fail midway
// and be forgotten: the runtime then runs the frame's original bytecode
// instead (runtime/eval_frame.h, tj_request_rerun), so the user sees exactly
// what eager does. A graph that only writes the data of inputs that do not
// require grad can be forgotten too, once the runtime has put their data
// back (it keeps copies of the written inputs while such a graph runs,
// unless the backend defers the writes to its end as AOT does).
#pragma once

#include <vector>

#include "graph/graph.h"

namespace tj::graph {

struct GraphEffects {
  bool writes_inputs = false;
  std::vector<int> written_inputs;  // placeholders possibly written, by position
  bool writes_attrs = false;        // a get_attr tensor possibly written
  bool changes_metadata = false;    // an in-place op that changes sizes/strides (resize_, unsqueeze_, set_...)
  // An op that may raise on the data (not only on sizes and dtypes, which
  // the metas inferred at compile time vouch for: an integer division by
  // zero, an index out of range, a linalg error) runs at or after the first
  // op that writes: a failure may then leave inputs half written.
  bool may_fail_after_a_write = false;
  bool draws_random = false;
  bool random_only_on_cpu = true;  // every random op makes CPU tensors
};

GraphEffects effects_of(const Graph& graph);

// Whether `node` may raise on the values of its inputs: false for views and
// for ops on float32/float64 tensors that, once their inputs' metas hold,
// cannot raise (pointwise and reduction ops, copies, fills, factories,
// matrix products, softmax, layer_norm, convolution, batch norm and their
// backward ops). A kernel's output is written straight into the input it
// updates only when no such op follows (jit/lowering.cpp, plan_donations).
bool may_raise_on_data(const Node& node);

}  // namespace tj::graph
