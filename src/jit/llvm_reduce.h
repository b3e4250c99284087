// Reductions' running state in LLVM IR, for the kernel emitter
// (llvm_emit.cpp): one accumulator per `reduce_*` expression, in stack
// slots of the function's entry block that SROA turns into loop-carried
// registers: the value, a NaN flag (max/min vectorize as maxnum, which drops
// NaN; eager propagates it) or an index (argmax/argmin: the first extreme
// element, NaN first). A sum adds into `block` (reassociated: one partial
// sum per vector lane) and each block of the innermost loop into `value`,
// in double for float32: as accurate as eager's cascade sum over any row
// length, at the speed of float adds. That holds where the block's loop is
// vectorized (a flat entry's contiguous rows, a loop nest's innermost dim
// where every buffer steps by one element: 8 lanes, interleaved). A
// strided or expanded (stride 0) innermost dim is a loop the vectorizer
// leaves scalar, one chain of up to 2,048 float adds (28x eager's error,
// tests/fuzz/regressions/llvm_sum_of_expanded_input_accuracy_9996558.py):
// there (`wide_blocks`) a float32 block is double too, each element widened
// before its add (a scalar double add costs what a float add does; in a
// vectorized loop the double lanes would halve the vector width).
#pragma once

#include <llvm/IR/IRBuilder.h>

#include "jit/loop_ir.h"

namespace tj::jit {

// The register type of a dtype (bool: i1, bfloat16: its 16 bits).
llvm::Type* reg_type(llvm::IRBuilder<>& b, c10::ScalarType t);

struct Accumulator {
  llvm::AllocaInst* value = nullptr;
  llvm::AllocaInst* aux = nullptr;
  llvm::AllocaInst* block = nullptr;
  llvm::AllocaInst* wide_block = nullptr;  // a sum's block where blocks are wide (double for float32)
};

class Reducer {
 public:
  Reducer(llvm::IRBuilder<>& b, const loop::Kernel& k) : b_(b), k_(k) {}
  // Slots in `entry`, set to the reduction's identity where the builder is.
  Accumulator start(const loop::Expr& e, llvm::BasicBlock* entry);
  void begin_block(const loop::Expr& e, const Accumulator& a);
  void end_block(const loop::Expr& e, const Accumulator& a);
  // Folds `x`, the element at row-major `index` of the row.
  void accumulate(const loop::Expr& e, const Accumulator& a, llvm::Value* x, llvm::Value* index);
  llvm::Value* finish(const loop::Expr& e, const Accumulator& a);
  // Float32 sums' blocks in double from now on (a strided inner loop).
  void set_wide_blocks(bool wide) { wide_blocks_ = wide; }

 private:
  llvm::Type* accumulator_type(const loop::Expr& e);
  llvm::Value* initial_value(const loop::Expr& e, llvm::Type* t);
  llvm::Type* block_type(const loop::Expr& e);
  llvm::AllocaInst* block_slot(const Accumulator& a) const { return wide_blocks_ ? a.wide_block : a.block; }

  llvm::IRBuilder<>& b_;
  const loop::Kernel& k_;
  bool wide_blocks_ = false;
};

}  // namespace tj::jit
