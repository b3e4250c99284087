// Reductions' running state in LLVM IR; see llvm_reduce.h.
#include "jit/llvm_reduce.h"

#include <cassert>

#include <llvm/IR/Intrinsics.h>

namespace tj::jit {

using c10::ScalarType;
using loop::Expr;
using loop::Op;

llvm::Type* reg_type(llvm::IRBuilder<>& b, ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return b.getInt1Ty();
    case ScalarType::Int: return b.getInt32Ty();
    case ScalarType::Long: return b.getInt64Ty();
    case ScalarType::Float: return b.getFloatTy();
    case ScalarType::Half: return b.getHalfTy();
    case ScalarType::BFloat16: return b.getInt16Ty();  // the bits (see the emitter's cast)
    default: return b.getDoubleTy();
  }
}

namespace {
bool is_arg_reduction(const Expr& e) { return loop::info(e.op).result == loop::ResultRule::index; }
// The reduction keeps the larger of two values (max, argmax), else the smaller.
bool keeps_larger(const Expr& e) {
  const loop::Combine c = loop::info(e.op).combine;
  return c == loop::Combine::max || c == loop::Combine::argmax;
}

}  // namespace

llvm::Type* Reducer::accumulator_type(const Expr& e) {
  if (e.op == Op::reduce_sum && e.dtype == ScalarType::Float) return b_.getDoubleTy();
  if (is_arg_reduction(e)) return reg_type(b_, k_.exprs[e.args[0]].dtype);
  return reg_type(b_, e.dtype);
}

// A sum's block: the result's type, or the accumulator's (double) where blocks are wide.
llvm::Type* Reducer::block_type(const Expr& e) {
  return wide_blocks_ ? accumulator_type(e) : reg_type(b_, e.dtype);
}

// The identity of the reduction (the op table's): 0, or the lowest/highest value of the type.
llvm::Value* Reducer::initial_value(const Expr& e, llvm::Type* t) {
  const loop::Identity identity = loop::info(e.op).identity;
  assert(identity != loop::Identity::none && "a reduction has a start value");
  const bool highest = identity == loop::Identity::highest;
  if (identity == loop::Identity::zero) return llvm::Constant::getNullValue(t);
  if (t->isFloatingPointTy()) return llvm::ConstantFP::getInfinity(t, !highest);
  unsigned bits = t->getIntegerBitWidth();
  return b_.getInt(highest ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getSignedMinValue(bits));
}

Accumulator Reducer::start(const Expr& e, llvm::BasicBlock* entry) {
  llvm::IRBuilder<> at_entry(entry, entry->begin());
  Accumulator a;
  llvm::Type* t = accumulator_type(e);
  a.value = at_entry.CreateAlloca(t);
  b_.CreateStore(initial_value(e, t), a.value);
  if (e.op == Op::reduce_sum) {
    a.block = at_entry.CreateAlloca(reg_type(b_, e.dtype));
    a.wide_block = t == reg_type(b_, e.dtype) ? a.block : at_entry.CreateAlloca(t);
  } else if (t->isFloatingPointTy() || is_arg_reduction(e)) {
    llvm::Type* aux = is_arg_reduction(e) ? b_.getInt64Ty() : b_.getInt1Ty();
    a.aux = at_entry.CreateAlloca(aux);
    b_.CreateStore(llvm::Constant::getNullValue(aux), a.aux);
  }
  return a;
}

void Reducer::begin_block(const Expr& e, const Accumulator& a) {
  if (a.block) b_.CreateStore(llvm::Constant::getNullValue(block_type(e)), block_slot(a));
}

void Reducer::end_block(const Expr& e, const Accumulator& a) {
  if (!a.block) return;
  llvm::Type* t = accumulator_type(e);
  llvm::Value* block = b_.CreateLoad(block_type(e), block_slot(a));
  llvm::Value* acc = b_.CreateLoad(t, a.value);
  if (!t->isFloatingPointTy()) {
    b_.CreateStore(b_.CreateAdd(acc, block), a.value);
    return;
  }
  if (block->getType() != t) block = b_.CreateFPExt(block, t);
  b_.CreateStore(b_.CreateFAdd(acc, block), a.value);
}

void Reducer::accumulate(const Expr& e, const Accumulator& a, llvm::Value* x, llvm::Value* index) {
  llvm::Type* t = accumulator_type(e);
  const bool fp = t->isFloatingPointTy();
  if (e.op == Op::reduce_sum) {
    llvm::Value* acc = b_.CreateLoad(block_type(e), block_slot(a));
    if (fp && x->getType() != acc->getType()) x = b_.CreateFPExt(x, acc->getType());
    // reassociation lets the vectorizer keep one partial sum per lane
    llvm::FastMathFlags fmf;
    fmf.setAllowReassoc();
    fmf.setNoSignedZeros();
    llvm::IRBuilder<>::FastMathFlagGuard guard(b_);
    b_.setFastMathFlags(fmf);
    b_.CreateStore(fp ? b_.CreateFAdd(acc, x) : b_.CreateAdd(acc, x), block_slot(a));
    return;
  }
  llvm::Value* acc = b_.CreateLoad(t, a.value);
  const bool max = keeps_larger(e);
  if (!is_arg_reduction(e)) {
    if (!fp) {
      llvm::Value* better = max ? b_.CreateICmpSGT(x, acc) : b_.CreateICmpSLT(x, acc);
      b_.CreateStore(b_.CreateSelect(better, x, acc), a.value);
      return;
    }
    // the table's NaN rule `keep`: maxnum drops NaN, the flag brings it back in `finish`
    assert(loop::info(e.op).nan == loop::NanRule::keep && "max/min reductions keep NaN");
    {
      llvm::FastMathFlags fmf;
      fmf.setNoNaNs();
      fmf.setNoSignedZeros();
      llvm::IRBuilder<>::FastMathFlagGuard guard(b_);
      b_.setFastMathFlags(fmf);
      b_.CreateStore(b_.CreateBinaryIntrinsic(max ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, acc, x),
                     a.value);
    }
    llvm::Value* nan = b_.CreateLoad(b_.getInt1Ty(), a.aux);
    b_.CreateStore(b_.CreateOr(nan, b_.CreateFCmpUNO(x, x)), a.aux);
    return;
  }
  // argmax/argmin: the first extreme element; the first NaN wins (NaN rule `first`)
  llvm::Value* better;
  if (fp) {
    better = max ? b_.CreateFCmpOGT(x, acc) : b_.CreateFCmpOLT(x, acc);
    better = b_.CreateOr(better, b_.CreateAnd(b_.CreateFCmpUNO(x, x), b_.CreateFCmpORD(acc, acc)));
  } else {
    better = max ? b_.CreateICmpSGT(x, acc) : b_.CreateICmpSLT(x, acc);
  }
  b_.CreateStore(b_.CreateSelect(better, x, acc), a.value);
  llvm::Value* idx = b_.CreateLoad(b_.getInt64Ty(), a.aux);
  b_.CreateStore(b_.CreateSelect(better, index, idx), a.aux);
}

llvm::Value* Reducer::finish(const Expr& e, const Accumulator& a) {
  llvm::Type* t = accumulator_type(e);
  llvm::Value* acc = b_.CreateLoad(t, a.value);
  switch (e.op) {
    case Op::reduce_sum: return acc->getType() == reg_type(b_, e.dtype) ? acc : b_.CreateFPTrunc(acc, reg_type(b_, e.dtype));
    case Op::reduce_argmax:
    case Op::reduce_argmin: return b_.CreateLoad(b_.getInt64Ty(), a.aux);
    default:
      if (!a.aux) return acc;
      return b_.CreateSelect(b_.CreateLoad(b_.getInt1Ty(), a.aux), llvm::ConstantFP::getNaN(t), acc);
  }
}

}  // namespace tj::jit
