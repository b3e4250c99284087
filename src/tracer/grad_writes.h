// Writes of values requiring grad into tensors that did not
// (grad_writes.cpp), as free functions over a TraceContext: the trace keeps
// each such in-place write (TraceShared::grad_writes) so that a tensor read
// later whose view family one reached requires grad as in eager, whatever
// the metas of its nodes say.
#pragma once

#include "tracer/trace_context.h"

namespace tj::tracer {

// Notes in-place `node` (recorded, its metas set) when it is such a write,
// in grad mode; whether a write reached `node`'s view family (a float
// tensor eager then sees requiring grad); whether `node` reads such a
// tensor whose meta does not require grad.
void note_grad_write(TraceContext cx, const graph::Node& node);
bool requires_grad_by_write(TraceContext cx, const graph::Node* node);
bool grad_written_input_read(TraceContext cx, const graph::Node& node);

}  // namespace tj::tracer
