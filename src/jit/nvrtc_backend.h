// The `nvrtc` backend; see nvrtc_backend.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/graph.h"
#include "jit/backend.h"

namespace tj::jit {

struct GeneratedKernel {
  std::string name;
  std::string source;  // CUDA C
  std::string ptx;
};

// Every kernel of the graph's lowering as CUDA C and PTX (config.nvrtc_arch).
graph::Expected<std::vector<GeneratedKernel>> generate_cuda(std::shared_ptr<const graph::Graph> graph);

graph::Expected<CompiledFn> compile_nvrtc(std::shared_ptr<const graph::Graph> graph,
                                          const std::vector<graph::TensorMeta>& inputs);

long long cuda_kernels_generated();
// Kernels whose PTX came from the disk cache (the kernel cache's directory).
long long ptx_cache_hits();

}  // namespace tj::jit
