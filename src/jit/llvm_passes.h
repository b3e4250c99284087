// The optimization pipeline of kernels: LLVM's O3 with the host
// TargetMachine (so the loop vectorizer emits the host's SIMD) and glibc's
// libmvec as the vector library: LLVM's table, the variants glibc 2.36
// exports that the table lacks (tanh, erf, expm1), and on hosts with
// AVX-512F glibc's 16-wide float / 8-wide double variants. The facts behind
// the set-up (the TargetMachine given to the PassBuilder, libmvec
// registered before the function analyses) are in TOOLCHAIN.md, "LLVM
// kernels".
#pragma once

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

namespace tj::jit {

void optimize(llvm::Module& m, llvm::TargetMachine& tm, bool has_avx512f);

}  // namespace tj::jit
