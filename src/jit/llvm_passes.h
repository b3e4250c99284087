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

// Loop metadata the emitter puts on the first inner loop of a flat
// reduction kernel's row, with the indices of the row-major input buffers
// (`ptrs` slots): once the loop is vectorized, each of its vector loads from
// them is preceded by a prefetch of the same place in the next row (at most
// 4 KiB on). Rows are
// often a page, where the hardware prefetcher stops; asked for line by line
// while this row is read, the next one is in cache when its turn comes (a
// layer norm over (4096, 1024) 1.2x faster, softmax 1.08x against one burst
// of prefetches at the start of each row, docs/benchmarks.md).
inline constexpr const char* kPrefetchNextRow = "tracejit.prefetch.next_row";

void optimize(llvm::Module& m, llvm::TargetMachine& tm, bool has_avx512f);

// The module's text, for the output_code log.
std::string module_text(const llvm::Module& m);

// The optimized module as an object file for the host (`kernel` names it in errors).
Expected<std::string> emit_object(llvm::Module& m, llvm::TargetMachine& tm, const std::string& kernel);

}  // namespace tj::jit
