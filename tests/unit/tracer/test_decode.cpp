// decode() of small functions: the printed instruction list (golden text),
// resolved operands of each 3.11 family (LOAD_GLOBAL's NULL bit, KW_NAMES,
// COMPARE_OP, cells and free variables), jump targets, lines, and
// exception handlers with depth and lasti.
#include <gtest/gtest.h>

#include "py_test_util.h"
#include "tracer/bytecode.h"

namespace tj::bc {
namespace {

using testing::as_code;
using testing::function_code;

DecodedCode decode_function(const std::string& source, const std::string& name) {
  PyRef code = function_code(source, name);
  EXPECT_TRUE(code);
  Expected<DecodedCode> decoded = decode(as_code(code));
  EXPECT_TRUE(decoded.ok()) << (decoded.ok() ? "" : decoded.error().message);
  return std::move(decoded.value());
}

const Instruction* find(const DecodedCode& dc, std::string_view name, int nth = 0) {
  for (const auto& inst : dc.instructions)
    if (inst->name() == name && nth-- == 0) return inst.get();
  return nullptr;
}

TEST(Decode, OffsetsLinesAndJumpTargets) {
  DecodedCode dc = decode_function(
      "def f(a, b):\n"
      "    if a < b:\n"
      "        return len(a)\n"
      "    return b\n",
      "f");
  // Offsets skip CACHE units: LOAD_GLOBAL has 5, PRECALL 1, CALL 4.
  const Instruction* load_global = find(dc, "LOAD_GLOBAL");
  ASSERT_TRUE(load_global);
  const Instruction* after = find(dc, "LOAD_FAST", 2);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->offset, load_global->offset + 2 * (1 + 5));
  EXPECT_EQ(load_global->arg & 1, 1) << "LOAD_GLOBAL for a call pushes NULL";
  // The conditional jump goes to `return b`, which starts line 4.
  const Instruction* jump = find(dc, "POP_JUMP_FORWARD_IF_FALSE");
  ASSERT_TRUE(jump && jump->target);
  EXPECT_EQ(jump->target->name(), "LOAD_FAST");
  EXPECT_EQ(std::string(PyUnicode_AsUTF8(jump->target->argval.get())), "b");
  EXPECT_TRUE(jump->target->is_jump_target);
  EXPECT_TRUE(jump->target->starts_line);
  EXPECT_EQ(jump->target->line(), 4);
  EXPECT_EQ(find(dc, "RESUME")->line(), 1);
  EXPECT_EQ(load_global->line(), 3);
  EXPECT_TRUE(load_global->starts_line) << "line 3 starts with `len`";
  EXPECT_FALSE(find(dc, "LOAD_FAST", 2)->starts_line);
  EXPECT_EQ(find(dc, "COMPARE_OP")->arg, 0);
}

TEST(Decode, GoldenListing) {
  DecodedCode dc = decode_function(
      "def f(a, b):\n"
      "    if a < b:\n"
      "        return len(a)\n"
      "    return b\n",
      "f");
  EXPECT_EQ(format_instructions(dc.instructions),
            "0: RESUME 0\n"
            "1: LOAD_FAST 'a'\n"
            "2: LOAD_FAST 'b'\n"
            "3: COMPARE_OP '<'\n"
            "4: POP_JUMP_FORWARD_IF_FALSE -> 10\n"
            "5: LOAD_GLOBAL 'len' (+NULL)\n"
            "6: LOAD_FAST 'a'\n"
            "7: PRECALL 1\n"
            "8: CALL 1\n"
            "9: RETURN_VALUE\n"
            "10: LOAD_FAST 'b'\n"
            "11: RETURN_VALUE\n");
}

TEST(Decode, KeywordNamesConstantsAndCells) {
  DecodedCode dc = decode_function(
      "def f(x):\n"
      "    y = 3\n"
      "    def g():\n"
      "        return x + y\n"
      "    return sorted([y], key=g, reverse=True)\n",
      "f");
  // x is an argument and a cell (one localsplus slot); y a cell only.
  const Instruction* make_cell_x = find(dc, "MAKE_CELL", 0);
  const Instruction* make_cell_y = find(dc, "MAKE_CELL", 1);
  ASSERT_TRUE(make_cell_x && make_cell_y);
  EXPECT_EQ(std::string(PyUnicode_AsUTF8(make_cell_x->argval.get())), "x");
  EXPECT_EQ(make_cell_x->arg, 0);
  EXPECT_EQ(std::string(PyUnicode_AsUTF8(make_cell_y->argval.get())), "y");
  const Instruction* kw = find(dc, "KW_NAMES");
  ASSERT_TRUE(kw && kw->argval);
  ASSERT_TRUE(PyTuple_Check(kw->argval.get()));
  EXPECT_EQ(PyTuple_GET_SIZE(kw->argval.get()), 2);
  const Instruction* store_deref = find(dc, "STORE_DEREF");
  ASSERT_TRUE(store_deref);
  EXPECT_EQ(std::string(PyUnicode_AsUTF8(store_deref->argval.get())), "y");
  const Instruction* load_const = find(dc, "LOAD_CONST");
  ASSERT_TRUE(load_const);
  EXPECT_EQ(PyLong_AsLong(load_const->argval.get()), 3);
}

TEST(Decode, FreeVariablesOfAClosure) {
  PyRef ns = testing::run_python(
      "def f(x):\n"
      "    def g(k):\n"
      "        return x + k\n"
      "    return g\n"
      "g = f(1)\n");
  PyRef code = testing::eval_python(ns.get(), "g.__code__");
  Expected<DecodedCode> dc = decode(as_code(code));
  ASSERT_TRUE(dc.ok());
  EXPECT_EQ(dc->instructions[0]->name(), "COPY_FREE_VARS");
  const Instruction* load_deref = find(*dc, "LOAD_DEREF");
  ASSERT_TRUE(load_deref);
  EXPECT_EQ(load_deref->arg, 1) << "after the one fast local k";
  EXPECT_EQ(std::string(PyUnicode_AsUTF8(load_deref->argval.get())), "x");
}

TEST(Decode, ExceptionHandlersWithDepthAndLasti) {
  DecodedCode dc = decode_function(
      "def f(a):\n"
      "    try:\n"
      "        a = 1 / a\n"
      "    except ZeroDivisionError:\n"
      "        a = 0\n"
      "    return a\n",
      "f");
  const Instruction* divide = find(dc, "BINARY_OP");
  ASSERT_TRUE(divide && divide->handler);
  const Instruction* handler = divide->handler->target;
  EXPECT_EQ(handler->name(), "PUSH_EXC_INFO");
  EXPECT_TRUE(handler->is_handler);
  EXPECT_FALSE(handler->is_jump_target);
  EXPECT_EQ(divide->handler->depth, 0);
  EXPECT_FALSE(divide->handler->lasti);
  // The except block is itself covered by the cleanup handler (lasti, depth 1).
  ASSERT_TRUE(handler->handler);
  EXPECT_TRUE(handler->handler->lasti);
  EXPECT_EQ(handler->handler->depth, 1);
  EXPECT_EQ(handler->handler->target->name(), "COPY");

  std::vector<ExceptionTableEntry> table = exception_table(dc.instructions);
  ASSERT_GE(table.size(), 2u);
  EXPECT_EQ(table[0].handler.target, handler);
  EXPECT_FALSE(find(dc, "RESUME")->handler) << "the prologue is outside the try";
}

TEST(Decode, ExtendedArgIsFolded) {
  std::string source = "def f():\n    return [";
  for (int i = 0; i < 300; ++i) source += std::to_string(i * 7 + 1000) + ".5, ";
  source += "]\n";
  // 300 distinct float constants: the last LOAD_CONST needs an EXTENDED_ARG.
  source += "def g(x):\n    return (";
  for (int i = 0; i < 300; ++i) source += "x + " + std::to_string(i) + ".25, ";
  source += ")\n";
  DecodedCode dc = decode_function(source, "g");
  int folded = 0;
  for (size_t i = 0; i + 1 < dc.instructions.size(); ++i) {
    const Instruction& inst = *dc.instructions[i];
    EXPECT_NE(inst.opcode, kExtendedArg);
    EXPECT_NE(inst.opcode, kCache);
    if (inst.name() == "LOAD_CONST" && inst.arg >= 256) {
      ++folded;  // one EXTENDED_ARG prefix + the opcode unit
      EXPECT_EQ(dc.instructions[i + 1]->offset, inst.offset + 4);
      EXPECT_EQ(PyFloat_AsDouble(inst.argval.get()),
                PyFloat_AsDouble(PyTuple_GET_ITEM(
                    reinterpret_cast<PyCodeObject*>(dc.code.get())->co_consts, inst.arg)));
    }
  }
  EXPECT_GT(folded, 0);
}

TEST(Decode, InsertAndRetarget) {
  DecodedCode dc = decode_function(
      "def f(a):\n"
      "    while a:\n"
      "        a -= 1\n"
      "    return a\n",
      "f");
  size_t before = dc.instructions.size();
  Instruction* head = nullptr;
  for (const auto& inst : dc.instructions)
    if (inst->is_jump_target) head = inst.get();
  ASSERT_TRUE(head);
  int at = dc.index_of(head);
  Instruction* nop = dc.insert(static_cast<size_t>(at), Instruction::make(*opcode_by_name("NOP")));
  dc.retarget(head, nop);
  EXPECT_EQ(dc.instructions.size(), before + 1);
  EXPECT_EQ(dc.index_of(nop), at);
  EXPECT_EQ(nop->offset, -1);
  for (const auto& inst : dc.instructions) EXPECT_NE(inst->target, head);
}

}  // namespace
}  // namespace tj::bc
