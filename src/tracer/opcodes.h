// The CPython 3.11 opcode table, as data.
//
// Every real 3.11 opcode has one `OpcodeInfo` row: its name and number, how
// many inline CACHE code units follow it, how its argument is interpreted
// (an index into co_names / co_consts / localsplus, a comparison, a
// BINARY_OP operator, a relative jump, or a plain number), whether control
// falls through it, the condition of a conditional jump, its part in a call
// sequence, and its stack effect written as a small formula over the
// argument. The formulas follow the compiler's accounting (Python/compile.c
// `stack_effect`), so that `stack_effect()` agrees with `dis.stack_effect`
// for every opcode and argument; a unit test checks the whole table against
// `dis`/`opcode`.
// The decoder, the assembler's stack-depth analysis and the symbolic
// executor all read this table instead of switching on opcode names;
// code that needs one opcode names it as `Opcode::X`, never as a string.
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

// The base opcodes by name, numbered as in CPython's Include/opcode.h.
// The table below is written in these names; tests check them against `dis`.
enum class Opcode : uint8_t {
  CACHE = 0,
  POP_TOP = 1,
  PUSH_NULL = 2,
  NOP = 9,
  UNARY_POSITIVE = 10,
  UNARY_NEGATIVE = 11,
  UNARY_NOT = 12,
  UNARY_INVERT = 15,
  BINARY_SUBSCR = 25,
  GET_LEN = 30,
  MATCH_MAPPING = 31,
  MATCH_SEQUENCE = 32,
  MATCH_KEYS = 33,
  PUSH_EXC_INFO = 35,
  CHECK_EXC_MATCH = 36,
  CHECK_EG_MATCH = 37,
  WITH_EXCEPT_START = 49,
  GET_AITER = 50,
  GET_ANEXT = 51,
  BEFORE_ASYNC_WITH = 52,
  BEFORE_WITH = 53,
  END_ASYNC_FOR = 54,
  STORE_SUBSCR = 60,
  DELETE_SUBSCR = 61,
  GET_ITER = 68,
  GET_YIELD_FROM_ITER = 69,
  PRINT_EXPR = 70,
  LOAD_BUILD_CLASS = 71,
  LOAD_ASSERTION_ERROR = 74,
  RETURN_GENERATOR = 75,
  LIST_TO_TUPLE = 82,
  RETURN_VALUE = 83,
  IMPORT_STAR = 84,
  SETUP_ANNOTATIONS = 85,
  YIELD_VALUE = 86,
  ASYNC_GEN_WRAP = 87,
  PREP_RERAISE_STAR = 88,
  POP_EXCEPT = 89,
  STORE_NAME = 90,
  DELETE_NAME = 91,
  UNPACK_SEQUENCE = 92,
  FOR_ITER = 93,
  UNPACK_EX = 94,
  STORE_ATTR = 95,
  DELETE_ATTR = 96,
  STORE_GLOBAL = 97,
  DELETE_GLOBAL = 98,
  SWAP = 99,
  LOAD_CONST = 100,
  LOAD_NAME = 101,
  BUILD_TUPLE = 102,
  BUILD_LIST = 103,
  BUILD_SET = 104,
  BUILD_MAP = 105,
  LOAD_ATTR = 106,
  COMPARE_OP = 107,
  IMPORT_NAME = 108,
  IMPORT_FROM = 109,
  JUMP_FORWARD = 110,
  JUMP_IF_FALSE_OR_POP = 111,
  JUMP_IF_TRUE_OR_POP = 112,
  POP_JUMP_FORWARD_IF_FALSE = 114,
  POP_JUMP_FORWARD_IF_TRUE = 115,
  LOAD_GLOBAL = 116,
  IS_OP = 117,
  CONTAINS_OP = 118,
  RERAISE = 119,
  COPY = 120,
  BINARY_OP = 122,
  SEND = 123,
  LOAD_FAST = 124,
  STORE_FAST = 125,
  DELETE_FAST = 126,
  POP_JUMP_FORWARD_IF_NOT_NONE = 128,
  POP_JUMP_FORWARD_IF_NONE = 129,
  RAISE_VARARGS = 130,
  GET_AWAITABLE = 131,
  MAKE_FUNCTION = 132,
  BUILD_SLICE = 133,
  JUMP_BACKWARD_NO_INTERRUPT = 134,
  MAKE_CELL = 135,
  LOAD_CLOSURE = 136,
  LOAD_DEREF = 137,
  STORE_DEREF = 138,
  DELETE_DEREF = 139,
  JUMP_BACKWARD = 140,
  CALL_FUNCTION_EX = 142,
  EXTENDED_ARG = 144,
  LIST_APPEND = 145,
  SET_ADD = 146,
  MAP_ADD = 147,
  LOAD_CLASSDEREF = 148,
  COPY_FREE_VARS = 149,
  RESUME = 151,
  MATCH_CLASS = 152,
  FORMAT_VALUE = 155,
  BUILD_CONST_KEY_MAP = 156,
  BUILD_STRING = 157,
  LOAD_METHOD = 160,
  LIST_EXTEND = 162,
  SET_UPDATE = 163,
  DICT_MERGE = 164,
  DICT_UPDATE = 165,
  PRECALL = 166,
  CALL = 171,
  KW_NAMES = 172,
  POP_JUMP_BACKWARD_IF_NOT_NONE = 173,
  POP_JUMP_BACKWARD_IF_NONE = 174,
  POP_JUMP_BACKWARD_IF_FALSE = 175,
  POP_JUMP_BACKWARD_IF_TRUE = 176,
};

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
  binary_op,   // index into opcode._nb_ops, the BinaryOp table (binary_ops.h) (BINARY_OP)
  jump,        // relative jump in code units, direction given by JumpKind
};

// Direction of a jump argument. 3.11 has no absolute jumps (dis.hasjabs is
// empty) but the kind exists so the table mirrors `dis`.
enum class JumpKind : uint8_t { none, forward, backward, absolute };

// When a conditional jump is taken. The POP_JUMP_* forms pop the tested
// value either way; JUMP_IF_*_OR_POP keep it on the jump edge (the stack
// effect says which).
enum class JumpCondition : uint8_t {
  none,           // not a conditional jump
  if_true,        // POP_JUMP_*_IF_TRUE, JUMP_IF_TRUE_OR_POP
  if_false,       // POP_JUMP_*_IF_FALSE, JUMP_IF_FALSE_OR_POP
  if_none,        // POP_JUMP_*_IF_NONE
  if_not_none,    // POP_JUMP_*_IF_NOT_NONE
  iterator_done,  // FOR_ITER: the iterator is exhausted
  send_done,      // SEND: the sub-iterator returned
};

// An opcode's part in a call: `[KW_NAMES] PRECALL CALL`, which CPython
// runs (and a graph break must replay) as one unit, or CALL_FUNCTION_EX.
enum class CallStep : uint8_t { none, kw_names, precall, call, call_function_ex };

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
  JumpCondition condition; // when a conditional jump is taken
  bool terminates;         // control never reaches the next instruction
  StackEffect effect;
  CallStep call_step;

  Opcode code() const { return static_cast<Opcode>(opcode); }
};

// All 3.11 base opcodes in numeric order (CACHE included, specialized ones not).
std::span<const OpcodeInfo> all_opcodes();

// Table row for a base opcode, or null for an unknown/specialized number.
const OpcodeInfo* opcode_info(int opcode);
// Same, asserting that `opcode` is a known base opcode.
const OpcodeInfo& info(int opcode);
inline const OpcodeInfo& info(Opcode opcode) { return info(static_cast<int>(opcode)); }

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
// RESUME, COPY_FREE_VARS and MAKE_CELL: the frame's set-up, run before the
// first line (a graph break or resume point never starts inside it).
inline bool is_prologue(Opcode op) {
  return op == Opcode::RESUME || op == Opcode::COPY_FREE_VARS || op == Opcode::MAKE_CELL;
}

// The same jump in the other direction (POP_JUMP_FORWARD_IF_TRUE <->
// POP_JUMP_BACKWARD_IF_TRUE, JUMP_FORWARD <-> JUMP_BACKWARD); nullopt for
// jumps that exist in one direction only (FOR_ITER, SEND, JUMP_IF_*_OR_POP).
// JUMP_BACKWARD_NO_INTERRUPT flips to JUMP_FORWARD (forward jumps never
// check for interrupts).
std::optional<int> flip_jump_direction(int opcode);

// Names of the comparison operators of COMPARE_OP (dis.cmp_op), and of the
// BINARY_OP argument ("+", "+=", ...), indexed by argument; the latter are
// the symbols of the BinaryOp table (binary_ops.h).
std::span<const std::string_view> compare_op_names();
std::span<const std::string_view> binary_op_names();

}  // namespace tj::bc
