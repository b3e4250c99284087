// Inline math for the llvm backend's kernels: scalar LLVM IR that the loop
// vectorizer widens like any other arithmetic (no calls, so nothing to spill
// around and no special-case scalar paths inside a vector library).
//
// Float only: float64 keeps libm / libmvec, whose accuracy is the
// reference. Each function stays within 2 ulp of the correctly rounded
// result over the whole float range and passes NaN, infinities and signed
// zeros through as eager does (tests/unit/jit/test_llvm_math.cpp).
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace tj::jit::math {

// exp(x): x = n ln2 + r (two-constant Cody-Waite, |r| <= ln2/2), a degree-7
// polynomial for exp(r), then 2^n applied in two halves so that results in
// the subnormal range and overflow to +inf come out right.
llvm::Value* expf(llvm::IRBuilder<>& b, llvm::Value* x);

// exp(x) for x <= 0 or NaN, such as x - max(x) in a softmax: no overflow to
// handle, so n is rounded by adding a magic constant whose bits then are
// 2^n's exponent field, a degree-6 minimax polynomial, one scaling multiply,
// and 0 below the smallest normal float (eager's subnormals there are
// within 1.2e-38 of it). About half the instructions of expf.
llvm::Value* expf_nonpositive(llvm::IRBuilder<>& b, llvm::Value* x);

// tanh(x) = sign(x) (e - 1) / (e + 1) with e = exp(2|x|) for |x| >= 0.3
// (no cancellation: e - 1 is exact there), an odd Taylor polynomial below,
// 1 beyond |x| = 10.
llvm::Value* tanhf(llvm::IRBuilder<>& b, llvm::Value* x);

// 1 / (1 + exp(-x)).
llvm::Value* sigmoidf(llvm::IRBuilder<>& b, llvm::Value* x);

// sin(x) for float or float-vector x with |x| < kSinSmall: x = q pi + r
// (three-constant Cody-Waite, |r| <= pi/2), a degree-9 odd polynomial,
// the sign flipped for odd q. Within 1.8 ulp there (checked over every
// float), signed zeros kept. Beyond, and for NaN and infinities, callers
// use libmvec (the InlineSin pass in llvm_passes.cpp does).
inline constexpr double kSinSmall = 16.0;
llvm::Value* sinf_small(llvm::IRBuilder<>& b, llvm::Value* x);

}  // namespace tj::jit::math
