// Unused results kept: eager runs every op a program calls, used or not,
// and some of them fail at run time in ways a meta tensor cannot see
// (integer division by zero, an index out of range, a kernel that has no
// implementation for a dtype). A functional graph keeps only what its
// outputs need (AOT records on meta proxies, then DCE), so such an op
// would silently vanish. `expose_unused_results` appends each unused
// single-tensor result of a call_function node (unused, or read only by
// views nobody reads) to the graph's output tuple, and the result of the
// last in-place op on an intermediate, or on a view of one, that nobody
// reads afterwards but through views nobody reads (`v.relu_()`, `v[0] = x`:
// functionally a new value nobody uses),
// and a clone (taken just before) of a result that is only overwritten
// whole (`v[...] = x`: LibTorch's functional copy_ drops what it replaces);
// the caller runs the graph and drops those extra outputs again. Left
// alone: views (their checks are all metadata, done when traced), other
// in-place/out ops and random ops (effects every pass keeps already).
// Returns how many outputs were added; they follow the existing ones.
#pragma once

#include "graph/graph.h"

namespace tj::graph {

int expose_unused_results(Graph& graph);

}  // namespace tj::graph
