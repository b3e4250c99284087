// Loop IR -> LLVM IR (llvm_emit.h) -> machine code; see llvm_codegen.h.
//
// One module per kernel entry point. The facts behind the pass set-up (the
// TargetMachine given to the PassBuilder, libmvec registered before the
// function analyses, libmvec loaded into the JIT's search path) are in
// TOOLCHAIN.md, "LLVM kernels".
#include "jit/llvm_codegen.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <unordered_map>

#include <llvm/ADT/StringMap.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "jit/kernel_cache.h"
#include "jit/llvm_compat.h"
#include "jit/llvm_emit.h"
#include "jit/llvm_passes.h"
#include "support/log.h"

namespace tj::jit {

namespace {

// Part of every kernel's cache key: raise it when the LLVM IR that a loop
// IR becomes changes (llvm_emit.cpp), so that a disk cache written by an
// older build of the same version is not used.
constexpr int kCodegenRevision = 5;

std::atomic<long long> g_compiled{0};
std::atomic<long long> g_cache_hits{0};

std::string error_text(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return os.str();
}

// The process's JIT, the host description and the kernel cache. Kernels
// go into `dylib`; tracejit.reset() starts a new one (forget_kernels), so
// that kernels compiled or loaded afterwards may define the same symbols
// again while the old ones stay alive for callers that still hold them.
struct Jit {
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  llvm::orc::JITDylib* dylib = nullptr;
  int generation = 0;
  std::unique_ptr<llvm::TargetMachine> tm;
  EmitTarget target;  // the host CPU
  std::string error;  // set when the JIT could not be created
  std::mutex mutex;
  std::unordered_map<std::string, CompiledKernel> cache;
};

// What kernels link against: the process's symbols (libm) and glibc's
// libmvec, which -lm does not load (without it vectorized sin/exp would
// not resolve). "" or what failed.
std::string add_generators(llvm::orc::LLJIT& lljit, llvm::orc::JITDylib& dylib) {
  char prefix = lljit.getDataLayout().getGlobalPrefix();
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix);
  if (!process) return error_text(process.takeError());
  dylib.addGenerator(std::move(*process));
  auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", prefix);
  if (!mvec) return "cannot load libmvec.so.1: " + error_text(mvec.takeError());
  dylib.addGenerator(std::move(*mvec));
  return "";
}

Jit& jit() {
  static Jit* j = [] {
    const auto started = std::chrono::steady_clock::now();
    auto* out = new Jit;  // lives as long as the process (kernels point into it)
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    EmitTarget& host_target = out->target;
    host_target.cpu = llvm::sys::getHostCPUName().str();
    llvm::StringMap<bool> host;
    std::vector<std::string> features;
    if (llvm::sys::getHostCPUFeatures(host))
      for (auto& f : host) features.push_back((f.second ? "+" : "-") + f.first().str());
    std::sort(features.begin(), features.end());
    for (const auto& f : features) host_target.features += (host_target.features.empty() ? "" : ",") + f;
    host_target.avx512f = host.lookup("avx512f");

    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) {
      out->error = error_text(jtmb.takeError());
      return out;
    }
    jtmb->setCPU(host_target.cpu);
    jtmb->getFeatures().addFeaturesVector(features);
    jtmb->setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
    auto tm = jtmb->createTargetMachine();
    if (!tm) {
      out->error = error_text(tm.takeError());
      return out;
    }
    out->tm = std::move(*tm);
    auto lljit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(*jtmb).create();
    if (!lljit) {
      out->error = error_text(lljit.takeError());
      return out;
    }
    out->lljit = std::move(*lljit);
    out->dylib = &out->lljit->getMainJITDylib();
    out->error = add_generators(*out->lljit, *out->dylib);
    TJ_LOG(perf, "llvm: the JIT set up in {:.2f} ms",
           std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    return out;
  }();
  return *j;
}


// Adds an object file to the JIT and looks its entry points up. Their
// names come from the kernel's key, so an object made by another process
// for the same kernel defines the same symbols.
Expected<CompiledKernel> link(Jit& j, const std::string& object, const std::string& name,
                              const loop::Kernel& kernel, bool flat) {
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(object, name);
  if (auto err = j.lljit->addObjectFile(*j.dylib, std::move(buffer)))
    return Error{"LLJIT cannot add " + kernel.name + ": " + error_text(std::move(err))};
  CompiledKernel out;
  if (flat) {
    auto fn = llvm_compat::lookup_function<loop::FlatFn>(*j.lljit, *j.dylib, name + "_flat");
    if (!fn) return Error{"LLJIT: " + error_text(fn.takeError())};
    out.flat = *fn;
  } else {
    auto fn = llvm_compat::lookup_function<loop::StridedFn>(*j.lljit, *j.dylib, name + "_strided");
    if (!fn) return Error{"LLJIT: " + error_text(fn.takeError())};
    out.strided = *fn;
  }
  return out;
}

struct OptimizedModule {
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> m;
};

// A flat pointwise entry over many elements is one long loop: what its
// vector loop leaves (less than one interleaved step) runs once per call,
// and a second vector loop for it costs more to compile than it saves.
// Over a few elements (30 ops on 16-element tensors) the vector loop may
// never run, and the second one does the work.
bool vectorize_epilogue(const loop::Kernel& kernel, bool flat) {
  constexpr int64_t kLongLoop = int64_t{1} << 16;  // elements
  if (!flat || kernel.reduced_dims > 0) return true;
  int64_t n = 1;
  for (int64_t s : kernel.sizes) n *= s;
  return n < kLongLoop;
}

Expected<OptimizedModule> optimized_module(const loop::Kernel& kernel, Jit& j, const std::string& name, bool flat) {
  OptimizedModule out;
  out.ctx = std::make_unique<llvm::LLVMContext>();
  out.m = std::make_unique<llvm::Module>(name, *out.ctx);
  llvm::Module& m = *out.m;
  m.setDataLayout(j.lljit->getDataLayout());
  m.setTargetTriple(j.tm->getTargetTriple().str());
  if (auto checked = loop::verify(kernel); !checked) return checked.error();
  emit_kernel(kernel, m, j.target, name, flat);
  std::string verify;
  llvm::raw_string_ostream verify_os(verify);
  if (llvm::verifyModule(m, &verify_os)) return Error{"invalid LLVM IR for " + kernel.name + ": " + verify};
  optimize(m, *j.tm, j.target.avx512f, vectorize_epilogue(kernel, flat));
  return out;
}

Expected<std::string> compile_to_object(const loop::Kernel& kernel, Jit& j, const std::string& name, bool flat) {
  auto start = std::chrono::steady_clock::now();
  auto opt = optimized_module(kernel, j, name, flat);
  if (!opt) return opt.error();
  auto optimized = std::chrono::steady_clock::now();
  TJ_LOG(output_code, "loop IR:\n{}optimized LLVM IR:\n{}", loop::print_kernel(kernel), module_text(*opt->m));
  auto object = emit_object(*opt->m, *j.tm, kernel.name);
  TJ_LOG(perf, "llvm: {}: LLVM IR built and optimized in {:.1f} ms, machine code in {:.1f} ms", kernel.name,
         std::chrono::duration<double, std::milli>(optimized - start).count(),
         std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - optimized).count());
  return object;
}

Expected<CompiledKernel> compile_entry(const loop::Kernel& kernel, bool flat);

// A flat entry's strided one, compiled when a call first needs it.
CompiledKernel with_lazy_strided(CompiledKernel ck, const loop::Kernel& kernel) {
  if (!ck.flat) return ck;
  ck.lazy_strided = std::make_shared<LazyStrided>([kernel]() -> Expected<loop::StridedFn> {
    TJ_LOG(perf, "llvm: {} called with inputs laid out otherwise than compiled for: compiling its strided entry",
           kernel.name);
    auto entry = compile_entry(kernel, /*flat=*/false);
    if (!entry) return entry.error();
    return entry->strided;
  });
  return ck;
}

// The process's JIT, or why it could not be set up.
Expected<Jit*> usable_jit() {
  Jit& j = jit();
  if (!j.lljit || !j.error.empty()) return Error{"LLVM JIT unavailable: " + j.error};
  return &j;
}

// One entry of `kernel`, from the in-memory cache, the disk cache or LLVM.
Expected<CompiledKernel> compile_entry(const loop::Kernel& kernel, bool flat) {
  auto usable = usable_jit();
  if (!usable) return usable.error();
  Jit& j = **usable;
  std::string key = loop::print_kernel(kernel, /*with_name=*/false) + j.target.cpu + ";" + j.target.features +
                    (flat ? ";flat" : ";strided") + ";codegen " + std::to_string(kCodegenRevision);
  std::lock_guard<std::mutex> lock(j.mutex);
  if (auto it = j.cache.find(key); it != j.cache.end()) {
    ++g_cache_hits;
    TJ_LOG(output_code, "kernel cache hit for {}", kernel.name);
    return it->second;
  }
  const std::string key_hash = kernel_cache::hash_hex(key);
  const std::string name = "tj_" + key_hash;
  try {
    if (auto object = kernel_cache::load(key)) {
      auto linked = link(j, *object, name, kernel, flat);
      if (linked) {
        *linked = with_lazy_strided(std::move(*linked), kernel);
        linked->key_hash = key_hash;
        ++g_cache_hits;
        TJ_LOG(output_code, "loop IR:\n{}(machine code from the disk cache, {}: no LLVM IR)",
               loop::print_kernel(kernel), kernel_cache::directory());
        j.cache.emplace(std::move(key), *linked);
        return linked;
      }
      // A bad entry whose symbols got defined cannot be compiled again under
      // the same names in this process: report it (the graph falls back).
      return Error{"kernel disk cache entry for " + kernel.name + " is unusable (" + linked.error().message +
                   "); delete " + kernel_cache::directory()};
    }
    auto start = std::chrono::steady_clock::now();
    auto object = compile_to_object(kernel, j, name, flat);
    if (!object) return object.error();
    auto compiled = link(j, *object, name, kernel, flat);
    if (!compiled) return compiled;
    *compiled = with_lazy_strided(std::move(*compiled), kernel);
    compiled->key_hash = key_hash;
    ++g_compiled;
    kernel_cache::store(key, *object);
    TJ_LOG(perf, "llvm: compiled {} ({} entry) in {:.1f} ms", kernel.name, flat ? "flat" : "strided",
           std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    j.cache.emplace(std::move(key), *compiled);
    return compiled;
  } catch (const std::exception& e) {
    // Nothing of LibTorch's runs here: whatever was thrown is a bug of ours.
    return Error{std::string("LLVM code generation failed: ") + e.what(), ErrorKind::internal};
  }
}

}  // namespace

bool prepare_jit() { return usable_jit().ok(); }

Expected<loop::StridedFn> LazyStrided::get() {
  std::call_once(once_, [this] {
    auto fn = compile_();
    if (fn) {
      fn_ = *fn;
    } else {
      error_ = fn.error().message;
    }
  });
  if (!fn_) return Error{error_};
  return fn_;
}

Expected<loop::StridedFn> CompiledKernel::strided_entry() const {
  if (strided) return strided;
  if (!lazy_strided) return Error{"the kernel has no strided entry"};
  return lazy_strided->get();
}

Expected<std::string> optimized_ir(const loop::Kernel& kernel, bool flat) {
  auto usable = usable_jit();
  if (!usable) return usable.error();
  Jit& j = **usable;
  std::lock_guard<std::mutex> lock(j.mutex);
  auto opt = optimized_module(kernel, j, "tj_ir_of_" + kernel.name, flat);
  if (!opt) return opt.error();
  return module_text(*opt->m);
}

Expected<CompiledKernel> compile_kernel(const loop::Kernel& kernel) {
  return compile_entry(kernel, loop::has_flat_entry(kernel));
}

void forget_kernels() {
  Jit& j = jit();
  std::lock_guard<std::mutex> lock(j.mutex);
  kernel_cache::refresh_directory();
  if (!j.lljit || j.cache.empty()) return;
  auto dylib = j.lljit->createJITDylib("tj_kernels_" + std::to_string(++j.generation));
  if (!dylib) {
    j.error = error_text(dylib.takeError());
    return;
  }
  if (std::string error = add_generators(*j.lljit, *dylib); !error.empty()) {
    j.error = error;
    return;
  }
  j.dylib = &*dylib;
  j.cache.clear();
}

long long kernels_compiled() { return g_compiled.load(); }
long long kernel_cache_hits() { return g_cache_hits.load(); }
void zero_kernel_counters() {
  g_compiled = 0;
  g_cache_hits = 0;
}

}  // namespace tj::jit
