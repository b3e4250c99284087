// The llvm backend's oneDNN steps (jit/onednn_plan.h, jit/onednn_exec.h)
// against ATen: convolutions of every rank (grouped, depthwise, dilated,
// strided, padded, transposed, without bias, odd channel counts) and
// Linears, each with every fused epilogue; the packed-weight cache re-packs
// after an in-place write; TRACEJIT_ONEDNN=0 gives the same values without
// oneDNN steps; shapes oneDNN's step does not take run as ATen ops.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <limits>
#include <tuple>

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

struct ConvCase {
  const char* what;
  std::vector<int64_t> x, w;  // input and weight sizes (ATen's)
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed;
  int64_t groups;
  bool bias;
};

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {"2-d 3x3 pad 1", {2, 8, 9, 9}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1, true},
      {"2-d no bias, odd channels, stride 2", {1, 3, 11, 7}, {5, 3, 3, 3}, {2, 2}, {0, 1}, {1, 1}, {0, 0}, false, 1, false},
      {"2-d dilated", {2, 4, 12, 12}, {6, 4, 3, 3}, {1, 1}, {2, 2}, {2, 2}, {0, 0}, false, 1, true},
      {"2-d grouped", {2, 6, 8, 8}, {9, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 3, true},
      {"2-d depthwise", {2, 7, 10, 10}, {7, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 7, true},
      {"2-d 1x1", {4, 16, 5, 5}, {8, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, false, 1, true},
      {"1-d", {2, 5, 17}, {7, 5, 4}, {2}, {1}, {1}, {0}, false, 1, true},
      {"3-d", {1, 3, 6, 7, 5}, {4, 3, 2, 3, 3}, {1, 2, 1}, {1, 0, 1}, {1, 1, 1}, {0, 0, 0}, false, 1, true},
      {"2-d transposed", {2, 6, 5, 5}, {6, 4, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, true, 1, true},
      {"2-d transposed grouped, no bias", {1, 4, 6, 6}, {4, 3, 2, 2}, {2, 2}, {0, 0}, {1, 1}, {0, 0}, true, 2, false},
      {"1-d transposed dilated", {2, 3, 9}, {3, 5, 3}, {1}, {1}, {2}, {0}, true, 1, true},
      {"3-d transposed", {1, 2, 3, 4, 3}, {2, 3, 2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {1, 1, 1}, {1, 0, 1}, true, 1, true},
  };
  return cases;
}

// An epilogue after the head: builds nodes on `y`, returns the value (x[3]
// is a residual of y's sizes, x[4] and x[5] per-channel tensors).
struct Epilogue {
  const char* what;
  std::function<Node*(Graph&, Node*, const std::vector<Node*>&)> build;
  size_t post_ops;  // how many of its nodes oneDNN takes as post-ops
};

const std::vector<Epilogue>& epilogues() {
  static const std::vector<Epilogue> list = {
      {"none", [](Graph&, Node* y, const std::vector<Node*>&) { return y; }, 0},
      {"relu", [](Graph& g, Node* y, const std::vector<Node*>&) { return g.call(op("aten::relu"), {y}); }, 1},
      {"gelu", [](Graph& g, Node* y, const std::vector<Node*>&) { return g.call(op("aten::gelu"), {y}); }, 1},
      {"gelu tanh",
       [](Graph& g, Node* y, const std::vector<Node*>&) {
         return g.call(op("aten::gelu"), {y}, {Kwarg{"approximate", Arg("tanh")}});
       },
       1},
      {"silu", [](Graph& g, Node* y, const std::vector<Node*>&) { return g.call(op("aten::silu"), {y}); }, 1},
      {"sigmoid", [](Graph& g, Node* y, const std::vector<Node*>&) { return g.call(op("aten::sigmoid"), {y}); }, 1},
      {"tanh", [](Graph& g, Node* y, const std::vector<Node*>&) { return g.call(op("aten::tanh"), {y}); }, 1},
      {"hardswish", [](Graph& g, Node* y, const std::vector<Node*>&) { return g.call(op("aten::hardswish"), {y}); }, 1},
      {"hardsigmoid",
       [](Graph& g, Node* y, const std::vector<Node*>&) { return g.call(op("aten::hardsigmoid"), {y}); }, 1},
      {"leaky_relu 0.2",
       [](Graph& g, Node* y, const std::vector<Node*>&) { return g.call(op("aten::leaky_relu"), {y, 0.2}); }, 1},
      {"elu 0.5", [](Graph& g, Node* y, const std::vector<Node*>&) { return g.call(op("aten::elu"), {y, 0.5}); }, 1},
      {"clamp(-0.5, 0.7)",
       [](Graph& g, Node* y, const std::vector<Node*>&) { return g.call(op("aten::clamp"), {y, -0.5, 0.7}); }, 1},
      {"clamp(min=0.1)",
       [](Graph& g, Node* y, const std::vector<Node*>&) { return g.call(op("aten::clamp"), {y, 0.1, Arg()}); }, 1},
      {"hardtanh(0, 6)",
       [](Graph& g, Node* y, const std::vector<Node*>&) { return g.call(op("aten::hardtanh"), {y, 0.0, 6.0}); }, 1},
      {"mul 0.25", [](Graph& g, Node* y, const std::vector<Node*>&) { return g.call(op("aten::mul.Scalar"), {y, 0.25}); },
       1},
      {"residual add",
       [](Graph& g, Node* y, const std::vector<Node*>& x) { return g.call(op("aten::add.Tensor"), {y, x[3]}); }, 1},
      {"residual first, then relu",
       [](Graph& g, Node* y, const std::vector<Node*>& x) {
         return g.call(op("aten::relu"), {g.call(op("aten::add.Tensor"), {x[3], y})});
       },
       2},
      {"relu, then residual alpha 0.5",
       [](Graph& g, Node* y, const std::vector<Node*>& x) {
         return g.call(op("aten::add.Tensor"), {g.call(op("aten::relu"), {y}), x[3]}, {Kwarg{"alpha", Arg(0.5)}});
       },
       2},
      {"batch norm as addcmul(shift, y, scale), relu",
       [](Graph& g, Node* y, const std::vector<Node*>& x) {
         return g.call(op("aten::relu"), {g.call(op("aten::addcmul"), {x[5], y, x[4]})});
       },
       2},
      {"per-channel mul, then residual",
       [](Graph& g, Node* y, const std::vector<Node*>& x) {
         return g.call(op("aten::add.Tensor"), {g.call(op("aten::mul.Tensor"), {x[4], y}), x[3]});
       },
       2},
      {"per-channel add, gelu",
       [](Graph& g, Node* y, const std::vector<Node*>& x) {
         return g.call(op("aten::gelu"), {g.call(op("aten::add.Tensor"), {y, x[5]})});
       },
       2},
      {"scale, silu",
       [](Graph& g, Node* y, const std::vector<Node*>&) {
         return g.call(op("aten::silu"), {g.call(op("aten::mul.Scalar"), {y, 1.5})});
       },
       2},
  };
  return list;
}

Node* conv_node(Graph& g, const std::vector<Node*>& x, const ConvCase& c) {
  return g.call(op("aten::convolution"), {x[0], x[1], c.bias ? Arg(x[2]) : Arg(), Arg::ints(c.stride),
                                          Arg::ints(c.padding), Arg::ints(c.dilation), Arg(c.transposed),
                                          Arg::ints(c.output_padding), Arg(c.groups)});
}

at::Tensor conv_eager(const ConvCase& c, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  return at::convolution(x, w, c.bias ? c10::optional<at::Tensor>(b) : c10::nullopt, c.stride, c.padding, c.dilation,
                         c.transposed, c.output_padding, c.groups);
}

// Compiles `body`, runs it, compares with the interpreter (ATen) within expect_near's tolerance.
void expect_matches_aten(const Body& body, const std::vector<at::Tensor>& in, const std::string& what) {
  auto built = build(body, in);
  ASSERT_TRUE(built) << what;
  at::Tensor want = (*graph::interpret_tensors(*built->graph, in))[0];
  auto fn = llvm_compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok()) << what << ": " << fn.error().message;
  expect_near(want, (*fn)(in)[0], what);
}

class OneDnn : public ::testing::Test {
 protected:
  void SetUp() override {
    onednn::set_enabled(true);
    linear_mode_before_ = onednn::linear_mode();
    onednn::set_linear_mode(onednn::LinearMode::always);  // the Linear steps on every CPU (auto: LinearsWhereTheyPay)
    onednn::reset();
    onednn::set_winograd_after(0);  // Winograd from the first call (the rule itself: WinogradAfterDirectCalls)
  }
  void TearDown() override {
    onednn::set_enabled(true);
    onednn::set_linear_mode(linear_mode_before_);
    onednn::refuse_after(-1);
    onednn::set_winograd_after(-1);
    set_freezing(true);
  }
  onednn::LinearMode linear_mode_before_ = onednn::LinearMode::auto_;
};

TEST_F(OneDnn, ConvolutionsWithEveryEpilogueMatchAten) {
  for (const ConvCase& c : conv_cases()) {
    at::Tensor x = at::randn(c.x), w = at::randn(c.w) * 0.3;
    const int64_t out_ch = c.transposed ? c.w[1] * c.groups : c.w[0];
    at::Tensor b = at::randn({out_ch});
    at::Tensor residual = at::randn_like(conv_eager(c, x, w, b));
    std::vector<int64_t> channel(c.x.size() - 1, 1);  // [C, 1, ...]: as batch norm's decomposition views them
    channel[0] = out_ch;
    at::Tensor scale = at::rand(channel) + 0.5, shift = at::randn(channel);
    for (const Epilogue& e : epilogues()) {
      const std::string what = std::string(c.what) + ", " + e.what;
      Body body = [&](Graph& g, const std::vector<Node*>& in) {
        return std::vector<Node*>{e.build(g, conv_node(g, in, c), in)};
      };
      const std::vector<at::Tensor> in = {x, w, b, residual, scale, shift};
      auto built = build(body, in);
      ASSERT_TRUE(built) << what;
      at::Tensor want = (*graph::interpret_tensors(*built->graph, in))[0];
      const onednn::Stats was = onednn::stats();
      auto fn = llvm_compile(built->graph, built->metas);
      ASSERT_TRUE(fn.ok()) << what << ": " << fn.error().message;
      EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 1) << what;
      EXPECT_EQ(last_llvm_compile_stats().kernels, 0) << what << ": the epilogue is oneDNN's post-ops";
      at::Tensor got = (*fn)(in)[0];
      const onednn::Stats now = onednn::stats();
      // Each case runs as one primitive, except where oneDNN 2.6 has only its
      // reference implementation (refused: ATen's ops run). Which those are
      // depends on the host's ISA: with AVX-512, a conv of 3 channels per
      // group whose post-ops end in a sum after another post-op; with AVX2
      // only, every conv whose post-ops do.
      const bool sum_after_another = std::string(e.what) == "relu, then residual alpha 0.5" ||
                                     std::string(e.what) == "per-channel mul, then residual";
      if (now.steps_run != was.steps_run + 1) {
        EXPECT_TRUE(sum_after_another) << what << ": refused";
        EXPECT_EQ(now.refused_reference_only, was.refused_reference_only + 1)
            << what << ": refused, and not because oneDNN has only its reference implementation";
      }
      expect_near(want, got, what);
    }
  }
}

TEST_F(OneDnn, ChannelsLastInputAndStridedWeight) {
  ConvCase c{"", {2, 8, 9, 9}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1, true};
  at::Tensor x = at::randn(c.x).contiguous(at::MemoryFormat::ChannelsLast);
  at::Tensor w = at::randn({8, 16, 3, 3}).transpose(0, 1);  // not contiguous
  at::Tensor b = at::randn({32}).slice(0, 0, 32, 2);         // stride 2
  Body body = [&](Graph& g, const std::vector<Node*>& in) {
    return std::vector<Node*>{g.call(op("aten::relu"), {conv_node(g, in, c)})};
  };
  expect_matches_aten(body, {x, w, b}, "channels-last input, transposed weight, strided bias");
  EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 1);
}

// conv -> conv: the intermediate stays channels-last; the result has eager's strides.
TEST_F(OneDnn, ConsecutiveConvsKeepChannelsLast) {
  ConvCase c{"", {2, 8, 9, 9}, {8, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1, true};
  Body body = [&](Graph& g, const std::vector<Node*>& in) {
    Node* a = g.call(op("aten::relu"), {conv_node(g, in, c)});
    Node* second = g.call(op("aten::convolution"), {a, in[1], in[2], Arg::ints(c.stride), Arg::ints(c.padding),
                                                    Arg::ints(c.dilation), Arg(false), Arg::ints({0, 0}), Arg(1)});
    return std::vector<Node*>{g.call(op("aten::add.Tensor"), {second, a})};
  };
  std::vector<at::Tensor> in = {at::randn(c.x), at::randn(c.w) * 0.3, at::randn({8})};
  auto built = build(body, in);
  ASSERT_TRUE(built);
  at::Tensor want = (*graph::interpret_tensors(*built->graph, in))[0];
  auto fn = llvm_compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 2);
  const long long in_place = onednn::stats().sums_in_place;
  at::Tensor got = (*fn)(in)[0];
  expect_near(want, got, "conv, relu, conv + residual");
  EXPECT_EQ(onednn::stats().sums_in_place, in_place) << "the residual is the step's own input: not summed into";
}

// The residual's last reader sums into its buffer (Plan::residual_last_use): a 1x1 convolution (direct) whose
// residual is an earlier step's channels-last result.
TEST_F(OneDnn, ResidualSummedInPlaceByItsLastReader) {
  ConvCase c{"", {2, 16, 7, 7}, {16, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, false, 1, true};
  Body body = [&](Graph& g, const std::vector<Node*>& in) {
    Node* a = g.call(op("aten::relu"), {conv_node(g, in, c)});
    Node* b = g.call(op("aten::relu"), {conv_node(g, {a, in[1], in[2]}, c)});
    Node* y = g.call(op("aten::add.Tensor"), {conv_node(g, {b, in[1], in[2]}, c), a});
    return std::vector<Node*>{g.call(op("aten::relu"), {y})};
  };
  std::vector<at::Tensor> in = {at::randn(c.x), at::randn(c.w) * 0.3, at::randn({16})};
  auto built = build(body, in);
  ASSERT_TRUE(built);
  at::Tensor want = (*graph::interpret_tensors(*built->graph, in))[0];
  auto fn = llvm_compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 3);
  for (int call = 0; call < 2; ++call) {
    const long long in_place = onednn::stats().sums_in_place;
    expect_near(want, (*fn)(in)[0], "conv, conv, conv + the first one's result");
    EXPECT_EQ(onednn::stats().sums_in_place, in_place + 1);
  }
}

// A NaN or an inf in a Winograd-shaped convolution's input or weight stays where eager's direct convolution
// puts it: such calls run the direct convolution (Winograd's transforms would spread it over a tile).
TEST_F(OneDnn, NonFiniteValuesSkipWinograd) {
  ConvCase c{"", {1, 16, 12, 12}, {16, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1, true};
  Body body = [&](Graph& g, const std::vector<Node*>& in) { return std::vector<Node*>{conv_node(g, in, c)}; };
  at::Tensor x = at::randn(c.x), w = at::randn(c.w) * 0.1, b = at::randn({16});
  auto built = build(body, {x, w, b});
  ASSERT_TRUE(built);
  auto fn = llvm_compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  auto same_non_finite = [&](const std::string& what) {
    at::Tensor want = conv_eager(c, x, w, b), got = (*fn)({x, w, b})[0];
    EXPECT_TRUE(at::equal(at::isnan(want), at::isnan(got))) << what << ": NaN where eager has NaN";
    EXPECT_TRUE(at::equal(at::isinf(want), at::isinf(got))) << what << ": inf where eager has inf";
    expect_near(want, got, what);
  };
  long long wino = onednn::stats().winograd_steps;
  same_non_finite("finite");
  const bool winograd = onednn::stats().winograd_steps > wino;  // oneDNN's (AVX-512) or our own (onednn_f43.h)
  EXPECT_TRUE(winograd) << onednn::stats().last_impl;
  wino = onednn::stats().winograd_steps;
  x[0][3][6][6] = std::numeric_limits<float>::quiet_NaN();
  same_non_finite("a NaN in the input");
  x[0][3][6][6] = std::numeric_limits<float>::infinity();
  same_non_finite("an inf in the input");
  x[0][3][6][6] = 0.5;
  // an in-place write: packed again, found not finite (the centre tap: every output of channel 2 reads it, so
  // no border case where implementations skip the padding differently)
  w[2][1][1][1] = std::numeric_limits<float>::quiet_NaN();
  same_non_finite("a NaN in the weight");
  EXPECT_EQ(onednn::stats().winograd_steps, wino) << "none of the non-finite calls ran Winograd";
  w[2][1][1][1] = 0.25;
  same_non_finite("finite again");
  if (winograd) {
    EXPECT_EQ(onednn::stats().winograd_steps, wino + 1) << "finite again: Winograd again";
  }
}

// 3x3 stride-1 convolutions run as oneDNN's Winograd where it has one (AVX-512 hosts), else as our own
// (onednn_f43.h): eager's values within expect_near's tolerance, with a bias, relu, a residual (sum post-op),
// channels-last or plain results, odd channel counts.
TEST_F(OneDnn, WinogradConvolutionsMatchAten) {
  struct Case {
    const char* what;
    std::vector<int64_t> x;
    int64_t out;
  };
  for (const Case& k : {Case{"32 -> 32 at 14x14", {2, 32, 14, 14}, 32}, Case{"64 -> 48 at 9x11", {1, 64, 9, 11}, 48},
                        Case{"odd channels 5 -> 7", {2, 5, 8, 8}, 7}}) {
    ConvCase c{"", k.x, {k.out, k.x[1], 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1, true};
    at::Tensor x = at::randn(c.x), w = at::randn(c.w) / std::sqrt(9.0 * static_cast<double>(k.x[1]));
    at::Tensor b = at::randn({k.out}), r = at::randn({k.x[0], k.out, k.x[2], k.x[3]});
    Body body = [&](Graph& g, const std::vector<Node*>& in) {
      Node* y = g.call(op("aten::add.Tensor"), {conv_node(g, in, c), in[3]});
      return std::vector<Node*>{g.call(op("aten::relu"), {y})};
    };
    const long long before = onednn::stats().winograd_steps;
    expect_matches_aten(body, {x, w, b, r}, k.what);
    const long long ran = onednn::stats().winograd_steps - before;
    // oneDNN's Winograd where it has one (AVX-512 hosts, channels a multiple of 16), else our own
    EXPECT_EQ(ran, 1) << k.what << ": Winograd (" << onednn::stats().last_impl << ")";
  }
  // two in a row: the first one's result, channels-last between them, is the second one's input
  ConvCase c{"", {2, 16, 10, 10}, {16, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1, true};
  Body body = [&](Graph& g, const std::vector<Node*>& in) {
    Node* a = g.call(op("aten::relu"), {conv_node(g, in, c)});
    return std::vector<Node*>{conv_node(g, {a, in[1], in[2]}, c)};
  };
  const long long reused = onednn::stats().blocked_inputs_reused;
  expect_matches_aten(body, {at::randn(c.x), at::randn(c.w) * 0.1, at::randn({16})}, "conv, relu, conv");
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_EQ(onednn::stats().blocked_inputs_reused, reused + 1) << "the second reads the first's blocked result";
  }
}

// A Winograd-shaped convolution runs direct until it has computed winograd_after() output pixels that way, then
// as Winograd: a one-off call never pays Winograd's weight transform (issue 44's first call). Eager's values on
// every call; the weight is packed for the direct primitive once and for Winograd's once, when it switches.
TEST_F(OneDnn, WinogradAfterDirectCalls) {
  onednn::set_winograd_after(300);  // 200 output pixels a call: two direct calls, then Winograd
  ConvCase c{"", {2, 16, 10, 10}, {16, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1, true};
  Body body = [&](Graph& g, const std::vector<Node*>& in) {
    return std::vector<Node*>{g.call(op("aten::relu"), {conv_node(g, in, c)})};
  };
  at::Tensor x = at::randn(c.x), w = at::randn(c.w) * 0.1, b = at::randn({16});
  auto built = build(body, {x, w, b});
  ASSERT_TRUE(built);
  at::Tensor want = (*graph::interpret_tensors(*built->graph, {x, w, b}))[0];
  auto fn = llvm_compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  for (int call = 1; call <= 4; ++call) {
    const onednn::Stats before = onednn::stats();
    expect_near(want, (*fn)({x, w, b})[0], "call " + std::to_string(call));
    const onednn::Stats after = onednn::stats();
    const bool direct = call <= 2;
    EXPECT_EQ(after.direct_before_winograd - before.direct_before_winograd, direct ? 1 : 0) << "call " << call;
    // oneDNN's Winograd (AVX-512 hosts) or our own F(4x4, 3x3) (onednn_f43.h) where oneDNN has none
    EXPECT_EQ(after.winograd_steps - before.winograd_steps, direct ? 0 : 1) << "call " << call;
    // packed: for the direct primitive at call 1, for Winograd's at call 3
    const long long packs = after.weight_packs - before.weight_packs;
    EXPECT_EQ(packs, call == 1 || call == 3 ? 1 : 0) << "call " << call;
  }
}

// A Winograd result every reader of which is a oneDNN step stays in its blocked layout (not reordered out) until
// a reader needs its channels-last values: as in a resnet block, `a` is read blocked by the next Winograd conv and
// as the residual of the one after, `b` by the next Winograd conv, `c` by a stride-2 (direct) conv, which writes
// it out first. A refused step (its nodes run as ATen ops) writes out what it reads too. Eager's values.
TEST_F(OneDnn, WinogradResultsStayBlockedUntilRead) {
  ConvCase c3{"", {2, 16, 10, 10}, {16, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1, true};
  ConvCase s2{"", {2, 16, 10, 10}, {16, 16, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, false, 1, true};
  Body body = [&](Graph& g, const std::vector<Node*>& in) {
    Node* a = g.call(op("aten::relu"), {conv_node(g, in, c3)});
    Node* b = g.call(op("aten::relu"), {conv_node(g, {a, in[1], in[2]}, c3)});
    Node* c = g.call(op("aten::relu"), {g.call(op("aten::add.Tensor"), {conv_node(g, {b, in[1], in[2]}, c3), a})});
    return std::vector<Node*>{conv_node(g, {c, in[3], in[2]}, s2)};
  };
  std::vector<at::Tensor> in = {at::randn(c3.x), at::randn(c3.w) * 0.1, at::randn({16}), at::randn(c3.w) * 0.1};
  auto built = build(body, in);
  ASSERT_TRUE(built);
  at::Tensor want = (*graph::interpret_tensors(*built->graph, in))[0];
  auto fn = llvm_compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 4);
  onednn::Stats before = onednn::stats();
  expect_near(want, (*fn)(in)[0], "blocked a, b, c; c written out for the stride-2 conv");
  onednn::Stats after = onednn::stats();
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_EQ(after.winograd_steps - before.winograd_steps, 3);
    EXPECT_EQ(after.results_deferred - before.results_deferred, 3) << "a, b and c kept blocked";
    EXPECT_EQ(after.results_materialized - before.results_materialized, 1) << "only c written out";
    EXPECT_EQ(after.blocked_inputs_reused - before.blocked_inputs_reused, 2) << "b and c read a and b blocked";
  }
  // the second step refused: its nodes read a as ATen ops, so a is written out (c's residual then is too)
  before = onednn::stats();
  onednn::refuse_after(1);
  expect_near(want, (*fn)(in)[0], "the second step refused");
  onednn::refuse_after(-1);
  after = onednn::stats();
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_EQ(after.results_materialized - before.results_materialized, 1) << "a written out for the ATen ops";
  }
}

// A 1x1 convolution of a plain (NCHW) input of 14x14 or more runs on the plain layouts (oneDNN's gemm
// convolution) instead of reordering the input to channels-last; a channels-last input keeps the channels-last
// primitive. Eager's values with a relu, and with a residual (the sum post-op).
TEST_F(OneDnn, Plain1x1ConvolutionsReadTheirInputAsItLies) {
  ConvCase c{"", {2, 32, 16, 16}, {24, 32, 1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, false, 1, true};
  at::Tensor w = at::randn(c.w) * 0.2, b = at::randn({24}), r = at::randn({2, 24, 16, 16});
  Body body = [&](Graph& g, const std::vector<Node*>& in) {
    Node* y = g.call(op("aten::add.Tensor"), {conv_node(g, in, c), in[3]});
    return std::vector<Node*>{g.call(op("aten::relu"), {y})};
  };
  for (bool channels_last : {false, true}) {
    at::Tensor x = at::randn(c.x);
    if (channels_last) x = x.contiguous(at::MemoryFormat::ChannelsLast);
    const std::string what = channels_last ? "channels-last input" : "plain input";
    expect_matches_aten(body, {x, w, b, r}, what);
    const std::string impl = onednn::stats().last_impl;
    EXPECT_EQ(impl.find("gemm") != std::string::npos, !channels_last) << what << ": " << impl;
  }
}

// A Winograd result summed into in place by a later step (a 1x1 conv's residual) is a new value in the same
// tensor: the next Winograd convolution must not read the blocked copy of the old one.
TEST_F(OneDnn, BlockedCopyOfAValueWrittenInPlaceIsNotReused) {
  ConvCase c3{"", {2, 16, 10, 10}, {16, 16, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1, true};
  ConvCase c1{"", {2, 16, 10, 10}, {16, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, false, 1, true};
  Body body = [&](Graph& g, const std::vector<Node*>& in) {
    // the 1x1 conv first in graph order, so that it (not the Winograd one) takes the add as its post-op
    Node* one = conv_node(g, {in[3], in[4], in[2]}, c1);
    Node* a = conv_node(g, {in[0], in[1], in[2]}, c3);  // Winograd
    Node* b = g.call(op("aten::add.Tensor"), {one, a});   // the 1x1 step sums into a
    return std::vector<Node*>{conv_node(g, {b, in[1], in[2]}, c3)};                      // Winograd on b
  };
  std::vector<at::Tensor> in = {at::randn(c3.x), at::randn(c3.w) * 0.1, at::randn({16}), at::randn(c1.x),
                                at::randn(c1.w) * 0.3};
  auto built = build(body, in);
  ASSERT_TRUE(built);
  at::Tensor want = (*graph::interpret_tensors(*built->graph, in))[0];
  auto fn = llvm_compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 3);
  const long long in_place = onednn::stats().sums_in_place, reused = onednn::stats().blocked_inputs_reused;
  expect_near(want, (*fn)(in)[0], "Winograd, 1x1 + its result in place, Winograd");
  EXPECT_EQ(onednn::stats().sums_in_place, in_place + 1) << "the 1x1 conv sums into the first result";
  EXPECT_EQ(onednn::stats().blocked_inputs_reused, reused) << "the blocked copy is stale";
}

// A residual read again after the step (or returned) is not summed into: its values stay for the later reader.
TEST_F(OneDnn, ResidualReadLaterIsNotSummedInto) {
  ConvCase c{"", {2, 8, 9, 9}, {8, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1, true};
  auto conv = [&](Graph& g, Node* x, const std::vector<Node*>& in) {
    return g.call(op("aten::convolution"), {x, in[1], in[2], Arg::ints(c.stride), Arg::ints(c.padding),
                                            Arg::ints(c.dilation), Arg(false), Arg::ints({0, 0}), Arg(1)});
  };
  for (bool returned : {false, true}) {
    Body body = [&](Graph& g, const std::vector<Node*>& in) {
      Node* a = g.call(op("aten::relu"), {conv(g, in[0], in)});
      Node* sum = g.call(op("aten::add.Tensor"), {conv(g, a, in), a});
      Node* later = g.call(op("aten::mul.Tensor"), {conv(g, sum, in), a});  // reads `a` after the residual step
      return returned ? std::vector<Node*>{later, a} : std::vector<Node*>{later};
    };
    std::vector<at::Tensor> in = {at::randn(c.x), at::randn(c.w) * 0.3, at::randn({8})};
    auto built = build(body, in);
    ASSERT_TRUE(built);
    auto want = *graph::interpret_tensors(*built->graph, in);
    auto fn = llvm_compile(built->graph, built->metas);
    ASSERT_TRUE(fn.ok());
    const long long in_place = onednn::stats().sums_in_place;
    auto got = (*fn)(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_near(want[i], got[i], returned ? "returned residual" : "residual read later");
    EXPECT_EQ(onednn::stats().sums_in_place, in_place) << "the residual is read after the step";
  }
}

TEST_F(OneDnn, LinearsWithEpiloguesMatchAten) {
  for (bool bias : {true, false}) {
    for (const Epilogue& e : epilogues()) {
      const std::string what = std::string(bias ? "addmm" : "mm") + ", " + e.what;
      Body body = [&](Graph& g, const std::vector<Node*>& in) {
        Node* wt = g.call(op("aten::t"), {in[1]});
        Node* y = bias ? g.call(op("aten::addmm"), {in[2], in[0], wt}) : g.call(op("aten::mm"), {in[0], wt});
        return std::vector<Node*>{e.build(g, y, in)};
      };
      std::vector<at::Tensor> in = {at::randn({64, 256}), at::randn({300, 256}) * 0.1, at::randn({300}),
                                    at::randn({64, 300}),  at::rand({300}) + 0.5,         at::randn({300})};
      auto built = build(body, in);
      ASSERT_TRUE(built) << what;
      at::Tensor want = (*graph::interpret_tensors(*built->graph, in))[0];
      auto fn = llvm_compile(built->graph, built->metas);
      ASSERT_TRUE(fn.ok()) << what;
      EXPECT_EQ(last_llvm_compile_stats().onednn_linears, 1) << what;
      EXPECT_EQ(last_llvm_compile_stats().kernels, 0) << what;
      expect_near(want, (*fn)(in)[0], what);
    }
  }
}

// By default a Linear is a oneDNN step where oneDNN runs it on its brgemm kernels (AVX-512); with only its
// own sgemm (AVX2: "x64:gemm:jit", slower than ATen's BLAS) the addmm stays ATen's and its epilogue an llvm
// kernel, but for tall, shallow ones (kShallowRows rows or more, kShallowDepth input features or fewer),
// where OpenBLAS is at its slowest. The forced modes give the same values.
TEST_F(OneDnn, LinearsWhereTheyPay) {
  const std::string impl = onednn::inner_product_impl();
  ASSERT_FALSE(impl.empty());
  const bool brgemm = impl.rfind("brg", 0) == 0;
  Body body = [](Graph& g, const std::vector<Node*>& in) {
    Node* y = g.call(op("aten::addmm"), {in[2], in[0], g.call(op("aten::t"), {in[1]})});
    return std::vector<Node*>{g.call(op("aten::relu"), {y})};
  };
  std::vector<at::Tensor> in = {at::randn({64, 512}), at::randn({512, 512}) * 0.05, at::randn({512})};
  auto built = build(body, in);
  ASSERT_TRUE(built);
  const at::Tensor want = (*graph::interpret_tensors(*built->graph, in))[0];
  for (auto [mode, steps, what] : {std::tuple{onednn::LinearMode::auto_, brgemm ? 1 : 0, "auto"},
                                   std::tuple{onednn::LinearMode::always, 1, "always"},
                                   std::tuple{onednn::LinearMode::never, 0, "never"}}) {
    onednn::set_linear_mode(mode);
    auto fn = llvm_compile(built->graph, built->metas);
    ASSERT_TRUE(fn.ok()) << what;
    EXPECT_EQ(last_llvm_compile_stats().onednn_linears, steps) << what << ", oneDNN's inner product: " << impl;
    EXPECT_EQ(last_llvm_compile_stats().kernels, 1 - steps) << what << ": the relu fuses either way";
    expect_near(want, (*fn)(in)[0], what);
  }
  // tall and shallow (convnext's first stage) and just outside either bound
  const bool sgemm = impl.find("gemm:jit") != std::string::npos;
  onednn::set_linear_mode(onednn::LinearMode::auto_);
  for (auto [rows, depth, tall] : {std::tuple{onednn::kShallowRows, int64_t{96}, true},
                                   std::tuple{onednn::kShallowRows, onednn::kShallowDepth, true},
                                   std::tuple{onednn::kShallowRows - 1, int64_t{96}, false},
                                   std::tuple{onednn::kShallowRows, onednn::kShallowDepth + 1, false}}) {
    const std::string what = std::to_string(rows) + " x " + std::to_string(depth);
    in = {at::randn({rows, depth}), at::randn({384, depth}) * 0.1, at::randn({384})};
    built = build(body, in);
    ASSERT_TRUE(built) << what;
    auto fn = llvm_compile(built->graph, built->metas);
    ASSERT_TRUE(fn.ok()) << what;
    EXPECT_EQ(last_llvm_compile_stats().onednn_linears, brgemm || (sgemm && tall) ? 1 : 0)
        << what << ", oneDNN's inner product: " << impl;
    expect_near((*graph::interpret_tensors(*built->graph, in))[0], (*fn)(in)[0], what);
  }
}

// The packed copy of a weight is re-made after an in-place write (its
// version counter moved): never a stale weight.
TEST_F(OneDnn, WeightWrittenInPlaceIsPackedAgain) {
  ConvCase c{"", {2, 8, 9, 9}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1, true};
  at::Tensor x = at::randn(c.x), w = at::randn(c.w), b = at::randn({16});
  Body body = [&](Graph& g, const std::vector<Node*>& in) {
    return std::vector<Node*>{g.call(op("aten::relu"), {conv_node(g, in, c)})};
  };
  auto built = build(body, {x, w, b});
  ASSERT_TRUE(built);
  auto fn = llvm_compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  auto eager = [&] { return at::relu(conv_eager(c, x, w, b)); };
  expect_near(eager(), (*fn)({x, w, b})[0], "first call");
  const long long packs = onednn::stats().weight_packs;
  expect_near(eager(), (*fn)({x, w, b})[0], "second call");
  EXPECT_EQ(onednn::stats().weight_packs, packs) << "the packed weight is reused";
  EXPECT_GT(onednn::stats().weight_hits, 0);
  w.mul_(-2);  // an in-place write
  expect_near(eager(), (*fn)({x, w, b})[0], "after w.mul_(-2)");
  EXPECT_EQ(onednn::stats().weight_packs, packs + 1);
  w.copy_(at::randn(c.w));  // load_state_dict's copy_
  expect_near(eager(), (*fn)({x, w, b})[0], "after w.copy_(...)");
  {
    at::NoGradGuard no_grad;  // as an optimizer step writes
    w.slice(0, 0, 4).zero_();  // a write through a view bumps the shared counter
  }
  expect_near(eager(), (*fn)({x, w, b})[0], "after a write through a view");
  at::Tensor other = at::randn(c.w);  // another tensor of the same sizes
  expect_near(at::relu(conv_eager(c, x, other, b)), (*fn)({x, other, b})[0], "another weight tensor");
  // a Linear's weight too
  Body linear = [](Graph& g, const std::vector<Node*>& in) {
    return std::vector<Node*>{g.call(op("aten::addmm"), {in[2], in[0], g.call(op("aten::t"), {in[1]})})};
  };
  at::Tensor lx = at::randn({64, 256}), lw = at::randn({512, 256}), lb = at::randn({512});
  auto lbuilt = build(linear, {lx, lw, lb});
  ASSERT_TRUE(lbuilt);
  auto lfn = llvm_compile(lbuilt->graph, lbuilt->metas);
  ASSERT_TRUE(lfn.ok());
  EXPECT_EQ(last_llvm_compile_stats().onednn_linears, 1);
  expect_near(at::addmm(lb, lx, lw.t()), (*lfn)({lx, lw, lb})[0], "linear");
  lw.add_(1);
  expect_near(at::addmm(lb, lx, lw.t()), (*lfn)({lx, lw, lb})[0], "linear after lw.add_(1)");
}

TEST_F(OneDnn, TurnedOffGivesTheSameValuesWithoutOneDnn) {
  ConvCase c{"", {2, 8, 9, 9}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1, true};
  std::vector<at::Tensor> in = {at::randn(c.x), at::randn(c.w), at::randn({16}), at::randn({2, 16, 9, 9})};
  Body body = [&](Graph& g, const std::vector<Node*>& x) {
    Node* y = g.call(op("aten::add.Tensor"), {conv_node(g, x, c), x[3]});
    return std::vector<Node*>{g.call(op("aten::silu"), {y})};
  };
  auto built = build(body, in);
  ASSERT_TRUE(built);
  auto on = llvm_compile(built->graph, built->metas);
  ASSERT_TRUE(on.ok());
  EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 1);
  at::Tensor with = (*on)(in)[0];
  onednn::set_enabled(false);
  auto off = llvm_compile(built->graph, built->metas);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 0);
  EXPECT_EQ(last_llvm_compile_stats().kernels, 1) << "add + silu: one fused kernel";
  const long long steps = onednn::stats().steps_run;
  at::Tensor without = (*off)(in)[0];
  EXPECT_EQ(onednn::stats().steps_run, steps);
  expect_near(without, with, "TRACEJIT_ONEDNN=0 against on");
}

// Shapes the step does not take are refused with a reason (the step's
// nodes then run as ATen ops, which raise ATen's error).
TEST_F(OneDnn, ShapesItDoesNotTakeAreRefused) {
  onednn::Plan p;
  p.op = onednn::Plan::Op::conv;
  p.stride = {1, 1};
  p.padding = {0, 0};
  p.dilation = {1, 1};
  p.output_padding = {0, 0};
  graph::TensorMeta meta;
  std::string why;
  at::Tensor x = at::randn({1, 3, 5, 5});
  at::Tensor w1 = at::randn({4, 2, 3, 3}), w2 = at::randn({4, 3, 7, 7});
  EXPECT_FALSE(onednn::run(p, {&x, &w1, nullptr, nullptr}, meta, &why)) << "channels differ";
  EXPECT_NE(why, "");
  why.clear();
  EXPECT_FALSE(onednn::run(p, {&x, &w2, nullptr, nullptr}, meta, &why)) << "kernel past the input";
  EXPECT_NE(why, "");
  at::Tensor xd = x.to(at::kDouble), wd = at::randn({4, 3, 3, 3}, at::kDouble);
  EXPECT_FALSE(onednn::run(p, {&xd, &wd, nullptr, nullptr}, meta, &why));
  EXPECT_EQ(onednn::stats().refused, 3);
}

// A step oneDNN refuses at run time runs its nodes as ATen ops: the same
// values, and eager's strides even where its input was another step's
// channels-last result.
TEST_F(OneDnn, RefusedStepsRunAsAtenOps) {
  ConvCase c{"", {2, 8, 9, 9}, {8, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1, true};
  Body body = [&](Graph& g, const std::vector<Node*>& in) {
    Node* a = g.call(op("aten::relu"), {conv_node(g, in, c)});
    Node* second = g.call(op("aten::convolution"), {a, in[1], in[2], Arg::ints(c.stride), Arg::ints(c.padding),
                                                    Arg::ints(c.dilation), Arg(false), Arg::ints({0, 0}), Arg(1)});
    Node* sum = g.call(op("aten::add.Tensor"), {second, a});
    return std::vector<Node*>{g.call(op("aten::view"), {sum, Arg::ints({2, -1})})};  // a view needs eager's strides
  };
  std::vector<at::Tensor> in = {at::randn(c.x), at::randn(c.w) * 0.3, at::randn({8})};
  auto built = build(body, in);
  ASSERT_TRUE(built);
  at::Tensor want = (*graph::interpret_tensors(*built->graph, in))[0];
  auto fn = llvm_compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 2);
  onednn::refuse_after(1);
  expect_near(want, (*fn)(in)[0], "the second step refused, its input channels-last");
  EXPECT_EQ(onednn::stats().refused, 1);
  EXPECT_EQ(onednn::stats().steps_run, 1);
  onednn::refuse_after(0);
  expect_near(want, (*fn)(in)[0], "both steps refused");
  EXPECT_EQ(onednn::stats().refused, 3);
  EXPECT_EQ(onednn::stats().steps_run, 1);
}

// A float64 conv is not planned: ATen's.
TEST_F(OneDnn, Float64StaysAten) {
  ConvCase c{"", {2, 8, 9, 9}, {16, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, false, 1, true};
  Body body = [&](Graph& g, const std::vector<Node*>& in) {
    return std::vector<Node*>{g.call(op("aten::relu"), {conv_node(g, in, c)})};
  };
  expect_matches_aten(body, {at::randn(c.x, at::kDouble), at::randn(c.w, at::kDouble), at::randn({16}, at::kDouble)},
                      "float64");
  EXPECT_EQ(last_llvm_compile_stats().onednn_convs, 0);
}

}  // namespace
}  // namespace tj::jit
