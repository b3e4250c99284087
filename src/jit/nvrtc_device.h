// The nvrtc backend on a device: a lowered Program (lowering.h) whose steps
// are all fused kernels becomes a DeviceProgram (cuda_device.h) with every
// buffer's size and every launch's sizes and strides fixed from the fake
// TensorMetas, and a CompiledFn runs it: inputs copied in (a parameter only
// when its version counter moved), kernels launched, outputs copied back
// into CPU tensors with eager's strides.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "jit/backend.h"
#include "jit/cuda_device.h"
#include "jit/lowering.h"
#include "support/expected.h"

namespace tj::jit {

struct GeneratedKernel;

// How the graph's values map onto the DeviceProgram: where each graph output
// comes from, and which graph attributes (get_attr: constants, parameters)
// are program inputs after the placeholders.
struct DevicePlan {
  cuda::DeviceProgram program;
  // per flattened graph output: {true, i}: program output i; {false, i}: placeholder i itself
  std::vector<std::pair<bool, int>> outputs;
  std::vector<std::string> attrs;  // get_attr targets, program inputs after the placeholders
  std::vector<graph::TensorMeta> input_metas;   // per program input (placeholders, then attrs)
  std::vector<graph::TensorMeta> output_metas;  // per program output
};

// The plan, or why the program cannot run on a device (an extern step: only
// fused kernels have CUDA code).
Expected<DevicePlan> plan_device_program(const Program& program, const std::vector<GeneratedKernel>& kernels,
                                         const std::vector<graph::TensorMeta>& inputs);

// Runs the plan on `device` (which must outlive the function); inputs unlike
// the metas (sizes, strides, dtype, device) run the graph op by op.
// Loads the kernels now (a module the driver rejects is a compile error).
Expected<CompiledFn> device_compiled_fn(std::shared_ptr<const graph::Graph> graph, DevicePlan plan,
                                        cuda::Device& device, cuda::DeviceAllocator& allocator);

// Counters for tests and logs: inputs copied to the device and copies skipped
// because the device copy was current.
struct DeviceCounters {
  long long uploads = 0;
  long long uploads_skipped = 0;
  long long runs = 0;
};
DeviceCounters device_counters();

}  // namespace tj::jit
