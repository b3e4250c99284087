// Decoded CPython 3.11 bytecode: an editable list of instructions.
//
// `decode()` turns a code object into `Instruction`s: one per real
// instruction, with EXTENDED_ARG prefixes folded into `arg` and inline
// CACHE units skipped; the argument resolved into `argval` (the constant,
// the name, the local/cell/free variable name, the comparison); jumps
// resolved to the target `Instruction*`; each instruction's source
// position from co_linetable; and the innermost exception-table entry that
// covers it as an `ExceptionHandler` (handler instruction, depth, lasti).
//
// The list is the single source of truth for `assemble()` (assemble.h):
// instructions live behind `unique_ptr`, so their addresses survive
// insertions, and every cross-reference (jump targets, handlers) is an
// `Instruction*`, never an offset. To edit, insert new instructions
// (offset -1), re-point `target`/`handler`, and assemble: offsets,
// EXTENDED_ARG prefixes, CACHE units, jump arguments, jump directions and
// all tables are recomputed there. `offset`, `starts_line` and
// `is_jump_target` describe the decoded code and are not read back.
//
// Ownership: `argval` is a strong reference (PyRef); a DecodedCode must be
// created, copied and destroyed with the GIL held.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "support/expected.h"
#include "support/py_ref.h"
#include "tracer/code_tables.h"
#include "tracer/opcodes.h"

namespace tj::bc {

struct Instruction;

// Where an exception raised by an instruction goes.
struct ExceptionHandler {
  Instruction* target = nullptr;  // first instruction of the handler
  int depth = 0;                  // the value stack is unwound to this depth
  bool lasti = false;             // then the raising instruction's offset is pushed
  bool operator==(const ExceptionHandler&) const = default;
};

struct Instruction {
  int opcode = 0;  // a base opcode: never CACHE, EXTENDED_ARG or a specialized one
  // The full argument. For name/const/local/free operands the assembler
  // recomputes it from `argval` when argval is set (LOAD_GLOBAL keeps its
  // low "push NULL" bit from here); for jumps it is recomputed from
  // `target`; otherwise (counts, flags, BINARY_OP, COMPARE_OP...) it is used
  // as is.
  int arg = 0;
  // The resolved operand: the constant (LOAD_CONST, KW_NAMES), the name str
  // (co_names ops, LOAD_GLOBAL without the low bit), the variable name str
  // (fast locals, cells, free vars), the operator str of COMPARE_OP; null
  // for other opcodes and for jumps.
  PyRef argval;
  Instruction* target = nullptr;           // jumps only: where control goes
  std::optional<ExceptionHandler> handler;  // innermost covering exception entry
  Position position;                        // source location; line -1: none

  // Facts about the decoded code (not read by the assembler, not updated by edits):
  int offset = -1;          // byte offset of the first unit (first EXTENDED_ARG); -1: new
  bool starts_line = false; // first instruction of a new line (dis's starts_line)
  bool is_jump_target = false;  // a jump goes here (dis.get_instructions' is_jump_target)
  bool is_handler = false;      // an exception-table entry goes here
  mutable int index_hint = -1;  // DecodedCode::index_of's last answer (checked before use)

  const OpcodeInfo& info() const { return ::tj::bc::info(opcode); }
  Opcode code() const { return static_cast<Opcode>(opcode); }
  std::string_view name() const { return info().name; }
  int line() const { return position.line; }

  // A new instruction with a plain argument (no offset, no location).
  static std::unique_ptr<Instruction> make(int opcode, int arg = 0, PyRef argval = {});
  // A new jump to `target`.
  static std::unique_ptr<Instruction> make_jump(int opcode, Instruction* target);
};

using InstructionList = std::vector<std::unique_ptr<Instruction>>;

// One row of the exception table, in terms of instructions: the handler
// covers `first`..`last` (inclusive, consecutive in the list).
struct ExceptionTableEntry {
  Instruction* first = nullptr;
  Instruction* last = nullptr;
  ExceptionHandler handler;
};

struct DecodedCode {
  PyRef code;  // the decoded code object; the template for assemble()
  InstructionList instructions;

  // Index of `inst` in `instructions`, or -1: O(1) while the list is
  // unchanged (each instruction remembers its index; an edit makes the next
  // lookup rescan once).
  int index_of(const Instruction* inst) const;
  // Inserts `inst` before position `index` and returns it (borrowed).
  // Jumps and handlers are not changed: see `retarget`.
  Instruction* insert(size_t index, std::unique_ptr<Instruction> inst);
  // Makes every jump and handler that goes to `from` go to `to`.
  void retarget(const Instruction* from, Instruction* to);
};

// Decodes `code` (borrowed). Reads `co_code` (the unspecialized bytes,
// through PyCode_GetCode), never the quickened `_PyCode_CODE`.
Expected<DecodedCode> decode(PyCodeObject* code);

// The exception table of an instruction list: maximal runs of consecutive
// instructions with equal handlers, in order.
std::vector<ExceptionTableEntry> exception_table(const InstructionList& instructions);

// Whether new instructions may go between `instructions[index - 1]` and
// `instructions[index]`. CPython 3.11 reads some pairs as one unit: a
// specialized PRECALL performs the call and skips the CALL after it,
// generator.throw() steps back from YIELD_VALUE to the SEND just before it,
// and finds a `yield from` by the RESUME just after the YIELD_VALUE. So
// nothing may be inserted inside PRECALL|CALL, SEND|YIELD_VALUE and
// YIELD_VALUE|RESUME (and jumps must not target their second halves).
bool can_insert_before(const InstructionList& instructions, size_t index);

// The number of code units an instruction with this opcode and argument
// takes: EXTENDED_ARG prefixes + 1 + its CACHE entries.
int instruction_units(int opcode, int arg);

// "LOAD_FAST x", "POP_JUMP_FORWARD_IF_FALSE -> 12", one line per
// instruction, deterministic (no addresses): for logs and golden tests.
std::string format_instructions(const InstructionList& instructions);

}  // namespace tj::bc
