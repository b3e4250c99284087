// The optimization pipeline of kernels; see llvm_passes.h.
#include "jit/llvm_passes.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>

#include "jit/llvm_compat.h"

namespace tj::jit {

namespace {

// Vector variants glibc 2.36 exports that LLVM 16's libmvec table lacks.
const llvm::VecDesc kExtraVectorFunctions[] = {
    {"tanhf", "_ZGVdN8v_tanhf", llvm::ElementCount::getFixed(8)},
    {"tanhf", "_ZGVbN4v_tanhf", llvm::ElementCount::getFixed(4)},
    {"tanh", "_ZGVdN4v_tanh", llvm::ElementCount::getFixed(4)},
    {"tanh", "_ZGVbN2v_tanh", llvm::ElementCount::getFixed(2)},
    {"erff", "_ZGVdN8v_erff", llvm::ElementCount::getFixed(8)},
    {"erff", "_ZGVbN4v_erff", llvm::ElementCount::getFixed(4)},
    {"erf", "_ZGVdN4v_erf", llvm::ElementCount::getFixed(4)},
    {"erf", "_ZGVbN2v_erf", llvm::ElementCount::getFixed(2)},
    {"expm1f", "_ZGVdN8v_expm1f", llvm::ElementCount::getFixed(8)},
    {"expm1f", "_ZGVbN4v_expm1f", llvm::ElementCount::getFixed(4)},
    {"expm1", "_ZGVdN4v_expm1", llvm::ElementCount::getFixed(4)},
    {"expm1", "_ZGVbN2v_expm1", llvm::ElementCount::getFixed(2)},
};

// glibc's AVX-512 variants, which LLVM 16's table lacks: only for hosts
// with AVX-512F (the vectorizer may pick them whatever the host).
const llvm::VecDesc kAvx512VectorFunctions[] = {
    {"sinf", "_ZGVeN16v_sinf", llvm::ElementCount::getFixed(16)},
    {"llvm.sin.f32", "_ZGVeN16v_sinf", llvm::ElementCount::getFixed(16)},
    {"cosf", "_ZGVeN16v_cosf", llvm::ElementCount::getFixed(16)},
    {"llvm.cos.f32", "_ZGVeN16v_cosf", llvm::ElementCount::getFixed(16)},
    {"logf", "_ZGVeN16v_logf", llvm::ElementCount::getFixed(16)},
    {"llvm.log.f32", "_ZGVeN16v_logf", llvm::ElementCount::getFixed(16)},
    {"erff", "_ZGVeN16v_erff", llvm::ElementCount::getFixed(16)},
    {"expm1f", "_ZGVeN16v_expm1f", llvm::ElementCount::getFixed(16)},
    {"powf", "_ZGVeN16vv_powf", llvm::ElementCount::getFixed(16)},
    {"llvm.pow.f32", "_ZGVeN16vv_powf", llvm::ElementCount::getFixed(16)},
    {"sin", "_ZGVeN8v_sin", llvm::ElementCount::getFixed(8)},
    {"llvm.sin.f64", "_ZGVeN8v_sin", llvm::ElementCount::getFixed(8)},
    {"cos", "_ZGVeN8v_cos", llvm::ElementCount::getFixed(8)},
    {"llvm.cos.f64", "_ZGVeN8v_cos", llvm::ElementCount::getFixed(8)},
    {"log", "_ZGVeN8v_log", llvm::ElementCount::getFixed(8)},
    {"llvm.log.f64", "_ZGVeN8v_log", llvm::ElementCount::getFixed(8)},
    {"exp", "_ZGVeN8v_exp", llvm::ElementCount::getFixed(8)},
    {"llvm.exp.f64", "_ZGVeN8v_exp", llvm::ElementCount::getFixed(8)},
    {"erf", "_ZGVeN8v_erf", llvm::ElementCount::getFixed(8)},
    {"expm1", "_ZGVeN8v_expm1", llvm::ElementCount::getFixed(8)},
    {"pow", "_ZGVeN8vv_pow", llvm::ElementCount::getFixed(8)},
    {"llvm.pow.f64", "_ZGVeN8vv_pow", llvm::ElementCount::getFixed(8)},
};

}  // namespace

void optimize(llvm::Module& m, llvm::TargetMachine& tm, bool has_avx512f) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(&tm, pto);
  llvm::Triple triple(m.getTargetTriple());
  llvm::TargetLibraryInfoImpl tlii(triple);
  llvm_compat::add_libmvec(tlii, triple);
  tlii.addVectorizableFunctions(kExtraVectorFunctions);
  if (has_avx512f) tlii.addVectorizableFunctions(kAvx512VectorFunctions);
  // before registerFunctionAnalyses, or the default TLI wins silently
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

std::string module_text(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return os.str();
}

// The optimized module as an object file for the host.
Expected<std::string> emit_object(llvm::Module& m, llvm::TargetMachine& tm, const std::string& kernel) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm_compat::kObjectFile))
    return Error{"the target cannot emit an object file for " + kernel};
  pm.run(m);
  return std::string(buffer.data(), buffer.size());
}

}  // namespace tj::jit
