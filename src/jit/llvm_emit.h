// Loop IR -> LLVM IR: the IR of one kernel's entry point; see llvm_emit.cpp.
// llvm_codegen.cpp optimizes it, makes machine code and caches it.
#pragma once

#include <string>

#include "jit/loop_ir.h"

namespace llvm {
class Module;
}

namespace tj::jit {

// What the IR is made for: the host CPU (llvm_codegen.cpp's JIT).
struct EmitTarget {
  std::string cpu;
  std::string features;
  bool avx512f = false;
};

// Emits `kernel`'s entry point `<name>_flat` (when `flat`) or
// `<name>_strided`, and the body it inlines, into `m`.
void emit_kernel(const loop::Kernel& kernel, llvm::Module& m, const EmitTarget& target, const std::string& name,
                 bool flat);

}  // namespace tj::jit
