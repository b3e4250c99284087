// Whether the value a traced call returns is never read (dead_results.cpp).
// Internal to the tracer's handlers.
#pragma once

#include "tracer/translator.h"

namespace tj::tracer {

// The value the current instruction pushes is never read: the next
// instruction pops it (POP_TOP) or stores it in a plain fast local that no
// instruction of the frame's code loads or deletes (and that no locals(),
// vars() or zero-argument super() may read). `clipfrac = t.item()` logged
// only by code the probes cut away is one.
bool result_never_read(TraceContext cx);

}  // namespace tj::tracer
