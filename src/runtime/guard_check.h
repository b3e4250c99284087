// Guard evaluation: the tracer's guard list (tracer/guards.h) checked in C++
// on the frame's arguments, globals and closure before a cache entry is
// reused (ARCHITECTURE.md decision 3). Sources are read straight from the
// frame view: L[...] from localsplus, G[...] from globals then builtins,
// C[...] from the function's closure cells, then attributes and items.
#pragma once

#include <memory>

#include "runtime/code_cache.h"
#include "support/py_ref.h"
#include "tracer/trace_api.h"

namespace tj::runtime {

std::unique_ptr<GuardCheck> compile_guards(const tracer::GuardSet& guards);

}  // namespace tj::runtime

namespace tj::runtime {
// The value of `source` in this frame (a new reference), or null: no Python
// error is left set but an interruption (support/py_errors.h).
PyRef read_source(const tracer::Source& source, const tj_FrameView& frame);
}  // namespace tj::runtime
