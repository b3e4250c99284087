// The nvrtc backend's device path (issue 13) without a GPU: the graph's
// DeviceProgram runs on the host emulation of a device (emulated_device.h:
// the same CUDA C, malloc'ed "device" memory), through the same
// ProgramRunner, allocator and residency logic the CUDA driver gets. And
// `GpuCases` writes the cases `tests/gpu/gpu_check` runs on a real GPU
// (scripts/gpu-check), each checked here on the emulated device first.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <ATen/Parallel.h>
#include <ATen/ops/mm.h>

#include "emulated_device.h"
#include "jit/cuda_driver.h"
#include "jit/lowering.h"
#include "jit/nvrtc_backend.h"
#include "jit/nvrtc_device.h"
#include "llvm_test_util.h"
#include "reduction_cases.h"

namespace tj::jit {
namespace {

using namespace test_util;  // NOLINT: the helpers of llvm_test_util.h

struct NvrtcDevice : ::testing::Test {
  void SetUp() override { at::set_num_threads(1); }  // one emulated launch at a time
  EmulatedDevice device;
  cuda::DeviceAllocator allocator{device};
  GraphCompiler on_device() {
    return [this](std::shared_ptr<const Graph> g, const std::vector<graph::TensorMeta>& m) {
      return compile_nvrtc(std::move(g), m, &device, &allocator);
    };
  }
};

TEST_F(NvrtcDevice, FusedGraphsRunOnTheDeviceAndMatchEager) {
  at::manual_seed(0);
  const long long runs = device_counters().runs;
  int compared = 0;
  for (c10::ScalarType t : kDtypes) {
    compared += compare(chain, {values({5, 70}, t), values({5, 70}, t)}, "chain", nullptr, on_device());
    compared += compare(chain, {values({70, 5}, t).t(), values({5}, t)}, "chain transposed", nullptr, on_device());
    compared += compare(chain, {values({8, 16}, t).slice(1, 1, 15, 3), values({8, 5}, t)}, "chain sliced", nullptr,
                        on_device());
    // vectorized with strided lanes: a transposed operand, a row and a middle dim broadcast
    compared += compare(chain, {values({12, 8}, t).t(), values({12}, t)}, "chain vector transposed", nullptr,
                        on_device());
    compared += compare(chain, {values({3, 5, 8}, t), values({3, 1, 8}, t)}, "chain vector broadcast", nullptr,
                        on_device());
  }
  for (const Reduction& r : reductions())
    for (c10::ScalarType t : {at::kFloat, at::kLong, at::kHalf})
      if (!r.floats_only || at::isFloatingType(t))
        for (const char* layout : {"3d permuted", "nan rows"})
          compared += compare(single(r.make), {input(layout, t)}, r.name + " " + layout, nullptr, on_device());
  EXPECT_GT(compared, 100);
  // layer_norm with weights (aten::ones) is not all kernels: those run on the llvm backend
  EXPECT_GT(device_counters().runs - runs, compared - 10);
  EXPECT_GT(device.launches, 0);
}

TEST_F(NvrtcDevice, UnchangedInputsStayResidentAndChangedOnesAreCopiedAgain) {
  at::Tensor x = values({64, 33}, at::kFloat), w = values({64, 33}, at::kFloat);
  auto built = build(chain, {x, w});
  ASSERT_TRUE(built);
  auto fn = on_device()(built->graph, built->metas);
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  auto check = [&](const std::string& what) {
    auto want = graph::interpret_tensors(*built->graph, {x, w});
    ASSERT_TRUE(want.ok());
    std::vector<at::Tensor> got = (*fn)({x, w});
    for (size_t i = 0; i < got.size(); ++i) expect_close((*want)[i], got[i], what);
  };
  const DeviceCounters c0 = device_counters();
  check("first call");
  const DeviceCounters c1 = device_counters();
  EXPECT_EQ(c1.uploads - c0.uploads, 2);
  check("same tensors");
  const DeviceCounters c2 = device_counters();
  EXPECT_EQ(c2.uploads - c1.uploads, 0);
  EXPECT_EQ(c2.uploads_skipped - c1.uploads_skipped, 2);
  {
    c10::NoGradGuard no_grad;
    x.mul_(-2);  // the version counter moves: x is copied again, w is not
  }
  check("x changed in place");
  const DeviceCounters c3 = device_counters();
  EXPECT_EQ(c3.uploads - c2.uploads, 1);
  x = x.clone();  // another tensor
  check("a new x");
  EXPECT_EQ(device_counters().uploads - c3.uploads, 1);
}

TEST_F(NvrtcDevice, TheAllocatorReusesTheBuffersOfDeadProgramsAndEmptiesItsCacheWhenFull) {
  std::vector<at::Tensor> in = {values({40, 40}, at::kFloat), values({40, 40}, at::kFloat)};
  auto built = build(chain, in);
  ASSERT_TRUE(built);
  {
    auto fn = on_device()(built->graph, built->metas);
    ASSERT_TRUE(fn.ok());
    (*fn)(in);
  }
  const long long allocations = allocator.device_allocations();
  EXPECT_GT(allocator.cached_bytes(), 0u);
  auto again = on_device()(built->graph, built->metas);
  ASSERT_TRUE(again.ok());
  (*again)(in);
  EXPECT_EQ(allocator.device_allocations(), allocations);
  EXPECT_GT(allocator.reused(), 0);

  EmulatedDevice small;
  small.limit_bytes = 4096;
  cuda::DeviceAllocator a(small);
  auto p = a.take(3000);
  ASSERT_TRUE(p.ok());
  a.give_back(*p, 3000);
  auto q = a.take(2000);  // does not fit beside the cached 3072 bytes: the cache is emptied first
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(a.cached_bytes(), 0u);
  auto r = a.take(8192);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("OUT_OF_MEMORY"), std::string::npos) << r.error().message;
  a.give_back(*q, 2000);
}

TEST_F(NvrtcDevice, GraphsWithOtherStepsOrOtherInputLayoutsRunOnTheHostCorrectly) {
  const long long runs = device_counters().runs;
  auto mm_relu = [](Graph& g, const std::vector<Node*>& x) {
    return std::vector<Node*>{g.call(op("aten::relu"), {call2(g, "aten::mm", x[0], x[1])})};
  };
  EXPECT_TRUE(compare(mm_relu, {values({4, 5}, at::kFloat), values({5, 3}, at::kFloat)}, "mm relu", nullptr,
                      on_device()));
  EXPECT_EQ(device_counters().runs, runs);  // the llvm backend ran it

  auto built = build(chain, {values({6, 9}, at::kFloat), values({6, 9}, at::kFloat)});
  ASSERT_TRUE(built);
  auto fn = on_device()(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  std::vector<at::Tensor> other = {values({9, 6}, at::kFloat).t(), values({6, 9}, at::kFloat)};
  auto want = graph::interpret_tensors(*built->graph, other);
  ASSERT_TRUE(want.ok());
  std::vector<at::Tensor> got = (*fn)(other);
  for (size_t i = 0; i < got.size(); ++i) expect_close((*want)[i], got[i], "transposed input, compiled contiguous");
  EXPECT_EQ(device_counters().runs, runs);
}

TEST_F(NvrtcDevice, OutputsThatAreInputsOrRepeatedKeepTheirIdentity) {
  auto body = [](Graph& g, const std::vector<Node*>& x) {
    Node* r = g.call(op("aten::relu"), {x[0]});
    return std::vector<Node*>{x[0], r, r};
  };
  at::Tensor x = values({3, 4}, at::kFloat);
  auto built = build(body, {x});
  ASSERT_TRUE(built);
  const long long runs = device_counters().runs;
  auto fn = on_device()(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  std::vector<at::Tensor> got = (*fn)({x});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(got[0].is_same(x));
  EXPECT_TRUE(got[1].is_same(got[2]));
  expect_close(x.relu(), got[1], "relu");
  EXPECT_EQ(device_counters().runs, runs + 1);
}

TEST(NvrtcDriver, NoDriverIsAnErrorThatSaysWhy) {
  auto d = cuda::open_driver_device("/nonexistent/libcuda.so.1");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("could not be loaded"), std::string::npos) << d.error().message;
  std::string why;
  if (!cuda::process_device(&why)) {
    EXPECT_FALSE(why.empty());
  }
}

TEST(NvrtcDeviceProgram, TextFormRoundTripsAndRejectsMalformedPrograms) {
  auto built = build(chain, {values({5, 7}, at::kFloat), values({7}, at::kFloat)});
  ASSERT_TRUE(built);
  auto program = lower(built->graph, {});
  ASSERT_TRUE(program.ok());
  auto kernels = generate_cuda(*program);
  ASSERT_TRUE(kernels.ok()) << kernels.error().message;
  auto plan = plan_device_program(*program, *kernels, built->metas);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const std::string text = cuda::to_text(plan->program);
  auto back = cuda::from_text(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(cuda::to_text(*back), text);
  EXPECT_EQ(back->kernels.at(0).source, plan->program.kernels.at(0).source);
  EXPECT_FALSE(cuda::from_text("hello").ok());
  std::string bad = text;
  bad.replace(bad.find("\nlaunch 0 "), 10, "\nlaunch 9 ");
  auto rejected = cuda::from_text(bad);
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.error().message.find("launch of kernel 9"), std::string::npos) << rejected.error().message;
}

}  // namespace
}  // namespace tj::jit
