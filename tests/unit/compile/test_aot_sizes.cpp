// AOT size templates (compile/aot/runtime_wrapper.h: aot_generalize, aot_specialize): the
// captures of one graph at three sizes made one, then specialized for sizes
// never captured, compared with running that size's captured graph eagerly
// (values, views and their bases, input mutations, versions); and what is
// refused.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "aot_test_util.h"
#include "graph/printer.h"

namespace tj::jit {
namespace {

using testing::expect_same_world;
using testing::graph_of;
using testing::interpreter_backend;

// The captured graph as the runtime hands it to AOT for x, y of sizes
// [rows, 4]: its size-dependent ints folded to constants. It mutates x,
// returns views of x (after the mutation), of y and of an intermediate (their
// geometries depend on rows), and computes on a view (an int of the
// functional graph that does).
std::shared_ptr<const graph::Graph> captured(int64_t rows) {
  const std::string n = std::to_string(rows * 4), last = std::to_string(rows * 4 - 1);
  return graph_of(R"(
    in x y
    add_ = aten.add_.Scalar(%x, 1)
    flat = aten.view.default(%x, [)" + n + R"(])
    inner = aten.slice.Tensor(%flat, 0, 1, )" + last + R"()
    t = aten.t.default(%y)
    mul = aten.mul.Tensor(%x, %y)
    total = aten.sum.dim_IntList(%mul, [1])
    twice = aten.mul.Scalar(%y, 2)
    row = aten.view.default(%twice, [)" + n + R"(])
    tail = aten.slice.Tensor(%row, 0, 2, )" + n + R"()
    products = aten.view.default(%mul, [)" + n + R"(])
    running = aten.cumsum.default(%products, 0)
    ret (%inner, %t, %total, %tail, %running))");
}

std::vector<at::Tensor> inputs(int64_t rows) {
  at::Tensor x = at::arange(rows * 4, at::kFloat).reshape({rows, 4});
  return {x, x.flip(0) * 0.5};
}

// aot_compile's kept capture at `rows`.
std::shared_ptr<const AotPoint> point(int64_t rows) {
  AotGraphs graphs;
  auto fn = aot_compile(captured(rows), inputs(rows), interpreter_backend(), AotOptions{false}, &graphs);
  EXPECT_TRUE(fn.ok()) << (fn.ok() ? "" : fn.error().message);
  EXPECT_TRUE(graphs.point) << "no capture kept";
  return graphs.point;
}

TEST(AotSizes, OneTemplateServesSizesNeverCaptured) {
  at::NoGradGuard no_grad;
  auto t = aot_generalize({point(2), point(3), point(5)});
  ASSERT_TRUE(t.ok()) << t.error().message;
  std::string text = graph::print_graph(*aot_template_graph(**t).graph);
  EXPECT_NE(text.find("sym_size"), std::string::npos) << text;  // the flattened product
  for (int64_t rows : {4, 7, 11}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    std::vector<at::Tensor> in_c = inputs(rows), in_e = inputs(rows);
    auto fn = aot_specialize(**t, captured(rows), in_c, interpreter_backend(), AotOptions{false});
    ASSERT_TRUE(fn.ok()) << fn.error().message;
    auto out_e = graph::interpret_tensors(*captured(rows), in_e);
    ASSERT_TRUE(out_e.ok()) << out_e.error().message;
    std::vector<at::Tensor> out_c = (*fn)(in_c);
    expect_same_world(in_e, *out_e, in_c, out_c);
  }
}

TEST(AotSizes, RefusesOtherSizesOfFixedDims) {
  at::NoGradGuard no_grad;
  auto t = aot_generalize({point(2), point(3), point(5)});
  ASSERT_TRUE(t.ok()) << t.error().message;
  at::Tensor x = at::zeros({6, 3}), y = at::zeros({6, 3});
  auto fn = aot_specialize(**t, captured(6), {x, y}, interpreter_backend(), AotOptions{false});
  ASSERT_FALSE(fn.ok());
  EXPECT_NE(fn.error().message.find("had one size in every capture"), std::string::npos) << fn.error().message;
}

// sin of x flattened ([rows * 4]): with grad its joint graph has the
// flattened size forward and the view back to [rows, 4] in the backward.
std::shared_ptr<const graph::Graph> flat_sin(int64_t rows) {
  return graph_of("in x\n f = aten.view.default(%x, [" + std::to_string(rows * 4) +
                  "])\n s = aten.sin.default(%f)\n ret (%s,)");
}

TEST(AotSizes, JointCapturesMakeATemplateWithGrad) {
  at::AutoGradMode grad(true);
  std::vector<std::shared_ptr<const AotPoint>> points;
  for (int64_t rows : {2, 3, 5}) {
    AotGraphs graphs;
    auto fn = aot_compile(flat_sin(rows), {at::ones({rows, 4}).requires_grad_(true)}, interpreter_backend(),
                          AotOptions{true}, &graphs);
    ASSERT_TRUE(fn.ok()) << fn.error().message;
    ASSERT_TRUE(graphs.point) << "a joint capture is kept";
    points.push_back(graphs.point);
  }
  auto t = aot_generalize(points);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(aot_template_graph(**t).derived.size(), 1u) << "the tangent follows the output's sizes";
  for (int64_t rows : {4, 9}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    at::Tensor x = at::randn({rows, 4}).requires_grad_(true);
    AotGraphs graphs;
    auto fn = aot_specialize(**t, flat_sin(rows), {x}, interpreter_backend(), AotOptions{true}, &graphs);
    ASSERT_TRUE(fn.ok()) << fn.error().message;
    ASSERT_TRUE(graphs.backward) << "partitioned again";
    at::Tensor out = (*fn)({x})[0];
    EXPECT_TRUE(at::equal(out, x.detach().view({rows * 4}).sin()));
    out.backward(at::ones_like(out));
    EXPECT_TRUE(at::allclose(x.grad(), x.detach().cos(), 1e-6, 1e-6));
  }
  // an input that does not require grad would be captured for inference
  auto refused = aot_specialize(**t, flat_sin(4), {at::ones({4, 4})}, interpreter_backend(), AotOptions{true});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("requires_grad"), std::string::npos) << refused.error().message;
}

// A template fitted from captures whose int is min(rows, 8) (rows at the
// three points) is wrong at rows 11: the template's check of its fits
// (compile/aot/template_fit.h) sees that its slice ends at row 11 where a
// capture at that size ends it at 8, and does not serve that size. At a size where the
// fit holds its graphs are the capture's (config.debug_check_aot_templates'
// comparison), and that comparison tells other graphs apart.
std::shared_ptr<const graph::Graph> clamped(int64_t rows) {
  return graph_of(R"(
    in x
    head = aten.slice.Tensor(%x, 0, 0, )" + std::to_string(std::min<int64_t>(rows, 8)) + R"()
    twice = aten.mul.Scalar(%head, 2)
    ret (%twice))");
}

// The template of `graph_at`'s captures (no grad) of [rows, 4] inputs at rows 2, 3 and 5.
using GraphAt = std::shared_ptr<const graph::Graph> (*)(int64_t);
Expected<std::shared_ptr<const AotTemplate>> template_at_2_3_5(GraphAt graph_at) {
  std::vector<std::shared_ptr<const AotPoint>> points;
  for (int64_t rows : {2, 3, 5}) {
    AotGraphs graphs;
    auto fn = aot_compile(graph_at(rows), {at::randn({rows, 4})}, interpreter_backend(), AotOptions{false}, &graphs);
    if (!fn) return fn.error();
    points.push_back(graphs.point);
  }
  return aot_generalize(points);
}

TEST(AotSizes, AMisfitOfTheGraphsIntsIsNotServed) {
  at::NoGradGuard no_grad;
  auto t = template_at_2_3_5(clamped);
  ASSERT_TRUE(t.ok()) << t.error().message;
  AotGraphs from_template, captured, captured_11;
  ASSERT_TRUE(aot_specialize(**t, clamped(7), {at::randn({7, 4})}, interpreter_backend(), AotOptions{false},
                             &from_template).ok());
  ASSERT_TRUE(aot_compile(clamped(7), {at::randn({7, 4})}, interpreter_backend(), AotOptions{false}, &captured).ok());
  EXPECT_EQ(aot_graphs_differ(from_template, captured), "");
  auto refused = aot_specialize(**t, clamped(11), {at::randn({11, 4})}, interpreter_backend(), AotOptions{false});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("fit does not hold"), std::string::npos) << refused.error().message;
  // the slice's end: the template's, then the capture's
  EXPECT_NE(refused.error().message.find("(%x, 0, 0, 11) against (%x, 0, 0, 8)"), std::string::npos)
      << refused.error().message;
  ASSERT_TRUE(aot_compile(clamped(11), {at::randn({11, 4})}, interpreter_backend(), AotOptions{false}, &captured_11).ok());
  std::string differs = aot_graphs_differ(from_template, captured_11);
  EXPECT_EQ(differs.rfind("forward graph from the template:", 0), 0u) << differs;
  EXPECT_NE(differs.find(", 8)"), std::string::npos) << differs;
}

// The same int inside the graph, its output a 0-d sum: no output's sizes
// show the misfit (round 24's check served it, a wrong value); the
// template's graph for rows 11 is compared with their capture and refused,
// naming the node whose int differs. Rows 7 are served, as eager.
std::shared_ptr<const graph::Graph> clamped_sum(int64_t rows) {
  return graph_of(R"(
    in x
    head = aten.slice.Tensor(%x, 0, 0, )" + std::to_string(std::min<int64_t>(rows, 8)) + R"()
    total = aten.sum.default(%head)
    ret (%total))");
}

TEST(AotSizes, AMisfitOfAnIntInsideTheGraphIsNotServed) {
  at::NoGradGuard no_grad;
  auto t = template_at_2_3_5(clamped_sum);
  ASSERT_TRUE(t.ok()) << t.error().message;
  const at::Tensor x7 = at::randn({7, 4});
  auto served = aot_specialize(**t, clamped_sum(7), {x7}, interpreter_backend(), AotOptions{false});
  ASSERT_TRUE(served.ok()) << served.error().message;
  EXPECT_TRUE(at::equal((*served)({x7})[0], x7.sum()));
  auto refused = aot_specialize(**t, clamped_sum(11), {at::randn({11, 4})}, interpreter_backend(), AotOptions{false});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("fit does not hold"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("aten.slice.Tensor"), std::string::npos) << refused.error().message;
}

// x [2, n] written in place, then views with a literal bound: `x[:, :5]`
// (a view of the written input) and `(x * 2)[:, :5]` (a view of an
// intermediate). Every point has n > 5, so both widths are fitted as 5
// and no guard on orders or bounds covers a literal: the check against
// a capture's geometry refuses n = 3 (where eager's width is 3) before
// anything runs, and serves n = 13.
std::shared_ptr<const graph::Graph> bounded_views() {
  return graph_of(R"(
    in x
    add_ = aten.add_.Scalar(%x, 1)
    head = aten.slice.Tensor(%x, 1, 0, 5)
    twice = aten.mul.Scalar(%x, 2)
    inner = aten.slice.Tensor(%twice, 1, 0, 5)
    ret (%head, %inner))");
}

TEST(AotSizes, TheFitOfAViewIsCheckedBeforeItServes) {
  at::NoGradGuard no_grad;
  std::vector<std::shared_ptr<const AotPoint>> points;
  for (int64_t n : {7, 9, 11}) {
    AotGraphs graphs;
    ASSERT_TRUE(aot_compile(bounded_views(), {at::randn({2, n})}, interpreter_backend(), AotOptions{false}, &graphs).ok());
    points.push_back(graphs.point);
  }
  auto t = aot_generalize(points);
  ASSERT_TRUE(t.ok()) << t.error().message;
  at::Tensor x = at::randn({2, 3}), before = x.clone();
  auto refused = aot_specialize(**t, bounded_views(), {x}, interpreter_backend(), AotOptions{false});
  ASSERT_FALSE(refused.ok());
  const std::string& why = refused.error().message;
  EXPECT_NE(why.find("output 0's view (view_of_input)"), std::string::npos) << why;
  EXPECT_NE(why.find("fitted sizes [2, 5]"), std::string::npos) << why;
  EXPECT_NE(why.find("their capture's sizes [2, 3]"), std::string::npos) << why;
  EXPECT_TRUE(at::equal(x, before)) << "nothing ran";
  // the intermediate's view alone is refused as well
  auto inner_only = graph_of(R"(
    in x
    add_ = aten.add_.Scalar(%x, 1)
    twice = aten.mul.Scalar(%x, 2)
    inner = aten.slice.Tensor(%twice, 1, 0, 5)
    ret (%inner,))");
  points.clear();
  for (int64_t n : {7, 9, 11}) {
    AotGraphs graphs;
    ASSERT_TRUE(aot_compile(inner_only, {at::randn({2, n})}, interpreter_backend(), AotOptions{false}, &graphs).ok());
    points.push_back(graphs.point);
  }
  auto t2 = aot_generalize(points);
  ASSERT_TRUE(t2.ok()) << t2.error().message;
  auto refused2 = aot_specialize(**t2, inner_only, {at::randn({2, 3})}, interpreter_backend(), AotOptions{false});
  ASSERT_FALSE(refused2.ok());
  EXPECT_NE(refused2.error().message.find("(view_of_intermediate)"), std::string::npos) << refused2.error().message;
  // where the fit holds, served and eager's
  std::vector<at::Tensor> in_c{at::randn({2, 13})}, in_e{in_c[0].clone()};
  auto fn = aot_specialize(**t, bounded_views(), in_c, interpreter_backend(), AotOptions{false});
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  auto out_e = graph::interpret_tensors(*bounded_views(), in_e);
  ASSERT_TRUE(out_e.ok()) << out_e.error().message;
  std::vector<at::Tensor> out_c = (*fn)(in_c);
  ASSERT_EQ(out_c.size(), 2u);
  EXPECT_TRUE(at::equal(in_c[0], in_e[0]));
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(out_c[k].sizes(), (*out_e)[k].sizes()) << "output " << k;
    EXPECT_EQ(out_c[k].strides(), (*out_e)[k].strides()) << "output " << k;
    EXPECT_TRUE(at::equal(out_c[k], (*out_e)[k])) << "output " << k;
  }
  EXPECT_TRUE(out_c[0].is_alias_of(in_c[0])) << "a view of the written input";
}

TEST(AotSizes, NeedsThreeCaptures) {
  at::NoGradGuard no_grad;
  auto t = aot_generalize({point(2), point(3)});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("fewer than three"), std::string::npos) << t.error().message;
}

}  // namespace
}  // namespace tj::jit
