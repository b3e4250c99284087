// The `nvrtc` backend; see nvrtc_backend.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "jit/backend.h"
#include "jit/cuda_device.h"
#include "support/expected.h"

namespace tj::jit {

struct GeneratedKernel {
  std::string name;
  std::string source;  // CUDA C
  std::string ptx;
  int vector_width = 1;  // cuda::render's: 4 for a vectorizable kernel
};

// Every kernel of the graph's lowering as CUDA C and PTX (config.nvrtc_arch).
Expected<std::vector<GeneratedKernel>> generate_cuda(std::shared_ptr<const graph::Graph> graph);
struct Program;
Expected<std::vector<GeneratedKernel>> generate_cuda(const Program& program);

// On the process's CUDA device (cuda_driver.h) when there is one.
Expected<CompiledFn> compile_nvrtc(std::shared_ptr<const graph::Graph> graph,
                                   const std::vector<graph::TensorMeta>& inputs);
// On `device` (tests: the host emulation); nullptr: as without a device.
Expected<CompiledFn> compile_nvrtc(std::shared_ptr<const graph::Graph> graph,
                                   const std::vector<graph::TensorMeta>& inputs, cuda::Device* device,
                                   cuda::DeviceAllocator* allocator);

// Why the process has no CUDA device ("" when it has one).
std::string no_device_reason();

long long cuda_kernels_generated();
// Kernels whose PTX came from the disk cache (the kernel cache's directory).
long long ptx_cache_hits();

}  // namespace tj::jit
