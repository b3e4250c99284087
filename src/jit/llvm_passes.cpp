// The optimization pipeline of kernels; see llvm_passes.h.
#include "jit/llvm_passes.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScalarEvolutionExpressions.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/LoopUtils.h>
#include <llvm/Transforms/Utils/ScalarEvolutionExpander.h>

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

// A flat entry, `(ptr ptrs, i64 rows, i64 cols)`: the emitter's only
// entry with that signature (strided entries take three pointers).
bool is_flat_entry(const llvm::Function& f) {
  return !f.isDeclaration() && f.arg_size() == 3 && f.getArg(2)->getType()->isIntegerTy(64);
}

// The `ptrs` slot of the buffer `address` is in (based on a pointer the
// entry loads from `ptrs[slot]`, its first argument), or -1.
int64_t buffer_slot(const llvm::Function& f, const llvm::Value* address) {
  auto* base = llvm::dyn_cast<llvm::LoadInst>(llvm::getUnderlyingObject(address, 0));
  if (!base) return -1;
  const llvm::DataLayout& dl = f.getParent()->getDataLayout();
  int64_t offset = 0;
  if (llvm::GetPointerBaseWithConstantOffset(base->getPointerOperand(), offset, dl) != f.getArg(0)) return -1;
  const int64_t slot = static_cast<int64_t>(dl.getPointerSize());
  return offset % slot == 0 ? offset / slot : -1;
}

// The buffer slots a tag (kPrefetchAhead) names; empty for another loop.
std::vector<int64_t> tagged_buffers(const llvm::Loop& loop) {
  llvm::MDNode* tag = llvm::findOptionMDForLoop(&loop, kPrefetchAhead);
  if (!tag || tag->getNumOperands() < 3 || !loop.isInnermost() ||
      !llvm::findOptionMDForLoop(&loop, "llvm.loop.isvectorized"))
    return {};
  std::vector<int64_t> buffers;
  for (unsigned i = 2; i < tag->getNumOperands(); ++i)
    buffers.push_back(llvm::mdconst::extract<llvm::ConstantInt>(tag->getOperand(i))->getSExtValue());
  return buffers;
}

bool contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

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
    if (!is_flat_entry(f)) return llvm::PreservedAnalyses::all();
    bool changed = false;
    std::map<uint64_t, llvm::Value*> row_distance;  // by element size, made once in the entry block
    for (llvm::Loop* loop : fam.getResult<llvm::LoopAnalysis>(f).getLoopsInPreorder()) {
      const std::vector<int64_t> buffers = tagged_buffers(*loop);
      if (buffers.empty()) continue;
      llvm::MDNode* tag = llvm::findOptionMDForLoop(loop, kPrefetchAhead);
      const auto distance = static_cast<PrefetchDistance>(
          llvm::mdconst::extract<llvm::ConstantInt>(tag->getOperand(1))->getSExtValue());
      for (llvm::BasicBlock* block : loop->blocks())
        for (llvm::Instruction& inst : *block) {
          llvm::Value* address = llvm::getLoadStorePointerOperand(&inst);
          if (!address) continue;
          llvm::Type* type = llvm::getLoadStoreType(&inst);
          // a store that bypasses the cache (StreamStores) asks for nothing
          if (!type->isVectorTy() || !contains(buffers, buffer_slot(f, address)) ||
              inst.getMetadata(llvm::LLVMContext::MD_nontemporal))
            continue;
          prefetch(inst, address, ahead(f, distance, type->getScalarType(), row_distance),
                   llvm::isa<llvm::StoreInst>(inst));
          changed = true;
        }
    }
    return changed ? llvm::PreservedAnalyses::none() : llvm::PreservedAnalyses::all();
  }

 private:
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

// Stores that bypass the cache (llvm_passes.h, kStreamBytes): a tagged
// vectorized loop of one block that writes an output the kernel never
// reads back gets a twin whose vector stores to those outputs are
// non-temporal. The preheader picks the twin when the call writes at least
// kStreamBytes and every such store's first address is aligned to its size
// (MOVNTPS faults otherwise): chunks of a parallel loop, in-place outputs
// in views, or an odd row length keep the plain loop. An sfence before the
// entry returns makes the stores visible to the threads that read them.
class StreamStores : public llvm::PassInfoMixin<StreamStores> {
 public:
  llvm::PreservedAnalyses run(llvm::Function& f, llvm::FunctionAnalysisManager& fam) {
    if (!is_flat_entry(f) || !llvm::Triple(f.getParent()->getTargetTriple()).isX86())
      return llvm::PreservedAnalyses::all();
    std::optional<std::vector<int64_t>> read = buffers_read(f);  // outputs in it are read back
    if (!read) return llvm::PreservedAnalyses::all();
    auto& loops = fam.getResult<llvm::LoopAnalysis>(f);
    auto& se = fam.getResult<llvm::ScalarEvolutionAnalysis>(f);
    std::vector<std::pair<llvm::Loop*, std::vector<llvm::StoreInst*>>> twins;
    for (llvm::Loop* loop : loops.getLoopsInPreorder()) {
      const std::vector<int64_t> buffers = tagged_buffers(*loop);
      if (buffers.empty() || loop->getNumBlocks() != 1 || !loop->getLoopPreheader() || !loop->getExitBlock() ||
          !only_phis_of_exit_read(*loop))
        continue;
      std::vector<llvm::StoreInst*> stores;
      for (llvm::Instruction& inst : *loop->getHeader())
        if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst)) {
          const int64_t slot = buffer_slot(f, store->getPointerOperand());
          if (store->getValueOperand()->getType()->isVectorTy() && contains(buffers, slot) && !contains(*read, slot))
            stores.push_back(store);
        }
      if (!stores.empty()) twins.emplace_back(loop, std::move(stores));
    }
    int made = 0;
    for (auto& [loop, stores] : twins) made += make_twin(f, se, *loop, stores);
    if (made == 0) return llvm::PreservedAnalyses::all();
    for (llvm::BasicBlock& block : f)
      if (auto* ret = llvm::dyn_cast<llvm::ReturnInst>(block.getTerminator()))
        llvm::IRBuilder<>(ret).CreateIntrinsic(llvm::Intrinsic::x86_sse_sfence, {}, {});
    return llvm::PreservedAnalyses::none();
  }

 private:
  // The buffers the entry loads from, besides `ptrs`; none when it may read
  // memory it does not name (a call that reads memory, an address of
  // unknown base).
  static std::optional<std::vector<int64_t>> buffers_read(const llvm::Function& f) {
    std::vector<int64_t> read;
    for (const llvm::BasicBlock& block : f)
      for (const llvm::Instruction& inst : block) {
        if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst)) {
          if (llvm::getUnderlyingObject(load->getPointerOperand(), 0) == f.getArg(0)) continue;
          const int64_t slot = buffer_slot(f, load->getPointerOperand());
          if (slot < 0) return std::nullopt;
          read.push_back(slot);
        } else if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst)) {
          if (call->mayReadFromMemory() && !call->onlyAccessesInaccessibleMemory()) return std::nullopt;
        }
      }
    return read;
  }

  // Values of the loop read outside it only by PHIs of its exit block, so a
  // twin adds an incoming value there and needs nothing else.
  static bool only_phis_of_exit_read(const llvm::Loop& loop) {
    for (const llvm::Instruction& inst : *loop.getHeader())
      for (const llvm::User* user : inst.users()) {
        auto* use = llvm::cast<llvm::Instruction>(user);
        if (use->getParent() != loop.getHeader() &&
            !(llvm::isa<llvm::PHINode>(use) && use->getParent() == loop.getExitBlock()))
          return false;
      }
    return true;
  }

  // The preheader's condition: enough bytes written and every store's first
  // address aligned to its size; null when a store's address is not an
  // affine function of the loop counter stepping by multiples of its size.
  static llvm::Value* twin_condition(llvm::Function& f, llvm::ScalarEvolution& se, llvm::Loop& loop,
                                     const std::vector<llvm::StoreInst*>& stores) {
    llvm::BasicBlock* pre = loop.getLoopPreheader();
    const llvm::DataLayout& dl = f.getParent()->getDataLayout();
    llvm::SCEVExpander expander(se, dl, "stream");
    std::map<int64_t, uint64_t> element_bytes;                   // by buffer
    std::vector<std::pair<const llvm::SCEV*, uint64_t>> firsts;  // first addresses to check, with store sizes
    // aligned if one already checked is: a multiple of the same store size from it
    auto follows = [&](const llvm::SCEV* first, uint64_t bytes) {
      return std::any_of(firsts.begin(), firsts.end(), [&](const auto& c) {
        auto* apart = llvm::dyn_cast<llvm::SCEVConstant>(se.getMinusSCEV(first, c.first));
        return c.second == bytes && apart && apart->getAPInt().getSExtValue() % static_cast<int64_t>(bytes) == 0;
      });
    };
    for (llvm::StoreInst* store : stores) {
      const uint64_t bytes = dl.getTypeStoreSize(store->getValueOperand()->getType());
      auto* address = llvm::dyn_cast<llvm::SCEVAddRecExpr>(se.getSCEV(store->getPointerOperand()));
      if (!address || address->getLoop() != &loop || !address->isAffine()) return nullptr;
      auto* step = llvm::dyn_cast<llvm::SCEVConstant>(address->getStepRecurrence(se));
      if (!step || step->getAPInt().getSExtValue() % static_cast<int64_t>(bytes) != 0 ||
          !expander.isSafeToExpandAt(address->getStart(), pre->getTerminator()))
        return nullptr;
      element_bytes[buffer_slot(f, store->getPointerOperand())] =
          dl.getTypeStoreSize(store->getValueOperand()->getType()->getScalarType());
      if (!follows(address->getStart(), bytes)) firsts.emplace_back(address->getStart(), bytes);
    }
    llvm::IRBuilder<> b(pre->getTerminator());
    llvm::Value* misaligned = nullptr;
    for (const auto& [start, bytes] : firsts) {
      llvm::Value* first = expander.expandCodeFor(start, b.getPtrTy(), pre->getTerminator());
      llvm::Value* low = b.CreateAnd(b.CreatePtrToInt(first, b.getInt64Ty()), b.getInt64(bytes - 1));
      misaligned = misaligned ? b.CreateOr(misaligned, low) : low;
    }
    uint64_t element_row = 0;  // bytes written for each of the call's rows x cols elements
    for (const auto& [slot, size] : element_bytes) element_row += size;
    llvm::Value* written = b.CreateMul(b.CreateMul(f.getArg(1), f.getArg(2)), b.getInt64(element_row));
    return b.CreateAnd(b.CreateICmpEQ(misaligned, b.getInt64(0)), b.CreateICmpUGE(written, b.getInt64(kStreamBytes)),
                       "stream");
  }

  static bool make_twin(llvm::Function& f, llvm::ScalarEvolution& se, llvm::Loop& loop,
                        const std::vector<llvm::StoreInst*>& stores) {
    llvm::Value* stream = twin_condition(f, se, loop, stores);
    if (!stream) return false;
    llvm::BasicBlock* body = loop.getHeader();
    llvm::BasicBlock* pre = loop.getLoopPreheader();
    llvm::ValueToValueMapTy map;
    llvm::BasicBlock* twin = llvm::CloneBasicBlock(body, map, ".stream", &f);
    map[body] = twin;
    llvm::SmallVector<llvm::BasicBlock*, 1> blocks{twin};
    llvm::remapInstructionsInBlocks(blocks, map);
    for (llvm::PHINode& phi : loop.getExitBlock()->phis()) {
      llvm::Value* v = phi.getIncomingValueForBlock(body);
      llvm::Value* mapped = map.lookup(v);
      phi.addIncoming(mapped ? mapped : v, twin);
    }
    llvm::MDNode* nontemporal = llvm::MDNode::get(
        f.getContext(), {llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(f.getContext()), 1))});
    const llvm::DataLayout& dl = f.getParent()->getDataLayout();
    for (llvm::StoreInst* store : stores) {
      auto* copy = llvm::cast<llvm::StoreInst>(map[store]);
      copy->setAlignment(llvm::Align(dl.getTypeStoreSize(copy->getValueOperand()->getType())));
      copy->setMetadata(llvm::LLVMContext::MD_nontemporal, nontemporal);
    }
    llvm::Instruction* jump = pre->getTerminator();
    llvm::BranchInst::Create(twin, body, stream, jump);
    jump->eraseFromParent();
    return true;
  }
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
  pb.registerOptimizerLastEPCallback([](llvm::ModulePassManager& mpm, llvm::OptimizationLevel) {
    llvm::FunctionPassManager fpm;
    fpm.addPass(StreamStores());
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
