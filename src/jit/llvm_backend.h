// The `llvm` backend: lowering (lowering.h) + LLVM code generation
// (llvm_codegen.h) + a lean executor that runs the resulting steps.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "jit/backend.h"
#include "jit/llvm_codegen.h"
#include "support/expected.h"

namespace tj::jit {

Expected<CompiledFn> compile_llvm(std::shared_ptr<const graph::Graph> graph,
                                  const std::vector<graph::TensorMeta>& inputs);

// The same executor over kernels another code generator made with the
// strided ABI (loop_ir.h): the nvrtc backend's host emulation in tests.
using KernelCompiler = std::function<Expected<CompiledKernel>(const loop::Kernel&)>;
Expected<CompiledFn> compile_llvm(std::shared_ptr<const graph::Graph> graph,
                                  const std::vector<graph::TensorMeta>& inputs,
                                  const KernelCompiler& compile_one);
// ... over a program already lowered (lowering.h): the nvrtc backend lowers once for both.
struct Program;
Expected<CompiledFn> compile_llvm(Program program, const std::vector<graph::TensorMeta>& inputs,
                                  const KernelCompiler& compile_one);

// Programs for every size (program_template.h). `compile_llvm_point`
// compiles as compile_llvm does and keeps the lowered program in `point`;
// `compile_llvm_all_sizes` makes one executable serving every size from
// the points of one graph compiled at three or more sizes (their graphs
// equal but for ints), or says why it cannot.
using ProgramPoint = std::shared_ptr<const Program>;
Expected<CompiledFn> compile_llvm_point(std::shared_ptr<const graph::Graph> graph,
                                        const std::vector<graph::TensorMeta>& inputs, ProgramPoint* point);
struct AllSizesFn {
  CompiledFn fn;
  // "" when `fn` serves inputs of these sizes, else why not (then it must
  // not be called with them: its program's ints would not hold).
  std::function<std::string(const std::vector<graph::TensorMeta>&)> mismatch;
};
Expected<AllSizesFn> compile_llvm_all_sizes(const std::vector<ProgramPoint>& points);

// config.debug_inject_bug, kept current by the runtime's config mirror
// (every assignment to it, and the env default, reach set_debug_inject_bug;
// the backend compiles without the GIL, so it never reads Python).
void set_debug_inject_bug(std::string value);
std::string debug_inject_bug();

// What the last compile_llvm produced (tests, logs): kernels and fused nodes.
struct LlvmCompileStats {
  int kernels = 0;
  int fused_nodes = 0;
  int extern_steps = 0;
  int parallel_kernels = 0;  // kernels whose rows are shared among threads
  int onednn_linears = 0;    // oneDNN inner-product steps (addmm/mm and their post-ops; onednn_plan.h)
  int onednn_convs = 0;      // oneDNN convolution steps
  int onednn_pools = 0;      // oneDNN max pooling steps (onednn_pool.h)
  int onednn_matmuls = 0;    // oneDNN batched matmul steps (bmm/baddbmm and their post-ops; onednn_matmul.h)
  int channels_last_values = 0;  // values kept channels-last across llvm kernels or a cat (onednn_layout.h)
};
LlvmCompileStats last_llvm_compile_stats();

// Kernel outputs placed in a released intermediate's buffer (tests).
long long buffers_reused();
// Bytes of released intermediates the executables' pools keep for their
// next call (tests): of the executables of one program structure (a
// dynamic entry's sizes), only the one that ran last keeps any.
long long pooled_bytes();

// What the executor did on its calls since the last zero_llvm_run_counters
// (tracejit.counters() `kernels_written_in_place`, `inplace_dense_fallbacks`):
// kernel outputs stored straight into a donated graph input (Step::donated),
// counted per call (a call of a program with two such outputs adds 2); and
// calls run op by op because an input a kernel writes in place was, at run
// time, not one dense block of memory.
long long kernel_outputs_written_in_place();
long long inplace_dense_fallbacks();
// Graph outputs copied into the input they update mid-graph, as soon as no
// later step can fail (Step::write_back), counted per call
// (tracejit.counters() `outputs_written_back_early`).
long long outputs_written_back_early();
// Calls of a compiled graph (llvm or nvrtc) run op by op because their
// inputs' sizes or dtypes differ from those it was compiled for
// (tracejit.counters() `inputs_differ_fallbacks`). Guards and a dynamic
// entry's choice of executable by size keep this from happening; the
// counter says when it does.
long long inputs_differ_fallbacks();
void note_inputs_differ_fallback();
// Kernel steps run op by op because an input (an extern op's result) did
// not have, at run time, the sizes or dtype its node's meta said (a meta
// kernel that is wrong for an op): never read out of bounds. Tests.
long long kernel_input_fallbacks();
void zero_llvm_run_counters();

}  // namespace tj::jit
