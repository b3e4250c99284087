// The backend registry and the built-in backends; see backend.h.
//
// `eager` and `aot_eager` both run their graph node by node through the
// boxed dispatcher (graph::PreparedGraph); they differ in what they are
// given: the captured graph as it is, or AOT's functional graphs. `llvm`
// fuses pointwise ops into JIT-compiled kernels (llvm_backend.h); `nvrtc`
// generates the same kernels as CUDA C, compiles them with NVRTC and runs
// them through the CUDA driver where there is a device (nvrtc_backend.h).
#include "jit/backend.h"

#include <ATen/core/Tensor.h>

#include "graph/size_template.h"
#include "graph/interpreter.h"
#include "jit/llvm_backend.h"
#include "jit/lowering.h"
#include "jit/nvrtc_backend.h"
#include "support/log.h"

namespace tj::jit {

namespace {

// The graph prepared once (interpreter.h); the closure keeps the graph alive.
Expected<CompiledFn> compile_interpreted(std::shared_ptr<const graph::Graph> graph,
                                         const std::vector<graph::TensorMeta>&) {
  auto prepared = graph::PreparedGraph::prepare(*graph);
  if (!prepared) return prepared.error();
  return CompiledFn([graph, prepared = std::move(*prepared)](c10::ArrayRef<at::Tensor> inputs) {
    auto result = prepared.run_tensors(inputs);
    if (!result.ok()) throw std::runtime_error(result.error().message);
    return std::move(*result);
  });
}

// aot_eager's one function for every size: the graphs of three sizes made
// one (graph/size_template.h), run op by op, its size nodes included.
Expected<CompiledFn> compile_interpreted_point(std::shared_ptr<const graph::Graph> graph,
                                               const std::vector<graph::TensorMeta>& inputs, Backend::SizePoint* point) {
  auto fn = compile_interpreted(graph, inputs);
  if (fn && point) *point = graph;
  return fn;
}

Expected<Backend::AllSizes> compile_interpreted_all_sizes(const std::vector<Backend::SizePoint>& points) {
  std::vector<const graph::Graph*> graphs;
  for (const Backend::SizePoint& p : points) graphs.push_back(static_cast<const graph::Graph*>(p.get()));
  auto t = graph::aot::generalize_sizes(graphs);
  if (!t) return t.error();
  auto shared = std::make_shared<const graph::aot::SizeTemplate>(std::move(*t));
  auto fn = compile_interpreted(shared->graph, {});
  if (!fn) return fn.error();
  return Backend::AllSizes{std::move(*fn), [shared](const std::vector<graph::TensorMeta>& metas) {
                             return graph::aot::template_mismatch(*shared, metas);
                           }};
}

std::vector<Backend> builtin_backends() {
  return {
      {.name = "llvm",
       .description = "the default: AOT, then pointwise ops fused into LLVM-compiled CPU kernels, the rest ATen",
       .functional = true,
       .fuses_pointwise = true,
       .compile = [](std::shared_ptr<const graph::Graph> g, const std::vector<graph::TensorMeta>& in) {
         return compile_llvm(std::move(g), in);
       },
       .compile_point =
           [](std::shared_ptr<const graph::Graph> g, const std::vector<graph::TensorMeta>& in, Backend::SizePoint* point) {
             ProgramPoint program;
             auto fn = compile_llvm_point(std::move(g), in, &program);
             if (fn && point) *point = std::move(program);
             return fn;
           },
       .compile_all_sizes =
           [](const std::vector<Backend::SizePoint>& points) {
             std::vector<ProgramPoint> programs;
             for (const Backend::SizePoint& p : points) programs.push_back(std::static_pointer_cast<const Program>(p));
             auto all = compile_llvm_all_sizes(programs);
             if (!all) return Expected<Backend::AllSizes>(all.error());
             return Expected<Backend::AllSizes>(Backend::AllSizes{std::move(all->fn), std::move(all->mismatch)});
           }},
      {.name = "eager", .description = "runs the captured graph op by op, no AOT", .compile = compile_interpreted},
      {.name = "aot_eager",
       .description = "AOT (functionalization, joint graph + partition with grad), then op by op",
       .functional = true,
       .compile = compile_interpreted,
       .compile_point = compile_interpreted_point,
       .compile_all_sizes = compile_interpreted_all_sizes},
      {.name = "nvrtc",
       .description = "CUDA C kernels compiled with NVRTC, run through the CUDA driver; without a device (or for "
                      "graphs with matmul/convolution) on the llvm backend's kernels",
       .functional = true,
       .fuses_pointwise = true,
       .compile = [](std::shared_ptr<const graph::Graph> g, const std::vector<graph::TensorMeta>& m) {
         return compile_nvrtc(std::move(g), m);
       }},
  };
}

std::vector<Backend>& registry() {
  static std::vector<Backend> backends = builtin_backends();
  return backends;
}

}  // namespace

void register_backend(Backend backend) {
  for (Backend& b : registry()) {
    if (b.name == backend.name) {
      b = std::move(backend);
      return;
    }
  }
  registry().push_back(std::move(backend));
}

const Backend* find_backend(std::string_view name) {
  for (const Backend& b : registry()) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const Backend& b : registry()) names.push_back(b.name);
  return names;
}

}  // namespace tj::jit
