// Helpers of the oneDNN convolution tests (test_onednn_layout.cpp,
// test_onednn_f43.cpp): a stride-1 2-d convolution node and a comparison
// of values and strides against ATen's.
#pragma once

#include <string>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "llvm_test_util.h"

namespace tj::jit::onednn_test {

// A 2-d convolution of `x` by `w` (bias `b`, or none when null), stride 1, padding `pad`.
inline graph::Node* conv(graph::Graph& g, graph::Node* x, graph::Node* w, graph::Node* b, int64_t pad) {
  using graph::Arg;
  return g.call(test_util::op("aten::convolution"),
                {x, w, b ? Arg(b) : Arg(), Arg::ints({1, 1}), Arg::ints({pad, pad}), Arg::ints({1, 1}), Arg(false),
                 Arg::ints({0, 0}), Arg(1)});
}

// `got` has `want`'s sizes and strides and its values within 1e-4 (NaNs equal).
inline void expect_near(const at::Tensor& want, const at::Tensor& got, const std::string& what) {
  ASSERT_EQ(want.sizes(), got.sizes()) << what;
  EXPECT_EQ(want.strides(), got.strides()) << what;
  EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-4, /*equal_nan=*/true))
      << what << ": max difference " << (got - want).abs().max().item<double>();
}

}  // namespace tj::jit::onednn_test
