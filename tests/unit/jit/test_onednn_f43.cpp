// Our own Winograd F(4x4, 3x3) (jit/onednn_f43.h), taken by 3x3 stride-1
// convolutions where oneDNN has no Winograd (AVX2 hosts; on AVX-512 hosts
// by those oneDNN's refuses: odd channel counts): values and strides of
// ATen's (the graph interpreter) and of the path with oneDNN off, for every
// post-op it applies (a sum after another post-op included: the direct
// AVX2 convolution has only oneDNN's reference implementation for that),
// padding 0 to 2, odd sizes, no bias; its rounding error against float64
// next to the direct convolution's; an in-place write to the weight is seen;
// the residual summed in place.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "jit/onednn_exec.h"
#include "llvm_test_util.h"
#include "onednn_test_util.h"

namespace tj::jit {
namespace {

using namespace test_util;


using onednn_test::conv;
using onednn_test::expect_near;

class OwnWinograd : public ::testing::Test {
 protected:
  void SetUp() override {
    onednn::set_enabled(true);
    onednn::reset();
    onednn::set_winograd_after(0);
  }
  void TearDown() override {
    onednn::set_enabled(true);
    onednn::set_winograd_after(-1);
  }
};

// Whether this host's oneDNN has a Winograd of its own (then ours runs only where it refuses).
bool onednn_has_winograd() { return __builtin_cpu_supports("avx512f"); }

struct Epilogue {
  const char* what;
  std::function<Node*(Graph&, Node*, Node*)> build;  // (graph, conv result, residual)
};

const std::vector<Epilogue>& epilogues() {
  static const std::vector<Epilogue> list = {
      {"none", [](Graph&, Node* y, Node*) { return y; }},
      {"relu", [](Graph& g, Node* y, Node*) { return g.call(op("aten::relu"), {y}); }},
      {"leaky_relu 0.1", [](Graph& g, Node* y, Node*) { return g.call(op("aten::leaky_relu"), {y, 0.1}); }},
      {"hardtanh(0, 6)", [](Graph& g, Node* y, Node*) { return g.call(op("aten::hardtanh"), {y, 0.0, 6.0}); }},
      {"mul 0.25", [](Graph& g, Node* y, Node*) { return g.call(op("aten::mul.Scalar"), {y, 0.25}); }},
      {"residual, then relu",
       [](Graph& g, Node* y, Node* r) { return g.call(op("aten::relu"), {g.call(op("aten::add.Tensor"), {y, r})}); }},
      {"relu, then residual alpha 0.5",
       [](Graph& g, Node* y, Node* r) {
         return g.call(op("aten::add.Tensor"), {g.call(op("aten::relu"), {y}), r}, {Kwarg{"alpha", Arg(0.5)}});
       }},
  };
  return list;
}

TEST_F(OwnWinograd, EveryPostOpPaddingAndSizeMatchesAten) {
  struct Case {
    const char* what;
    std::vector<int64_t> x;
    int64_t out, pad;
    bool bias, channels_last;
  };
  for (const Case& k : {Case{"16 -> 16 at 14x14", {2, 16, 14, 14}, 16, 1, true, false},
                        Case{"64 -> 48 at 9x11, channels-last input", {1, 64, 9, 11}, 48, 1, true, true},
                        Case{"odd channels 5 -> 7, no bias", {2, 5, 8, 8}, 7, 1, false, false},
                        Case{"unpadded 24 -> 20 at 10x13", {1, 24, 10, 13}, 20, 0, true, false},
                        Case{"padding 2, 3 -> 17 at 5x6", {3, 3, 5, 6}, 17, 2, true, false}}) {
    at::Tensor x = at::randn(k.x);
    if (k.channels_last) x = x.contiguous(at::MemoryFormat::ChannelsLast);
    at::Tensor w = at::randn({k.out, k.x[1], 3, 3}) / std::sqrt(9.0 * static_cast<double>(k.x[1]));
    at::Tensor b = at::randn({k.out});
    const int64_t oh = k.x[2] + 2 * k.pad - 2, ow = k.x[3] + 2 * k.pad - 2;
    at::Tensor r = at::randn({k.x[0], k.out, oh, ow});
    for (const Epilogue& e : epilogues()) {
      const std::string what = std::string(k.what) + ", " + e.what;
      Body body = [&](Graph& g, const std::vector<Node*>& in) {
        return std::vector<Node*>{e.build(g, conv(g, in[0], in[1], k.bias ? in[2] : nullptr, k.pad), in[3])};
      };
      const std::vector<at::Tensor> in = {x, w, b, r};
      auto built = build(body, in);
      ASSERT_TRUE(built) << what;
      at::Tensor want = (*graph::interpret_tensors(*built->graph, in))[0];
      for (bool on : {true, false}) {
        onednn::set_enabled(on);
        auto fn = llvm_compile(built->graph, built->metas);
        ASSERT_TRUE(fn.ok()) << what << ": " << fn.error().message;
        const onednn::Stats was = onednn::stats();
        expect_near(want, (*fn)(in)[0], what + (on ? "" : ", oneDNN off"));
        const onednn::Stats now = onednn::stats();
        if (!on) continue;
        EXPECT_EQ(now.winograd_steps - was.winograd_steps, 1) << what << " (" << now.last_impl << ")";
        if (!onednn_has_winograd()) {
          EXPECT_EQ(now.own_winograd_steps - was.own_winograd_steps, 1) << what << ": our own F(4x4, 3x3)";
        }
      }
    }
  }
}

// The rounding error against float64, max over the output relative to its largest value: of the order of the
// direct convolution's (F(4x4, 3x3)'s transforms scale values by up to ~10, not by orders of magnitude).
TEST_F(OwnWinograd, ErrorAgainstFloat64NearTheDirectConvolutions) {
  if (onednn_has_winograd()) GTEST_SKIP() << "oneDNN's own Winograd runs on this host (test_onednn.cpp)";
  for (int64_t c : {16, 64, 256}) {
    at::Tensor x = at::randn({2, c, 12, 12}), w = at::randn({c, c, 3, 3}) / std::sqrt(9.0 * c), b = at::randn({c});
    Body body = [&](Graph& g, const std::vector<Node*>& in) {
      return std::vector<Node*>{conv(g, in[0], in[1], in[2], 1)};
    };
    auto built = build(body, {x, w, b});
    ASSERT_TRUE(built);
    auto fn = llvm_compile(built->graph, built->metas);
    ASSERT_TRUE(fn.ok());
    const long long own = onednn::stats().own_winograd_steps;
    at::Tensor got = (*fn)({x, w, b})[0].to(at::kDouble);
    ASSERT_EQ(onednn::stats().own_winograd_steps, own + 1);
    at::Tensor exact = at::conv2d(x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble), 1, 1);
    at::Tensor direct = at::conv2d(x, w, b, 1, 1).to(at::kDouble);
    const double scale = exact.abs().max().item<double>();
    const double ours = (got - exact).abs().max().item<double>() / scale;
    const double theirs = (direct - exact).abs().max().item<double>() / scale;
    EXPECT_LT(ours, 1e-5) << c << " channels";
    EXPECT_LT(ours, 16 * theirs + 1e-7) << c << " channels: direct " << theirs;
  }
}

// An in-place write to the weight between calls re-transforms it; a residual whose last reader is the conv is
// summed in its own buffer (read before each output pixel is written).
TEST_F(OwnWinograd, WeightWritesAndResidualInPlace) {
  at::Tensor x = at::randn({2, 16, 10, 10}), w = at::randn({16, 16, 3, 3}) * 0.1, b = at::randn({16});
  Body body = [&](Graph& g, const std::vector<Node*>& in) {
    Node* a = g.call(op("aten::relu"), {conv(g, in[0], in[1], in[2], 1)});
    Node* c = g.call(op("aten::relu"), {conv(g, a, in[1], in[2], 1)});
    Node* y = g.call(op("aten::add.Tensor"), {conv(g, c, in[1], in[2], 1), a});
    return std::vector<Node*>{g.call(op("aten::relu"), {y})};
  };
  auto built = build(body, {x, w, b});
  ASSERT_TRUE(built);
  auto fn = llvm_compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  for (int call = 0; call < 3; ++call) {
    if (call == 2) w.mul_(-0.5);  // in place: the version counter moves
    at::Tensor want = (*graph::interpret_tensors(*built->graph, {x, w, b}))[0];
    const onednn::Stats was = onednn::stats();
    expect_near(want, (*fn)({x, w, b})[0], "call " + std::to_string(call));
    const onednn::Stats now = onednn::stats();
    EXPECT_EQ(now.winograd_steps - was.winograd_steps, 3) << "call " << call;
    EXPECT_EQ(now.sums_in_place - was.sums_in_place, 1) << "call " << call << ": the last conv sums into a";
  }
}

}  // namespace
}  // namespace tj::jit
