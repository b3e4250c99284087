// AOT gives the caller eager's metadata, not the functional values' (see
// compile/aot/eager_meta.h): views written in place by an op whose functional
// form is laid out otherwise (lerp_), metadata mutations followed by a copy,
// dtype views, fresh results that functionalization made the input itself;
// writes through self-overlapping views and in-place ops that read what
// they write through another view fall back (the captured graph runs).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "aot_test_util.h"

namespace tj::jit {
namespace {

using testing::check_against_eager;
using testing::graph_of;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

at::Tensor cube() { return at::arange(24, at::kDouble).reshape({2, 4, 3}); }

TEST(AotEagerLayout, InPlaceOpOnTransposedViewOfInputKeepsTheViewsStrides) {
  // lerp's functional result is contiguous; eager's v keeps strides (3, 12).
  auto g = graph_of(R"(
    in x
    tr = aten.transpose.int(%x, 0, -1)
    v = aten.select.int(%tr, 0, 0)
    w = aten.mul.Scalar(%v, 3)
    lerp_ = aten.lerp_.Scalar(%v, %w, 0.5)
    ret (%v,))");
  std::string s = check_against_eager(g, [] { return std::vector<at::Tensor>{cube()}; });
  EXPECT_TRUE(has(s, "[0] view_of_input 0 as [4, 2] strides [3, 12]")) << s;
}

TEST(AotEagerLayout, InPlaceOpOnViewOfIntermediateKeepsTheViewsStrides) {
  auto g = graph_of(R"(
    in x
    add = aten.add.Scalar(%x, 1)
    v = aten.slice.Tensor(%add, 0, 1, 3)
    w = aten.mul.Scalar(%v, 3)
    lerp_ = aten.lerp_.Scalar(%v, %w, 0.5)
    ret (%v,))");
  std::string s = check_against_eager(g, [] { return std::vector<at::Tensor>{at::arange(12, at::kFloat).reshape({3, 4}).t()}; });
  EXPECT_TRUE(has(s, "view_of_intermediate 0 as [2, 3] strides [1, 4]")) << s;
}

TEST(AotEagerLayout, FreshResultWrittenInPlaceKeepsEagerStrides) {
  // add follows x's transposed layout; addmm's functional result is contiguous.
  auto g = graph_of(R"(
    in x a b
    add = aten.add.Scalar(%x, 1)
    addmm_ = aten.addmm_.default(%add, %a, %b)
    ret (%add,))");
  std::string s = check_against_eager(g, [] {
    return std::vector<at::Tensor>{at::arange(12, at::kFloat).reshape({4, 3}).t(), at::ones({3, 2}), at::ones({2, 4})};
  });
  EXPECT_TRUE(has(s, "graph output 0 restrided to [1, 3]")) << s;
}

TEST(AotEagerLayout, NoOpTransposeThenCopyKeepsTheInputsStrides) {
  auto g = graph_of(R"(
    in x y
    transpose_ = aten.transpose_.default(%x, 0, 0)
    copy_ = aten.copy_.default(%x, %y)
    ret ())");
  std::string s = check_against_eager(g, [] {
    return std::vector<at::Tensor>{at::arange(4, at::kFloat).slice(0, 0, 4, 2), at::ones({2})};
  });
  EXPECT_FALSE(has(s, "metadata mutated")) << s;
  EXPECT_TRUE(has(s, "data mutated")) << s;
}

TEST(AotEagerLayout, FreshTensorOverwrittenByAnInputIsNotTheInput) {
  // The functional copy of a same-shaped source is the source itself.
  auto g = graph_of(R"(
    in x y
    ge = aten.ge.Tensor(%y, %x)
    copy_ = aten.copy_.default(%ge, %x)
    ret (%ge,))");
  check_against_eager(g, [] {
    return std::vector<at::Tensor>{at::arange(6).reshape({2, 3}).remainder(2).to(at::kBool),
                                   at::arange(6).reshape({2, 3}).remainder(3).eq(0)};
  });
}

TEST(AotEagerLayout, ContiguousOfAnInputWrittenInPlaceIsACopy) {
  // The functional x after add_ is laid out as add's (contiguous) result,
  // so contiguous() returns it; eager's x keeps its strides (6, 1), and
  // contiguous() makes a new tensor. Regression 30.
  auto g = graph_of(R"(
    in x
    add_ = aten.add_.Scalar(%x, 1)
    c = aten.contiguous.default(%x)
    ret (%c,))");
  std::string s = check_against_eager(g, [] {
    return std::vector<at::Tensor>{at::arange(12, at::kFloat).reshape({4, 3}).slice(0, 0, 4, 2)};
  });
  EXPECT_TRUE(has(s, "[0] fresh")) << s;
  // Contiguous already in eager: contiguous() returns the input itself.
  std::string same = check_against_eager(g, [] { return std::vector<at::Tensor>{at::arange(6, at::kFloat).reshape({2, 3})}; });
  EXPECT_TRUE(has(same, "[0] input 0")) << same;
}

TEST(AotEagerLayout, ViewOfAFreshTensorOverwrittenByAnInputDoesNotViewTheInput) {
  // The intermediate base is the input's own value: it is copied.
  auto g = graph_of(R"(
    in x y
    div = aten.div.Tensor(%x, %y)
    copy_ = aten.copy_.default(%div, %y)
    t = aten.t.default(%div)
    ret (%t,))");
  check_against_eager(g, [] { return std::vector<at::Tensor>{at::ones({2, 3}), at::arange(6, at::kFloat).reshape({2, 3})}; });
}

TEST(AotEagerLayout, FreshOutputsThatShareMemoryInEagerStayShared) {
  // detach aliases its argument without being an autograd view: both
  // outputs are fresh, and eager's share memory.
  auto g = graph_of(R"(
    in x
    add = aten.add.Scalar(%x, 1)
    d = aten.detach.default(%add)
    mul_ = aten.mul_.Scalar(%add, 2)
    ret (%add, %d))");
  check_against_eager(g, [] { return std::vector<at::Tensor>{at::arange(12, at::kFloat).reshape({3, 4})}; });
}

TEST(AotEagerLayout, DtypeViewOfAnInput) {
  auto g = graph_of(R"(
    in x
    v = aten.view.dtype(%x, torch.int64)
    sl = aten.slice.Tensor(%v, 0, 0, 1)
    ret (%sl,))");
  std::string s = check_against_eager(g, [] { return std::vector<at::Tensor>{cube().transpose(-1, -2)}; });
  EXPECT_TRUE(has(s, "dtype Long")) << s;
}

TEST(AotEagerLayout, FactoryDtypeInferredFromTheFillValue) {
  // LibTorch 1.13's meta `full((3,), 3)` is float32; the llvm backend
  // allocates outputs from the recorded metas.
  auto g = graph_of(R"(
    in x
    full = aten.full.default([3], 3)
    add = aten.add.Tensor(%full, %full)
    ret (%add,))");
  AotGraphs graphs;
  auto fn = aot_compile(g, {cube()}, testing::interpreter_backend(), AotOptions{false}, &graphs);
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  for (const graph::Node* n : graphs.forward->nodes())
    if (n->op() && n->meta().tensor()) {
      EXPECT_EQ(n->meta().tensor()->dtype, at::kLong) << n->name();
    }
}

TEST(AotEagerLayout, WriteThroughAnExpandedViewFallsBack) {
  // Functionalization would write back the sum of the broadcast copies.
  auto g = graph_of(R"(
    in x
    e = aten.expand.default(%x, [2])
    v = aten.slice.Tensor(%e, 0, 0, 1)
    add_ = aten.add_.Tensor(%v, %v)
    ret ())");
  auto fn = aot_compile(g, {at::ones({})}, testing::interpreter_backend(), AotOptions{false});
  ASSERT_FALSE(fn.ok());
  EXPECT_TRUE(has(fn.error().message, "overlaps itself")) << fn.error().message;
}

TEST(AotEagerLayout, WriteThroughAnUnbindOfAnExpandFallsBack) {
  auto g = graph_of(R"(
    in x
    e = aten.expand.default(%x, [2])
    u = aten.unbind.int(%e)
    v = getitem(%u, 0)
    abs_ = aten.abs_.default(%v)
    ret (%v,))");
  auto fn = aot_compile(g, {at::ones({1})}, testing::interpreter_backend(), AotOptions{false});
  ASSERT_FALSE(fn.ok());
  EXPECT_TRUE(has(fn.error().message, "overlaps itself")) << fn.error().message;
}

TEST(AotEagerLayout, WriteIntoAnExpandedInputFallsBack) {
  auto g = graph_of(R"(
    in x
    fill_ = aten.fill_.Scalar(%x, 3)
    ret ())");
  auto fn = aot_compile(g, {at::ones({1, 4}).expand({4, 4})}, testing::interpreter_backend(), AotOptions{false});
  ASSERT_FALSE(fn.ok());
}

TEST(AotEagerLayout, WriteThroughADtypeViewFallsBack) {
  // LibTorch 1.13 would hand x the clamped int64 value, which copy_ converts.
  auto g = graph_of(R"(
    in x
    v = aten.view.dtype(%x, torch.int64)
    clamp_ = aten.clamp_.default(%v, 0)
    ret ())");
  auto fn = aot_compile(g, {cube()}, testing::interpreter_backend(), AotOptions{false});
  ASSERT_FALSE(fn.ok());
  EXPECT_TRUE(has(fn.error().message, "view of another dtype")) << fn.error().message;
}

TEST(AotEagerLayout, InPlaceOpReadingAViewOfItsTargetFallsBack) {
  // Eager's addcmul_ reads elements of v after writing them through x.
  auto g = graph_of(R"(
    in x
    tr = aten.transpose.int(%x, 0, -1)
    v = aten.select.int(%tr, 0, 0)
    addcmul_ = aten.addcmul_.default(%x, %v, %v)
    ret (%x,))");
  auto fn = aot_compile(g, {cube().slice(0, 1, 2)}, testing::interpreter_backend(), AotOptions{false});
  ASSERT_FALSE(fn.ok());
  EXPECT_TRUE(has(fn.error().message, "reads memory it writes")) << fn.error().message;
}

TEST(AotEagerLayout, InPlaceOpReadingItsTargetElementByElementIsCompiled) {
  auto g = graph_of(R"(
    in x
    r = aten.select.int(%x, 0, 1)
    s = aten.select.int(%x, 0, 0)
    add_ = aten.add_.Tensor(%s, %r)
    mul_ = aten.mul_.Tensor(%x, %x)
    ret (%x,))");
  check_against_eager(g, [] { return std::vector<at::Tensor>{cube()}; });
}

}  // namespace
}  // namespace tj::jit
