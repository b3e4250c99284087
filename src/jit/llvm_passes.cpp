// The optimization pipeline of kernels; see llvm_passes.h.
#include "jit/llvm_passes.h"

#include <algorithm>
#include <map>
#include <vector>

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/LoopUtils.h>

#include "jit/llvm_compat.h"
#include "jit/llvm_math.h"

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

// The loop vectorizer refuses a loop that calls llvm.prefetch, so the
// prefetches of a loop tagged by the emitter (kPrefetchAhead) are added once
// it is vectorized, before each vector load from or store to a buffer the
// tag names. A vector access is at most a cache line or two, so memory is
// asked for line by line as the loop goes. Row distances stop at 4 KiB, the
// next page, where the hardware prefetcher stops: a row of megabytes asked
// for a row ahead would be evicted before its turn.
constexpr int64_t kMaxRowDistance = 4096;
constexpr int64_t kFixedDistance = 2048;

class PrefetchAhead : public llvm::PassInfoMixin<PrefetchAhead> {
 public:
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& fam) {
    if (f.isDeclaration() || f.arg_size() != 3 || !f.getArg(2)->getType()->isIntegerTy(64))
      return llvm::PreservedAnalyses::all();
    bool changed = false;
    std::map<uint64_t, llvm::Value*> row_distance;  // by element size, made once in the entry block
    for (llvm::Loop* loop : fam.getResult<llvm::LoopAnalysis>(f).getLoopsInPreorder()) {
      llvm::MDNode* tag = llvm::findOptionMDForLoop(loop, kPrefetchAhead);
      if (!tag || tag->getNumOperands() < 3 || !loop->isInnermost() ||
          !llvm::findOptionMDForLoop(loop, "llvm.loop.isvectorized"))
        continue;
      auto operand = [&](unsigned i) {
        return llvm::mdconst::extract<llvm::ConstantInt>(tag->getOperand(i))->getSExtValue();
      };
      const auto distance = static_cast<PrefetchDistance>(operand(1));
      std::vector<int64_t> buffers;
      for (unsigned i = 2; i < tag->getNumOperands(); ++i) buffers.push_back(operand(i));
      for (llvm::BasicBlock* block : loop->blocks())
        for (llvm::Instruction& inst : *block) {
          llvm::Value* address = llvm::getLoadStorePointerOperand(&inst);
          if (!address) continue;
          llvm::Type* type = llvm::getLoadStoreType(&inst);
          if (!type->isVectorTy() || !is_buffer(f, address, buffers)) continue;
          prefetch(inst, address, ahead(f, distance, type->getScalarType(), row_distance),
                   llvm::isa<llvm::StoreInst>(inst));
          changed = true;
        }
    }
    return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
  }

 private:
  // Whether `address` is in one of `buffers`: based on a pointer the entry
  // loads from `ptrs[b]` (its first argument).
  static bool is_buffer(llvm::Function& f, llvm::Value* address, const std::vector<int64_t>& buffers) {
    auto* base = llvm::dyn_cast<llvm::LoadInst>(llvm::getUnderlyingObject(address, 0));
    if (!base) return false;
    const llvm::DataLayout& dl = f.getParent()->getDataLayout();
    int64_t offset = 0;
    if (llvm::GetPointerBaseWithConstantOffset(base->getPointerOperand(), offset, dl) != f.getArg(0)) return false;
    const int64_t slot = static_cast<int64_t>(dl.getPointerSize());
    return offset % slot == 0 && std::find(buffers.begin(), buffers.end(), offset / slot) != buffers.end();
  }

  // How many bytes ahead; a row's distance is made once per element size, in the entry block.
  static llvm::Value* ahead(llvm::Function& f, PrefetchDistance distance, llvm::Type* element,
                            std::map<uint64_t, llvm::Value*>& row_distance) {
    if (distance == PrefetchDistance::fixed) return llvm::ConstantInt::get(f.getArg(2)->getType(), kFixedDistance);
    const uint64_t bytes = f.getParent()->getDataLayout().getTypeStoreSize(element);
    llvm::Value*& row = row_distance[bytes];
    if (!row) {
      llvm::IRBuilder<> entry(&*f.getEntryBlock().getFirstInsertionPt());
      row = entry.CreateBinaryIntrinsic(llvm::Intrinsic::umin,
                                        entry.CreateMul(f.getArg(2), entry.getInt64(bytes), "row.bytes"),
                                        entry.getInt64(kMaxRowDistance), nullptr, "prefetch.distance");
    }
    return row;
  }

  static void prefetch(llvm::Instruction& access, llvm::Value* address, llvm::Value* ahead, bool write) {
    llvm::IRBuilder<> b(&access);
    llvm::Value* next = b.CreateGEP(b.getInt8Ty(), address, ahead, "prefetch.at");
    // read or write, keep in all cache levels, data
    b.CreateIntrinsic(llvm::Intrinsic::prefetch, {next->getType()},
                      {next, b.getInt32(write ? 1 : 0), b.getInt32(3), b.getInt32(1)});
  }

};

// libmvec's float sin spends more time than the memory it streams in a
// pointwise loop, and its calls clobber every vector register. Once the
// loop is vectorized, each call becomes the inline polynomial
// (math::sinf_small) for vectors whose every lane is below kSinSmall in
// magnitude, and stays a call for the others (large arguments, NaN,
// infinities), behind a branch the predictor learns. Before
// vectorization a conditional call would keep the loop scalar.
class InlineSin : public llvm::PassInfoMixin<InlineSin> {
 public:
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager&) {
    std::vector<llvm::CallInst*> calls;
    for (llvm::BasicBlock& block : f)
      for (llvm::Instruction& inst : block)
        if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst))
          if (llvm::Function* callee = call->getCalledFunction();
              callee && callee->getName().startswith("_ZGV") && callee->getName().endswith("v_sinf") &&
              call->getType()->isVectorTy())
            calls.push_back(call);
    for (llvm::CallInst* call : calls) inline_small(call);
    return calls.empty() ? llvm::PreservedAnalyses::all() : llvm::PreservedAnalyses::none();
  }

 private:
  // head: small = sinf_small(v); br any(|v| >= kSinSmall or NaN), call, tail
  // call: big = libmvec(v)
  // tail: phi(small, big)
  static void inline_small(llvm::CallInst* call) {
    llvm::IRBuilder<> b(call);
    llvm::Value* v = call->getArgOperand(0);
    llvm::Value* small = math::sinf_small(b, v);
    llvm::Value* large = b.CreateFCmpUGE(b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v),
                                         llvm::ConstantFP::get(v->getType(), math::kSinSmall));
    llvm::BasicBlock* head = call->getParent();
    llvm::Instruction* then = llvm::SplitBlockAndInsertIfThen(
        b.CreateOrReduce(large), call, /*Unreachable=*/false,
        llvm::MDBuilder(call->getContext()).createBranchWeights(1, 1000));
    llvm::BasicBlock* tail = call->getParent();
    call->moveBefore(then);
    llvm::PHINode* sin = llvm::PHINode::Create(call->getType(), 2, "sin", &tail->front());
    call->replaceAllUsesWith(sin);
    sin->addIncoming(small, head);
    sin->addIncoming(call, then->getParent());
  }
};

}  // namespace

void optimize(llvm::Module& m, llvm::TargetMachine& tm, bool has_avx512f, bool vectorize_epilogue) {
  llvm_compat::ScopedEpilogueVectorization epilogue(vectorize_epilogue);
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
  pb.registerOptimizerLastEPCallback([](llvm::ModulePassManager& mpm, llvm::OptimizationLevel) {
    llvm::FunctionPassManager fpm;
    fpm.addPass(InlineSin());
    fpm.addPass(PrefetchAhead());
    mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
  });
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
