// The nvrtc backend's code generator (issue 13), proven without a GPU:
//  - the CUDA C of every kernel compiles with NVRTC and its PTX assembles
//    with ptxas (skipped, with the reason, where the toolkit is missing);
//  - the same source, compiled for the host with cuda_emu.h (one host
//    thread per CUDA thread, two warps a block, three blocks so the grid-
//    stride loops wrap), runs inside the llvm backend's executor in place
//    of the LLVM kernels and matches eager for every reduction the
//    lowering fuses, over every layout, and for pointwise chains;
//  - the `nvrtc` backend compiles graphs and runs them on the llvm kernels.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <ATen/Parallel.h>

#include "jit/cuda_codegen.h"
#include "jit/nvrtc_backend.h"
#include "jit/nvrtc_compile.h"
#include "jit/onednn_plan.h"
#include "emulated_device.h"
#include "llvm_test_util.h"
#include "reduction_cases.h"

namespace tj::jit {
namespace {

using namespace test_util;  // NOLINT: the helpers of llvm_test_util.h

const std::string& temp_dir() { return emu_temp_dir(); }

Expected<CompiledFn> emulated(std::shared_ptr<const Graph> g, const std::vector<graph::TensorMeta>& metas) {
  return compile_llvm(std::move(g), metas, [](const loop::Kernel& k) { return emulate(k); });
}

// float16/bfloat16 on fewer layouts (the kernels differ only in their conversions)
const std::vector<std::string> kReducedFloatInputs = {"contiguous", "transposed", "nan rows"};

struct SerialKernels : ::testing::Test {
  // one emulated launch at a time (a kernel's __shared__ arrays are statics)
  void SetUp() override { at::set_num_threads(1); }
};

using NvrtcEmulated = SerialKernels;

TEST_F(NvrtcEmulated, EveryReductionMatchesAtenInEveryLayout) {
  at::manual_seed(0);
  for (const Reduction& r : reductions()) {
    int ran = 0;
    for (c10::ScalarType t : kDtypes) {
      if (r.floats_only && !at::isFloatingType(t)) continue;
      const bool reduced = t == at::kHalf || t == at::kBFloat16;
      for (const std::string& layout : reduced ? kReducedFloatInputs : kInputs)
        ran += compare(single(r.make), {input(layout, t)}, r.name + " " + c10::toString(t) + " " + layout, nullptr,
                       emulated);
    }
    EXPECT_GT(ran, 0) << r.name << " ran for no input";
  }
}

TEST_F(NvrtcEmulated, PointwiseChainsMatchAtenOverLayouts) {
  at::manual_seed(1);
  for (c10::ScalarType t : kDtypes) {
    const std::string d = c10::toString(t);
    compare(chain, {values({5, 70}, t), values({5, 70}, t)}, "chain contiguous " + d, nullptr, emulated);
    compare(chain, {values({70, 5}, t).t(), values({5, 70}, t)}, "chain transposed " + d, nullptr, emulated);
    compare(chain, {values({4, 6, 9}, t), values({9}, t)}, "chain broadcast " + d, nullptr, emulated);
    compare(chain, {values({8, 16}, t).slice(1, 1, 15, 3), values({8, 5}, t)}, "chain sliced " + d, nullptr, emulated);
    compare(chain, {values({}, t), values({}, t)}, "chain 0-d " + d, nullptr, emulated);
    compare(chain, {values({0, 3}, t), values({0, 3}, t)}, "chain zero-size " + d, nullptr, emulated);
  }
  for (c10::ScalarType t : {at::kFloat, at::kDouble}) {
    at::Tensor x = values({300}, t);
    x[3] = NAN;
    x[4] = INFINITY;
    EXPECT_TRUE(compare(transcendental, {x, values({300}, t)}, "transcendental " + std::string(c10::toString(t)),
                        nullptr, emulated));
  }
}

// Graphs of every kind the tests above run, for the NVRTC and ptxas checks.
std::vector<std::shared_ptr<const Graph>> sample_graphs() {
  std::vector<std::shared_ptr<const Graph>> out;
  for (const Reduction& r : reductions())
    for (c10::ScalarType t : {at::kFloat, at::kLong})
      if (!r.floats_only || t == at::kFloat)
        if (auto b = build(single(r.make), {input("3d permuted", t)})) out.push_back(b->graph);
  for (c10::ScalarType t : kDtypes)
    if (auto b = build(chain, {values({5, 7}, t), values({7}, t)})) out.push_back(b->graph);
  for (c10::ScalarType t : {at::kHalf, at::kBFloat16})
    if (auto b = build(single(reductions()[14].make), {input("contiguous", t)})) out.push_back(b->graph);  // softmax
  if (auto b = build(transcendental, {values({9}, at::kDouble), values({9}, at::kDouble)})) out.push_back(b->graph);
  return out;
}

TEST(Nvrtc, EveryKernelCompilesToPtxThatPtxasAssembles) {
  if (!nvrtc::available()) GTEST_SKIP() << "NVRTC unavailable: tracejit was built without /usr/local/cuda";
  const char* ptxas = std::getenv("TJ_PTXAS");
  std::string ptxas_path = ptxas ? ptxas : "/usr/local/cuda/bin/ptxas";
  const bool have_ptxas = std::ifstream(ptxas_path).good();
  nvrtc::set_arch("sm_90");
  int kernels = 0;
  for (const auto& g : sample_graphs()) {
    auto generated = generate_cuda(g);
    ASSERT_TRUE(generated.ok()) << generated.error().message;
    for (const GeneratedKernel& k : *generated) {
      ++kernels;
      EXPECT_NE(k.ptx.find(".entry " + k.name), std::string::npos) << k.name;
      if (!have_ptxas) continue;
      const std::string file = temp_dir() + "/" + k.name + ".ptx";
      std::ofstream(file) << k.ptx;
      const std::string cmd = ptxas_path + " -arch=sm_90 " + file + " -o /dev/null 2> " + file + ".log";
      EXPECT_EQ(std::system(cmd.c_str()), 0) << "ptxas rejected " << k.name << " (" << file << ".log)\n" << k.source;
    }
  }
  nvrtc::set_arch("");
  EXPECT_GT(kernels, 20);
  if (!have_ptxas) GTEST_SKIP() << "PTX made for " << kernels << " kernels; ptxas not found at " << ptxas_path;
}

TEST(Nvrtc, PtxComesFromTheDiskCacheTheSecondTime) {
  if (!nvrtc::available()) GTEST_SKIP() << "NVRTC unavailable: tracejit was built without /usr/local/cuda";
  auto b = build(chain, {values({3, 11}, at::kDouble), values({11}, at::kDouble)});
  ASSERT_TRUE(b.has_value());
  auto first = generate_cuda(b->graph);
  ASSERT_TRUE(first.ok()) << first.error().message;
  const long long hits = ptx_cache_hits();
  auto second = generate_cuda(b->graph);
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(ptx_cache_hits() - hits, static_cast<long long>(second->size()));
  ASSERT_EQ(first->size(), second->size());
  for (size_t i = 0; i < first->size(); ++i) EXPECT_EQ((*first)[i].ptx, (*second)[i].ptx);
}

// Dynamic shapes (issue 15): sizes are kernel arguments, so a graph lowered
// again for other sizes renders the same CUDA C and takes its PTX from the
// cache (no NVRTC compile per size); the vectorized variant differs only
// where the last size's divisibility by 4 changes.
TEST(Nvrtc, OtherSizesReuseTheSameKernelSource) {
  if (!nvrtc::available()) GTEST_SKIP() << "NVRTC unavailable: tracejit was built without /usr/local/cuda";
  auto small = build(chain, {values({3, 12}, at::kFloat), values({12}, at::kFloat)});
  auto large = build(chain, {values({70, 36}, at::kFloat), values({36}, at::kFloat)});
  ASSERT_TRUE(small.has_value() && large.has_value());
  auto first = generate_cuda(small->graph);
  ASSERT_TRUE(first.ok()) << first.error().message;
  const long long hits = ptx_cache_hits();
  auto second = generate_cuda(large->graph);
  ASSERT_TRUE(second.ok()) << second.error().message;
  ASSERT_EQ(first->size(), second->size());
  for (size_t i = 0; i < first->size(); ++i) {
    EXPECT_EQ((*first)[i].source, (*second)[i].source);
    EXPECT_EQ((*first)[i].ptx, (*second)[i].ptx);
  }
  EXPECT_EQ(ptx_cache_hits() - hits, static_cast<long long>(second->size()));
}

TEST(Nvrtc, CompileErrorNamesTheKernelAndShowsNumberedSource) {
  if (!nvrtc::available()) GTEST_SKIP() << "NVRTC unavailable: tracejit was built without /usr/local/cuda";
  auto r = nvrtc::compile_ptx("extern \"C\" __global__ void k() {\n  undefined_name();\n}\n", "broken_kernel", "sm_80");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("broken_kernel"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("  2|   undefined_name();"), std::string::npos) << r.error().message;
}

// The float16/bfloat16 conversions of the prelude, on every bit pattern,
// against c10's (NaN: any quiet NaN).
TEST_F(NvrtcEmulated, HalfAndBfloat16ConversionsMatchC10OnEveryValue) {
  at::Tensor bits = at::arange(0, 65536, at::kInt).to(at::kShort);
  for (c10::ScalarType t : {at::kHalf, at::kBFloat16}) {
    at::Tensor x = bits.view(t);
    auto widen = [t](Graph& g, const std::vector<Node*>& in) {
      return std::vector<Node*>{g.call(op("aten::_to_copy"), {in[0]}, {{"dtype", at::kFloat}})};
    };
    EXPECT_TRUE(compare(widen, {x}, std::string("widen ") + c10::toString(t), nullptr, emulated));
    // narrowing: every float16/bfloat16 value, halfway points, and beyond the range
    at::Tensor f = at::cat({x.to(at::kFloat), at::linspace(-70000, 70000, 20001), at::randn({4096}) * 1e-5,
                            at::randn({4096}) * 1e-7});
    auto narrow = [t](Graph& g, const std::vector<Node*>& in) {
      return std::vector<Node*>{g.call(op("aten::_to_copy"), {in[0]}, {{"dtype", t}})};
    };
    EXPECT_TRUE(compare(narrow, {f}, std::string("narrow to ") + c10::toString(t), nullptr, emulated));
  }
}

TEST(Nvrtc, BackendRunsGraphsOnTheLlvmKernelsAfterGeneratingCuda) {
  if (!nvrtc::available()) GTEST_SKIP() << "NVRTC unavailable: tracejit was built without /usr/local/cuda";
  const long long before = cuda_kernels_generated();
  auto nvrtc_backend = [](std::shared_ptr<const Graph> g, const std::vector<graph::TensorMeta>& m) {
    return find_backend("nvrtc")->compile(std::move(g), m);
  };
  EXPECT_TRUE(compare(chain, {values({5, 7}, at::kFloat), values({7}, at::kFloat)}, "nvrtc backend", nullptr,
                      nvrtc_backend));
  EXPECT_GT(cuda_kernels_generated(), before);
}

// A graph the nvrtc backend runs on the host (here: no device) runs as the
// llvm backend runs it, lowered with the host's options (lowering.h,
// lowering_options): an inference Linear + relu is one oneDNN step on both;
// with an input that requires grad, on neither.
TEST(Nvrtc, OnTheHostAGraphIsLoweredAsTheLlvmBackendLowersIt) {
  if (!at::hasMKLDNN() || !onednn::enabled()) GTEST_SKIP() << "no oneDNN steps here (LibTorch without oneDNN, or TRACEJIT_ONEDNN=0)";
  Body linear = [](Graph& g, const std::vector<Node*>& x) {
    Node* y = g.call(op("aten::addmm"), {x[2], x[0], g.call(op("aten::t"), {x[1]})});
    return std::vector<Node*>{g.call(op("aten::relu"), {y})};
  };
  std::vector<at::Tensor> in = {at::randn({64, 512}), at::randn({512, 512}), at::randn({512})};
  auto built = build(linear, in);
  ASSERT_TRUE(built);
  at::Tensor want = (*graph::interpret_tensors(*built->graph, in))[0];
  const onednn::ScopedLinearMode always(onednn::LinearMode::always);  // the Linear step on every CPU (onednn_plan.h)
  for (bool requires_grad : {false, true}) {
    std::vector<graph::TensorMeta> metas = built->metas;
    metas[1].requires_grad = requires_grad;
    // the gate reads the graph's placeholders (graph::is_inference_graph)
    std::shared_ptr<graph::Graph> g = built->graph->clone();
    g->placeholders()[1]->meta().set_tensor(metas[1]);
    auto llvm = compile_llvm(g, metas);
    ASSERT_TRUE(llvm.ok()) << llvm.error().message;
    const int llvm_steps = last_llvm_compile_stats().onednn_linears;
    EXPECT_EQ(llvm_steps, requires_grad ? 0 : 1);
    auto nvrtc = compile_nvrtc(g, metas, nullptr, nullptr);
    ASSERT_TRUE(nvrtc.ok()) << nvrtc.error().message;
    EXPECT_EQ(last_llvm_compile_stats().onednn_linears, llvm_steps) << "requires_grad " << requires_grad;
    at::Tensor got = (*nvrtc)(in)[0];
    EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-4)) << (got - want).abs().max().item<double>();
  }
}

}  // namespace
}  // namespace tj::jit
