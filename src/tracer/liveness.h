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

// Whether a zero-argument super() may read the frame's first local: CPython
// 3.11 (super_init_without_args) takes localsplus[0] (a cell's contents if
// it is one) and the `__class__` free variable, which the compiler gives
// every function that names super or __class__. In such a function the
// first local stays live everywhere, and a resume function receives it as
// its own first local (resume.cpp).
bool super_reads_first_local(PyCodeObject* code);

}  // namespace tj::tracer
