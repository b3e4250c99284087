// Reductions' running state in LLVM IR, for the kernel emitter
// (llvm_emit.cpp): one accumulator per `reduce_*` expression, in stack
// slots of the function's entry block that SROA turns into loop-carried
// registers: the value, a NaN flag (max/min vectorize as maxnum, which drops
// NaN; eager propagates it) or an index (argmax/argmin: the first extreme
// element, NaN first). A sum adds into `block` (reassociated: one partial
// sum per vector lane) and each block of the innermost loop into `value`,
// in double for float32: as accurate as eager's cascade sum over any row
// length, at the speed of float adds.
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

 private:
  llvm::Type* accumulator_type(const loop::Expr& e);
  llvm::Value* initial_value(const loop::Expr& e, llvm::Type* t);

  llvm::IRBuilder<>& b_;
  const loop::Kernel& k_;
};

}  // namespace tj::jit
