// The `nvrtc` backend: the llvm backend's lowering, each kernel rendered as
// CUDA C (cuda_codegen.h) and compiled to PTX with NVRTC, run through the
// CUDA driver (cuda_driver.h) when the process has a device: a graph of
// fused kernels only becomes a DeviceProgram (nvrtc_device.h). A graph with
// other steps (matmul, convolution, views: no CUDA code for them) runs on
// the llvm backend, the `perf` log says why; without a device every graph
// does, and the first compile says so in one warning. A graph that runs on
// the host is lowered as the llvm backend lowers it (lowering_options). A kernel the CUDA
// generator cannot express or NVRTC rejects fails the compile
// (BackendCompilerFailed: with suppress_errors, the runtime runs the graph
// eagerly with a warning).
#include "jit/nvrtc_backend.h"

#include <atomic>

#include "jit/backend_info.h"
#include "jit/cuda_codegen.h"
#include "jit/cuda_driver.h"
#include "jit/kernel_cache.h"
#include "jit/llvm_backend.h"
#include "jit/lowering.h"
#include "jit/nvrtc_compile.h"
#include "jit/nvrtc_device.h"
#include "support/log.h"
#include "support/warnings.h"

namespace tj::jit {

namespace {
std::atomic<long long> g_generated{0};
std::atomic<long long> g_ptx_cache_hits{0};
std::atomic<bool> g_warned{false};
// A graph the nvrtc backend runs on the host runs as the llvm backend runs
// it: lowered with the host's options (lowering_options: oneDNN steps), the
// program lowered for the device reused when those options are the same.
Expected<CompiledFn> run_on_host(std::shared_ptr<const graph::Graph> graph, Program device_program,
                                 const std::vector<graph::TensorMeta>& inputs) {
  if (lowering_options(LoweringTarget::host, *graph) == lowering_options(LoweringTarget::cuda, *graph))
    return compile_llvm(std::move(device_program), inputs, compile_kernel);
  return compile_llvm(std::move(graph), inputs);
}

}  // namespace

Expected<std::vector<GeneratedKernel>> generate_cuda(std::shared_ptr<const graph::Graph> graph) {
  LoweringOptions options = lowering_options(LoweringTarget::cuda, *graph);
  auto program = lower(std::move(graph), options);
  if (!program) return program.error();
  return generate_cuda(*program);
}

Expected<std::vector<GeneratedKernel>> generate_cuda(const Program& program) {
  std::vector<GeneratedKernel> out;
  const std::string arch = nvrtc::arch();
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    const loop::Kernel& k = program.kernels[i];
    GeneratedKernel g;
    g.name = "tj_cuda_" + std::to_string(i) + "_" + k.name;
    g.vector_width = cuda::vectorizable(k) ? 4 : 1;
    auto source = cuda::render(k, g.name, g.vector_width);
    if (!source) return Error{"nvrtc backend: kernel " + k.name + ": " + source.error().message};
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

Expected<CompiledFn> compile_nvrtc(std::shared_ptr<const graph::Graph> graph,
                                   const std::vector<graph::TensorMeta>& inputs, cuda::Device* device,
                                   cuda::DeviceAllocator* allocator) {
  auto program = lower(graph, lowering_options(LoweringTarget::cuda, *graph));
  if (!program) return program.error();
  auto kernels = generate_cuda(*program);
  if (!kernels) return kernels.error();
  if (device && allocator) {
    auto plan = plan_device_program(*program, *kernels, inputs);
    if (plan) {
      auto fn = device_compiled_fn(graph, std::move(*plan), *device, *allocator);
      if (fn) {
        TJ_LOG(perf, "nvrtc backend: {} CUDA kernel(s) run on {}", kernels->size(), device->name());
        return fn;
      }
      return Error{"nvrtc backend: " + fn.error().message};
    }
    TJ_LOG(perf, "nvrtc backend: the graph runs on the llvm backend's kernels: {}", plan.error().message);
  } else {
    TJ_LOG(perf, "nvrtc backend: {} CUDA kernel(s) compiled to PTX; no CUDA device, the graph runs on the llvm backend's kernels",
           kernels->size());
    if (!g_warned.exchange(true))
      tj::warn("the nvrtc backend found no CUDA device (" + no_device_reason() +
           "): CUDA kernels are generated and compiled, graphs run with the llvm backend");
  }
  return run_on_host(std::move(graph), std::move(*program), inputs);
}

Expected<CompiledFn> compile_nvrtc(std::shared_ptr<const graph::Graph> graph,
                                   const std::vector<graph::TensorMeta>& inputs) {
  std::string why;
  cuda::DriverDevice* device = cuda::process_device(&why);
  if (device) nvrtc::set_default_arch(device->arch());
  static cuda::DeviceAllocator* allocator = device ? new cuda::DeviceAllocator(*device) : nullptr;  // lives with the process
  return compile_nvrtc(std::move(graph), inputs, device, allocator);
}

std::string no_device_reason() {
  std::string why;
  return cuda::process_device(&why) ? "" : why;
}

long long cuda_kernels_generated() { return g_generated.load(); }
long long ptx_cache_hits() { return g_ptx_cache_hits.load(); }

}  // namespace tj::jit
