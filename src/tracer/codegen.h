// The transformed code object of a fully traced frame:
//
//     <the original prologue: MAKE_CELL / COPY_FREE_VARS / RESUME>
//     PUSH_NULL; LOAD_CONST <compiled>; <load each input source>
//     PRECALL n; CALL n; RETURN_VALUE
//
// `compiled` (a runtime CompiledGraph) runs the graph on the tensor inputs
// and rebuilds the frame's return value itself, so the bytecode only loads
// inputs from their sources (locals, cells, globals, attributes, items).
#pragma once

#include <vector>

#include "support/expected.h"
#include "support/py_ref.h"
#include "tracer/bytecode.h"
#include "tracer/source.h"
#include "tracer/trace_api.h"

namespace tj::tracer {

// Appends the instructions that push the value of `source` (tracer
// sources: locals, cells, globals, attributes, items) at position `pos`.
void emit_source_load(PyCodeObject* code, const Source& source, bc::InstructionList& out, const bc::Position& pos);

// make_transformed_code is declared in trace_api.h (the runtime calls it).

}  // namespace tj::tracer
