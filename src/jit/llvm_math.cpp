// Inline float math for kernels; see llvm_math.h.
#include "jit/llvm_math.h"

#include <llvm/IR/Intrinsics.h>

namespace tj::jit::math {

namespace {

llvm::Value* c(llvm::IRBuilder<>& b, double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); }

// fma and horner work on float or float vectors: x's type.
llvm::Value* fma(llvm::IRBuilder<>& b, llvm::Value* x, llvm::Value* y, llvm::Value* z) {
  return b.CreateIntrinsic(llvm::Intrinsic::fma, {x->getType()}, {x, y, z});
}

// p(x) = coefficients[0] + x (coefficients[1] + x (...)), Horner with FMA.
llvm::Value* horner(llvm::IRBuilder<>& b, llvm::Value* x, std::initializer_list<double> coefficients) {
  auto it = std::rbegin(coefficients);
  llvm::Value* p = llvm::ConstantFP::get(x->getType(), *it++);
  for (; it != std::rend(coefficients); ++it) p = fma(b, p, x, llvm::ConstantFP::get(x->getType(), *it));
  return p;
}

// 2^n as a float, for integer n in [-126, 127] (an i32).
llvm::Value* pow2i(llvm::IRBuilder<>& b, llvm::Value* n) {
  llvm::Value* bits = b.CreateShl(b.CreateAdd(n, b.getInt32(127)), 23);
  return b.CreateBitCast(bits, b.getFloatTy());
}

}  // namespace

llvm::Value* expf(llvm::IRBuilder<>& b, llvm::Value* x) {
  // Beyond these exp is +inf or rounds to 0; clamping keeps n in range
  // (a NaN fails both ordered compares and is restored at the end).
  llvm::Value* clamped = b.CreateSelect(b.CreateFCmpOGT(x, c(b, 89.0)), c(b, 89.0), x);
  clamped = b.CreateSelect(b.CreateFCmpOLT(clamped, c(b, -104.0)), c(b, -104.0), clamped);
  llvm::Value* n = b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b.CreateFMul(clamped, c(b, 1.4426950408889634)));
  // ln2 split so that n * kLn2Hi is exact for |n| < 2^8
  llvm::Value* r = fma(b, n, c(b, -0.693145751953125), clamped);
  r = fma(b, n, c(b, -1.4286068203094172e-06), r);
  llvm::Value* p = horner(b, r, {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040});
  llvm::Value* ni = b.CreateFPToSI(n, b.getInt32Ty());
  llvm::Value* half = b.CreateAShr(ni, 1);
  llvm::Value* result = b.CreateFMul(b.CreateFMul(p, pow2i(b, half)), pow2i(b, b.CreateSub(ni, half)));
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, result);
}

llvm::Value* expf_nonpositive(llvm::IRBuilder<>& b, llvm::Value* x) {
  // t = x log2(e) + 1.5 * 2^23 + 127, rounded once to an integer: its low
  // mantissa bits are n + 127, which shifted into place are 2^n for the
  // n in [-126, 0] that x in [-87.34, 0] gives.
  const double magic = 12582912.0 + 127.0;
  llvm::Value* t = fma(b, x, c(b, 1.4426950408889634), c(b, magic));
  llvm::Value* scale = b.CreateBitCast(b.CreateShl(b.CreateBitCast(t, b.getInt32Ty()), 23), b.getFloatTy());
  llvm::Value* n = b.CreateFSub(t, c(b, magic));
  llvm::Value* r = fma(b, n, c(b, -0.693145751953125), x);
  r = fma(b, n, c(b, -1.4286068203094172e-06), r);
  // Minimax for exp on [-ln2/2, ln2/2] with the first two terms fixed (relative error 3e-9).
  llvm::Value* p = horner(b, r, {1.0, 1.0, 0.499999934514732, 0.1666652068755946, 0.041668387408390406,
                                 0.008368710035647377, 0.0013814611010653012});
  // NaN fails the compare and stays NaN through p; -inf and anything below
  // the normal range become 0.
  return b.CreateSelect(b.CreateFCmpOLT(x, c(b, -87.33654)), c(b, 0.0), b.CreateFMul(p, scale));
}

llvm::Value* tanhf(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Value* ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* big = b.CreateSelect(b.CreateFCmpOGT(ax, c(b, 10.0)), c(b, 10.0), ax);
  llvm::Value* e = expf(b, b.CreateFMul(big, c(b, 2.0)));
  llvm::Value* large = b.CreateFDiv(b.CreateFSub(e, c(b, 1.0)), b.CreateFAdd(e, c(b, 1.0)));
  // tanh x = x (1 - x^2/3 + 2x^4/15 - 17x^6/315 + 62x^8/2835 - 1382x^10/155925 + 21844x^12/6081075)
  llvm::Value* x2 = b.CreateFMul(x, x);
  llvm::Value* small = b.CreateFMul(
      x, horner(b, x2, {1.0, -1.0 / 3, 2.0 / 15, -17.0 / 315, 62.0 / 2835, -1382.0 / 155925, 21844.0 / 6081075}));
  llvm::Value* signed_large = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, large, x);
  // |x| < 0.3 (NaN fails the compare and takes `large`, which is NaN)
  return b.CreateSelect(b.CreateFCmpOLT(ax, c(b, 0.3)), small, signed_large);
}

llvm::Value* sigmoidf(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Value* e = expf(b, b.CreateFNeg(x));
  return b.CreateFDiv(c(b, 1.0), b.CreateFAdd(c(b, 1.0), e));
}

llvm::Value* sinf_small(llvm::IRBuilder<>& b, llvm::Value* x) {
  llvm::Type* t = x->getType();  // float, or a vector of them
  auto k = [&](double v) { return llvm::ConstantFP::get(t, v); };
  llvm::Value* q = b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b.CreateFMul(x, k(0.318309886183790671)));
  llvm::Value* minus_q = b.CreateFNeg(q);
  // pi split so that q * each part is exact for the q that |x| < 16 gives
  llvm::Value* r = fma(b, minus_q, k(3.1414794921875), x);
  r = fma(b, minus_q, k(0.00011315941810607910156), r);
  r = fma(b, minus_q, k(1.9841872589410058936e-09), r);
  llvm::Value* r2 = b.CreateFMul(r, r);
  // minimax on [-pi/2, pi/2]: r + r^3 (c3 + r^2 (c5 + r^2 (c7 + r^2 c9)))
  llvm::Value* p = horner(b, r2, {-0.166666597127914428710938, 0.00833307858556509017944336,
                                  -0.0001981069071916863322258, 2.6083159809786593541503e-06});
  llvm::Value* sin_r = fma(b, b.CreateFMul(r2, p), r, r);
  // (-1)^q: q's lowest bit into the sign bit
  llvm::Type* ints = t->getWithNewType(b.getInt32Ty());
  llvm::Value* sign = b.CreateShl(b.CreateFPToSI(q, ints), 31);
  llvm::Value* sin_x = b.CreateBitCast(b.CreateXor(b.CreateBitCast(sin_r, ints), sign), t);
  // sin(-0) is -0, but r = -0 - q pi rounds to +0 (q is -0): zeros are their own sine
  return b.CreateSelect(b.CreateFCmpOEQ(x, k(0.0)), x, sin_x);
}

}  // namespace tj::jit::math
