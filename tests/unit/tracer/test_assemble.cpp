// assemble() of hand-built instruction lists, run in the embedded
// interpreter: straight-line code, loops written with the "wrong" jump
// direction, jumps long enough for EXTENDED_ARG, new locals beside cells,
// constant deduplication, exception handlers; and compute_stack_depth() on
// hand-built code (branches, handlers with lasti, generators, errors).
#include <gtest/gtest.h>

#include "py_test_util.h"
#include "tracer/assemble.h"

namespace tj::bc {
namespace {

using testing::as_code;
using testing::eval_long;
using testing::eval_python;
using testing::function_code;
using testing::run_python;

int op(const char* name) {
  std::optional<int> code = opcode_by_name(name);
  EXPECT_TRUE(code) << name;
  return code.value_or(0);
}

PyRef str(const char* s) { return PyRef::steal(PyUnicode_FromString(s)); }
PyRef num(long v) { return PyRef::steal(PyLong_FromLong(v)); }

// Appends a new instruction and returns it (borrowed).
Instruction* add(InstructionList& list, const char* name, int arg = 0, PyRef argval = {}) {
  list.push_back(Instruction::make(op(name), arg, std::move(argval)));
  return list.back().get();
}
Instruction* add_jump(InstructionList& list, const char* name, Instruction* target = nullptr) {
  list.push_back(Instruction::make(op(name)));
  list.back()->target = target;
  return list.back().get();
}

// Calls a function made from `code` with `args` (a Python expression list).
long call(const PyRef& code, const std::string& args) {
  PyRef ns = run_python("import types\n");
  PyDict_SetItemString(ns.get(), "code", code.get());
  return eval_long(ns.get(), "types.FunctionType(code, globals())(" + args + ")");
}

PyRef assemble_ok(const InstructionList& list, const PyRef& tmpl) {
  Expected<PyRef> code = assemble(list, as_code(tmpl));
  EXPECT_TRUE(code.ok()) << (code.ok() ? "" : code.error().message);
  return code.ok() ? *code : PyRef();
}

long attr(const PyRef& code, const char* name) {
  PyRef v = PyRef::steal(PyObject_GetAttrString(code.get(), name));
  return v ? PyLong_AsLong(v.get()) : -1;
}

TEST(Assemble, StraightLineCode) {
  PyRef tmpl = function_code("def f(x):\n    return x\n", "f");
  InstructionList list;
  add(list, "RESUME");
  add(list, "LOAD_FAST", 0, str("x"));
  add(list, "LOAD_CONST", 0, num(1));  // not in co_consts yet: appended
  add(list, "BINARY_OP", 0);           // +
  add(list, "RETURN_VALUE");
  PyRef code = assemble_ok(list, tmpl);
  ASSERT_TRUE(code);
  EXPECT_EQ(call(code, "41"), 42);
  EXPECT_EQ(attr(code, "co_stacksize"), 2);
}

TEST(Assemble, LoopWithFlippedJumpsAndNewLocal) {
  // total = 0; while x: total += x; x -= 1; return total
  PyRef tmpl = function_code("def f(x):\n    return x\n", "f");
  InstructionList list;
  add(list, "RESUME");
  add(list, "LOAD_CONST", 0, num(0));
  add(list, "STORE_FAST", 0, str("total"));
  Instruction* head = add(list, "LOAD_FAST", 0, str("x"));
  Instruction* exit_jump = add_jump(list, "POP_JUMP_BACKWARD_IF_FALSE");  // really forward
  add(list, "LOAD_FAST", 0, str("total"));
  add(list, "LOAD_FAST", 0, str("x"));
  add(list, "BINARY_OP", 13);  // +=
  add(list, "STORE_FAST", 0, str("total"));
  add(list, "LOAD_FAST", 0, str("x"));
  add(list, "LOAD_CONST", 0, num(1));
  add(list, "BINARY_OP", 23);  // -=
  add(list, "STORE_FAST", 0, str("x"));
  add_jump(list, "JUMP_FORWARD", head);  // really backward
  exit_jump->target = add(list, "LOAD_FAST", 0, str("total"));
  add(list, "RETURN_VALUE");
  PyRef code = assemble_ok(list, tmpl);
  ASSERT_TRUE(code);
  EXPECT_EQ(call(code, "10"), 55);
  EXPECT_EQ(attr(code, "co_nlocals"), 2);
  Expected<DecodedCode> back = decode(as_code(code));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->instructions[4]->name(), "POP_JUMP_FORWARD_IF_FALSE");
  EXPECT_EQ(back->instructions[13]->name(), "JUMP_BACKWARD");
  EXPECT_EQ(back->instructions[13]->target, back->instructions[3].get());
}

TEST(Assemble, LongJumpsGetExtendedArg) {
  PyRef tmpl = function_code("def f(x):\n    return x\n", "f");
  InstructionList list;
  add(list, "RESUME");
  add(list, "LOAD_FAST", 0, str("x"));
  Instruction* skip = add_jump(list, "POP_JUMP_FORWARD_IF_TRUE");
  for (int i = 0; i < 600; ++i) add(list, "NOP");
  add(list, "LOAD_CONST", 0, num(7));
  add(list, "RETURN_VALUE");
  skip->target = add(list, "LOAD_CONST", 0, num(8));
  add(list, "RETURN_VALUE");
  PyRef code = assemble_ok(list, tmpl);
  ASSERT_TRUE(code);
  EXPECT_EQ(call(code, "0"), 7);
  EXPECT_EQ(call(code, "1"), 8);
  PyRef co_code = PyRef::steal(PyObject_GetAttrString(code.get(), "co_code"));
  const auto* bytes = reinterpret_cast<const uint8_t*>(PyBytes_AS_STRING(co_code.get()));
  EXPECT_EQ(bytes[4], kExtendedArg) << "the jump after RESUME, LOAD_FAST has a prefix";
  EXPECT_EQ(bytes[5], 602 >> 8);
  EXPECT_EQ(bytes[7], 602 & 0xff);
}

TEST(Assemble, NewLocalsShiftCellIndices) {
  PyRef tmpl = function_code(
      "def f(a):\n"
      "    c = a\n"
      "    def g():\n"
      "        return c\n"
      "    return g\n",
      "f");
  InstructionList list;
  add(list, "MAKE_CELL", 0, str("c"));
  add(list, "RESUME");
  add(list, "LOAD_FAST", 0, str("a"));
  add(list, "STORE_FAST", 0, str("tmp"));  // new local after a, g: c moves from slot 2 to 3
  add(list, "LOAD_FAST", 0, str("tmp"));
  add(list, "STORE_DEREF", 0, str("c"));
  add(list, "LOAD_DEREF", 0, str("c"));
  add(list, "RETURN_VALUE");
  PyRef code = assemble_ok(list, tmpl);
  ASSERT_TRUE(code);
  EXPECT_EQ(call(code, "5"), 5);
  Expected<DecodedCode> back = decode(as_code(code));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->instructions[0]->arg, 3);
  EXPECT_EQ(back->instructions[5]->arg, 3);
}

TEST(Assemble, ConstantsAreDeduplicatedByTypeAndValue) {
  PyRef tmpl = function_code("def f():\n    return (1, 1.0, -0.0)\n", "f");
  InstructionList list;
  add(list, "RESUME");
  add(list, "LOAD_CONST", 0, num(2));
  add(list, "LOAD_CONST", 0, num(2));  // a second equal int object: same index
  add(list, "LOAD_CONST", 0, PyRef::steal(PyFloat_FromDouble(2.0)));
  add(list, "LOAD_CONST", 0, PyRef::steal(PyFloat_FromDouble(0.0)));
  add(list, "BUILD_TUPLE", 4);
  add(list, "RETURN_VALUE");
  PyRef code = assemble_ok(list, tmpl);
  ASSERT_TRUE(code);
  PyRef consts = PyRef::steal(PyObject_GetAttrString(code.get(), "co_consts"));
  Py_ssize_t original = PyTuple_GET_SIZE(as_code(tmpl)->co_consts);
  EXPECT_EQ(PyTuple_GET_SIZE(consts.get()), original + 3) << "2, 2.0 and 0.0 (not -0.0) added";
}

TEST(Assemble, HandBuiltExceptionHandler) {
  // try: return 1 / 0  except: return -1
  PyRef tmpl = function_code("def f():\n    pass\n", "f");
  InstructionList list;
  add(list, "RESUME");
  Instruction* one = add(list, "LOAD_CONST", 0, num(1));
  Instruction* zero = add(list, "LOAD_CONST", 0, num(0));
  Instruction* divide = add(list, "BINARY_OP", 11);  // /
  Instruction* ret = add(list, "RETURN_VALUE");
  Instruction* handler = add(list, "PUSH_EXC_INFO");
  add(list, "POP_TOP");
  add(list, "POP_EXCEPT");
  add(list, "LOAD_CONST", 0, num(-1));
  add(list, "RETURN_VALUE");
  for (Instruction* inst : {one, zero, divide, ret}) inst->handler = ExceptionHandler{handler, 0, false};
  PyRef code = assemble_ok(list, tmpl);
  ASSERT_TRUE(code);
  EXPECT_EQ(call(code, ""), -1);
  EXPECT_EQ(attr(code, "co_stacksize"), 2);
  Expected<DecodedCode> back = decode(as_code(code));
  ASSERT_TRUE(back.ok());
  std::vector<ExceptionTableEntry> table = exception_table(back->instructions);
  ASSERT_EQ(table.size(), 1u);
  EXPECT_EQ(table[0].first, back->instructions[1].get());
  EXPECT_EQ(table[0].last, back->instructions[4].get());
  EXPECT_EQ(table[0].handler.target, back->instructions[5].get());
}

TEST(Assemble, UserErrorsAreValues) {
  PyRef tmpl = function_code("def f(x):\n    return x\n", "f");
  {
    InstructionList list;
    add(list, "RESUME");
    InstructionList other;
    Instruction* elsewhere = add(other, "NOP");
    add_jump(list, "JUMP_FORWARD", elsewhere);
    Expected<PyRef> code = assemble(list, as_code(tmpl));
    ASSERT_FALSE(code.ok());
    EXPECT_NE(code.error().message.find("no target"), std::string::npos) << code.error().message;
  }
  {
    InstructionList list;
    Instruction* head = add(list, "RESUME");
    add(list, "LOAD_FAST", 0, str("x"));
    add(list, "GET_ITER");
    add_jump(list, "FOR_ITER", head);  // FOR_ITER only jumps forward
    Expected<PyRef> code = assemble(list, as_code(tmpl));
    ASSERT_FALSE(code.ok());
    EXPECT_NE(code.error().message.find("cannot jump backward"), std::string::npos) << code.error().message;
  }
  {
    InstructionList list;
    add(list, "LOAD_DEREF", 0, str("nope"));
    Expected<PyRef> code = assemble(list, as_code(tmpl));
    ASSERT_FALSE(code.ok());
  }
  EXPECT_FALSE(PyErr_Occurred());
}

TEST(Assemble, OverridesThroughReplaceKwargs) {
  PyRef tmpl = function_code("def f(x):\n    return x\n", "f");
  Expected<DecodedCode> dc = decode(as_code(tmpl));
  ASSERT_TRUE(dc.ok());
  PyRef kwargs = PyRef::steal(PyDict_New());
  PyDict_SetItemString(kwargs.get(), "co_name", str("renamed").get());
  PyDict_SetItemString(kwargs.get(), "co_firstlineno", num(100).get());
  Expected<PyRef> code = assemble(*dc, AssembleOptions{kwargs.get()});
  ASSERT_TRUE(code.ok()) << code.error().message;
  PyRef ns = run_python("");
  PyDict_SetItemString(ns.get(), "code", code->get());
  EXPECT_EQ(testing::eval_str(ns.get(), "code.co_name"), "renamed");
  EXPECT_EQ(eval_long(ns.get(), "code.co_firstlineno"), 100);
  EXPECT_EQ(eval_long(ns.get(), "list(code.co_lines())[-1][2]"), 2)
      << "instruction lines are absolute: a new first line does not move them";
}

// ---- stack depth --------------------------------------------------------

TEST(StackDepth, BranchesTakeTheMaximum) {
  InstructionList list;
  add(list, "LOAD_CONST", 0);
  Instruction* branch = add_jump(list, "POP_JUMP_FORWARD_IF_TRUE");
  add(list, "LOAD_CONST", 0);
  add(list, "LOAD_CONST", 0);
  add(list, "LOAD_CONST", 0);
  add(list, "BUILD_TUPLE", 3);
  add(list, "RETURN_VALUE");
  branch->target = add(list, "LOAD_CONST", 0);
  add(list, "RETURN_VALUE");
  Expected<int> depth = compute_stack_depth(list, 0);
  ASSERT_TRUE(depth.ok()) << depth.error().message;
  EXPECT_EQ(*depth, 3);
}

TEST(StackDepth, JumpIfOrPopKeepsTheValueOnTheJumpEdge) {
  InstructionList list;
  add(list, "LOAD_CONST", 0);
  add(list, "LOAD_CONST", 0);
  Instruction* jump = add_jump(list, "JUMP_IF_TRUE_OR_POP");  // jump: 2, fallthrough: 1
  add(list, "LOAD_CONST", 0);                                // 2
  jump->target = add(list, "BUILD_TUPLE", 2);                 // both edges arrive at 2
  add(list, "RETURN_VALUE");
  Expected<int> depth = compute_stack_depth(list, 0);
  ASSERT_TRUE(depth.ok()) << depth.error().message;
  EXPECT_EQ(*depth, 2);
}

TEST(StackDepth, HandlersEnterAtDepthPlusLastiPlusOne) {
  InstructionList list;
  add(list, "LOAD_CONST", 0);
  Instruction* guarded = add(list, "LOAD_CONST", 0);  // depth 1 -> 2
  add(list, "RETURN_VALUE");                          // unreachable tail below
  Instruction* handler = add(list, "PUSH_EXC_INFO");  // enters at 1 + 1 + 1 = 3, -> 4
  add(list, "POP_TOP");
  add(list, "POP_EXCEPT");
  add(list, "RETURN_VALUE");
  guarded->handler = ExceptionHandler{handler, 1, true};
  Expected<int> depth = compute_stack_depth(list, 0);
  ASSERT_TRUE(depth.ok()) << depth.error().message;
  EXPECT_EQ(*depth, 4);
}

TEST(StackDepth, GeneratorsStartAtOne) {
  InstructionList list;
  add(list, "RETURN_GENERATOR");
  add(list, "POP_TOP");
  add(list, "LOAD_CONST", 0);
  add(list, "RETURN_VALUE");
  Expected<int> depth = compute_stack_depth(list, CO_GENERATOR);
  ASSERT_TRUE(depth.ok()) << depth.error().message;
  EXPECT_EQ(*depth, 1);
  EXPECT_FALSE(compute_stack_depth(list, 0).ok()) << "POP_TOP on an empty stack";
}

TEST(StackDepth, InconsistentMergeIsAnError) {
  InstructionList list;
  add(list, "LOAD_CONST", 0);
  Instruction* branch = add_jump(list, "POP_JUMP_FORWARD_IF_TRUE");
  add(list, "LOAD_CONST", 0);  // fallthrough arrives with 1, the jump with 0
  branch->target = add(list, "NOP");
  add(list, "LOAD_CONST", 0);
  add(list, "RETURN_VALUE");
  Expected<int> depth = compute_stack_depth(list, 0);
  ASSERT_FALSE(depth.ok());
  EXPECT_NE(depth.error().message.find("depths"), std::string::npos) << depth.error().message;
}

TEST(StackDepth, MatchesTheCompilerOnRealCode) {
  PyRef code = function_code(
      "def f(xs):\n"
      "    with open(xs) as fh:\n"
      "        try:\n"
      "            return {k: [v for v in fh if v] for k in range(3)}\n"
      "        except (OSError, ValueError) as e:\n"
      "            raise RuntimeError(e) from None\n"
      "        finally:\n"
      "            print(1, 2, 3, sep=',')\n",
      "f");
  Expected<DecodedCode> dc = decode(as_code(code));
  ASSERT_TRUE(dc.ok());
  Expected<int> depth = compute_stack_depth(dc->instructions, as_code(code)->co_flags);
  ASSERT_TRUE(depth.ok()) << depth.error().message;
  EXPECT_EQ(*depth, as_code(code)->co_stacksize);
}

}  // namespace
}  // namespace tj::bc
