// Helpers of the oneDNN convolution and freezing tests (test_onednn_layout.cpp,
// test_onednn_f43.cpp, test_onednn_freezing.cpp, test_frozen_first_calls.cpp):
// a stride-1 2-d convolution node, the placeholders of a frozen inference
// graph, and a comparison of values and strides against ATen's.
#pragma once

#include <string>
#include <vector>

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

// One placeholder per tensor of `inputs` (x0, x1, ...), its meta appended to `metas`; a tensor that
// requires grad is a parameter used under no_grad, tagged "grad_unused" as AOT tags it.
inline std::vector<graph::Node*> inference_placeholders(graph::Graph& g, const std::vector<at::Tensor>& inputs,
                                                        std::vector<graph::TensorMeta>& metas) {
  std::vector<graph::Node*> ph;
  for (const at::Tensor& t : inputs) {
    metas.push_back(graph::TensorMeta::of(t));
    ph.push_back(g.placeholder("x" + std::to_string(ph.size()), metas.back()));
    if (t.requires_grad()) ph.back()->meta().tags.grad_unused = true;
  }
  return ph;
}

// `got` has `want`'s sizes and strides and its values within 1e-4 (NaNs equal).
inline void expect_near(const at::Tensor& want, const at::Tensor& got, const std::string& what) {
  ASSERT_EQ(want.sizes(), got.sizes()) << what;
  EXPECT_EQ(want.strides(), got.strides()) << what;
  EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-4, /*equal_nan=*/true))
      << what << ": max difference " << (got - want).abs().max().item<double>();
}

}  // namespace tj::jit::onednn_test
