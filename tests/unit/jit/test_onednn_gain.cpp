// The weight gain of oneDNN steps' finiteness rule (jit/onednn_finite.h's
// weight_gain: the largest L1 norm of the weights one output reads) against
// ATen's abs/sum/max over the same dims: a convolution's weight (rows along
// dim 0), a Linear's transposed weight (rows along dim 1, as the llvm
// backend hands it), a whole weight (out_dim < 0), a strided weight (ATen's
// path), and +inf for a weight holding a NaN, an inf or one that overflows.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "jit/onednn_finite.h"

namespace tj::jit::onednn {
namespace {

double reference(const at::Tensor& w, int64_t out_dim) {
  const at::Tensor a = at::abs(w.to(at::kDouble));
  if (out_dim < 0 || w.dim() < 2) return a.sum().item<double>();
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < w.dim(); ++d)
    if (d != out_dim) dims.push_back(d);
  return at::max(at::sum(a, dims)).item<double>();
}

// An upper bound within the float32 margin weight_gain adds (1e-4 relative).
void expect_bound(const at::Tensor& w, int64_t out_dim, const char* what) {
  const double want = reference(w, out_dim), got = weight_gain(w, out_dim);
  EXPECT_GE(got, want) << what;
  EXPECT_LE(got, want * (1 + 2e-4) + 1e-30) << what;
}

TEST(OneDnnGain, MatchesAtenOnEveryLayoutItTakes) {
  at::manual_seed(3);
  expect_bound(at::randn({64, 32, 3, 3}), 0, "conv weight");
  expect_bound(at::randn({7, 5, 1, 1}), 0, "1x1 conv weight, odd sizes");
  expect_bound(at::randn({9, 1, 3, 3}) * 100, 0, "depthwise weight");
  expect_bound(at::randn({5, 3, 4}), 0, "1-d conv weight");
  expect_bound(at::randn({6, 4, 3, 3}), -1, "transposed conv weight (whole)");
  expect_bound(at::randn({300}), 0, "1-d weight");
  const at::Tensor linear = at::randn({48, 96});  // [N, K]
  expect_bound(linear.t(), 1, "Linear's [K, N] = W^T");
  expect_bound(linear.t().contiguous(), 1, "a contiguous [K, N] (ATen's path)");
  expect_bound(at::randn({16, 8, 3, 3}).contiguous(at::MemoryFormat::ChannelsLast), 0, "channels-last (ATen's path)");
  expect_bound(at::randn({16, 8, 6, 3}).slice(2, 0, 6, 2), 0, "strided view (ATen's path)");
}

TEST(OneDnnGain, NotFiniteIsInfinite) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    at::Tensor w = at::randn({8, 4, 3, 3});
    w[5][2][1][0] = bad;
    EXPECT_EQ(weight_gain(w, 0), inf) << bad;
    EXPECT_EQ(weight_gain(w, -1), inf) << bad;
    at::Tensor l = at::randn({8, 12});
    l[3][7] = bad;
    EXPECT_EQ(weight_gain(l.t(), 1), inf) << bad;
  }
  // finite elements whose sum overflows float32 stay finite in double: a finite bound, as large as it is
  at::Tensor big = at::full({2, 4}, 3e38f);
  EXPECT_GE(weight_gain(big, 0), 1.2e39);
  EXPECT_EQ(weight_gain(at::empty({0, 3}), 0), 0);
}

}  // namespace
}  // namespace tj::jit::onednn
