// The SIZE_FACTS guard (dynamic shapes): do the facts about sizes a trace
// relied on (tracer::SizeFacts) hold for the frame's inputs?
//
// Facts on the inputs' own sizes (`x.shape[0] > 16`) are evaluated
// directly on each call. Facts that read a size of a tensor computed in
// the graph need its metas: for each new size signature of the inputs the
// graph's metas are inferred again for those sizes, only for the nodes the
// facts depend on, and each fact's size node is compared with the value it
// had in the trace; the answer is kept per signature. A fact whose node gets
// no value (inference raised before it: eager may raise for these sizes, or
// a size the trace read is gone) fails the guard: the frame is traced again
// for these sizes, and that trace meets the same error or reads anew.
#pragma once

#include <string>

#include "runtime/guard_check.h"
#include "tracer/trace_api.h"

namespace tj::runtime {

// True when they hold; else false with `failed` (if given) naming the fact.
bool size_facts_hold(const tracer::SizeFacts& facts, const tj_FrameView& frame, std::string* failed);

}  // namespace tj::runtime
