// The llvm backend's inline float math (jit/llvm_math.h): exp, tanh,
// sigmoid and sin over the whole float range, the boundaries of each code path
// (overflow, the subnormal range, tanh's small-|x| polynomial and its
// saturation), infinities, NaN and signed zeros, against the correctly
// rounded result (ATen in float64, rounded) and against eager's float32.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "graph/graph.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "jit/backend.h"

namespace tj::jit {
namespace {

const bool kFreshDiskCache = [] {
  char dir[] = "/tmp/tracejit_math_cache_XXXXXX";
  return mkdtemp(dir) != nullptr && unsetenv("TRACEJIT_CACHE_DIR") == 0 && setenv("XDG_CACHE_HOME", dir, 1) == 0;
}();

// Distance in units in the last place between two floats (0 for equal
// values, NaN and NaN, or +0 and -0 only when `signed_zero_ok`).
double ulps(float got, float want) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want) ? 0 : 1e30;
  if (got == want) return std::signbit(got) == std::signbit(want) ? 0 : 1e30;
  if (std::isinf(got) || std::isinf(want)) return 1e30;
  float spacing = std::nextafter(std::fabs(want), std::numeric_limits<float>::infinity()) - std::fabs(want);
  return std::fabs(static_cast<double>(got) - want) / spacing;
}

at::Tensor inputs() {
  std::vector<float> special = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.72f, 88.73f, 89.5f, -87.3f, -100.0f,
                                -103.9f, -104.5f, -150.0f, 1e-40f, -1e-40f, 0.29999f, 0.3f, 0.30001f, -0.3f,
                                9.99f, 10.0f, 10.01f, 1e30f, -1e30f, 1e-8f, -1e-8f, 15.99f, 16.0f, -16.0f,
                                3.14159274f, -3.14159274f, 6.28318548f, 1.57079637f};
  return at::cat({at::linspace(-110, 95, 400003), at::linspace(-1, 1, 200001), at::randn({200000}) * 3,
                  at::from_blob(special.data(), {static_cast<int64_t>(special.size())}).clone()});
}

// Compiles one unary op with the llvm backend and checks every value.
void check(const char* name, double max_ulps) {
  auto info = graph::OpRegistry::instance().get(std::string("aten::") + name);
  ASSERT_TRUE(info.ok());
  at::Tensor x = inputs();
  auto g = std::make_shared<graph::Graph>();
  graph::Node* ph = g->placeholder("x", graph::TensorMeta::of(x));
  graph::Node* y = g->call(**info, {ph});
  g->output(graph::Arg::tuple({y}));
  ASSERT_TRUE(graph::infer_meta_all(*g).ok());
  auto fn = find_backend("llvm")->compile(g, {graph::TensorMeta::of(x)});
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  at::Tensor got = (*fn)({x})[0];
  at::Tensor exact = at::empty_like(x);
  at::Tensor eager;
  if (std::string(name) == "exp") {
    exact = at::exp(x.to(at::kDouble)).to(at::kFloat);
    eager = at::exp(x);
  } else if (std::string(name) == "sin") {
    exact = at::sin(x.to(at::kDouble)).to(at::kFloat);
    eager = at::sin(x);
  } else if (std::string(name) == "tanh") {
    exact = at::tanh(x.to(at::kDouble)).to(at::kFloat);
    eager = at::tanh(x);
  } else {
    exact = at::sigmoid(x.to(at::kDouble)).to(at::kFloat);
    eager = at::sigmoid(x);
  }
  const float* g_ = got.data_ptr<float>();
  const float* x_ = x.data_ptr<float>();
  const float* want = exact.data_ptr<float>();
  const float* e_ = eager.data_ptr<float>();
  int bad = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    // Below the normal range eager flushes as we do or rounds differently:
    // there the reference is eager itself.
    bool tiny = std::fabs(want[i]) < 1.2e-38f;
    double u = tiny ? ulps(g_[i], e_[i]) : ulps(g_[i], want[i]);
    if (tiny && u > 0 && std::fabs(g_[i] - e_[i]) < 1.2e-38f) u = 0;
    if (u > max_ulps && ++bad <= 5)
      ADD_FAILURE() << name << "(" << x_[i] << ") = " << g_[i] << ", want " << want[i] << " (eager " << e_[i]
                    << "): " << u << " ulp";
  }
  EXPECT_EQ(bad, 0) << name << ": values beyond " << max_ulps << " ulp";
}

TEST(LlvmMath, Exp) { check("exp", 1); }

// exp(x - max(x)) over rows, softmax's shift, takes the cheaper exp of a
// non-positive argument (llvm_math.h): within 1 ulp of the correctly
// rounded result down to the normal range, within 1.2e-38 below it, 1 at
// the max, NaN for rows with a NaN, 0 for -inf.
TEST(LlvmMath, ExpOfARowMinusItsMax) {
  at::Tensor x = inputs();
  const int64_t cols = 1000;
  x = x.narrow(0, 0, x.numel() / cols * cols).reshape({-1, cols});
  x.index_put_({0, 3}, -INFINITY);  // a -inf in a finite row: exp 0
  x.index_put_({1, 0}, NAN);        // a NaN row
  auto g = std::make_shared<graph::Graph>();
  graph::Node* ph = g->placeholder("x", graph::TensorMeta::of(x));
  auto& reg = graph::OpRegistry::instance();
  graph::Node* max = g->call(**reg.get("aten::amax"), {ph, graph::Arg::list({graph::Arg(int64_t{1})}), true});
  graph::Node* y = g->call(**reg.get("aten::exp"), {g->call(**reg.get("aten::sub.Tensor"), {ph, max})});
  g->output(graph::Arg::tuple({y}));
  ASSERT_TRUE(graph::infer_meta_all(*g).ok());
  auto fn = find_backend("llvm")->compile(g, {graph::TensorMeta::of(x)});
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  at::Tensor got = (*fn)({x})[0];
  at::Tensor shifted = x - std::get<0>(x.max(1, true));
  at::Tensor want = at::exp(shifted.to(at::kDouble)).to(at::kFloat);
  const float* g_ = got.data_ptr<float>();
  const float* w_ = want.data_ptr<float>();
  const float* s_ = shifted.data_ptr<float>();
  int bad = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    double u = std::fabs(w_[i]) < 1.2e-38f ? (std::fabs(g_[i] - w_[i]) < 1.2e-38f ? 0 : 1e30) : ulps(g_[i], w_[i]);
    if (u > 1 && ++bad <= 5)
      ADD_FAILURE() << "exp(" << s_[i] << ") = " << g_[i] << ", want " << w_[i] << ": " << u << " ulp";
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(got[0][3].item<float>(), 0.0f);
  EXPECT_TRUE(at::isnan(got[1]).all().item<bool>());
  EXPECT_GT((got == 1.0f).sum().item<int64_t>(), x.size(0) - 2) << "exp(0) at each row's max";
}
TEST(LlvmMath, Tanh) { check("tanh", 2); }
// The inline polynomial below 16 in magnitude, libmvec for vectors with a
// lane beyond (the inputs cross 16, 125 and reach 1e30, inf and NaN).
TEST(LlvmMath, Sin) { check("sin", 2); }

// sin(-0) is -0 when every lane of its vector takes the inline polynomial
// (no lane at or beyond 16 sends the vector to libmvec): hosts whose vectors
// have 8 float lanes (AVX2) met zeros there that 16-lane ones did not.
TEST(LlvmMath, SinOfSignedZerosAmongSmallArguments) {
  at::Tensor x = at::linspace(-1, 1, 64);
  for (int64_t i : {0, 5, 8, 17, 31, 40, 63}) x[i] = (i % 2 ? -0.0 : 0.0);
  auto g = std::make_shared<graph::Graph>();
  graph::Node* ph = g->placeholder("x", graph::TensorMeta::of(x));
  graph::Node* y = g->call(**graph::OpRegistry::instance().get("aten::sin"), {ph});
  g->output(graph::Arg::tuple({y}));
  ASSERT_TRUE(graph::infer_meta_all(*g).ok());
  auto fn = find_backend("llvm")->compile(g, {graph::TensorMeta::of(x)});
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  at::Tensor got = (*fn)({x})[0];
  for (int64_t i : {0, 5, 8, 17, 31, 40, 63}) {
    const float v = got[i].item<float>();
    EXPECT_EQ(v, 0.0f) << i;
    EXPECT_EQ(std::signbit(v), i % 2 == 1) << "sin(" << (i % 2 ? "-0" : "+0") << ") at " << i;
  }
}
TEST(LlvmMath, Sigmoid) { check("sigmoid", 2); }

}  // namespace
}  // namespace tj::jit
