// AOT without grad: one case per situation of AOTAutograd's Notes (input
// data and metadata mutation, mutation through a view, outputs that are
// inputs, views of inputs or intermediates, outputs aliasing each other,
// duplicate inputs, aliased mutated inputs), each compared with running the
// captured graph eagerly: values, aliasing, strides, offsets, _version.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "aot_test_util.h"
#include "compile/aot/capture.h"
#include "graph/op_registry.h"
#include "graph/printer.h"

namespace tj::jit {
namespace {

using testing::check_against_eager;
using testing::graph_of;

at::Tensor grid(int64_t rows, int64_t cols) { return at::arange(rows * cols, at::kFloat).reshape({rows, cols}); }

std::vector<at::Tensor> one_input() { return {grid(3, 4)}; }
std::vector<at::Tensor> two_inputs() { return {grid(3, 4), grid(3, 4) * 0.5}; }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(AotFunctional, NoMutationNoAlias) {
  auto g = graph_of(R"(
    in x y
    add = aten.add.Tensor(%x, %y)
    sin = aten.sin.default(%add)
    ret (%sin,))");
  std::string s = check_against_eager(g, two_inputs);
  EXPECT_TRUE(has(s, "[0] fresh")) << s;
}

TEST(AotFunctional, InputDataMutation) {
  auto g = graph_of(R"(
    in x
    add_ = aten.add_.Scalar(%x, 1)
    mul = aten.mul.Scalar(%x, 2)
    ret (%mul,))");
  std::string s = check_against_eager(g, one_input);
  EXPECT_TRUE(has(s, "data mutated")) << s;
}

TEST(AotFunctional, TwoMutationsBumpTheVersionTwice) {
  auto g = graph_of(R"(
    in x
    add_ = aten.add_.Scalar(%x, 1)
    mul_ = aten.mul_.Scalar(%x, 3)
    ret (%mul_,))");
  std::string s = check_against_eager(g, one_input);
  EXPECT_TRUE(has(s, "2 version bump(s)")) << s;
  EXPECT_TRUE(has(s, "[0] input 0")) << s;
}

TEST(AotFunctional, MetadataMutationTranspose) {
  auto g = graph_of(R"(
    in x
    t_ = aten.t_.default(%x)
    ret (%t_,))");
  std::string s = check_against_eager(g, one_input);
  EXPECT_TRUE(has(s, "metadata mutated")) << s;
}

TEST(AotFunctional, DataAndMetadataMutation) {
  auto g = graph_of(R"(
    in x y
    add_ = aten.add_.Tensor(%x, %y)
    t_ = aten.t_.default(%x)
    mul = aten.mul.Tensor(%t_, %t_)
    ret (%mul,))");
  std::string s = check_against_eager(g, two_inputs);
  EXPECT_TRUE(has(s, "data mutated, metadata mutated")) << s;
}

TEST(AotFunctional, MutationThroughAViewOfAnInput) {
  auto g = graph_of(R"(
    in x
    view = aten.view.default(%x, [-1])
    sl = aten.slice.Tensor(%view, 0, 2, 7)
    mul_ = aten.mul_.Scalar(%sl, 10)
    total = aten.sum.default(%x)
    ret (%total,))");
  std::string s = check_against_eager(g, one_input);
  EXPECT_TRUE(has(s, "data mutated")) << s;
}

TEST(AotFunctional, MutationOfAnInputThatIsAView) {
  // The caller passes a view with an offset; the mutation lands in its base.
  auto g = graph_of(R"(
    in x
    add_ = aten.add_.Scalar(%x, 5)
    ret (%add_,))");
  std::string s = check_against_eager(g, [] {
    at::Tensor base = grid(4, 4);
    return std::vector<at::Tensor>{base.slice(0, 1, 3).slice(1, 1, 3)};
  });
  EXPECT_TRUE(has(s, "[0] input 0")) << s;
}

TEST(AotFunctional, OutputIsAnInput) {
  auto g = graph_of(R"(
    in x y
    add = aten.add.Tensor(%x, %y)
    ret (%y, %add, %x))");
  std::string s = check_against_eager(g, two_inputs);
  EXPECT_TRUE(has(s, "[0] input 1")) << s;
  EXPECT_TRUE(has(s, "[2] input 0")) << s;
}

TEST(AotFunctional, OutputIsAViewOfAnInput) {
  auto g = graph_of(R"(
    in x
    t = aten.t.default(%x)
    sl = aten.slice.Tensor(%x, 1, 1, 3)
    ret (%t, %sl))");
  std::string s = check_against_eager(g, one_input);
  EXPECT_TRUE(has(s, "[0] view_of_input 0")) << s;
  EXPECT_TRUE(has(s, "[1] view_of_input 0")) << s;
}

TEST(AotFunctional, OutputIsAViewOfAMutatedInput) {
  auto g = graph_of(R"(
    in x
    mul_ = aten.mul_.Scalar(%x, 2)
    select = aten.select.int(%x, 0, 1)
    ret (%select,))");
  std::string s = check_against_eager(g, one_input);
  EXPECT_TRUE(has(s, "view_of_input 0")) << s;
}

TEST(AotFunctional, OutputIsAViewOfAnIntermediate) {
  auto g = graph_of(R"(
    in x
    add = aten.add.Scalar(%x, 1)
    view = aten.view.default(%add, [2, 6])
    ret (%view,))");
  std::string s = check_against_eager(g, one_input);
  EXPECT_TRUE(has(s, "[0] view_of_intermediate 0")) << s;
}

TEST(AotFunctional, ViewOfAnIntermediateMutatedAfterwards) {
  auto g = graph_of(R"(
    in x
    add = aten.add.Scalar(%x, 1)
    t = aten.t.default(%add)
    mul_ = aten.mul_.Scalar(%add, 3)
    ret (%t,))");
  check_against_eager(g, one_input);
}

TEST(AotFunctional, OutputIsAViewOfAnotherOutput) {
  auto g = graph_of(R"(
    in x
    add = aten.add.Scalar(%x, 1)
    t = aten.t.default(%add)
    ret (%t, %add))");
  std::string s = check_against_eager(g, one_input);
  EXPECT_TRUE(has(s, "[0] view_of_output 1")) << s;
}

TEST(AotFunctional, TwoOutputsAliasEachOther) {
  auto g = graph_of(R"(
    in x
    add = aten.add.Scalar(%x, 1)
    view = aten.view.default(%add, [-1])
    sl = aten.slice.Tensor(%add, 0, 1, 3)
    ret (%view, %sl, %add, %add))");
  std::string s = check_against_eager(g, one_input);
  EXPECT_TRUE(has(s, "[3] same_as_output 2")) << s;
}

TEST(AotFunctional, TwoViewsOfOneHiddenIntermediate) {
  auto g = graph_of(R"(
    in x
    add = aten.add.Scalar(%x, 1)
    view = aten.view.default(%add, [-1])
    select = aten.select.int(%add, 1, 2)
    ret (%view, %select))");
  std::string s = check_against_eager(g, one_input);
  EXPECT_TRUE(has(s, "1 intermediate base(s)")) << s;
}

TEST(AotFunctional, DuplicateInputs) {
  auto g = graph_of(R"(
    in a b
    add_ = aten.add_.Tensor(%a, %b)
    mul = aten.mul.Tensor(%a, %b)
    ret (%mul, %b))");
  std::string s = check_against_eager(g, [] {
    at::Tensor x = grid(3, 4);
    return std::vector<at::Tensor>{x, x};
  });
  EXPECT_TRUE(has(s, "position 1 duplicates [0]")) << s;
}

TEST(AotFunctional, DuplicatesCompiledThenDistinctAtRunTime) {
  // Compiled for (x, x); called with two different tensors: the wrapper sees
  // the aliasing changed and runs the captured graph instead.
  auto g = graph_of(R"(
    in a b
    add_ = aten.add_.Tensor(%a, %b)
    ret (%add_,))");
  at::Tensor x = grid(3, 4);
  auto fn = aot_compile(g, {x, x}, testing::interpreter_backend(), AotOptions{false});
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  std::vector<at::Tensor> in_e = two_inputs(), in_c = two_inputs();
  auto out_e = graph::interpret_tensors(*g, in_e);
  ASSERT_TRUE(out_e.ok());
  testing::expect_same_world(in_e, *out_e, in_c, (*fn)(in_c));
}

TEST(AotFunctional, AliasedAndMutatedInputsShareASyntheticBase) {
  auto g = graph_of(R"(
    in a b
    add_ = aten.add_.Scalar(%a, 1)
    mul = aten.mul.Tensor(%b, 2)
    mul_ = aten.mul_.Scalar(%b, 3)
    ret (%mul, %a, %b))");
  std::string s = check_against_eager(g, [] {
    at::Tensor base = grid(3, 4);
    return std::vector<at::Tensor>{base, base[1]};
  });
  EXPECT_TRUE(has(s, "synthetic base of positions 0 1")) << s;
}

TEST(AotFunctional, TwoViewsOfOneBaseMutatedThroughOne) {
  auto g = graph_of(R"(
    in a b c
    sub_ = aten.sub_.Tensor(%a, %c)
    mul = aten.mul.Scalar(%b, 2)
    ret (%mul, %b))");
  std::string s = check_against_eager(g, [] {
    at::Tensor base = grid(4, 4);
    return std::vector<at::Tensor>{base.t(), base.slice(1, 1, 3), at::ones({4, 4})};
  });
  EXPECT_TRUE(has(s, "synthetic base of positions 0 1")) << s;
}

TEST(AotFunctional, AliasedMutatedInputsAtRunTimeRunUncompiled) {
  auto g = graph_of(R"(
    in a b
    add_ = aten.add_.Scalar(%a, 1)
    mul = aten.mul.Tensor(%b, 2)
    ret (%mul,))");
  auto fn = aot_compile(g, two_inputs(), testing::interpreter_backend(), AotOptions{false});
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  auto aliased = [] {
    at::Tensor base = grid(3, 4);
    return std::vector<at::Tensor>{base, base[1]};
  };
  std::vector<at::Tensor> in_e = aliased(), in_c = aliased();
  auto out_e = graph::interpret_tensors(*g, in_e);
  ASSERT_TRUE(out_e.ok());
  testing::expect_same_world(in_e, *out_e, in_c, (*fn)(in_c));
}

TEST(AotFunctional, AliasedInputsWithoutMutation) {
  auto g = graph_of(R"(
    in a b
    add = aten.add.Tensor(%a, %b)
    ret (%add, %b))");
  check_against_eager(g, [] {
    at::Tensor base = grid(3, 4);
    return std::vector<at::Tensor>{base, base.t().t()};
  });
}

TEST(AotFunctional, FunctionalGraphHasNoMutation) {
  auto g = graph_of(R"(
    in x
    view = aten.view.default(%x, [-1])
    sl = aten.slice.Tensor(%view, 0, 2, 7)
    mul_ = aten.mul_.Scalar(%sl, 10)
    relu_ = aten.relu_.default(%x)
    ret (%relu_,))");
  AotGraphs graphs;
  auto fn = aot_compile(g, one_input(), testing::interpreter_backend(), AotOptions{false}, &graphs);
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  ASSERT_TRUE(graphs.forward);
  EXPECT_FALSE(graphs.backward);
  for (const graph::Node* n : graphs.forward->nodes())
    if (n->op()) {
      EXPECT_FALSE(n->op()->traits.mutates) << graph::print_graph(*graphs.forward);
    }
}

TEST(AotFunctional, DataDependentOpFailsCapture) {
  auto g = graph_of(R"(
    in x
    nonzero = aten.nonzero.default(%x)
    ret (%nonzero,))");
  auto fn = aot_compile(g, one_input(), testing::interpreter_backend(), AotOptions{false});
  ASSERT_FALSE(fn.ok());
  EXPECT_TRUE(has(fn.error().message, "nonzero")) << fn.error().message;
}

TEST(AotFunctional, BatchNormRunningStatsAreMutatedInputs) {
  auto g = graph_of(R"(
    in x w b rm rv
    bn = aten.batch_norm.default(%x, %w, %b, %rm, %rv, True, 0.1, 1e-05, False)
    ret (%bn,))");
  std::string s = check_against_eager(g, [] {
    at::Tensor x = at::sin(at::arange(2 * 3 * 4, at::kFloat)).reshape({2, 3, 2, 2});
    return std::vector<at::Tensor>{x, at::ones({3}), at::zeros({3}), at::zeros({3}), at::ones({3})};
  });
  EXPECT_TRUE(has(s, "[3] position 3, data mutated")) << s;
  EXPECT_TRUE(has(s, "[4] position 4, data mutated")) << s;
}

TEST(AotFunctional, FactoryAndRandomOpsAreRecorded) {
  auto g = graph_of(R"(
    in x
    ones = aten.ones.default([3, 4])
    add = aten.add.Tensor(%x, %ones)
    ret (%add,))");
  check_against_eager(g, one_input);
}

}  // namespace
}  // namespace tj::jit
