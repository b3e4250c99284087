// Freezing for inference (graph/passes/freeze.h, jit/frozen_constants.h)
// with the llvm backend's oneDNN steps: batch norm folded into the
// convolution before it, frozen constants re-made after every write to a
// parameter or buffer, and frozen, unfrozen and oneDNN-less runs giving the
// same values.
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
using onednn_test::expect_near;

class OneDnnFreezing : public ::testing::Test {
 protected:
  // as test_onednn.cpp's fixture, where these tests were
  void SetUp() override {
    onednn::set_enabled(true);
    linear_mode_before_ = onednn::linear_mode();
    onednn::set_linear_mode(onednn::LinearMode::always);
    onednn::reset();
    onednn::set_winograd_after(0);
  }
  void TearDown() override {
    onednn::set_enabled(true);
    onednn::set_linear_mode(linear_mode_before_);
    onednn::set_winograd_after(-1);
    set_freezing(true);
  }
  onednn::LinearMode linear_mode_before_ = onednn::LinearMode::auto_;
};

// conv(x, w, b) -> inference batch norm -> relu, decomposed as the pipeline
// does for fusing backends; w, b, gamma and beta are parameters that
// require grad under no_grad (AOT's tag "grad_unused"), mean and var buffers.
struct BnNet {
  at::Tensor x = at::randn({2, 8, 9, 9});
  at::Tensor w = (at::randn({16, 8, 3, 3}) * 0.3).requires_grad_();
  at::Tensor b = at::randn({16}).requires_grad_();
  at::Tensor gamma = (at::rand({16}) + 0.5).requires_grad_();
  at::Tensor beta = at::randn({16}).requires_grad_();
  at::Tensor mean = at::randn({16}) * 0.1;
  at::Tensor var = at::rand({16}) + 0.5;
  std::vector<at::Tensor> inputs() const { return {x, w, b, gamma, beta, mean, var}; }
  at::Tensor eager() const {
    at::NoGradGuard no_grad;
    return at::relu(at::batch_norm(at::conv2d(x, w, b, 1, 1), gamma, beta, mean, var, false, 0.1, 1e-5, false));
  }
  Built graph() const {
    auto g = std::make_shared<Graph>();
    std::vector<graph::TensorMeta> metas;
    std::vector<Node*> ph = onednn_test::inference_placeholders(*g, inputs(), metas);
    Node* y = g->call(op("aten::convolution"), {ph[0], ph[1], ph[2], Arg::ints({1, 1}), Arg::ints({1, 1}),
                                               Arg::ints({1, 1}), Arg(false), Arg::ints({0, 0}), Arg(1)});
    Node* bn = g->call(op("aten::native_batch_norm"), {y, ph[3], ph[4], ph[5], ph[6], Arg(false), Arg(0.1), Arg(1e-5)});
    Node* first = g->call(graph::OpRegistry::instance().getitem(), {bn, int64_t{0}});
    g->output(Arg::tuple({Arg(g->call(op("aten::relu"), {first}))}));
    EXPECT_TRUE(graph::infer_meta_all(*g).ok());
    EXPECT_TRUE(graph::decompose_for_fusion(*g).ok());
    return Built{g, metas};
  }
};

TEST_F(OneDnnFreezing, FreezingFoldsBatchNormIntoTheConvolution) {
  at::NoGradGuard no_grad;
  reset_freeze_stats();
  BnNet net;
  Built built = net.graph();
  EXPECT_TRUE(graph::is_inference_graph(*built.graph));
  auto frozen = graph::freeze(*built.graph);
  ASSERT_TRUE(frozen);
  EXPECT_EQ(frozen->batch_norms_folded, 1);
  EXPECT_EQ(frozen->frozen_inputs, (std::vector<int>{1, 2, 3, 4, 5, 6})) << "x is an activation";
  auto fn = llvm_compile(built.graph, built.metas);
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  EXPECT_EQ(freeze_stats().graphs_frozen, 1);
  EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 1);
  EXPECT_EQ(last_llvm_compile_stats().kernels, 0) << "relu is a post-op; the batch norm is in the weights";
  expect_near(net.eager(), (*fn)(net.inputs())[0], "conv + folded batch norm + relu");
  expect_near(net.eager(), (*fn)(net.inputs())[0], "again");
  EXPECT_EQ(freeze_stats().folds, 1);
  EXPECT_EQ(freeze_stats().hits, 1);
}

// Every kind of write to a frozen input computes the constants again: never a stale weight. The check is by
// identity, version counter and a hash of the bytes (a write through `.data` keeps the version).
TEST_F(OneDnnFreezing, FrozenConstantsFollowEveryWrite) {
  at::NoGradGuard no_grad;
  reset_freeze_stats();
  BnNet net;
  Built built = net.graph();
  auto fn = llvm_compile(built.graph, built.metas);
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  expect_near(net.eager(), (*fn)(net.inputs())[0], "first call");
  long long folds = freeze_stats().folds;
  auto after = [&](const std::string& what) {
    expect_near(net.eager(), (*fn)(net.inputs())[0], what);
    EXPECT_EQ(freeze_stats().folds, ++folds) << what << ": computed again";
  };
  net.mean.add_(0.3);
  after("running mean written in place");
  net.var.copy_(at::rand({16}) + 1.0);
  after("running var copied into (load_state_dict)");
  net.w.sub_(net.w * 0.1);
  after("an optimizer-like step on the weight");
  net.gamma.slice(0, 0, 4).mul_(2);
  after("a write through a view of gamma");
  net.beta.detach().add_(1.0);  // detach() shares the version counter
  after("a write through beta.detach()");
  net.beta.variable_data().add_(1.0);  // `.data`: a counter of its own; the content hash sees the write
  after("a write through beta.data");
  net.b = at::randn({16}).requires_grad_();
  after("another tensor in the bias's place");
  net.x = at::randn({2, 8, 9, 9});
  expect_near(net.eager(), (*fn)(net.inputs())[0], "a new activation");
  EXPECT_EQ(freeze_stats().folds, folds) << "the activation is not frozen";
}

TEST_F(OneDnnFreezing, FrozenAndUnfrozenAndWithoutOneDnnGiveTheSameValues) {
  at::NoGradGuard no_grad;
  BnNet net;
  Built built = net.graph();
  auto frozen = llvm_compile(built.graph, built.metas);
  ASSERT_TRUE(frozen.ok());
  set_freezing(false);
  reset_freeze_stats();
  auto plain = llvm_compile(built.graph, built.metas);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(freeze_stats().graphs_frozen, 0);
  EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 1) << "the batch norm as binary post-ops";
  set_freezing(true);
  onednn::set_enabled(false);
  auto aten = llvm_compile(built.graph, built.metas);
  ASSERT_TRUE(aten.ok());
  EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 0);
  const at::Tensor a = (*frozen)(net.inputs())[0], b = (*plain)(net.inputs())[0], c = (*aten)(net.inputs())[0];
  expect_near(net.eager(), a, "frozen");
  expect_near(b, a, "frozen against unfrozen");
  expect_near(c, a, "frozen with oneDNN against frozen without (TRACEJIT_ONEDNN=0)");
}

// A graph without a parameter AOT tagged freezes nothing (function arguments are not module state).
TEST_F(OneDnnFreezing, NoParameterNoFreezing) {
  BnNet net;
  Built built = net.graph();
  auto g = built.graph->clone();
  for (Node* p : g->placeholders()) p->meta().tags.grad_unused = false;
  EXPECT_FALSE(graph::freeze(*g));
}

}  // namespace
}  // namespace tj::jit
