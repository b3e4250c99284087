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

// Loop metadata the emitter puts on loops of a flat entry that stream
// through memory: `!{!"tracejit.prefetch.ahead", i32 distance, i32 buffer...}`
// with a PrefetchDistance and the `ptrs` slots of row-major buffers. Once
// the loop is vectorized, each of its vector loads from those buffers is
// preceded by a prefetch of the place that distance on, and each vector
// store by a prefetch for writing. The hardware prefetcher stops at page
// boundaries and runs only a little ahead of a loop busy computing; asked
// for line by line while the loop works, the memory is in cache when its
// turn comes (docs/benchmarks.md: layer norm and softmax 1.1-1.2x faster,
// a pointwise chain with `sin` 1.3x).
inline constexpr const char* kPrefetchAhead = "tracejit.prefetch.ahead";
enum class PrefetchDistance {
  next_row,  // a reduction's row: `cols` elements (the flat entry's third argument), at most 4 KiB
  fixed,     // a pointwise loop: 2 KiB
};

// `vectorize_epilogue`: whether the loop vectorizer may give a vector loop
// a second one of half its width for the elements it leaves (LLVM does so
// after loops of 16 or more lanes: 512-bit float vectors). That loop is a
// third of a pointwise kernel's machine code and compile time; it pays
// where the vector loop runs many times over short rows, or over a few
// elements in all.
void optimize(llvm::Module& m, llvm::TargetMachine& tm, bool has_avx512f, bool vectorize_epilogue);

// The module's text, for the output_code log.
std::string module_text(const llvm::Module& m);

// The optimized module as an object file for the host (`kernel` names it in errors).
Expected<std::string> emit_object(llvm::Module& m, llvm::TargetMachine& tm, const std::string& kernel);

}  // namespace tj::jit
