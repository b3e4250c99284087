// The optimization pipeline of kernels and their object code: LLVM's O3 with the host
// TargetMachine (so the loop vectorizer emits the host's SIMD) and glibc's
// libmvec as the vector library: LLVM's table, the variants glibc 2.36
// exports that the table lacks (tanh, erf, expm1), and on hosts with
// AVX-512F glibc's 16-wide float / 8-wide double variants. The facts behind
// the set-up (the TargetMachine given to the PassBuilder, libmvec
// registered before the function analyses) are in TOOLCHAIN.md, "LLVM
// kernels".
#pragma once

#include <string>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "support/expected.h"

namespace tj::jit {

void optimize(llvm::Module& m, llvm::TargetMachine& tm, bool has_avx512f);

// The module's text, for the output_code log.
std::string module_text(const llvm::Module& m);

// The optimized module as an object file for the host (`kernel` names it in errors).
Expected<std::string> emit_object(llvm::Module& m, llvm::TargetMachine& tm, const std::string& kernel);

}  // namespace tj::jit
