// The `nvrtc` backend (issue 13, first part): the llvm backend's lowering,
// each kernel rendered as CUDA C (cuda_codegen.h) and compiled to PTX with
// NVRTC. Running them needs the CUDA driver and a device, which this
// backend does not drive yet: the graph then runs on the `llvm` backend's
// kernels, and the first compile says so in one warning (the `perf` log
// repeats it per graph). A kernel the CUDA generator cannot express or
// NVRTC rejects fails the compile (BackendCompilerFailed: with
// suppress_errors, the runtime runs the graph eagerly with a warning).
#include "jit/nvrtc_backend.h"

#include <atomic>
#include <cstdio>

#include "jit/backend_info.h"
#include "jit/cuda_codegen.h"
#include "jit/kernel_cache.h"
#include "jit/llvm_backend.h"
#include "jit/lowering.h"
#include "jit/nvrtc_compile.h"
#include "support/log.h"

namespace tj::jit {

namespace {
std::atomic<long long> g_generated{0};
std::atomic<long long> g_ptx_cache_hits{0};
std::atomic<bool> g_warned{false};
}  // namespace

graph::Expected<std::vector<GeneratedKernel>> generate_cuda(std::shared_ptr<const graph::Graph> graph) {
  auto program = lower(std::move(graph), LoweringOptions{.inject_bug = debug_inject_bug()});
  if (!program) return program.error();
  std::vector<GeneratedKernel> out;
  const std::string arch = nvrtc::arch();
  for (size_t i = 0; i < program->kernels.size(); ++i) {
    const loop::Kernel& k = program->kernels[i];
    GeneratedKernel g;
    g.name = "tj_cuda_" + std::to_string(i) + "_" + k.name;
    auto source = cuda::render(k, g.name);
    if (!source) return graph::Error{"nvrtc backend: kernel " + k.name + ": " + source.error().message};
    g.source = std::move(*source);
    // PTX is cached on disk like the llvm kernels' objects (kernel_cache.h),
    // keyed by the source, the architecture and NVRTC's version.
    const std::string key = "nvrtc " + nvrtc_version_line() + " " + arch + "\n" + g.source;
    if (auto cached = kernel_cache::load(key)) {
      g.ptx = std::move(*cached);
      ++g_ptx_cache_hits;
    } else {
      auto ptx = nvrtc::compile_ptx(g.source, g.name, arch);
      if (!ptx) return ptx.error();
      g.ptx = std::move(*ptx);
      kernel_cache::store(key, g.ptx);
    }
    TJ_LOG(output_code, "nvrtc kernel {} ({}):\n{}", g.name, arch, g.source);
    out.push_back(std::move(g));
  }
  g_generated += static_cast<long long>(out.size());
  return out;
}

graph::Expected<CompiledFn> compile_nvrtc(std::shared_ptr<const graph::Graph> graph,
                                          const std::vector<graph::TensorMeta>& inputs) {
  auto kernels = generate_cuda(graph);
  if (!kernels) return kernels.error();
  TJ_LOG(perf, "nvrtc backend: {} CUDA kernel(s) compiled to PTX; no CUDA device is driven yet, the graph runs on the llvm backend's kernels",
         kernels->size());
  if (!g_warned.exchange(true))
    std::fprintf(stderr,
                 "tracejit: warning: the nvrtc backend generates and compiles CUDA kernels but does not run them on a "
                 "device yet: graphs run with the llvm backend\n");
  return compile_llvm(std::move(graph), inputs);
}

long long cuda_kernels_generated() { return g_generated.load(); }
long long ptx_cache_hits() { return g_ptx_cache_hits.load(); }

}  // namespace tj::jit
