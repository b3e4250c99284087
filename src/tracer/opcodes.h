// The CPython 3.11 opcode table, as data.
//
// Every real 3.11 opcode has one `OpcodeInfo` row: its name and number, how
// many inline CACHE code units follow it, how its argument is interpreted
// (an index into co_names / co_consts / localsplus, a comparison, a relative
// jump, or a plain number), whether control falls through it, and its stack
// effect written as a small formula over the argument. The formulas follow
// the compiler's accounting (Python/compile.c `stack_effect`), so that
// `stack_effect()` agrees with `dis.stack_effect` for every opcode and
// argument; a unit test checks the whole table against `dis`/`opcode`.
// The decoder, the assembler's stack-depth analysis and the symbolic
// executor all read this table instead of switching on opcodes.
// The adaptive/specialized opcodes that quickening writes into
// `_PyCode_CODE` (never into `co_code`) map back to their base opcode with
// `deoptimize()`.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace tj::bc {

inline constexpr int kHaveArgument = 90;   // opcodes >= this take an argument
inline constexpr int kExtendedArg = 144;   // EXTENDED_ARG
inline constexpr int kCache = 0;           // CACHE

// How an instruction's argument is interpreted.
enum class ArgKind : uint8_t {
  none,        // no argument (opcode < kHaveArgument)
  number,      // a plain count/flag (BUILD_TUPLE, BINARY_OP, MAKE_FUNCTION, ...)
  name,        // index into co_names
  global_name, // LOAD_GLOBAL: co_names[arg >> 1]; low bit set = also push NULL
  constant,    // index into co_consts (LOAD_CONST, KW_NAMES)
  local,       // index into localsplus, a fast local (LOAD_FAST, STORE_FAST, DELETE_FAST)
  free,        // index into localsplus, a cell or free variable (LOAD_DEREF, MAKE_CELL, ...)
  compare,     // index into dis.cmp_op (COMPARE_OP)
  jump,        // relative jump in code units, direction given by JumpKind
};

// Direction of a jump argument. 3.11 has no absolute jumps (dis.hasjabs is
// empty) but the kind exists so the table mirrors `dis`.
enum class JumpKind : uint8_t { none, forward, backward, absolute };

// The term of a stack-effect formula that depends on the argument.
enum class ArgTerm : uint8_t {
  none,              // 0
  plus_arg,          // +arg                        (UNPACK_SEQUENCE: -1 + arg)
  minus_arg,         // -arg                        (BUILD_TUPLE: 1 - arg, PRECALL)
  minus_twice_arg,   // -2*arg                      (BUILD_MAP: 1 - 2*arg)
  unpack_ex,         // (arg & 0xff) + (arg >> 8)   (UNPACK_EX)
  plus_low_bit,      // +(arg & 1)                  (LOAD_GLOBAL: 1 + low bit)
  minus_low_bit,     // -(arg & 1)                  (CALL_FUNCTION_EX: -2 - low bit)
  minus_flag_count,  // -popcount(arg & 0xf)        (MAKE_FUNCTION)
  build_slice,       // arg == 3 ? -1 : 0           (BUILD_SLICE: -1 + term)
  format_spec,       // (arg & 4) ? -1 : 0          (FORMAT_VALUE)
};

// Net change of the stack depth: `(jump ? on_jump : fallthrough) + term(arg)`.
// For opcodes that do not jump, `on_jump == fallthrough`.
struct StackEffect {
  int8_t fallthrough;
  int8_t on_jump;
  ArgTerm term;
};

struct OpcodeInfo {
  uint8_t opcode;
  std::string_view name;
  uint8_t cache_entries;   // inline CACHE code units after the instruction
  ArgKind arg_kind;
  JumpKind jump_kind;
  bool conditional;        // a jump that may also fall through (false for JUMP_*)
  bool terminates;         // control never reaches the next instruction
  StackEffect effect;
};

// All 3.11 base opcodes in numeric order (CACHE included, specialized ones not).
std::span<const OpcodeInfo> all_opcodes();

// Table row for a base opcode, or null for an unknown/specialized number.
const OpcodeInfo* opcode_info(int opcode);
// Same, asserting that `opcode` is a known base opcode.
const OpcodeInfo& info(int opcode);

// Name of any opcode number, specialized ones included ("LOAD_GLOBAL_MODULE");
// empty for an unused number.
std::string_view opcode_name(int opcode);

// Opcode number for a name such as "LOAD_FAST" (base opcodes only).
std::optional<int> opcode_by_name(std::string_view name);

// The base opcode of an adaptive/specialized one (LOAD_GLOBAL_MODULE ->
// LOAD_GLOBAL); a base opcode maps to itself; -1 for an unused number.
int deoptimize(int opcode);

// Net stack effect of executing `opcode` with `arg`, on the jump edge when
// `jump` is true; equals `dis.stack_effect(opcode, arg, jump=jump)`.
int stack_effect(int opcode, int arg, bool jump);

inline bool has_arg(int opcode) { return opcode >= kHaveArgument; }
inline bool is_jump(int opcode) { return info(opcode).jump_kind != JumpKind::none; }
inline bool is_backward_jump(int opcode) { return info(opcode).jump_kind == JumpKind::backward; }
inline bool is_unconditional_jump(int opcode) { return is_jump(opcode) && !info(opcode).conditional; }
// RETURN_VALUE, RAISE_VARARGS, RERAISE and the unconditional jumps.
inline bool ends_block(int opcode) { return info(opcode).terminates; }

// The same jump in the other direction (POP_JUMP_FORWARD_IF_TRUE <->
// POP_JUMP_BACKWARD_IF_TRUE, JUMP_FORWARD <-> JUMP_BACKWARD); nullopt for
// jumps that exist in one direction only (FOR_ITER, SEND, JUMP_IF_*_OR_POP).
// JUMP_BACKWARD_NO_INTERRUPT flips to JUMP_FORWARD (forward jumps never
// check for interrupts).
std::optional<int> flip_jump_direction(int opcode);

// Names of the comparison operators of COMPARE_OP (dis.cmp_op), and of the
// BINARY_OP argument ("+", "+=", ...), indexed by argument.
std::span<const std::string_view> compare_op_names();
std::span<const std::string_view> binary_op_names();

}  // namespace tj::bc
