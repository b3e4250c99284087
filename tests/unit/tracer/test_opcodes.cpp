// The opcode table (src/tracer/opcodes.cpp) against the running
// interpreter's `opcode` and `dis` modules: names, numbers, cache counts,
// argument kinds, jump kinds, stack effects for many arguments, the
// specialized-to-base map, the `Opcode` names, and the columns handlers read
// instead of opcode names (jump condition, call step, BINARY_OP's operand).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "py_test_util.h"
#include "tracer/opcodes.h"

namespace tj::bc {
namespace {

using testing::eval_long;
using testing::eval_python;
using testing::eval_str;
using testing::run_python;

PyRef dis_namespace() {
  return run_python(
      "import dis, opcode\n"
      "def effect(op, arg, jump):\n"
      "    try:\n"
      "        if op < opcode.HAVE_ARGUMENT:\n"
      "            return dis.stack_effect(op, jump=jump)\n"
      "        return dis.stack_effect(op, arg, jump=jump)\n"
      "    except ValueError:\n"
      "        return None\n");
}

bool in_list(PyObject* ns, const std::string& list, int op) {
  return eval_long(ns, std::to_string(op) + " in " + list) == 1;
}

TEST(Opcodes, TableCoversExactlyTheBaseOpcodes) {
  PyRef ns = dis_namespace();
  long count = eval_long(ns.get(), "len(opcode.opmap)");
  EXPECT_EQ(static_cast<long>(all_opcodes().size()), count);
  int previous = -1;
  for (const OpcodeInfo& row : all_opcodes()) {
    EXPECT_GT(row.opcode, previous) << "rows in numeric order";
    previous = row.opcode;
  }
}

TEST(Opcodes, RowsMatchOpcodeModule) {
  PyRef ns = dis_namespace();
  for (const OpcodeInfo& row : all_opcodes()) {
    SCOPED_TRACE(std::string(row.name));
    int op = row.opcode;
    std::string n = std::to_string(op);
    EXPECT_EQ(eval_str(ns.get(), "opcode.opname[" + n + "]"), row.name);
    EXPECT_EQ(eval_long(ns.get(), "opcode._inline_cache_entries[" + n + "]"), row.cache_entries);
    EXPECT_EQ(has_arg(op), op >= eval_long(ns.get(), "opcode.HAVE_ARGUMENT"));
    EXPECT_EQ(row.arg_kind == ArgKind::none, !has_arg(op));
    EXPECT_EQ(in_list(ns.get(), "dis.hasjrel", op),
              row.jump_kind == JumpKind::forward || row.jump_kind == JumpKind::backward);
    EXPECT_EQ(in_list(ns.get(), "dis.hasjabs", op), row.jump_kind == JumpKind::absolute);
    EXPECT_EQ(row.jump_kind == JumpKind::backward,
              std::string(row.name).find("BACKWARD") != std::string::npos);
    EXPECT_EQ(in_list(ns.get(), "dis.hasname", op),
              row.arg_kind == ArgKind::name || row.arg_kind == ArgKind::global_name);
    EXPECT_EQ(in_list(ns.get(), "dis.hasconst", op), row.arg_kind == ArgKind::constant);
    EXPECT_EQ(in_list(ns.get(), "dis.haslocal", op), row.arg_kind == ArgKind::local);
    EXPECT_EQ(in_list(ns.get(), "dis.hasfree", op), row.arg_kind == ArgKind::free);
    EXPECT_EQ(in_list(ns.get(), "dis.hascompare", op), row.arg_kind == ArgKind::compare);
    EXPECT_EQ(opcode_by_name(row.name), std::optional<int>(op));
    EXPECT_EQ(&info(op), &row);
  }
}

TEST(Opcodes, StackEffectsMatchDis) {
  PyRef ns = dis_namespace();
  const int args[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 255, 0x102, 0x301, 1000};
  int compared = 0;
  for (const OpcodeInfo& row : all_opcodes()) {
    for (int arg : args) {
      if (!has_arg(row.opcode) && arg != 0) continue;
      for (bool jump : {false, true}) {
        std::string call = "effect(" + std::to_string(row.opcode) + ", " + std::to_string(arg) +
                           ", " + (jump ? "True" : "False") + ")";
        PyRef expected = eval_python(ns.get(), call);
        if (!expected || expected.get() == Py_None) continue;  // dis has no effect for CACHE
        EXPECT_EQ(stack_effect(row.opcode, arg, jump), PyLong_AsLong(expected.get()))
            << row.name << " arg " << arg << " jump " << jump;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 1000);
}

TEST(Opcodes, SpecializedOpcodesDeoptimize) {
  PyRef ns = dis_namespace();
  int specialized = 0;
  for (int op = 0; op < 256; ++op) {
    std::string n = std::to_string(op);
    std::string name = eval_str(ns.get(), "dis._all_opname[" + n + "]");
    bool is_specialized = eval_long(ns.get(), "dis._all_opname[" + n + "] in dis.deoptmap") == 1;
    if (is_specialized) {
      ++specialized;
      EXPECT_EQ(opcode_name(op), name);
      EXPECT_EQ(deoptimize(op),
                eval_long(ns.get(), "dis.opmap[dis.deoptmap[dis._all_opname[" + n + "]]]"))
          << name;
      EXPECT_EQ(opcode_info(op), nullptr) << name;
    } else if (opcode_info(op)) {
      EXPECT_EQ(deoptimize(op), op);
    } else {
      EXPECT_EQ(deoptimize(op), -1) << name;
    }
  }
  EXPECT_EQ(specialized, eval_long(ns.get(), "len(dis.deoptmap)"));
}

TEST(Opcodes, OperatorNamesMatchDis) {
  PyRef ns = dis_namespace();
  ASSERT_EQ(static_cast<long>(compare_op_names().size()), eval_long(ns.get(), "len(dis.cmp_op)"));
  for (size_t i = 0; i < compare_op_names().size(); ++i)
    EXPECT_EQ(compare_op_names()[i], eval_str(ns.get(), "dis.cmp_op[" + std::to_string(i) + "]"));
  ASSERT_EQ(static_cast<long>(binary_op_names().size()), eval_long(ns.get(), "len(opcode._nb_ops)"));
  for (size_t i = 0; i < binary_op_names().size(); ++i)
    EXPECT_EQ(binary_op_names()[i],
              eval_str(ns.get(), "opcode._nb_ops[" + std::to_string(i) + "][1]"));
}

TEST(Opcodes, JumpFlipsAreInverseAndKeepTheCondition) {
  for (const OpcodeInfo& row : all_opcodes()) {
    std::optional<int> flipped = flip_jump_direction(row.opcode);
    if (!flipped) continue;
    const OpcodeInfo& other = info(*flipped);
    EXPECT_NE(other.jump_kind, row.jump_kind) << row.name;
    EXPECT_EQ(other.conditional, row.conditional) << row.name;
    EXPECT_EQ(other.effect.fallthrough, row.effect.fallthrough) << row.name;
    if (row.name != "JUMP_BACKWARD_NO_INTERRUPT") {
      EXPECT_EQ(flip_jump_direction(*flipped), std::optional<int>(row.opcode)) << row.name;
    }
  }
  EXPECT_FALSE(flip_jump_direction(*opcode_by_name("FOR_ITER")));
  EXPECT_FALSE(flip_jump_direction(*opcode_by_name("SEND")));
}

TEST(Opcodes, EnumNamesTheRows) {
  PyRef ns = dis_namespace();
  for (const OpcodeInfo& row : all_opcodes()) {
    EXPECT_EQ(static_cast<int>(row.code()), row.opcode);
    EXPECT_EQ(&info(row.code()), &row);
    EXPECT_EQ(eval_long(ns.get(), "opcode.opmap['" + std::string(row.name) + "']"), static_cast<int>(row.code()));
  }
  EXPECT_EQ(static_cast<int>(Opcode::PRECALL), eval_long(ns.get(), "opcode.opmap['PRECALL']"));
  EXPECT_EQ(static_cast<int>(Opcode::POP_JUMP_BACKWARD_IF_NOT_NONE),
            eval_long(ns.get(), "opcode.opmap['POP_JUMP_BACKWARD_IF_NOT_NONE']"));
}

// The condition column against the opcode names (the one place names are read).
TEST(Opcodes, JumpConditionsMatchTheNames) {
  int conditional = 0;
  for (const OpcodeInfo& row : all_opcodes()) {
    SCOPED_TRACE(std::string(row.name));
    const std::string_view n = row.name;
    JumpCondition expected = JumpCondition::none;
    if (n.ends_with("_IF_TRUE") || n == "JUMP_IF_TRUE_OR_POP") expected = JumpCondition::if_true;
    if (n.ends_with("_IF_FALSE") || n == "JUMP_IF_FALSE_OR_POP") expected = JumpCondition::if_false;
    if (n.ends_with("_IF_NONE")) expected = JumpCondition::if_none;
    if (n.ends_with("_IF_NOT_NONE")) expected = JumpCondition::if_not_none;
    if (n == "FOR_ITER") expected = JumpCondition::iterator_done;
    if (n == "SEND") expected = JumpCondition::send_done;
    EXPECT_EQ(row.condition, expected);
    EXPECT_EQ(row.condition != JumpCondition::none, row.conditional);
    if (row.conditional) ++conditional;
    // POP_JUMP_* pop the tested value on both edges, JUMP_IF_*_OR_POP keep it when jumping.
    if (n.starts_with("POP_JUMP_")) {
      EXPECT_EQ(row.effect.on_jump, row.effect.fallthrough);
    }
    if (n.starts_with("JUMP_IF_")) {
      EXPECT_EQ(row.effect.on_jump, row.effect.fallthrough + 1);
    }
  }
  EXPECT_EQ(conditional, 12);  // 8 POP_JUMP_*, 2 JUMP_IF_*_OR_POP, FOR_ITER, SEND
}

TEST(Opcodes, CallStepsAndOperands) {
  for (const OpcodeInfo& row : all_opcodes()) {
    SCOPED_TRACE(std::string(row.name));
    const std::string_view n = row.name;
    CallStep expected = n == "KW_NAMES"           ? CallStep::kw_names
                        : n == "PRECALL"          ? CallStep::precall
                        : n == "CALL"             ? CallStep::call
                        : n == "CALL_FUNCTION_EX" ? CallStep::call_function_ex
                                                  : CallStep::none;
    EXPECT_EQ(row.call_step, expected);
    EXPECT_EQ(row.arg_kind == ArgKind::binary_op, n == "BINARY_OP");
    EXPECT_EQ(is_prologue(row.code()), n == "RESUME" || n == "COPY_FREE_VARS" || n == "MAKE_CELL");
  }
}

}  // namespace
}  // namespace tj::bc
