// Code generation: a loop-IR kernel becomes machine code through LLVM ORC.
//
// One LLJIT per process (created on first use, host CPU and features), one
// module per kernel, the O3 pipeline with the host TargetMachine (the loop
// vectorizer emits the host's SIMD) and glibc's libmvec for vector math.
// Kernels are cached in memory by the canonical text of their loop IR plus
// the host CPU's name and features; `kernels_compiled` and
// `kernel_cache_hits` count what happened. This is the only translation
// unit that includes LLVM's ORC headers; the IR is emitted by
// llvm_emit.h, the pass pipeline is in llvm_passes.h, reductions' IR in
// llvm_reduce.h.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "jit/loop_ir.h"
#include "support/expected.h"

namespace tj::jit {

// An entry compiled on first need, once, whichever thread asks first.
class LazyStrided {
 public:
  explicit LazyStrided(std::function<Expected<loop::StridedFn>()> compile) : compile_(std::move(compile)) {}
  Expected<loop::StridedFn> get();

 private:
  std::function<Expected<loop::StridedFn>()> compile_;
  std::once_flag once_;
  loop::StridedFn fn_ = nullptr;
  std::string error_;
};

struct CompiledKernel {
  loop::StridedFn strided = nullptr;
  loop::FlatFn flat = nullptr;  // only when loop::has_flat_entry
  // With `flat`, `strided` is left for the calls that need it (inputs laid
  // out otherwise than compiled for): compiling one entry instead of two
  // halves a kernel's compile time. Shared by copies.
  std::shared_ptr<LazyStrided> lazy_strided;
  // The hash of the kernel-cache key it was found or compiled under: equal
  // for kernels whose loop IR prints the same (sizes are not in it).
  std::string key_hash;

  // `strided`, compiled now if it was left for later.
  Expected<loop::StridedFn> strided_entry() const;
};

// Compiles (or finds in the cache) `kernel`: its flat entry when it has
// one, else its strided entry. The machine code lives as long as the
// process. Thread-safe.
Expected<CompiledKernel> compile_kernel(const loop::Kernel& kernel);

// The optimized LLVM IR of `kernel`'s flat or strided entry, as the
// output_code log prints it (for tests: nothing is compiled or cached).
Expected<std::string> optimized_ir(const loop::Kernel& kernel, bool flat);

// tracejit.reset(): the in-memory kernel cache is forgotten (kernels
// already handed out stay valid) and the disk cache's directory is read
// again from the environment.
void forget_kernels();

// Sets up the process's LLVM JIT (target, host CPU features, LLJIT, the
// symbol generators) now rather than at the first kernel: what the runtime's
// warm-up thread calls (runtime/warm_up.h). Thread-safe; false when the JIT
// cannot be set up (the first kernel reports why).
bool prepare_jit();

long long kernels_compiled();
long long kernel_cache_hits();
void zero_kernel_counters();

}  // namespace tj::jit
