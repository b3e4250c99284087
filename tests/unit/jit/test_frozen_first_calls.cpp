// The first calls of a frozen inference graph (jit/frozen_constants.h's
// freeze_after): they run the whole graph op by op with ATen's ops and
// compute no constants (no batch norm folded, no weight packed, no oneDNN
// step); the call after them folds, packs and runs the compiled program.
// Values and strides are eager's on both sides of the switch (a
// channels-last input included), and freeze_after 0 compiles from the
// first call (the tests' own environment).
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include "graph/passes/decompose.h"
#include "graph/passes/freeze.h"
#include "jit/frozen_constants.h"
#include "jit/onednn_exec.h"
#include "jit/onednn_plan.h"
#include "llvm_test_util.h"
#include "onednn_test_util.h"

namespace tj::jit {
namespace {

using namespace test_util;

// conv -> inference batch norm -> relu -> conv (parameters requiring grad under no_grad: AOT's "grad_unused"),
// decomposed as the pipeline does for fusing backends.
struct Net {
  at::Tensor x = at::randn({2, 8, 10, 10});
  at::Tensor w = (at::randn({16, 8, 3, 3}) * 0.3).requires_grad_();
  at::Tensor gamma = (at::rand({16}) + 0.5).requires_grad_();
  at::Tensor beta = at::randn({16}).requires_grad_();
  at::Tensor mean = at::randn({16}) * 0.1;
  at::Tensor var = at::rand({16}) + 0.5;
  at::Tensor w2 = (at::randn({4, 16, 1, 1}) * 0.3).requires_grad_();
  std::vector<at::Tensor> inputs() const { return {x, w, gamma, beta, mean, var, w2}; }
  at::Tensor eager() const {
    at::NoGradGuard no_grad;
    at::Tensor y = at::relu(at::batch_norm(at::conv2d(x, w, {}, 1, 1), gamma, beta, mean, var, false, 0.1, 1e-5, false));
    return at::conv2d(y, w2);
  }
  Built graph() const {
    auto g = std::make_shared<Graph>();
    std::vector<graph::TensorMeta> metas;
    std::vector<Node*> ph = onednn_test::inference_placeholders(*g, inputs(), metas);
    auto conv = [&](Node* in, Node* weight, int64_t pad) {
      return g->call(op("aten::convolution"), {in, weight, Arg(), Arg::ints({1, 1}), Arg::ints({pad, pad}),
                                               Arg::ints({1, 1}), Arg(false), Arg::ints({0, 0}), Arg(1)});
    };
    Node* bn = g->call(op("aten::native_batch_norm"),
                       {conv(ph[0], ph[1], 1), ph[2], ph[3], ph[4], ph[5], Arg(false), Arg(0.1), Arg(1e-5)});
    Node* first = g->call(graph::OpRegistry::instance().getitem(), {bn, int64_t{0}});
    g->output(Arg::tuple({Arg(conv(g->call(op("aten::relu"), {first}), ph[6], 0))}));
    EXPECT_TRUE(graph::infer_meta_all(*g).ok());
    EXPECT_TRUE(graph::decompose_for_fusion(*g).ok());
    return Built{g, metas};
  }
};

class FrozenFirstCalls : public ::testing::Test {
 protected:
  void SetUp() override {
    onednn::set_enabled(true);
    onednn::reset();
    reset_freeze_stats();
  }
  void TearDown() override { set_freeze_after(-1); }
};

void expect_as_eager(const at::Tensor& want, const at::Tensor& got, const std::string& what) {
  ASSERT_EQ(want.sizes(), got.sizes()) << what;
  EXPECT_EQ(want.strides(), got.strides()) << what;
  EXPECT_FALSE(got.requires_grad()) << what;
  EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-4)) << what << ": max difference " << (got - want).abs().max().item<double>();
}

TEST_F(FrozenFirstCalls, RunOpByOpThenTheCompiledProgram) {
  for (bool channels_last : {false, true}) {
    const std::string layout = channels_last ? " (channels-last input)" : "";
    SetUp();
    at::NoGradGuard no_grad;
    set_freeze_after(2);
    Net net;
    if (channels_last) net.x = net.x.contiguous(at::MemoryFormat::ChannelsLast);
    Built built = net.graph();
    auto fn = llvm_compile(built.graph, built.metas);
    ASSERT_TRUE(fn.ok()) << fn.error().message;
    EXPECT_EQ(freeze_stats().graphs_frozen, 1);
    EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 2);
    const at::Tensor want = net.eager();
    std::vector<at::Tensor> first_calls;
    for (int call = 1; call <= 2; ++call) {
      first_calls.push_back((*fn)(net.inputs())[0]);
      expect_as_eager(want, first_calls.back(), "op-by-op call " + std::to_string(call) + layout);
      EXPECT_EQ(freeze_stats().op_by_op_calls, call) << layout;
      EXPECT_EQ(freeze_stats().folds, 0) << "no constant computed yet" << layout;
      EXPECT_EQ(onednn::stats().steps_run, 0) << "no oneDNN step yet" << layout;
      EXPECT_EQ(onednn::stats().weight_packs, 0) << "no weight packed yet" << layout;
    }
    for (int call = 3; call <= 4; ++call) {
      const at::Tensor got = (*fn)(net.inputs())[0];
      expect_as_eager(want, got, "compiled call " + std::to_string(call) + layout);
      expect_as_eager(first_calls[0], got, "op-by-op against compiled" + layout);
      EXPECT_EQ(freeze_stats().op_by_op_calls, 2) << layout;
      EXPECT_EQ(freeze_stats().folds, 1) << layout;
      EXPECT_EQ(onednn::stats().steps_run, 2 * (call - 2)) << layout;
    }
    // a write to a frozen input after the switch refolds; no call runs op by op again
    net.mean.add_(0.25);
    expect_as_eager(net.eager(), (*fn)(net.inputs())[0], "after a write to the running mean" + layout);
    EXPECT_EQ(freeze_stats().folds, 2) << layout;
    EXPECT_EQ(freeze_stats().op_by_op_calls, 2) << layout;
  }
}

TEST_F(FrozenFirstCalls, ZeroCompilesFromTheFirstCall) {
  at::NoGradGuard no_grad;
  set_freeze_after(0);
  Net net;
  Built built = net.graph();
  auto fn = llvm_compile(built.graph, built.metas);
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  expect_as_eager(net.eager(), (*fn)(net.inputs())[0], "first call");
  EXPECT_EQ(freeze_stats().op_by_op_calls, 0);
  EXPECT_EQ(freeze_stats().folds, 1);
  EXPECT_EQ(onednn::stats().steps_run, 2);
}

// The calls are counted per compiled graph: a second graph compiled later runs its own first calls op by op.
TEST_F(FrozenFirstCalls, CountedPerGraph) {
  at::NoGradGuard no_grad;
  set_freeze_after(1);
  Net net;
  Built built = net.graph();
  auto a = llvm_compile(built.graph, built.metas);
  auto b = llvm_compile(built.graph, built.metas);
  ASSERT_TRUE(a.ok() && b.ok());
  expect_as_eager(net.eager(), (*a)(net.inputs())[0], "a, first call");
  expect_as_eager(net.eager(), (*a)(net.inputs())[0], "a, second call");
  expect_as_eager(net.eager(), (*b)(net.inputs())[0], "b, first call");
  EXPECT_EQ(freeze_stats().op_by_op_calls, 2);
  EXPECT_EQ(freeze_stats().folds, 1);
}

}  // namespace
}  // namespace tj::jit
