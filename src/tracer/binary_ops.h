// The operators of BINARY_OP, as one table.
//
// CPython 3.11 numbers BINARY_OP's argument as `opcode._nb_ops`: the 13
// binary operators (NB_ADD .. NB_XOR), then the same 13 in-place forms
// (NB_INPLACE_ADD = 13 ..). Every row here holds what the tracer needs of
// one operator: its Python spellings (the symbol, the `operator` module
// function, the dunder and its reflected/in-place forms), the C-API call
// that folds it on constants, the ATen op it records on tensors and the
// in-place ATen op of `t op= x`, how Tensor's reflected method
// (`Tensor.__r<op>__`) records it when a number is on the left, and the
// set method it means on sets. Handlers decode BINARY_OP's argument once
// (`decode_binary_op`) and read columns; no other file spells the numbers.
// tests/unit/tracer/test_binary_ops.cpp checks the table against
// `opcode._nb_ops`, the `operator` module, the dunders CPython calls and
// the ATen op registry.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace tj::bc {

// NB_ADD .. NB_XOR (Include/internal/pycore_code.h), in that order.
enum class BinaryOp : uint8_t {
  add,
  bit_and,
  floor_divide,
  lshift,
  matmul,
  multiply,
  remainder,
  bit_or,
  power,
  rshift,
  subtract,
  true_divide,
  bit_xor,
};

inline constexpr int kBinaryOpCount = 13;  // in-place forms are numbered from here

// How Tensor's reflected method records `number op tensor`.
enum class TensorReflected : uint8_t {
  none,            // not traced (<<, >>, @ with a non-tensor on the left)
  swapped,         // the ATen op with the operands swapped: + & * | ^ commute
  rsub,            // aten::rsub(tensor, number)
  reciprocal_mul,  // aten::mul(aten::reciprocal(tensor), number)
  scalar_pow,      // aten::pow(aten::scalar_tensor(number), tensor)
  number_first,    // the ATen op with the number first: % //
};

struct BinaryOpInfo {
  BinaryOp op;
  std::string_view symbol;          // "+"   (opcode._nb_ops[op][1])
  std::string_view inplace_symbol;  // "+="  (opcode._nb_ops[13 + op][1])
  std::string_view function;        // "add": operator.add; "and_" for &
  std::string_view dunder;          // "__add__"
  std::string_view reflected;       // "__radd__"
  std::string_view inplace;         // "__iadd__"
  // Folds the operator on two objects (new reference, null with a Python
  // error set), as `a op b` does.
  PyObject* (*apply)(PyObject* a, PyObject* b);
  std::string_view aten;            // "aten::add": `tensor op x`
  std::string_view aten_inplace;    // "aten::add_": `tensor op= x`; empty: none (@=)
  TensorReflected tensor_reflected;
  bool number_arithmetic;           // + - * / // % **: traced on numbers from Tensor.item()
  std::string_view set_method;         // "union" for |, empty: not a set operator
  std::string_view set_update_method;  // "update" for |=
};

// BINARY_OP's argument, split into the operator and whether it is in place.
struct BinaryOpArg {
  const BinaryOpInfo* info;  // never null
  bool inplace;

  BinaryOp op() const { return info->op; }
  // The symbol as written: "+" or "+=".
  std::string_view symbol() const { return inplace ? info->inplace_symbol : info->symbol; }
};

// All 13 operators, indexed by BinaryOp.
std::span<const BinaryOpInfo> all_binary_ops();
const BinaryOpInfo& binary_op_info(BinaryOp op);

// BINARY_OP's argument (0..25) as operator + in-place; nullopt out of range.
std::optional<BinaryOpArg> decode_binary_op(int arg);
// `op` (in place or not) as a decoded argument.
inline BinaryOpArg binary_op(BinaryOp op, bool inplace = false) { return {&binary_op_info(op), inplace}; }
// BINARY_OP's argument for `op` (in-place: `op` + 13).
int binary_op_arg(BinaryOp op, bool inplace);

}  // namespace tj::bc
