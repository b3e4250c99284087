// What running a graph does outside its own values.
//
// A graph "acts outside" when an op writes a tensor that may be (a view of)
// a graph input or attribute, or draws random numbers: running a prefix of
// it and stopping at an op that fails leaves a trace (a changed input, an
// advanced generator). A graph that does not act outside can fail midway
// and be forgotten: the runtime then runs the frame's original bytecode
// instead (runtime/eval_frame.h, tj_request_rerun), so the user sees
// exactly what eager does.
#pragma once

#include "graph/graph.h"

namespace tj::graph {

bool acts_outside(const Graph& graph);

}  // namespace tj::graph
