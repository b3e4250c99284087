// The ops of the loop IR (loop_ir.h) and what each one means, written once.
//
// `OpInfo` is a row of one table (loop_ops.cpp) that every part of the
// compiler reads instead of spelling an op's semantics again:
//  - the lowering (fusion_group.cpp, `GroupBuilder::op`) builds an
//    expression only in a dtype the table lists for its op, with the
//    operands and result dtype the table's rules give, else the node runs
//    through ATen;
//  - `loop::verify` checks a whole kernel against the table; both code
//    generators run it first;
//  - the LLVM emitter (llvm_emit.cpp, llvm_reduce.cpp) takes NaN handling,
//    which extreme an op picks and a reduction's start value from the row;
//  - the CUDA renderer (cuda_codegen.cpp) spells each op from its own
//    table of C spellings per dtype class, and generates the prelude's NaN
//    helpers and block-reduction combiners from these rows;
//  - tests/unit/jit/test_loop_ops.cpp runs every row, in every dtype it
//    lists, on special values through both code generators against ATen:
//    an op in the table cannot go untested.
//
// Dtypes: an op is *computed in* one dtype (its operands'; `select`'s
// condition is bool besides), and its result has the dtype `result` says.
// float16 and bfloat16 are only loaded, stored, converted and selected:
// the lowering computes them in float32.
#pragma once

#include <cstdint>
#include <span>

#include <c10/core/ScalarType.h>

namespace tj::jit::loop {

enum class Op {
  load, constant, cast,
  // unary
  neg, abs, relu, sigmoid, tanh, exp, log, sin, cos, sqrt, rsqrt, reciprocal, erf, logical_not,
  // outer values: the number of elements of a row (the product of the inner sizes)
  inner_count,
  // reductions over the inner dimensions (one argument); argmax/argmin give the
  // row-major index of the first maximum/minimum (a NaN counts as the maximum)
  reduce_sum, reduce_max, reduce_min, reduce_argmax, reduce_argmin,
  // binary
  add, sub, mul, div, pow, maximum, minimum, eq, ne, lt, le, gt, ge, logical_and, logical_or, logical_xor,
  // ternary
  select,  // args: condition (bool), then, else
  fma,     // args: a, b, c: a * b + c rounded once (floats; integers wrap)
};
// The last op of the enum: the table has one row per op up to it.
constexpr Op kLastOp = Op::fma;

enum class OpKind {
  leaf,       // no operands: load, constant, inner_count
  pointwise,  // one value per element from its operands' values there
  reduction,  // one value per row from its operand over the inner dimensions
};

// Sets of the dtypes the loop IR has (bit per dtype).
using Dtypes = uint8_t;
namespace dtypes {
constexpr Dtypes kBool = 1, kInt = 2, kLong = 4, kFloat = 8, kDouble = 16, kHalf = 32, kBFloat16 = 64;
constexpr Dtypes kFloats = kFloat | kDouble;
constexpr Dtypes kNumbers = kInt | kLong | kFloats;
constexpr Dtypes kCompute = kBool | kNumbers;  // what the lowering computes in
constexpr Dtypes kAll = kCompute | kHalf | kBFloat16;
}  // namespace dtypes
// The bit of `t`, 0 for a dtype the loop IR does not have.
Dtypes dtype_bit(c10::ScalarType t);

enum class ResultRule {
  computed,  // the dtype it is computed in
  boolean,   // bool (comparisons)
  index,     // int64 (argmax/argmin: a position in the row)
  given,     // the expression's own dtype, any (load, constant, cast)
};

// What a NaN operand gives (floats; the rules are eager's).
enum class NanRule {
  none,       // no float operand (logical ops, leaves)
  ieee,       // as IEEE arithmetic and C's math functions: NaN in, NaN out; casts keep it (to bool: true)
  unordered,  // comparisons: a NaN compares false, `ne` true
  pass,       // select: the operand chosen, whatever it is
  either,     // maximum/minimum: NaN when either operand is NaN (not C's fmax, which drops it)
  keep,       // reduce_max/reduce_min: a row with a NaN gives NaN
  first,      // reduce_argmax/reduce_argmin: the position of the row's first NaN
};

// How two values combine: a reduction's fold, or which of two values the
// extreme ops (maximum/minimum) pick.
enum class Combine { none, add, max, min, argmax, argmin };

// A reduction's start value: what an empty row gives.
enum class Identity {
  none,
  zero,
  lowest,   // -inf, or the dtype's lowest integer
  highest,  // +inf, or the dtype's highest integer
};

enum class Cost {
  cheap,           // a few instructions
  transcendental,  // a library function (exp, tanh, pow, ...): a kernel with one is compute-bound
};

struct OpInfo {
  Op op;
  const char* name;  // the printer's (print_kernel) and the kernel cache's
  OpKind kind;
  int arity;
  Dtypes dtypes;  // computed in
  ResultRule result;
  NanRule nan;
  bool integers_wrap;  // on overflow, as two's complement (C's signed overflow is undefined: the CUDA spelling goes through unsigned)
  Cost cost;
  Combine combine;
  Identity identity;
  bool condition_first;  // the first operand is a bool condition (select)
};

// The row of `op`, and every row in enum order.
const OpInfo& info(Op op);
std::span<const OpInfo> all_ops();

const char* op_name(Op op);
bool is_reduction(Op op);
// Expressions that compute a transcendental function (exp, log, tanh, ...):
// a kernel with one is compute-bound rather than memory-bound.
bool is_costly(Op op);

// Whether the table lets `op` be computed in `t`.
bool computes_in(Op op, c10::ScalarType t);
// The result dtype of `op` computed in `t` (not for ResultRule::given).
c10::ScalarType result_dtype(Op op, c10::ScalarType t);

}  // namespace tj::jit::loop
