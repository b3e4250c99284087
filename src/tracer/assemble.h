// assemble(): an InstructionList back into a CPython 3.11 code object.
//
// The inverse of decode() (bytecode.h), as one linear list of steps:
//   1. operands: co_consts / co_names / co_varnames are the template's,
//      extended (deduplicated) by the argvals not found there, so an
//      unedited list keeps every index;
//   2. jump directions: a jump whose target now lies on the other side
//      becomes its FORWARD/BACKWARD twin;
//   3. layout: sizes (EXTENDED_ARG prefixes + opcode + CACHE units) and jump
//      arguments are iterated to a fixed point; sizes only grow, so it ends;
//   4. co_code, with zeroed CACHE units;
//   5. co_exceptiontable from the per-instruction handlers;
//   6. co_linetable from the per-instruction positions;
//   7. co_stacksize by a worklist over every path, exception edges included;
//   8. `template.replace(...)` with all of the above.
// Decoding then assembling an unedited code object gives back identical
// co_code, co_exceptiontable, co_linetable and co_stacksize.
#pragma once

#include "tracer/bytecode.h"

namespace tj::bc {

struct AssembleOptions {
  // Borrowed, optional: a dict of further `code.replace()` keywords
  // (co_name, co_argcount, co_flags, ...), applied over the computed ones.
  // A `co_varnames` given here is the base list that new locals extend.
  // Instruction positions are absolute lines: a new co_firstlineno changes
  // the encoding base of co_linetable, not the lines.
  PyObject* replace_kwargs = nullptr;
};

// Assembles `instructions` using `template_code` (borrowed) for everything
// bytecode does not determine (names, flags, argument counts, filename, cell
// and free variables). Returns a new reference to the code object.
Expected<PyRef> assemble(const InstructionList& instructions, PyCodeObject* template_code,
                         const AssembleOptions& options = {});
inline Expected<PyRef> assemble(const DecodedCode& decoded, const AssembleOptions& options = {}) {
  return assemble(decoded.instructions,
                  reinterpret_cast<PyCodeObject*>(decoded.code.get()), options);
}

// The maximum stack depth over every path from the first instruction,
// following fallthrough, jumps and exception handlers (entered at
// handler depth + lasti + 1). Generators/coroutines (`co_flags`) start at
// depth 1, as in CPython's compiler. Fails on a negative depth or on two
// paths reaching an instruction at different depths. Uses each jump's
// `target` and each instruction's `arg` for the arg-dependent effects.
Expected<int> compute_stack_depth(const InstructionList& instructions, int co_flags);

}  // namespace tj::bc
