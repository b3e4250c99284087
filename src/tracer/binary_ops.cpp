// The BINARY_OP operator table (binary_ops.h) and its lookups.
#include "tracer/binary_ops.h"

#include <array>
#include <cassert>

#include "tracer/opcodes.h"

namespace tj::bc {
namespace {

using R = TensorReflected;

PyObject* power(PyObject* a, PyObject* b) { return PyNumber_Power(a, b, Py_None); }

// clang-format off
const BinaryOpInfo kBinaryOps[] = {
    {BinaryOp::add, "+", "+=", "add", "__add__", "__radd__", "__iadd__", PyNumber_Add,
     "aten::add", "aten::add_", R::swapped, true, "", ""},
    {BinaryOp::bit_and, "&", "&=", "and_", "__and__", "__rand__", "__iand__", PyNumber_And,
     "aten::bitwise_and", "aten::bitwise_and_", R::swapped, false, "intersection", "intersection_update"},
    {BinaryOp::floor_divide, "//", "//=", "floordiv", "__floordiv__", "__rfloordiv__", "__ifloordiv__",
     PyNumber_FloorDivide, "aten::floor_divide", "aten::floor_divide_", R::number_first, true, "", ""},
    // << and >> are the bitwise_*_shift ops (the __lshift__ overloads have no meta kernels).
    {BinaryOp::lshift, "<<", "<<=", "lshift", "__lshift__", "__rlshift__", "__ilshift__", PyNumber_Lshift,
     "aten::bitwise_left_shift", "aten::bitwise_left_shift_", R::none, false, "", ""},
    {BinaryOp::matmul, "@", "@=", "matmul", "__matmul__", "__rmatmul__", "__imatmul__", PyNumber_MatrixMultiply,
     "aten::matmul", "", R::none, false, "", ""},
    {BinaryOp::multiply, "*", "*=", "mul", "__mul__", "__rmul__", "__imul__", PyNumber_Multiply,
     "aten::mul", "aten::mul_", R::swapped, true, "", ""},
    {BinaryOp::remainder, "%", "%=", "mod", "__mod__", "__rmod__", "__imod__", PyNumber_Remainder,
     "aten::remainder", "aten::remainder_", R::number_first, true, "", ""},
    {BinaryOp::bit_or, "|", "|=", "or_", "__or__", "__ror__", "__ior__", PyNumber_Or,
     "aten::bitwise_or", "aten::bitwise_or_", R::swapped, false, "union", "update"},
    {BinaryOp::power, "**", "**=", "pow", "__pow__", "__rpow__", "__ipow__", power,
     "aten::pow", "aten::pow_", R::scalar_pow, true, "", ""},
    {BinaryOp::rshift, ">>", ">>=", "rshift", "__rshift__", "__rrshift__", "__irshift__", PyNumber_Rshift,
     "aten::bitwise_right_shift", "aten::bitwise_right_shift_", R::none, false, "", ""},
    {BinaryOp::subtract, "-", "-=", "sub", "__sub__", "__rsub__", "__isub__", PyNumber_Subtract,
     "aten::sub", "aten::sub_", R::rsub, true, "difference", "difference_update"},
    {BinaryOp::true_divide, "/", "/=", "truediv", "__truediv__", "__rtruediv__", "__itruediv__", PyNumber_TrueDivide,
     "aten::div", "aten::div_", R::reciprocal_mul, true, "", ""},
    {BinaryOp::bit_xor, "^", "^=", "xor", "__xor__", "__rxor__", "__ixor__", PyNumber_Xor,
     "aten::bitwise_xor", "aten::bitwise_xor_", R::swapped, false, "symmetric_difference",
     "symmetric_difference_update"},
};
// clang-format on

static_assert(std::size(kBinaryOps) == kBinaryOpCount);

}  // namespace

std::span<const BinaryOpInfo> all_binary_ops() { return kBinaryOps; }

const BinaryOpInfo& binary_op_info(BinaryOp op) {
  const BinaryOpInfo& row = kBinaryOps[static_cast<size_t>(op)];
  assert(row.op == op && "rows in BinaryOp order");
  return row;
}

std::optional<BinaryOpArg> decode_binary_op(int arg) {
  if (arg < 0 || arg >= 2 * kBinaryOpCount) return std::nullopt;
  return BinaryOpArg{&kBinaryOps[arg % kBinaryOpCount], arg >= kBinaryOpCount};
}

std::span<const std::string_view> binary_op_names() {
  static const auto names = [] {
    std::array<std::string_view, 2 * kBinaryOpCount> symbols;
    for (const BinaryOpInfo& row : kBinaryOps) {
      symbols[static_cast<size_t>(binary_op_arg(row.op, false))] = row.symbol;
      symbols[static_cast<size_t>(binary_op_arg(row.op, true))] = row.inplace_symbol;
    }
    return symbols;
  }();
  return names;
}

int binary_op_arg(BinaryOp op, bool inplace) {
  return static_cast<int>(op) + (inplace ? kBinaryOpCount : 0);
}

}  // namespace tj::bc
