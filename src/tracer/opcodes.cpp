// The 3.11 opcode table itself: one row per base opcode (numbers, names and
// cache counts as in CPython's Include/opcode.h and Lib/opcode.py; stack
// effects transcribed from Python/compile.c `stack_effect`), the
// specialized-to-base map of quickening, and the lookups over them.
// tests/unit/tracer/opcodes_test.cpp checks every row against `dis`.
#include "tracer/opcodes.h"

#include <array>
#include <bit>
#include <cassert>

namespace tj::bc {
namespace {

using AK = ArgKind;
using JK = JumpKind;
using T = ArgTerm;

// A non-jumping opcode.
constexpr OpcodeInfo op(int num, std::string_view name, int caches, ArgKind kind, int effect,
                        ArgTerm term = T::none, bool terminates = false) {
  return OpcodeInfo{static_cast<uint8_t>(num), name, static_cast<uint8_t>(caches), kind, JK::none,
                    false, terminates,
                    StackEffect{static_cast<int8_t>(effect), static_cast<int8_t>(effect), term}};
}

// A jump; `conditional` jumps may also fall through.
constexpr OpcodeInfo jump(int num, std::string_view name, JumpKind dir, bool conditional,
                          int fallthrough, int on_jump) {
  return OpcodeInfo{static_cast<uint8_t>(num), name, 0, AK::jump, dir, conditional, !conditional,
                    StackEffect{static_cast<int8_t>(fallthrough), static_cast<int8_t>(on_jump),
                                T::none}};
}

constexpr OpcodeInfo kOpcodes[] = {
    op(0, "CACHE", 0, AK::none, 0),
    op(1, "POP_TOP", 0, AK::none, -1),
    op(2, "PUSH_NULL", 0, AK::none, +1),
    op(9, "NOP", 0, AK::none, 0),
    op(10, "UNARY_POSITIVE", 0, AK::none, 0),
    op(11, "UNARY_NEGATIVE", 0, AK::none, 0),
    op(12, "UNARY_NOT", 0, AK::none, 0),
    op(15, "UNARY_INVERT", 0, AK::none, 0),
    op(25, "BINARY_SUBSCR", 4, AK::none, -1),
    op(30, "GET_LEN", 0, AK::none, +1),
    op(31, "MATCH_MAPPING", 0, AK::none, +1),
    op(32, "MATCH_SEQUENCE", 0, AK::none, +1),
    op(33, "MATCH_KEYS", 0, AK::none, +1),
    op(35, "PUSH_EXC_INFO", 0, AK::none, +1),
    op(36, "CHECK_EXC_MATCH", 0, AK::none, 0),
    op(37, "CHECK_EG_MATCH", 0, AK::none, 0),
    op(49, "WITH_EXCEPT_START", 0, AK::none, +1),
    op(50, "GET_AITER", 0, AK::none, 0),
    op(51, "GET_ANEXT", 0, AK::none, +1),
    op(52, "BEFORE_ASYNC_WITH", 0, AK::none, +1),
    op(53, "BEFORE_WITH", 0, AK::none, +1),
    op(54, "END_ASYNC_FOR", 0, AK::none, -2),
    op(60, "STORE_SUBSCR", 1, AK::none, -3),
    op(61, "DELETE_SUBSCR", 0, AK::none, -2),
    op(68, "GET_ITER", 0, AK::none, 0),
    op(69, "GET_YIELD_FROM_ITER", 0, AK::none, 0),
    op(70, "PRINT_EXPR", 0, AK::none, -1),
    op(71, "LOAD_BUILD_CLASS", 0, AK::none, +1),
    op(74, "LOAD_ASSERTION_ERROR", 0, AK::none, +1),
    op(75, "RETURN_GENERATOR", 0, AK::none, 0),
    op(82, "LIST_TO_TUPLE", 0, AK::none, 0),
    op(83, "RETURN_VALUE", 0, AK::none, -1, T::none, /*terminates=*/true),
    op(84, "IMPORT_STAR", 0, AK::none, -1),
    op(85, "SETUP_ANNOTATIONS", 0, AK::none, 0),
    op(86, "YIELD_VALUE", 0, AK::none, 0),
    op(87, "ASYNC_GEN_WRAP", 0, AK::none, 0),
    op(88, "PREP_RERAISE_STAR", 0, AK::none, -1),
    op(89, "POP_EXCEPT", 0, AK::none, -1),
    op(90, "STORE_NAME", 0, AK::name, -1),
    op(91, "DELETE_NAME", 0, AK::name, 0),
    op(92, "UNPACK_SEQUENCE", 1, AK::number, -1, T::plus_arg),
    jump(93, "FOR_ITER", JK::forward, true, +1, -1),
    op(94, "UNPACK_EX", 0, AK::number, 0, T::unpack_ex),
    op(95, "STORE_ATTR", 4, AK::name, -2),
    op(96, "DELETE_ATTR", 0, AK::name, -1),
    op(97, "STORE_GLOBAL", 0, AK::name, -1),
    op(98, "DELETE_GLOBAL", 0, AK::name, 0),
    op(99, "SWAP", 0, AK::number, 0),
    op(100, "LOAD_CONST", 0, AK::constant, +1),
    op(101, "LOAD_NAME", 0, AK::name, +1),
    op(102, "BUILD_TUPLE", 0, AK::number, +1, T::minus_arg),
    op(103, "BUILD_LIST", 0, AK::number, +1, T::minus_arg),
    op(104, "BUILD_SET", 0, AK::number, +1, T::minus_arg),
    op(105, "BUILD_MAP", 0, AK::number, +1, T::minus_twice_arg),
    op(106, "LOAD_ATTR", 4, AK::name, 0),
    op(107, "COMPARE_OP", 2, AK::compare, -1),
    op(108, "IMPORT_NAME", 0, AK::name, -1),
    op(109, "IMPORT_FROM", 0, AK::name, +1),
    jump(110, "JUMP_FORWARD", JK::forward, false, 0, 0),
    jump(111, "JUMP_IF_FALSE_OR_POP", JK::forward, true, -1, 0),
    jump(112, "JUMP_IF_TRUE_OR_POP", JK::forward, true, -1, 0),
    jump(114, "POP_JUMP_FORWARD_IF_FALSE", JK::forward, true, -1, -1),
    jump(115, "POP_JUMP_FORWARD_IF_TRUE", JK::forward, true, -1, -1),
    op(116, "LOAD_GLOBAL", 5, AK::global_name, +1, T::plus_low_bit),
    op(117, "IS_OP", 0, AK::number, -1),
    op(118, "CONTAINS_OP", 0, AK::number, -1),
    op(119, "RERAISE", 0, AK::number, -1, T::none, /*terminates=*/true),
    op(120, "COPY", 0, AK::number, +1),
    op(122, "BINARY_OP", 1, AK::number, -1),
    jump(123, "SEND", JK::forward, true, 0, -1),
    op(124, "LOAD_FAST", 0, AK::local, +1),
    op(125, "STORE_FAST", 0, AK::local, -1),
    op(126, "DELETE_FAST", 0, AK::local, 0),
    jump(128, "POP_JUMP_FORWARD_IF_NOT_NONE", JK::forward, true, -1, -1),
    jump(129, "POP_JUMP_FORWARD_IF_NONE", JK::forward, true, -1, -1),
    op(130, "RAISE_VARARGS", 0, AK::number, 0, T::minus_arg, /*terminates=*/true),
    op(131, "GET_AWAITABLE", 0, AK::number, 0),
    op(132, "MAKE_FUNCTION", 0, AK::number, 0, T::minus_flag_count),
    op(133, "BUILD_SLICE", 0, AK::number, -1, T::build_slice),
    jump(134, "JUMP_BACKWARD_NO_INTERRUPT", JK::backward, false, 0, 0),
    op(135, "MAKE_CELL", 0, AK::free, 0),
    op(136, "LOAD_CLOSURE", 0, AK::free, +1),
    op(137, "LOAD_DEREF", 0, AK::free, +1),
    op(138, "STORE_DEREF", 0, AK::free, -1),
    op(139, "DELETE_DEREF", 0, AK::free, 0),
    jump(140, "JUMP_BACKWARD", JK::backward, false, 0, 0),
    op(142, "CALL_FUNCTION_EX", 0, AK::number, -2, T::minus_low_bit),
    op(144, "EXTENDED_ARG", 0, AK::number, 0),
    op(145, "LIST_APPEND", 0, AK::number, -1),
    op(146, "SET_ADD", 0, AK::number, -1),
    op(147, "MAP_ADD", 0, AK::number, -2),
    op(148, "LOAD_CLASSDEREF", 0, AK::free, +1),
    op(149, "COPY_FREE_VARS", 0, AK::number, 0),
    op(151, "RESUME", 0, AK::number, 0),
    op(152, "MATCH_CLASS", 0, AK::number, -2),
    op(155, "FORMAT_VALUE", 0, AK::number, 0, T::format_spec),
    op(156, "BUILD_CONST_KEY_MAP", 0, AK::number, 0, T::minus_arg),
    op(157, "BUILD_STRING", 0, AK::number, +1, T::minus_arg),
    op(160, "LOAD_METHOD", 10, AK::name, +1),
    op(162, "LIST_EXTEND", 0, AK::number, -1),
    op(163, "SET_UPDATE", 0, AK::number, -1),
    op(164, "DICT_MERGE", 0, AK::number, -1),
    op(165, "DICT_UPDATE", 0, AK::number, -1),
    op(166, "PRECALL", 1, AK::number, 0, T::minus_arg),
    op(171, "CALL", 4, AK::number, -1),
    op(172, "KW_NAMES", 0, AK::constant, 0),
    jump(173, "POP_JUMP_BACKWARD_IF_NOT_NONE", JK::backward, true, -1, -1),
    jump(174, "POP_JUMP_BACKWARD_IF_NONE", JK::backward, true, -1, -1),
    jump(175, "POP_JUMP_BACKWARD_IF_FALSE", JK::backward, true, -1, -1),
    jump(176, "POP_JUMP_BACKWARD_IF_TRUE", JK::backward, true, -1, -1),
};

// Quickening's adaptive/specialized opcodes and the base opcode of each
// (dis.deoptmap); numbers from Include/opcode.h.
struct Specialization {
  uint8_t opcode;
  std::string_view name;
  uint8_t base;
};
constexpr Specialization kSpecializations[] = {
    {3, "BINARY_OP_ADAPTIVE", 122},
    {4, "BINARY_OP_ADD_FLOAT", 122},
    {5, "BINARY_OP_ADD_INT", 122},
    {6, "BINARY_OP_ADD_UNICODE", 122},
    {7, "BINARY_OP_INPLACE_ADD_UNICODE", 122},
    {8, "BINARY_OP_MULTIPLY_FLOAT", 122},
    {13, "BINARY_OP_MULTIPLY_INT", 122},
    {14, "BINARY_OP_SUBTRACT_FLOAT", 122},
    {16, "BINARY_OP_SUBTRACT_INT", 122},
    {17, "BINARY_SUBSCR_ADAPTIVE", 25},
    {18, "BINARY_SUBSCR_DICT", 25},
    {19, "BINARY_SUBSCR_GETITEM", 25},
    {20, "BINARY_SUBSCR_LIST_INT", 25},
    {21, "BINARY_SUBSCR_TUPLE_INT", 25},
    {22, "CALL_ADAPTIVE", 171},
    {23, "CALL_PY_EXACT_ARGS", 171},
    {24, "CALL_PY_WITH_DEFAULTS", 171},
    {26, "COMPARE_OP_ADAPTIVE", 107},
    {27, "COMPARE_OP_FLOAT_JUMP", 107},
    {28, "COMPARE_OP_INT_JUMP", 107},
    {29, "COMPARE_OP_STR_JUMP", 107},
    {34, "EXTENDED_ARG_QUICK", 144},
    {38, "JUMP_BACKWARD_QUICK", 140},
    {39, "LOAD_ATTR_ADAPTIVE", 106},
    {40, "LOAD_ATTR_INSTANCE_VALUE", 106},
    {41, "LOAD_ATTR_MODULE", 106},
    {42, "LOAD_ATTR_SLOT", 106},
    {43, "LOAD_ATTR_WITH_HINT", 106},
    {44, "LOAD_CONST__LOAD_FAST", 100},
    {45, "LOAD_FAST__LOAD_CONST", 124},
    {46, "LOAD_FAST__LOAD_FAST", 124},
    {47, "LOAD_GLOBAL_ADAPTIVE", 116},
    {48, "LOAD_GLOBAL_BUILTIN", 116},
    {55, "LOAD_GLOBAL_MODULE", 116},
    {56, "LOAD_METHOD_ADAPTIVE", 160},
    {57, "LOAD_METHOD_CLASS", 160},
    {58, "LOAD_METHOD_MODULE", 160},
    {59, "LOAD_METHOD_NO_DICT", 160},
    {62, "LOAD_METHOD_WITH_DICT", 160},
    {63, "LOAD_METHOD_WITH_VALUES", 160},
    {64, "PRECALL_ADAPTIVE", 166},
    {65, "PRECALL_BOUND_METHOD", 166},
    {66, "PRECALL_BUILTIN_CLASS", 166},
    {67, "PRECALL_BUILTIN_FAST_WITH_KEYWORDS", 166},
    {72, "PRECALL_METHOD_DESCRIPTOR_FAST_WITH_KEYWORDS", 166},
    {73, "PRECALL_NO_KW_BUILTIN_FAST", 166},
    {76, "PRECALL_NO_KW_BUILTIN_O", 166},
    {77, "PRECALL_NO_KW_ISINSTANCE", 166},
    {78, "PRECALL_NO_KW_LEN", 166},
    {79, "PRECALL_NO_KW_LIST_APPEND", 166},
    {80, "PRECALL_NO_KW_METHOD_DESCRIPTOR_FAST", 166},
    {81, "PRECALL_NO_KW_METHOD_DESCRIPTOR_NOARGS", 166},
    {113, "PRECALL_NO_KW_METHOD_DESCRIPTOR_O", 166},
    {121, "PRECALL_NO_KW_STR_1", 166},
    {127, "PRECALL_NO_KW_TUPLE_1", 166},
    {141, "PRECALL_NO_KW_TYPE_1", 166},
    {143, "PRECALL_PYFUNC", 166},
    {150, "RESUME_QUICK", 151},
    {153, "STORE_ATTR_ADAPTIVE", 95},
    {154, "STORE_ATTR_INSTANCE_VALUE", 95},
    {158, "STORE_ATTR_SLOT", 95},
    {159, "STORE_ATTR_WITH_HINT", 95},
    {161, "STORE_FAST__LOAD_FAST", 125},
    {167, "STORE_FAST__STORE_FAST", 125},
    {168, "STORE_SUBSCR_ADAPTIVE", 60},
    {169, "STORE_SUBSCR_DICT", 60},
    {170, "STORE_SUBSCR_LIST_INT", 60},
    {177, "UNPACK_SEQUENCE_ADAPTIVE", 92},
    {178, "UNPACK_SEQUENCE_LIST", 92},
    {179, "UNPACK_SEQUENCE_TUPLE", 92},
    {180, "UNPACK_SEQUENCE_TWO_TUPLE", 92},
};

constexpr std::string_view kCompareOps[] = {"<", "<=", "==", "!=", ">", ">="};
constexpr std::string_view kBinaryOps[] = {
    "+",  "&",  "//",  "<<",  "@",  "*",  "%",  "|",  "**",  ">>",  "-",  "/",  "^",
    "+=", "&=", "//=", "<<=", "@=", "*=", "%=", "|=", "**=", ">>=", "-=", "/=", "^="};

// Row index by opcode number (-1: no base opcode), and the base opcode of
// every number (-1: unused), built once.
struct Index {
  std::array<int16_t, 256> row;
  std::array<int16_t, 256> base;
  constexpr Index() : row(), base() {
    for (auto& r : row) r = -1;
    for (auto& b : base) b = -1;
    for (size_t i = 0; i < std::size(kOpcodes); ++i) {
      row[kOpcodes[i].opcode] = static_cast<int16_t>(i);
      base[kOpcodes[i].opcode] = kOpcodes[i].opcode;
    }
    for (const auto& s : kSpecializations) base[s.opcode] = s.base;
  }
};
constexpr Index kIndex;

int arg_term(ArgTerm term, int arg) {
  switch (term) {
    case T::none: return 0;
    case T::plus_arg: return arg;
    case T::minus_arg: return -arg;
    case T::minus_twice_arg: return -2 * arg;
    case T::unpack_ex: return (arg & 0xff) + (arg >> 8);
    case T::plus_low_bit: return arg & 1;
    case T::minus_low_bit: return -(arg & 1);
    case T::minus_flag_count: return -std::popcount(static_cast<unsigned>(arg & 0xf));
    case T::build_slice: return arg == 3 ? -1 : 0;
    case T::format_spec: return (arg & 4) ? -1 : 0;
  }
  assert(false && "unknown ArgTerm");
  return 0;
}

}  // namespace

std::span<const OpcodeInfo> all_opcodes() { return kOpcodes; }

const OpcodeInfo* opcode_info(int opcode) {
  if (opcode < 0 || opcode > 255 || kIndex.row[opcode] < 0) return nullptr;
  return &kOpcodes[kIndex.row[opcode]];
}

const OpcodeInfo& info(int opcode) {
  const OpcodeInfo* row = opcode_info(opcode);
  assert(row && "not a 3.11 base opcode");
  return *row;
}

std::string_view opcode_name(int opcode) {
  if (const OpcodeInfo* row = opcode_info(opcode)) return row->name;
  for (const auto& s : kSpecializations)
    if (s.opcode == opcode) return s.name;
  return {};
}

std::optional<int> opcode_by_name(std::string_view name) {
  for (const auto& row : kOpcodes)
    if (row.name == name) return row.opcode;
  return std::nullopt;
}

int deoptimize(int opcode) {
  if (opcode < 0 || opcode > 255) return -1;
  return kIndex.base[opcode];
}

int stack_effect(int opcode, int arg, bool jump) {
  const StackEffect& e = info(opcode).effect;
  return (jump ? e.on_jump : e.fallthrough) + arg_term(e.term, arg);
}

std::optional<int> flip_jump_direction(int opcode) {
  switch (opcode) {
    case 110: return 140;  // JUMP_FORWARD -> JUMP_BACKWARD
    case 140: return 110;
    case 134: return 110;  // JUMP_BACKWARD_NO_INTERRUPT -> JUMP_FORWARD
    case 114: return 175;  // POP_JUMP_FORWARD_IF_FALSE <-> POP_JUMP_BACKWARD_IF_FALSE
    case 175: return 114;
    case 115: return 176;  // ..._IF_TRUE
    case 176: return 115;
    case 128: return 173;  // ..._IF_NOT_NONE
    case 173: return 128;
    case 129: return 174;  // ..._IF_NONE
    case 174: return 129;
    default: return std::nullopt;
  }
}

std::span<const std::string_view> compare_op_names() { return kCompareOps; }
std::span<const std::string_view> binary_op_names() { return kBinaryOps; }

}  // namespace tj::bc
