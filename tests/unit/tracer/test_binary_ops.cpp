// The BINARY_OP operator table (src/tracer/binary_ops.cpp) against the
// running interpreter and the ATen op registry: the argument numbering and
// symbols of `opcode._nb_ops`, the `operator` module functions, the dunder
// each spelling makes CPython call (plain, reflected, in place), the C-API
// fold, and that every ATen op the table names exists.
#include <gtest/gtest.h>

#include <string>

#include "graph/op_registry.h"
#include "py_test_util.h"
#include "tracer/binary_ops.h"
#include "tracer/opcodes.h"

namespace tj::bc {
namespace {

using testing::eval_long;
using testing::eval_python;
using testing::eval_str;
using testing::run_python;

// A class whose every operator dunder returns its own name, so an
// expression shows which dunder CPython picked for it.
PyRef probe_namespace() {
  PyRef ns = run_python(
      "import opcode, operator\n"
      "class Probe:\n"
      "    pass\n"
      "def define(name):\n"
      "    setattr(Probe, name, lambda self, other: name)\n"
      "def called(source, **names):\n"
      "    try:\n"
      "        return eval(source, {'Probe': Probe}, names)\n"
      "    except TypeError:\n"
      "        return '<TypeError>'\n"
      "def called_inplace(symbol):\n"
      "    names = {'x': Probe()}\n"
      "    try:\n"
      "        exec('x ' + symbol + ' 1', {}, names)\n"
      "    except TypeError:\n"
      "        return '<TypeError>'\n"
      "    return names['x']\n");
  for (const BinaryOpInfo& row : all_binary_ops())
    for (std::string_view name : {row.dunder, row.reflected, row.inplace})
      eval_python(ns.get(), "define('" + std::string(name) + "')");
  return ns;
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

TEST(BinaryOps, RowsInEnumOrder) {
  ASSERT_EQ(all_binary_ops().size(), static_cast<size_t>(kBinaryOpCount));
  for (size_t i = 0; i < all_binary_ops().size(); ++i) {
    const BinaryOpInfo& row = all_binary_ops()[i];
    EXPECT_EQ(static_cast<size_t>(row.op), i);
    EXPECT_EQ(&binary_op_info(row.op), &row);
  }
}

TEST(BinaryOps, ArgumentsMatchNbOps) {
  PyRef ns = probe_namespace();
  ASSERT_EQ(eval_long(ns.get(), "len(opcode._nb_ops)"), 2 * kBinaryOpCount);
  for (int arg = 0; arg < 2 * kBinaryOpCount; ++arg) {
    std::optional<BinaryOpArg> op = decode_binary_op(arg);
    ASSERT_TRUE(op) << arg;
    EXPECT_EQ(op->inplace, eval_str(ns.get(), "opcode._nb_ops[" + std::to_string(arg) + "][0]").starts_with("NB_INPLACE_"));
    EXPECT_EQ(op->symbol(), eval_str(ns.get(), "opcode._nb_ops[" + std::to_string(arg) + "][1]"));
    EXPECT_EQ(binary_op_arg(op->op(), op->inplace), arg);
    EXPECT_EQ(binary_op_names()[static_cast<size_t>(arg)], op->symbol());
  }
  EXPECT_FALSE(decode_binary_op(-1));
  EXPECT_FALSE(decode_binary_op(2 * kBinaryOpCount));
}

TEST(BinaryOps, PythonSpellingsMatchCPython) {
  PyRef ns = probe_namespace();
  for (const BinaryOpInfo& row : all_binary_ops()) {
    SCOPED_TRACE(std::string(row.symbol));
    const std::string symbol(row.symbol);
    // operator.<function> is the operator, and calls the plain dunder.
    EXPECT_EQ(eval_str(ns.get(), "called('operator." + std::string(row.function) + "(Probe(), 1)', operator=operator)"),
              row.dunder);
    EXPECT_EQ(eval_str(ns.get(), "called('Probe() " + symbol + " 1')"), row.dunder);
    EXPECT_EQ(eval_str(ns.get(), "called('object() " + symbol + " Probe()')"), row.reflected);
    EXPECT_EQ(eval_str(ns.get(), "called_inplace(" + quoted(row.inplace_symbol) + ")"), row.inplace);
  }
}

TEST(BinaryOps, ApplyFoldsLikeTheOperator) {
  PyRef ns = probe_namespace();
  PyRef probe = eval_python(ns.get(), "Probe()");
  PyRef one = PyRef::steal(PyLong_FromLong(1));
  for (const BinaryOpInfo& row : all_binary_ops()) {
    PyRef r = PyRef::steal(row.apply(probe.get(), one.get()));
    ASSERT_TRUE(r && PyUnicode_Check(r.get())) << row.symbol;
    EXPECT_EQ(std::string(PyUnicode_AsUTF8(r.get())), row.dunder);
  }
  PyRef seven = PyRef::steal(PyLong_FromLong(7)), two = PyRef::steal(PyLong_FromLong(2));
  PyRef pow = PyRef::steal(binary_op_info(BinaryOp::power).apply(seven.get(), two.get()));
  EXPECT_EQ(PyLong_AsLong(pow.get()), 49);
}

TEST(BinaryOps, AtenOpsExist) {
  auto& registry = graph::OpRegistry::instance();
  for (const BinaryOpInfo& row : all_binary_ops()) {
    SCOPED_TRACE(std::string(row.symbol));
    ASSERT_TRUE(row.aten.starts_with("aten::"));
    EXPECT_FALSE(registry.overloads(row.aten).empty()) << row.aten;
    if (row.aten_inplace.empty()) {
      EXPECT_EQ(row.op, BinaryOp::matmul) << "only @= has no in-place ATen op";
      continue;
    }
    EXPECT_EQ(row.aten_inplace, std::string(row.aten) + "_");
    EXPECT_FALSE(registry.overloads(row.aten_inplace).empty()) << row.aten_inplace;
  }
  for (const char* reflected : {"aten::rsub", "aten::reciprocal", "aten::scalar_tensor"})
    EXPECT_FALSE(registry.overloads(reflected).empty()) << reflected;
}

TEST(BinaryOps, SetMethodsExist) {
  PyRef ns = probe_namespace();
  int set_ops = 0;
  for (const BinaryOpInfo& row : all_binary_ops()) {
    if (row.set_method.empty()) {
      EXPECT_TRUE(row.set_update_method.empty());
      continue;
    }
    ++set_ops;
    const std::string a = "{1, 2, 3}", b = "{2, 3, 4}";
    EXPECT_EQ(eval_long(ns.get(), a + " " + std::string(row.symbol) + " " + b + " == " + a + "." +
                                      std::string(row.set_method) + "(" + b + ")"),
              1)
        << row.set_method;
    EXPECT_EQ(eval_long(ns.get(), "(lambda s: (s." + std::string(row.set_update_method) + "(" + b + "), s)[1])(" + a +
                                      ") == " + a + " " + std::string(row.symbol) + " " + b),
              1)
        << row.set_update_method;
  }
  EXPECT_EQ(set_ops, eval_long(ns.get(), "len([n for n in ('__or__', '__and__', '__sub__', '__xor__', '__add__', "
                                         "'__mul__') if hasattr(set, n)])"));
}

}  // namespace
}  // namespace tj::bc
