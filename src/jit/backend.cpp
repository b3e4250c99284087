// The backend registry and the built-in backends; see backend.h.
//
// `eager` and `aot_eager` both run their graph node by node through the
// boxed dispatcher (graph::interpret_tensors); they differ in what they are
// given: the captured graph as it is, or AOT's functional graphs. `llvm`
// fuses pointwise ops into JIT-compiled kernels (llvm_backend.h). Until its
// code generator lands, `nvrtc` is registered as what it then runs,
// `aot_eager`'s engine, and says so in its description (and `tracejit
// --version`), so nothing pretends to be compiled.
#include "jit/backend.h"

#include <ATen/core/Tensor.h>

#include "graph/interpreter.h"
#include "jit/llvm_backend.h"
#include "support/log.h"

namespace tj::jit {

namespace {

CompiledFn interpreter_fn(std::shared_ptr<const graph::Graph> graph) {
  return [graph](c10::ArrayRef<at::Tensor> inputs) -> std::vector<at::Tensor> {
    auto result = graph::interpret_tensors(*graph, inputs.vec());
    if (!result.ok()) throw std::runtime_error(result.error().message);
    return std::move(*result);
  };
}

graph::Expected<CompiledFn> compile_interpreted(std::shared_ptr<const graph::Graph> graph,
                                                const std::vector<graph::TensorMeta>&) {
  return interpreter_fn(std::move(graph));
}

// `nvrtc` until its code generator exists: aot_eager's engine,
// said in the `perf` log for every graph so that nothing passes for compiled.
graph::Expected<CompiledFn> compile_not_yet_generated(std::shared_ptr<const graph::Graph> graph,
                                                      const std::vector<graph::TensorMeta>& inputs) {
  TJ_LOG(perf, "no code generator yet: a {}-node graph runs op by op (aot_eager's engine)", graph->size());
  return compile_interpreted(std::move(graph), inputs);
}

std::vector<Backend> builtin_backends() {
  return {
      {"llvm", "the default: AOT, then pointwise ops fused into LLVM-compiled CPU kernels, the rest ATen", true,
       compile_llvm},
      {"eager", "runs the captured graph op by op, no AOT", false, compile_interpreted},
      {"aot_eager", "AOT (functionalization, joint graph + partition with grad), then op by op", true,
       compile_interpreted},
      {"nvrtc", "CUDA kernels; until the NVRTC code generator lands it runs aot_eager's engine", true,
       compile_not_yet_generated},
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
