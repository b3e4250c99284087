// The one place where LLVM versions differ for tracejit (LLVM 16 is what the
// build uses; 14 is what Debian 12 defaults to). Everything else in the jit
// layer calls these helpers instead of testing LLVM_VERSION_MAJOR itself.
#pragma once

#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/ADT/Triple.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/CommandLine.h>

namespace tj::jit::llvm_compat {

// The address of `name` in `dylib` of `jit` as a function pointer, or an llvm::Error.
template <typename Fn>
llvm::Expected<Fn> lookup_function(llvm::orc::LLJIT& jit, llvm::orc::JITDylib& dylib, llvm::StringRef name) {
  auto symbol = jit.lookup(dylib, name);
  if (!symbol) return symbol.takeError();
#if LLVM_VERSION_MAJOR >= 15
  return symbol->template toPtr<Fn>();
#else
  return reinterpret_cast<Fn>(static_cast<uintptr_t>(symbol->getAddress()));
#endif
}

// Maps llvm.sin/cos/exp/... to glibc's libmvec vector variants.
inline void add_libmvec(llvm::TargetLibraryInfoImpl& tlii, const llvm::Triple& triple) {
#if LLVM_VERSION_MAJOR >= 16
  tlii.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86, triple);
#else
  (void)triple;
  tlii.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86);
#endif
}

// The file type that asks a TargetMachine for an object file.
#if LLVM_VERSION_MAJOR >= 18
inline constexpr auto kObjectFile = llvm::CodeGenFileType::ObjectFile;
#else
inline constexpr auto kObjectFile = llvm::CGFT_ObjectFile;
#endif

// Whether the loop vectorizer vectorizes epilogues, set while an object of
// this lives. LLVM offers no per-loop or per-pass switch, only its
// `-enable-epilogue-vectorization` option (a process-wide cl::opt, the same
// in LLVM 14 to 18): it is set here and put back after, with the JIT's
// mutex held by the caller so no other kernel compiles meanwhile.
class ScopedEpilogueVectorization {
 public:
  explicit ScopedEpilogueVectorization(bool enable) {
    auto& options = llvm::cl::getRegisteredOptions();
    auto found = options.find("enable-epilogue-vectorization");
    if (found == options.end()) return;
    option_ = static_cast<llvm::cl::opt<bool>*>(found->second);
    saved_ = option_->getValue();
    option_->setValue(enable);
  }
  ~ScopedEpilogueVectorization() {
    if (option_) option_->setValue(saved_);
  }
  ScopedEpilogueVectorization(const ScopedEpilogueVectorization&) = delete;
  ScopedEpilogueVectorization& operator=(const ScopedEpilogueVectorization&) = delete;

 private:
  llvm::cl::opt<bool>* option_ = nullptr;
  bool saved_ = true;
};

}  // namespace tj::jit::llvm_compat
