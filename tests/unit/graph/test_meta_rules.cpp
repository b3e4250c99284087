// The meta-rule runner (graph/meta_rules.h): every hand-written rule gets a
// CPU 0-d tensor that sits beside meta tensors (a Python number eager wraps,
// `x // 2`) as a meta 0-d tensor with its wrapped-number flag, so rules need
// no device special case and type promotion stays eager's; their dtypes and
// strides equal the CPU kernels' on the same layouts.
#include <Python.h>

#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include "graph/meta_rules.h"

namespace tj::graph {
namespace {

at::Tensor wrapped(const at::Scalar& v) {
  at::Tensor t = at::scalar_tensor(v, v.isFloatingPoint() ? at::kDouble : at::kLong);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

// (3, 1, 4) with strides (4, 1, 1): a transposed (3, 4, 1) tensor.
at::Tensor transposed(at::ScalarType dtype, c10::Device device) {
  return at::empty_strided({3, 1, 4}, {4, 1, 1}, at::TensorOptions().dtype(dtype).device(device));
}

// `name`'s rule on (meta operands, the CPU number) against the CPU kernel
// `eager` on CPU operands of the same layouts.
void expect_like_cpu(const char* name, std::vector<c10::IValue> meta_stack, const at::Tensor& cpu_result) {
  const detail::MetaRule* rule = detail::meta_rule(name, name);
  ASSERT_NE(rule, nullptr) << name;
  std::vector<at::Tensor> out = detail::run_meta_rule(*rule, std::move(meta_stack));
  ASSERT_EQ(out.size(), 1u) << name;
  EXPECT_TRUE(out[0].is_meta()) << name;
  EXPECT_EQ(out[0].scalar_type(), cpu_result.scalar_type()) << name;
  EXPECT_EQ(out[0].sizes(), cpu_result.sizes()) << name;
  EXPECT_EQ(out[0].strides(), cpu_result.strides()) << name;
}

TEST(MetaRules, CpuNumberBesideMetaTensorsReachesEveryRule) {
  // The Meta kernels torch's Python registers (floor_divide's among them),
  // there in every process tracejit runs in.
  ASSERT_EQ(PyRun_SimpleString("import torch"), 0);
  const c10::Device meta(c10::kMeta), cpu(c10::kCPU);
  // floor_divide: int64 // 2 keeps int64 and the operand's size-1 stride;
  // int64 // 2.5 is the default float type (a wrapped number's promotion,
  // where a 0-d float64 tensor would give float64).
  expect_like_cpu("aten::floor_divide", {transposed(at::kLong, meta), wrapped(2)},
                  at::floor_divide(transposed(at::kLong, cpu), wrapped(2)));
  expect_like_cpu("aten::floor_divide", {transposed(at::kLong, meta), wrapped(2.5)},
                  at::floor_divide(transposed(at::kLong, cpu), wrapped(2.5)));
  expect_like_cpu("aten::floor_divide", {wrapped(7), transposed(at::kFloat, meta)},
                  at::floor_divide(wrapped(7), transposed(at::kFloat, cpu)));
  // a plain 0-d CPU tensor (not a number) promotes as a 0-d tensor
  expect_like_cpu("aten::floor_divide", {transposed(at::kLong, meta), at::scalar_tensor(2.5, at::kDouble)},
                  at::floor_divide(transposed(at::kLong, cpu), at::scalar_tensor(2.5, at::kDouble)));
  // other rules get the same: where(cond, x, number), logical_and(x, number)
  at::Tensor cond_meta = transposed(at::kBool, meta), cond_cpu = at::zeros_like(transposed(at::kBool, cpu));
  expect_like_cpu("aten::where.self", {cond_meta, transposed(at::kFloat, meta), wrapped(0.5)},
                  at::where(cond_cpu, at::zeros_like(transposed(at::kFloat, cpu)), wrapped(0.5)));
  expect_like_cpu("aten::logical_and", {transposed(at::kFloat, meta), wrapped(1)},
                  at::logical_and(transposed(at::kFloat, cpu), wrapped(1)));
}

// A convolution's layout: ATen 1.13's CPU transposed convolutions return a
// contiguous tensor for a channels-last input (slow_conv_transpose2d), its
// plain ones a channels-last tensor; on another device (cuDNN) a transposed
// one follows the input's format too.
TEST(MetaRules, TransposedConvolutionLayoutOnTheCpu) {
  const auto opts = at::TensorOptions().dtype(at::kFloat);
  const at::Tensor x = at::randn({2, 8, 5, 5}, opts).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor wt = at::randn({8, 4, 3, 3}, opts), w = at::randn({4, 8, 3, 3}, opts);
  auto stack = [](const at::Tensor& x, const at::Tensor& w, bool transposed) {
    return std::vector<c10::IValue>{x,  w, c10::IValue(), std::vector<int64_t>{2, 2}, std::vector<int64_t>{0, 0},
                                    std::vector<int64_t>{1, 1}, transposed, std::vector<int64_t>{0, 0}, int64_t{1}};
  };
  auto meta = [](const at::Tensor& t) { return t.to(c10::kMeta); };
  expect_like_cpu("aten::convolution", stack(meta(x), meta(wt), true),
                  at::convolution(x, wt, {}, {2, 2}, {0, 0}, {1, 1}, true, {0, 0}, 1));
  expect_like_cpu("aten::convolution", stack(meta(x), meta(w), false),
                  at::convolution(x, w, {}, {2, 2}, {0, 0}, {1, 1}, false, {0, 0}, 1));
  // the traced form, before its decomposition to aten::convolution
  expect_like_cpu("aten::conv_transpose2d",
                  {meta(x), meta(wt), c10::IValue(), std::vector<int64_t>{2, 2}, std::vector<int64_t>{0, 0},
                   std::vector<int64_t>{0, 0}, int64_t{1}, std::vector<int64_t>{1, 1}},
                  at::conv_transpose2d(x, wt, {}, {2, 2}));
  const detail::MetaRule* rule = detail::meta_rule("aten::convolution", "convolution");
  ASSERT_NE(rule, nullptr);
  std::vector<at::Tensor> off_cpu = detail::run_meta_rule(*rule, stack(meta(x), meta(wt), true), /*on_cpu=*/false);
  ASSERT_EQ(off_cpu.size(), 1u);
  EXPECT_TRUE(off_cpu[0].is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_FALSE(off_cpu[0].is_contiguous());
}

// repeat_interleave(self, repeats: int, dim): self's size at dim times
// repeats; a 0-d self with a dim raises as eager does (it has no dim 0).
TEST(MetaRules, RepeatInterleaveAlongADim) {
  const at::Tensor x = at::randn({2, 3});
  auto meta = [](const at::Tensor& t) { return t.to(c10::kMeta); };
  expect_like_cpu("aten::repeat_interleave.self_int", {meta(x), int64_t{2}, int64_t{1}, c10::IValue()},
                  at::repeat_interleave(x, 2, 1));
  expect_like_cpu("aten::repeat_interleave.self_int", {meta(x), int64_t{2}, c10::IValue(), c10::IValue()},
                  at::repeat_interleave(x, 2));
  const at::Tensor scalar = at::scalar_tensor(3.0);
  EXPECT_THROW(at::repeat_interleave(scalar, 2, 0), c10::Error);
  const detail::MetaRule* rule = detail::meta_rule("aten::repeat_interleave.self_int", "repeat_interleave");
  ASSERT_NE(rule, nullptr);
  for (const int64_t dim : {0, -1}) {
    EXPECT_THROW(detail::run_meta_rule(*rule, {meta(scalar), int64_t{2}, dim, c10::IValue()}), c10::Error) << dim;
  }
}

}  // namespace
}  // namespace tj::graph
