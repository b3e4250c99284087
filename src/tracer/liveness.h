// Liveness of fast locals over a decoded code object: which locals may be
// read, before being written, on some path from an instruction on. The
// graph-break code passes only those to a resume function.
//
// A backward dataflow over the instruction list: uses are LOAD_FAST /
// LOAD_DEREF / LOAD_CLOSURE of a local slot, definitions STORE_FAST /
// DELETE_FAST / STORE_DEREF; successors are the fallthrough, the jump
// target and the exception handler. Iterated to a fixed point.
#pragma once

#include <vector>

#include "tracer/bytecode.h"

namespace tj::tracer {

// live[i][slot]: local `slot` (a localsplus index) is live on entry to
// instruction i.
std::vector<std::vector<bool>> live_locals(const bc::InstructionList& instructions, int nlocalsplus);

// Whether the code names `locals` or `vars` (co_names): a call of either
// reads every local, so all of them are live everywhere.
bool may_read_all_locals(PyCodeObject* code);

}  // namespace tj::tracer
