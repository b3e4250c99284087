// Max and average pooling as oneDNN steps (jit/onednn_pool.h): decompose_for_fusion's
// pattern for `max_pool2d` (a -inf pad, strided slices, `maximum`s) after a
// convolution runs as one oneDNN pooling primitive on its channels-last
// input, with ATen's values and strides; kernels, strides, paddings,
// dilations and ceil_mode of every kind; an input holding a NaN runs the
// pattern as ATen ops (oneDNN would not propagate it); TRACEJIT_ONEDNN=0
// gives the same values. avg_pool2d (densenet's transitions): paddings counted or not, NaN propagated; ceil_mode,
// divisor_override and a dropped last row stay ATen's.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>

#include "graph/passes/decompose.h"
#include "jit/onednn_exec.h"
#include "jit/onednn_plan.h"
#include "llvm_test_util.h"

namespace tj::jit {
namespace {

using namespace test_util;

struct PoolCase {
  const char* what;
  std::vector<int64_t> x;  // the conv's input; the conv keeps the sizes (3x3, pad 1)
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool ceil_mode;
};

// conv -> relu -> max_pool2d -> conv (+ the pooled value as a residual when `residual`), decomposed as the
// llvm backend's pipeline does.
Built pool_graph(const PoolCase& c, const std::vector<at::Tensor>& in, bool residual, bool relu = true) {
  auto g = std::make_shared<Graph>();
  std::vector<Node*> ph;
  Built out;
  for (size_t i = 0; i < in.size(); ++i) {
    out.metas.push_back(graph::TensorMeta::of(in[i]));
    ph.push_back(g->placeholder("x" + std::to_string(i), out.metas.back()));
  }
  auto conv = [&](Node* x) {
    return g->call(op("aten::convolution"), {x, ph[1], ph[2], Arg::ints({1, 1}), Arg::ints({1, 1}), Arg::ints({1, 1}),
                                             Arg(false), Arg::ints({0, 0}), Arg(1)});
  };
  Node* a = relu ? g->call(op("aten::relu"), {conv(ph[0])}) : conv(ph[0]);
  Node* pool = g->call(op("aten::max_pool2d_with_indices"), {a, Arg::ints(c.kernel), Arg::ints(c.stride),
                                                             Arg::ints(c.padding), Arg::ints(c.dilation),
                                                             Arg(c.ceil_mode)});
  Node* p = g->call(graph::OpRegistry::instance().getitem(), {pool, int64_t{0}});
  Node* y = conv(p);
  if (residual) y = g->call(op("aten::add.Tensor"), {y, p});
  g->output(Arg::tuple({Arg(y)}));
  EXPECT_TRUE(graph::infer_meta_all(*g).ok());
  EXPECT_TRUE(graph::decompose_for_fusion(*g).ok());
  out.graph = g;
  return out;
}

at::Tensor eager(const PoolCase& c, const std::vector<at::Tensor>& in, bool residual, bool relu = true) {
  at::Tensor a = at::conv2d(in[0], in[1], in[2], 1, 1);
  if (relu) a = at::relu(a);
  at::Tensor p = at::max_pool2d(a, c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
  at::Tensor y = at::conv2d(p, in[1], in[2], 1, 1);
  return residual ? y + p : y;
}

void expect_near(const at::Tensor& want, const at::Tensor& got, const std::string& what) {
  ASSERT_EQ(want.sizes(), got.sizes()) << what;
  EXPECT_EQ(want.strides(), got.strides()) << what;
  EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-4, /*equal_nan=*/true))
      << what << ": max difference " << (got - want).abs().max().item<double>();
}

class OneDnnPool : public ::testing::Test {
 protected:
  void SetUp() override {
    onednn::set_enabled(true);
    onednn::reset();
  }
  void TearDown() override { onednn::set_enabled(true); }
};

const std::vector<PoolCase>& cases() {
  static const std::vector<PoolCase> list = {
      {"resnet's 3x3 stride 2 pad 1", {2, 16, 12, 12}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
      {"unet's 2x2 stride 2", {2, 16, 10, 10}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
      {"3x3 stride 1 pad 1", {1, 16, 7, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, false},
      {"odd size, ceil_mode", {2, 8, 11, 9}, {3, 3}, {2, 2}, {0, 0}, {1, 1}, true},
      {"2x3, strides 1 and 2, pad 0 and 1", {1, 8, 9, 10}, {2, 3}, {1, 2}, {0, 1}, {1, 1}, false},
      {"dilated 2 (not a oneDNN step)", {1, 8, 13, 13}, {3, 3}, {2, 2}, {1, 1}, {2, 2}, false},
  };
  return list;
}

TEST_F(OneDnnPool, MaxPoolingAfterAConvolutionMatchesAten) {
  for (const PoolCase& c : cases()) {
    for (bool residual : {false, true}) {
      const std::string what = std::string(c.what) + (residual ? ", pooled value also a residual" : "");
      const int64_t ch = c.x[1];
      std::vector<at::Tensor> in = {at::randn(c.x), at::randn({ch, ch, 3, 3}) * 0.2, at::randn({ch})};
      Built built = pool_graph(c, in, residual);
      auto fn = llvm_compile(built.graph, built.metas);
      ASSERT_TRUE(fn.ok()) << what << ": " << fn.error().message;
      const bool dilated = c.dilation[0] != 1 || c.dilation[1] != 1;  // a fused kernel (onednn_pool.cpp)
      EXPECT_EQ(last_llvm_compile_stats().onednn_pools, dilated ? 0 : 1) << what;
      EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 2) << what;
      EXPECT_EQ(last_llvm_compile_stats().kernels, dilated ? 1 : 0) << what << ": no kernel left for the pooling";
      const long long refused = onednn::stats().refused;
      expect_near(eager(c, in, residual), (*fn)(in)[0], what);
      EXPECT_EQ(onednn::stats().refused, refused) << what;
    }
  }
}

TEST_F(OneDnnPool, NanInputRunsThePatternAsAtenOps) {
  const PoolCase& c = cases()[0];
  std::vector<at::Tensor> in = {at::randn(c.x), at::randn({16, 16, 3, 3}) * 0.2, at::randn({16})};
  Built built = pool_graph(c, in, false, /*relu=*/false);
  auto fn = llvm_compile(built.graph, built.metas);
  ASSERT_TRUE(fn.ok());
  EXPECT_EQ(last_llvm_compile_stats().onednn_pools, 1);
  in[0][0][0][5][5] = std::numeric_limits<float>::quiet_NaN();  // NaN in the conv's result around it
  at::Tensor want = eager(c, in, false, false);
  const long long refused = onednn::stats().refused;
  at::Tensor got = (*fn)(in)[0];
  EXPECT_GT(onednn::stats().refused, refused) << "the pooling step is refused";
  ASSERT_EQ(want.sizes(), got.sizes());
  EXPECT_TRUE(at::equal(at::isnan(want), at::isnan(got))) << "NaN where eager has NaN";
  expect_near(want, got, "with NaN");
}

TEST_F(OneDnnPool, TurnedOffGivesTheSameValues) {
  for (const PoolCase& c : cases()) {
    std::vector<at::Tensor> in = {at::randn(c.x), at::randn({c.x[1], c.x[1], 3, 3}) * 0.2, at::randn({c.x[1]})};
    Built built = pool_graph(c, in, true);
    auto with = llvm_compile(built.graph, built.metas);
    ASSERT_TRUE(with.ok());
    onednn::set_enabled(false);
    auto without = llvm_compile(built.graph, built.metas);
    onednn::set_enabled(true);
    ASSERT_TRUE(without.ok());
    EXPECT_EQ(last_llvm_compile_stats().onednn_pools, 0);
    expect_near((*without)(in)[0], (*with)(in)[0], c.what);
  }
}

struct AvgCase {
  const char* what;
  std::vector<int64_t> x, kernel, stride, padding;
  bool ceil_mode, count_include_pad, divisor;  // divisor: divisor_override=3
  bool step;                                   // a oneDNN pooling step (else ATen's avg_pool2d)
};

// conv -> relu -> avg_pool2d -> conv, and the pooled value returned too (eager's strides): densenet's transition.
TEST_F(OneDnnPool, AveragePoolingMatchesAten) {
  for (const AvgCase& c : {AvgCase{"densenet's 2x2 stride 2", {2, 16, 12, 10}, {2, 2}, {2, 2}, {0, 0}, false, true, false, true},
                           AvgCase{"3x3 stride 2 pad 1", {2, 8, 11, 9}, {3, 3}, {2, 2}, {1, 1}, false, true, false, true},
                           AvgCase{"3x3 stride 2 pad 1, padding not counted", {2, 8, 11, 9}, {3, 3}, {2, 2}, {1, 1}, false, false, false, true},
                           AvgCase{"3x2 stride 1 pad 1 and 0, padding not counted", {1, 8, 7, 6}, {3, 2}, {1, 1}, {1, 0}, false, false, false, true},
                           AvgCase{"2x2 stride 2 on an odd size (the last row dropped)", {1, 8, 7, 7}, {2, 2}, {2, 2}, {0, 0}, false, true, false, false},
                           AvgCase{"ceil_mode", {1, 8, 7, 7}, {3, 3}, {2, 2}, {1, 1}, true, true, false, false},
                           AvgCase{"divisor_override", {1, 8, 6, 6}, {2, 2}, {2, 2}, {0, 0}, false, true, true, false}}) {
    const int64_t ch = c.x[1];
    std::vector<at::Tensor> in = {at::randn(c.x), at::randn({ch, ch, 3, 3}) * 0.2, at::randn({ch})};
    auto g = std::make_shared<Graph>();
    Built built;
    std::vector<Node*> ph;
    for (size_t i = 0; i < in.size(); ++i) {
      built.metas.push_back(graph::TensorMeta::of(in[i]));
      ph.push_back(g->placeholder("x" + std::to_string(i), built.metas.back()));
    }
    auto conv = [&](Node* x) {
      return g->call(op("aten::convolution"), {x, ph[1], ph[2], Arg::ints({1, 1}), Arg::ints({1, 1}),
                                               Arg::ints({1, 1}), Arg(false), Arg::ints({0, 0}), Arg(1)});
    };
    Node* p = g->call(op("aten::avg_pool2d"),
                      {g->call(op("aten::relu"), {conv(ph[0])}), Arg::ints(c.kernel), Arg::ints(c.stride),
                       Arg::ints(c.padding), Arg(c.ceil_mode), Arg(c.count_include_pad),
                       c.divisor ? Arg(int64_t{3}) : Arg()});
    g->output(Arg::tuple({Arg(conv(p)), Arg(p)}));
    ASSERT_TRUE(graph::infer_meta_all(*g).ok()) << c.what;
    ASSERT_TRUE(graph::decompose_for_fusion(*g).ok()) << c.what;
    built.graph = g;
    auto eager_pool = [&] {
      return at::avg_pool2d(at::relu(at::conv2d(in[0], in[1], in[2], 1, 1)), c.kernel, c.stride, c.padding,
                            c.ceil_mode, c.count_include_pad, c.divisor ? c10::optional<int64_t>(3) : c10::nullopt);
    };
    at::Tensor a = eager_pool();
    for (bool nan : {false, true}) {
      const std::string what = std::string(c.what) + (nan ? ", a NaN in the input" : "");
      if (nan) {
        in[0][0][0][1][1] = std::numeric_limits<float>::quiet_NaN();  // a NaN spread by the conv
        a = eager_pool();
      }
      auto fn = llvm_compile(built.graph, built.metas);
      ASSERT_TRUE(fn.ok()) << what << ": " << fn.error().message;
      EXPECT_EQ(last_llvm_compile_stats().onednn_pools, c.step ? 1 : 0) << what;
      const long long refused = onednn::stats().refused;
      std::vector<at::Tensor> got = (*fn)(in);
      ASSERT_EQ(got.size(), 2u) << what;
      expect_near(a, got[1], what + ": the pooled value");
      expect_near(at::conv2d(a, in[1], in[2], 1, 1), got[0], what + ": the conv after it");
      EXPECT_TRUE(at::equal(at::isnan(a), at::isnan(got[1]))) << what << ": NaN where eager has NaN";
      if (c.step && !nan) {
        EXPECT_EQ(onednn::stats().refused, refused) << what;
      }
    }
  }
}

}  // namespace
}  // namespace tj::jit
