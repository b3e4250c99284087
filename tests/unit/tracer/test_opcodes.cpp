// The opcode table (src/tracer/opcodes.cpp) against the running
// interpreter's `opcode` and `dis` modules: names, numbers, cache counts,
// argument kinds, jump kinds, stack effects for many arguments, and the
// specialized-to-base map.
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

}  // namespace
}  // namespace tj::bc
