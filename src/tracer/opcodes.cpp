// The 3.11 opcode table itself: one row per base opcode (numbers, names and
// cache counts as in CPython's Include/opcode.h and Lib/opcode.py; stack
// effects transcribed from Python/compile.c `stack_effect`), the
// specialized-to-base map of quickening, and the lookups over them.
// tests/unit/tracer/opcodes_test.cpp checks every row against `dis`.
#include "tracer/opcodes.h"

#include <array>
#include <bit>
#include <cassert>
#include <utility>

namespace tj::bc {
namespace {

using AK = ArgKind;
using JK = JumpKind;
using JC = JumpCondition;
using T = ArgTerm;
using C = CallStep;

// A row's opcode, named once: `Opcode::X, "X"`.
#define OP(name) Opcode::name, #name

// A non-jumping opcode.
constexpr OpcodeInfo op(Opcode num, std::string_view name, int caches, ArgKind kind, int effect,
                        ArgTerm term = T::none, bool terminates = false) {
  return OpcodeInfo{static_cast<uint8_t>(num), name, static_cast<uint8_t>(caches), kind, JK::none,
                    false, JC::none, terminates,
                    StackEffect{static_cast<int8_t>(effect), static_cast<int8_t>(effect), term}, C::none};
}

// A jump; `conditional` jumps (condition other than none) may also fall through.
constexpr OpcodeInfo jump(Opcode num, std::string_view name, JumpCondition condition, JumpKind dir,
                          bool conditional, int fallthrough, int on_jump) {
  return OpcodeInfo{static_cast<uint8_t>(num), name, 0, AK::jump, dir, conditional, condition, !conditional,
                    StackEffect{static_cast<int8_t>(fallthrough), static_cast<int8_t>(on_jump),
                                T::none}, C::none};
}

// A row that is a step of a call sequence.
constexpr OpcodeInfo call(OpcodeInfo row, CallStep step) {
  row.call_step = step;
  return row;
}

constexpr OpcodeInfo kOpcodes[] = {
    op(OP(CACHE), 0, AK::none, 0),
    op(OP(POP_TOP), 0, AK::none, -1),
    op(OP(PUSH_NULL), 0, AK::none, +1),
    op(OP(NOP), 0, AK::none, 0),
    op(OP(UNARY_POSITIVE), 0, AK::none, 0),
    op(OP(UNARY_NEGATIVE), 0, AK::none, 0),
    op(OP(UNARY_NOT), 0, AK::none, 0),
    op(OP(UNARY_INVERT), 0, AK::none, 0),
    op(OP(BINARY_SUBSCR), 4, AK::none, -1),
    op(OP(GET_LEN), 0, AK::none, +1),
    op(OP(MATCH_MAPPING), 0, AK::none, +1),
    op(OP(MATCH_SEQUENCE), 0, AK::none, +1),
    op(OP(MATCH_KEYS), 0, AK::none, +1),
    op(OP(PUSH_EXC_INFO), 0, AK::none, +1),
    op(OP(CHECK_EXC_MATCH), 0, AK::none, 0),
    op(OP(CHECK_EG_MATCH), 0, AK::none, 0),
    op(OP(WITH_EXCEPT_START), 0, AK::none, +1),
    op(OP(GET_AITER), 0, AK::none, 0),
    op(OP(GET_ANEXT), 0, AK::none, +1),
    op(OP(BEFORE_ASYNC_WITH), 0, AK::none, +1),
    op(OP(BEFORE_WITH), 0, AK::none, +1),
    op(OP(END_ASYNC_FOR), 0, AK::none, -2),
    op(OP(STORE_SUBSCR), 1, AK::none, -3),
    op(OP(DELETE_SUBSCR), 0, AK::none, -2),
    op(OP(GET_ITER), 0, AK::none, 0),
    op(OP(GET_YIELD_FROM_ITER), 0, AK::none, 0),
    op(OP(PRINT_EXPR), 0, AK::none, -1),
    op(OP(LOAD_BUILD_CLASS), 0, AK::none, +1),
    op(OP(LOAD_ASSERTION_ERROR), 0, AK::none, +1),
    op(OP(RETURN_GENERATOR), 0, AK::none, 0),
    op(OP(LIST_TO_TUPLE), 0, AK::none, 0),
    op(OP(RETURN_VALUE), 0, AK::none, -1, T::none, /*terminates=*/true),
    op(OP(IMPORT_STAR), 0, AK::none, -1),
    op(OP(SETUP_ANNOTATIONS), 0, AK::none, 0),
    op(OP(YIELD_VALUE), 0, AK::none, 0),
    op(OP(ASYNC_GEN_WRAP), 0, AK::none, 0),
    op(OP(PREP_RERAISE_STAR), 0, AK::none, -1),
    op(OP(POP_EXCEPT), 0, AK::none, -1),
    op(OP(STORE_NAME), 0, AK::name, -1),
    op(OP(DELETE_NAME), 0, AK::name, 0),
    op(OP(UNPACK_SEQUENCE), 1, AK::number, -1, T::plus_arg),
    jump(OP(FOR_ITER), JC::iterator_done, JK::forward, true, +1, -1),
    op(OP(UNPACK_EX), 0, AK::number, 0, T::unpack_ex),
    op(OP(STORE_ATTR), 4, AK::name, -2),
    op(OP(DELETE_ATTR), 0, AK::name, -1),
    op(OP(STORE_GLOBAL), 0, AK::name, -1),
    op(OP(DELETE_GLOBAL), 0, AK::name, 0),
    op(OP(SWAP), 0, AK::number, 0),
    op(OP(LOAD_CONST), 0, AK::constant, +1),
    op(OP(LOAD_NAME), 0, AK::name, +1),
    op(OP(BUILD_TUPLE), 0, AK::number, +1, T::minus_arg),
    op(OP(BUILD_LIST), 0, AK::number, +1, T::minus_arg),
    op(OP(BUILD_SET), 0, AK::number, +1, T::minus_arg),
    op(OP(BUILD_MAP), 0, AK::number, +1, T::minus_twice_arg),
    op(OP(LOAD_ATTR), 4, AK::name, 0),
    op(OP(COMPARE_OP), 2, AK::compare, -1),
    op(OP(IMPORT_NAME), 0, AK::name, -1),
    op(OP(IMPORT_FROM), 0, AK::name, +1),
    jump(OP(JUMP_FORWARD), JC::none, JK::forward, false, 0, 0),
    jump(OP(JUMP_IF_FALSE_OR_POP), JC::if_false, JK::forward, true, -1, 0),
    jump(OP(JUMP_IF_TRUE_OR_POP), JC::if_true, JK::forward, true, -1, 0),
    jump(OP(POP_JUMP_FORWARD_IF_FALSE), JC::if_false, JK::forward, true, -1, -1),
    jump(OP(POP_JUMP_FORWARD_IF_TRUE), JC::if_true, JK::forward, true, -1, -1),
    op(OP(LOAD_GLOBAL), 5, AK::global_name, +1, T::plus_low_bit),
    op(OP(IS_OP), 0, AK::number, -1),
    op(OP(CONTAINS_OP), 0, AK::number, -1),
    op(OP(RERAISE), 0, AK::number, -1, T::none, /*terminates=*/true),
    op(OP(COPY), 0, AK::number, +1),
    op(OP(BINARY_OP), 1, AK::binary_op, -1),
    jump(OP(SEND), JC::send_done, JK::forward, true, 0, -1),
    op(OP(LOAD_FAST), 0, AK::local, +1),
    op(OP(STORE_FAST), 0, AK::local, -1),
    op(OP(DELETE_FAST), 0, AK::local, 0),
    jump(OP(POP_JUMP_FORWARD_IF_NOT_NONE), JC::if_not_none, JK::forward, true, -1, -1),
    jump(OP(POP_JUMP_FORWARD_IF_NONE), JC::if_none, JK::forward, true, -1, -1),
    op(OP(RAISE_VARARGS), 0, AK::number, 0, T::minus_arg, /*terminates=*/true),
    op(OP(GET_AWAITABLE), 0, AK::number, 0),
    op(OP(MAKE_FUNCTION), 0, AK::number, 0, T::minus_flag_count),
    op(OP(BUILD_SLICE), 0, AK::number, -1, T::build_slice),
    jump(OP(JUMP_BACKWARD_NO_INTERRUPT), JC::none, JK::backward, false, 0, 0),
    op(OP(MAKE_CELL), 0, AK::free, 0),
    op(OP(LOAD_CLOSURE), 0, AK::free, +1),
    op(OP(LOAD_DEREF), 0, AK::free, +1),
    op(OP(STORE_DEREF), 0, AK::free, -1),
    op(OP(DELETE_DEREF), 0, AK::free, 0),
    jump(OP(JUMP_BACKWARD), JC::none, JK::backward, false, 0, 0),
    call(op(OP(CALL_FUNCTION_EX), 0, AK::number, -2, T::minus_low_bit), C::call_function_ex),
    op(OP(EXTENDED_ARG), 0, AK::number, 0),
    op(OP(LIST_APPEND), 0, AK::number, -1),
    op(OP(SET_ADD), 0, AK::number, -1),
    op(OP(MAP_ADD), 0, AK::number, -2),
    op(OP(LOAD_CLASSDEREF), 0, AK::free, +1),
    op(OP(COPY_FREE_VARS), 0, AK::number, 0),
    op(OP(RESUME), 0, AK::number, 0),
    op(OP(MATCH_CLASS), 0, AK::number, -2),
    op(OP(FORMAT_VALUE), 0, AK::number, 0, T::format_spec),
    op(OP(BUILD_CONST_KEY_MAP), 0, AK::number, 0, T::minus_arg),
    op(OP(BUILD_STRING), 0, AK::number, +1, T::minus_arg),
    op(OP(LOAD_METHOD), 10, AK::name, +1),
    op(OP(LIST_EXTEND), 0, AK::number, -1),
    op(OP(SET_UPDATE), 0, AK::number, -1),
    op(OP(DICT_MERGE), 0, AK::number, -1),
    op(OP(DICT_UPDATE), 0, AK::number, -1),
    call(op(OP(PRECALL), 1, AK::number, 0, T::minus_arg), C::precall),
    call(op(OP(CALL), 4, AK::number, -1), C::call),
    call(op(OP(KW_NAMES), 0, AK::constant, 0), C::kw_names),
    jump(OP(POP_JUMP_BACKWARD_IF_NOT_NONE), JC::if_not_none, JK::backward, true, -1, -1),
    jump(OP(POP_JUMP_BACKWARD_IF_NONE), JC::if_none, JK::backward, true, -1, -1),
    jump(OP(POP_JUMP_BACKWARD_IF_FALSE), JC::if_false, JK::backward, true, -1, -1),
    jump(OP(POP_JUMP_BACKWARD_IF_TRUE), JC::if_true, JK::backward, true, -1, -1),
};

// Quickening's adaptive/specialized opcodes and the base opcode of each
// (dis.deoptmap); numbers from Include/opcode.h.
struct Specialization {
  uint8_t opcode;
  std::string_view name;
  Opcode base;
};
constexpr Specialization kSpecializations[] = {
    {3, "BINARY_OP_ADAPTIVE", Opcode::BINARY_OP},
    {4, "BINARY_OP_ADD_FLOAT", Opcode::BINARY_OP},
    {5, "BINARY_OP_ADD_INT", Opcode::BINARY_OP},
    {6, "BINARY_OP_ADD_UNICODE", Opcode::BINARY_OP},
    {7, "BINARY_OP_INPLACE_ADD_UNICODE", Opcode::BINARY_OP},
    {8, "BINARY_OP_MULTIPLY_FLOAT", Opcode::BINARY_OP},
    {13, "BINARY_OP_MULTIPLY_INT", Opcode::BINARY_OP},
    {14, "BINARY_OP_SUBTRACT_FLOAT", Opcode::BINARY_OP},
    {16, "BINARY_OP_SUBTRACT_INT", Opcode::BINARY_OP},
    {17, "BINARY_SUBSCR_ADAPTIVE", Opcode::BINARY_SUBSCR},
    {18, "BINARY_SUBSCR_DICT", Opcode::BINARY_SUBSCR},
    {19, "BINARY_SUBSCR_GETITEM", Opcode::BINARY_SUBSCR},
    {20, "BINARY_SUBSCR_LIST_INT", Opcode::BINARY_SUBSCR},
    {21, "BINARY_SUBSCR_TUPLE_INT", Opcode::BINARY_SUBSCR},
    {22, "CALL_ADAPTIVE", Opcode::CALL},
    {23, "CALL_PY_EXACT_ARGS", Opcode::CALL},
    {24, "CALL_PY_WITH_DEFAULTS", Opcode::CALL},
    {26, "COMPARE_OP_ADAPTIVE", Opcode::COMPARE_OP},
    {27, "COMPARE_OP_FLOAT_JUMP", Opcode::COMPARE_OP},
    {28, "COMPARE_OP_INT_JUMP", Opcode::COMPARE_OP},
    {29, "COMPARE_OP_STR_JUMP", Opcode::COMPARE_OP},
    {34, "EXTENDED_ARG_QUICK", Opcode::EXTENDED_ARG},
    {38, "JUMP_BACKWARD_QUICK", Opcode::JUMP_BACKWARD},
    {39, "LOAD_ATTR_ADAPTIVE", Opcode::LOAD_ATTR},
    {40, "LOAD_ATTR_INSTANCE_VALUE", Opcode::LOAD_ATTR},
    {41, "LOAD_ATTR_MODULE", Opcode::LOAD_ATTR},
    {42, "LOAD_ATTR_SLOT", Opcode::LOAD_ATTR},
    {43, "LOAD_ATTR_WITH_HINT", Opcode::LOAD_ATTR},
    {44, "LOAD_CONST__LOAD_FAST", Opcode::LOAD_CONST},
    {45, "LOAD_FAST__LOAD_CONST", Opcode::LOAD_FAST},
    {46, "LOAD_FAST__LOAD_FAST", Opcode::LOAD_FAST},
    {47, "LOAD_GLOBAL_ADAPTIVE", Opcode::LOAD_GLOBAL},
    {48, "LOAD_GLOBAL_BUILTIN", Opcode::LOAD_GLOBAL},
    {55, "LOAD_GLOBAL_MODULE", Opcode::LOAD_GLOBAL},
    {56, "LOAD_METHOD_ADAPTIVE", Opcode::LOAD_METHOD},
    {57, "LOAD_METHOD_CLASS", Opcode::LOAD_METHOD},
    {58, "LOAD_METHOD_MODULE", Opcode::LOAD_METHOD},
    {59, "LOAD_METHOD_NO_DICT", Opcode::LOAD_METHOD},
    {62, "LOAD_METHOD_WITH_DICT", Opcode::LOAD_METHOD},
    {63, "LOAD_METHOD_WITH_VALUES", Opcode::LOAD_METHOD},
    {64, "PRECALL_ADAPTIVE", Opcode::PRECALL},
    {65, "PRECALL_BOUND_METHOD", Opcode::PRECALL},
    {66, "PRECALL_BUILTIN_CLASS", Opcode::PRECALL},
    {67, "PRECALL_BUILTIN_FAST_WITH_KEYWORDS", Opcode::PRECALL},
    {72, "PRECALL_METHOD_DESCRIPTOR_FAST_WITH_KEYWORDS", Opcode::PRECALL},
    {73, "PRECALL_NO_KW_BUILTIN_FAST", Opcode::PRECALL},
    {76, "PRECALL_NO_KW_BUILTIN_O", Opcode::PRECALL},
    {77, "PRECALL_NO_KW_ISINSTANCE", Opcode::PRECALL},
    {78, "PRECALL_NO_KW_LEN", Opcode::PRECALL},
    {79, "PRECALL_NO_KW_LIST_APPEND", Opcode::PRECALL},
    {80, "PRECALL_NO_KW_METHOD_DESCRIPTOR_FAST", Opcode::PRECALL},
    {81, "PRECALL_NO_KW_METHOD_DESCRIPTOR_NOARGS", Opcode::PRECALL},
    {113, "PRECALL_NO_KW_METHOD_DESCRIPTOR_O", Opcode::PRECALL},
    {121, "PRECALL_NO_KW_STR_1", Opcode::PRECALL},
    {127, "PRECALL_NO_KW_TUPLE_1", Opcode::PRECALL},
    {141, "PRECALL_NO_KW_TYPE_1", Opcode::PRECALL},
    {143, "PRECALL_PYFUNC", Opcode::PRECALL},
    {150, "RESUME_QUICK", Opcode::RESUME},
    {153, "STORE_ATTR_ADAPTIVE", Opcode::STORE_ATTR},
    {154, "STORE_ATTR_INSTANCE_VALUE", Opcode::STORE_ATTR},
    {158, "STORE_ATTR_SLOT", Opcode::STORE_ATTR},
    {159, "STORE_ATTR_WITH_HINT", Opcode::STORE_ATTR},
    {161, "STORE_FAST__LOAD_FAST", Opcode::STORE_FAST},
    {167, "STORE_FAST__STORE_FAST", Opcode::STORE_FAST},
    {168, "STORE_SUBSCR_ADAPTIVE", Opcode::STORE_SUBSCR},
    {169, "STORE_SUBSCR_DICT", Opcode::STORE_SUBSCR},
    {170, "STORE_SUBSCR_LIST_INT", Opcode::STORE_SUBSCR},
    {177, "UNPACK_SEQUENCE_ADAPTIVE", Opcode::UNPACK_SEQUENCE},
    {178, "UNPACK_SEQUENCE_LIST", Opcode::UNPACK_SEQUENCE},
    {179, "UNPACK_SEQUENCE_TUPLE", Opcode::UNPACK_SEQUENCE},
    {180, "UNPACK_SEQUENCE_TWO_TUPLE", Opcode::UNPACK_SEQUENCE},
};

#undef OP

constexpr std::string_view kCompareOps[] = {"<", "<=", "==", "!=", ">", ">="};

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
    for (const auto& s : kSpecializations) base[s.opcode] = static_cast<int16_t>(s.base);
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
  using O = Opcode;
  // Each jump that exists in both directions, forward first.
  static constexpr std::pair<Opcode, Opcode> kPairs[] = {
      {O::JUMP_FORWARD, O::JUMP_BACKWARD},
      {O::POP_JUMP_FORWARD_IF_FALSE, O::POP_JUMP_BACKWARD_IF_FALSE},
      {O::POP_JUMP_FORWARD_IF_TRUE, O::POP_JUMP_BACKWARD_IF_TRUE},
      {O::POP_JUMP_FORWARD_IF_NOT_NONE, O::POP_JUMP_BACKWARD_IF_NOT_NONE},
      {O::POP_JUMP_FORWARD_IF_NONE, O::POP_JUMP_BACKWARD_IF_NONE},
  };
  if (opcode == static_cast<int>(O::JUMP_BACKWARD_NO_INTERRUPT)) return static_cast<int>(O::JUMP_FORWARD);
  for (const auto& [forward, backward] : kPairs) {
    if (opcode == static_cast<int>(forward)) return static_cast<int>(backward);
    if (opcode == static_cast<int>(backward)) return static_cast<int>(forward);
  }
  return std::nullopt;
}

std::span<const std::string_view> compare_op_names() { return kCompareOps; }

}  // namespace tj::bc
