// The loop IR: what one fusion group of pointwise ops becomes before LLVM.
//
// A `Kernel` is one loop nest over an iteration space (`sizes`, the shape of
// every output of the group). Its body is a list of scalar expressions in
// SSA order: each `Expr` reads earlier expressions by index, a kernel input
// (`load`), or a constant, and has the dtype it is computed in. Outputs name
// the expression they store and their dtype; the caller allocates them with
// eager's strides. Inputs are read with the strides the tensors have at run
// time (broadcast dimensions get stride 0), so views need no copies.
//
// The text form (`print_kernel`) is what the `output_code` log shows and,
// without the kernel's name, the key of the kernel cache: two groups that
// print the same compile to the same machine code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <c10/core/ScalarType.h>

namespace tj::jit::loop {

enum class Op {
  load, constant, cast,
  // unary
  neg, abs, relu, sigmoid, tanh, exp, log, sin, cos, sqrt, rsqrt, reciprocal, erf, logical_not,
  // binary
  add, sub, mul, div, pow, maximum, minimum, eq, ne, lt, le, gt, ge, logical_and, logical_or, logical_xor,
  // ternary
  select,  // args: condition (bool), then, else
};
const char* op_name(Op op);

struct Expr {
  Op op = Op::constant;
  c10::ScalarType dtype = c10::ScalarType::Float;
  std::vector<int> args;  // indices of earlier expressions
  int input = -1;         // load: which kernel input
  double value = 0;       // constant (integers and bools are exact below 2^53)
};

struct Input {
  c10::ScalarType dtype = c10::ScalarType::Float;
  // As compiled for: a contiguous tensor of the kernel's shape (`full`), or
  // one element broadcast everywhere (`scalar`); the flat fast path needs one
  // of the two at run time, anything else takes the strided path.
  enum class Kind { full, scalar, other } kind = Kind::other;
};

struct Output {
  int expr = -1;
  c10::ScalarType dtype = c10::ScalarType::Float;
};

struct Kernel {
  std::string name;  // for logs only
  std::vector<int64_t> sizes;
  std::vector<Input> inputs;
  std::vector<Output> outputs;
  std::vector<Expr> exprs;
  // Every output is contiguous: a flat variant is generated besides the strided one.
  bool contiguous_outputs = false;
  // debug_inject_bug=relu_accuracy_error: relu adds 1 (tests the repro tools).
  bool relu_plus_one = false;

  int add(Expr e) {
    exprs.push_back(std::move(e));
    return static_cast<int>(exprs.size()) - 1;
  }
};

// Readable text: rank, dtypes, one line per expression. `with_name` false
// gives the canonical form used as the cache key.
std::string print_kernel(const Kernel& kernel, bool with_name = true);

// The machine ABI of a compiled kernel. `ptrs`: outputs then inputs.
// Strided: `sizes` has rank entries, `strides` rank entries per pointer in
// the same order, in elements. Flat: `n` elements, every pointer contiguous
// (or a scalar input, read at index 0).
using StridedFn = void (*)(char* const* ptrs, const int64_t* sizes, const int64_t* strides);
using FlatFn = void (*)(char* const* ptrs, int64_t n);

}  // namespace tj::jit::loop
