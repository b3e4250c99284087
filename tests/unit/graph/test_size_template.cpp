// Size templates (graph/size_template.h): graphs that differ only in
// ints, captured at several sizes, made one graph with size nodes; the
// fitted forms, their specialization for other sizes, and the refusals.
#include <gtest/gtest.h>

#include "graph/size_template.h"
#include "graph/meta_infer.h"
#include "graph/printer.h"
#include "graph/sym_ints.h"
#include "graph_test_util.h"

namespace tj::graph::aot {
namespace {

using testing::op;

// What capture records for `x.view(B * T, C)[: end]` then `* scale`, with
// x of sizes [B, T, 4]: every int concrete.
std::unique_ptr<Graph> captured(int64_t b, int64_t t, int64_t end, double scale = 0.5) {
  auto g = std::make_unique<Graph>();
  Node* x = g->placeholder("x", TensorMeta::contiguous({b, t, 4}, c10::kFloat));
  Node* v = g->call(op("aten::view"), {x, Arg::ints({b * t, 4})});
  Node* s = g->call(op("aten::slice.Tensor"), {v, int64_t{0}, int64_t{0}, end});
  Node* m = g->call(op("aten::mul.Tensor"), {s, scale});
  g->output(Arg::tuple({m}));
  EXPECT_TRUE(infer_meta_all(*g).ok());
  return g;
}

// `bounds`: with SizeTemplate::bounds (the classes' sides of the fixed sizes).
Expected<SizeTemplate> generalize(const std::vector<std::unique_ptr<Graph>>& graphs, bool bounds = false) {
  std::vector<const Graph*> points;
  for (const auto& g : graphs) points.push_back(g.get());
  return generalize_sizes(points, -1, bounds);
}

std::vector<std::unique_ptr<Graph>> at_sizes(const std::vector<std::pair<int64_t, int64_t>>& sizes) {
  std::vector<std::unique_ptr<Graph>> out;
  for (auto [b, t] : sizes) out.push_back(captured(b, t, b * t - 1));
  return out;
}

TEST(SizeTemplate, IntsBecomeSizeExpressions) {
  auto t = generalize(at_sizes({{2, 3}, {3, 5}, {5, 4}}));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->classes.size(), 2u);
  EXPECT_EQ(t->symbolic_ints, 2);  // B*T and B*T - 1
  std::string text = print_graph(*t->graph);
  EXPECT_NE(text.find("sym_size"), std::string::npos) << text;
  EXPECT_NE(text.find("sym_mul"), std::string::npos) << text;
  EXPECT_NE(text.find("sym_add"), std::string::npos) << text;

  // Sizes no capture had: the graph capture would have recorded.
  auto g = specialize_sizes(*t, {TensorMeta::contiguous({7, 6, 4}, c10::kFloat)});
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_FALSE(has_sym_nodes(**g));
  EXPECT_EQ(print_graph(**g), print_graph(*captured(7, 6, 41)));
}

// A joint graph's shape: x [B, T, 4] given, a tangent shaped as the
// output [B * T - 1, 4] after it (its sizes derived from x's).
std::unique_ptr<Graph> with_tangent(int64_t b, int64_t t, bool contiguous_tangent = true) {
  auto g = captured(b, t, b * t - 1);
  TensorMeta m = TensorMeta::contiguous({b * t - 1, 4}, c10::kFloat);
  if (!contiguous_tangent) m.strides = {1, b * t - 1};
  Node* first_op = nullptr;
  for (Node* n : g->nodes())
    if (n->kind() != NodeKind::placeholder && !first_op) first_op = n;
  g->set_insert_point(first_op);
  Node* tangent = g->placeholder("tangents_1", m);  // unused here: only its meta matters
  g->set_insert_point(nullptr);
  (void)tangent;
  EXPECT_TRUE(infer_meta_all(*g).ok());
  return g;
}

TEST(SizeTemplate, LaterPlaceholdersAreDerivedFromTheGivenOnes) {
  std::vector<std::unique_ptr<Graph>> graphs;
  for (auto [b, t] : std::vector<std::pair<int64_t, int64_t>>{{2, 3}, {3, 5}, {5, 4}}) graphs.push_back(with_tangent(b, t));
  std::vector<const Graph*> points;
  for (const auto& g : graphs) points.push_back(g.get());
  auto t = generalize_sizes(points, /*given=*/1);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->classes.size(), 2u) << "classes come from x alone";
  ASSERT_EQ(t->derived.size(), 1u);
  EXPECT_EQ(t->derived[0].placeholder, 1);
  // only x's meta is given; the tangent's follows
  auto g = specialize_sizes(*t, {TensorMeta::contiguous({7, 6, 4}, c10::kFloat)});
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(print_graph(**g), print_graph(*with_tangent(7, 6)));
  EXPECT_EQ((*g)->placeholders()[1]->meta().tensor()->sizes, (std::vector<int64_t>{41, 4}));

  // a derived placeholder must be contiguous in every capture
  graphs[1] = with_tangent(3, 5, /*contiguous_tangent=*/false);
  points[1] = graphs[1].get();
  auto refused = generalize_sizes(points, 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("contiguous"), std::string::npos) << refused.error().message;
}

TEST(SizeTemplate, StaticDimsMustKeepTheirSize) {
  auto t = generalize(at_sizes({{2, 3}, {3, 5}, {5, 4}}));
  ASSERT_TRUE(t.ok()) << t.error().message;
  std::string why = template_mismatch(*t, {TensorMeta::contiguous({7, 6, 8}, c10::kFloat)});
  EXPECT_NE(why.find("dim 2"), std::string::npos) << why;
  EXPECT_FALSE(specialize_sizes(*t, {TensorMeta::contiguous({7, 6, 8}, c10::kFloat)}).ok());
}

TEST(SizeTemplate, DimsEqualAtEveryPointAreOneSize) {
  auto t = generalize(at_sizes({{2, 2}, {3, 3}, {5, 5}}));
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->classes.size(), 1u);
  EXPECT_EQ(t->classes[0].size(), 2u);
  EXPECT_TRUE(specialize_sizes(*t, {TensorMeta::contiguous({6, 6, 4}, c10::kFloat)}).ok());
  std::string why = template_mismatch(*t, {TensorMeta::contiguous({6, 7, 4}, c10::kFloat)});
  EXPECT_NE(why.find("were equal in every capture"), std::string::npos) << why;
}

// A fit may rely on an order its points all kept (a diagonal's length
// min(B, T) fits as B when B < T at every point): sizes that break it are
// not served.
TEST(SizeTemplate, SizesKeepTheOrderOfEveryPoint) {
  auto t = generalize(at_sizes({{2, 3}, {3, 5}, {5, 7}}));
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->orders.size(), 1u);
  EXPECT_EQ(template_mismatch(*t, {TensorMeta::contiguous({6, 9, 4}, c10::kFloat)}), "");
  std::string why = template_mismatch(*t, {TensorMeta::contiguous({9, 6, 4}, c10::kFloat)});
  EXPECT_NE(why.find("input 0 dim 0 was smaller than input 0 dim 1 in every capture"), std::string::npos) << why;
  EXPECT_NE(template_mismatch(*t, {TensorMeta::contiguous({6, 6, 4}, c10::kFloat)}), "");
  // points in both orders: no order kept
  auto mixed = generalize(at_sizes({{2, 3}, {3, 5}, {5, 4}}));
  ASSERT_TRUE(mixed.ok()) << mixed.error().message;
  EXPECT_TRUE(mixed->orders.empty());
}

// A point where the two sizes were equal (a capture on a square input, then
// probes with B < T): min(B, T) still fits as B, so the order is kept
// weakly: B > T is refused, B == T served.
TEST(SizeTemplate, ATiedPointKeepsTheOrderWeakly) {
  auto t = generalize(at_sizes({{4, 4}, {3, 5}, {5, 7}}));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_TRUE(t->orders.empty());
  ASSERT_EQ(t->weak_orders.size(), 1u);
  EXPECT_EQ(template_mismatch(*t, {TensorMeta::contiguous({6, 6, 4}, c10::kFloat)}), "");
  EXPECT_EQ(template_mismatch(*t, {TensorMeta::contiguous({6, 9, 4}, c10::kFloat)}), "");
  std::string why = template_mismatch(*t, {TensorMeta::contiguous({9, 6, 4}, c10::kFloat)});
  EXPECT_NE(why.find("input 0 dim 0 was at most input 0 dim 1 in every capture"), std::string::npos) << why;
}

// A class equal to a fixed size at one point and larger at the others:
// min(B, 4) fits as 4 there too, so sizes under 4 are refused, 4 served.
TEST(SizeTemplate, ATiedPointKeepsTheBoundWeakly) {
  auto graphs = at_sizes({{4, 3}, {6, 5}, {7, 7}});
  auto t = generalize(graphs, true);
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->bounds.size(), 1u);
  EXPECT_TRUE(t->bounds[0].above);
  EXPECT_FALSE(t->bounds[0].strict);
  EXPECT_EQ(template_mismatch(*t, {TensorMeta::contiguous({4, 3, 4}, c10::kFloat)}), "");
  std::string why = template_mismatch(*t, {TensorMeta::contiguous({3, 2, 4}, c10::kFloat)});
  EXPECT_NE(why.find("input 0 dim 0 was larger than or equal to 4 in every capture"), std::string::npos) << why;
}

// With bounds: each class against the sizes of the dims in no class.
TEST(SizeTemplate, BoundsKeepTheClassesSideOfEveryFixedSize) {
  auto graphs = at_sizes({{5, 3}, {6, 5}, {7, 7}});
  auto t = generalize(graphs, true);
  ASSERT_TRUE(t.ok()) << t.error().message;
  // dim 2 is 4: B stayed over it at every point, T on both sides of it
  ASSERT_EQ(t->bounds.size(), 1u);
  EXPECT_TRUE(t->bounds[0].above);
  EXPECT_EQ(t->bounds[0].size, 4);
  EXPECT_EQ(template_mismatch(*t, {TensorMeta::contiguous({6, 2, 4}, c10::kFloat)}), "");
  // (3, 2): dim 1 stays at most dim 0 (the weak order of the (7, 7) point), dim 0 goes under 4
  std::string why = template_mismatch(*t, {TensorMeta::contiguous({3, 2, 4}, c10::kFloat)});
  EXPECT_NE(why.find("input 0 dim 0 was larger than 4 in every capture"), std::string::npos) << why;
  EXPECT_NE(template_mismatch(*t, {TensorMeta::contiguous({4, 9, 4}, c10::kFloat)}), "");
  EXPECT_TRUE(generalize(graphs)->bounds.empty());  // without: none
}

TEST(SizeTemplate, LockstepSizesAreAmbiguous) {
  // T = 2B + 1 at every point: the slice end T fits both T and 2B + 1.
  std::vector<std::unique_ptr<Graph>> graphs;
  for (auto [b, t] : std::vector<std::pair<int64_t, int64_t>>{{2, 5}, {3, 7}, {4, 9}}) graphs.push_back(captured(b, t, t));
  auto made = generalize(graphs);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message.find("fits 2 size forms"), std::string::npos) << made.error().message;
}

TEST(SizeTemplate, RefusesIntsWithoutAForm) {
  // min(B, 3): 2, 3, 3.
  std::vector<std::unique_ptr<Graph>> graphs;
  for (int64_t b : {2, 3, 5}) graphs.push_back(captured(b, 4, std::min<int64_t>(b, 3)));
  auto made = generalize(graphs);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message.find("has no size form"), std::string::npos) << made.error().message;
}

TEST(SizeTemplate, HalvesAreFloorDivisions) {
  // T // 2 (a pooled or halved length), T = 3, 5, 4, 8.
  std::vector<std::unique_ptr<Graph>> graphs;
  for (int64_t t : {3, 5, 4, 8}) graphs.push_back(captured(2 + t % 3, t, t / 2));
  auto made = generalize(graphs);
  ASSERT_TRUE(made.ok()) << made.error().message;
  EXPECT_NE(print_graph(*made->graph).find("sym_floordiv"), std::string::npos) << print_graph(*made->graph);
  auto g = specialize_sizes(*made, {TensorMeta::contiguous({4, 11, 4}, c10::kFloat)});
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(print_graph(**g), print_graph(*captured(4, 11, 5)));
}

TEST(SizeTemplate, RefusesOtherDifferences) {
  std::vector<std::unique_ptr<Graph>> graphs;
  for (int64_t b : {2, 3, 5}) graphs.push_back(captured(b, 4, 1, 1.0 / static_cast<double>(b)));
  auto made = generalize(graphs);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message.find("non-int argument"), std::string::npos) << made.error().message;
}

TEST(SizeTemplate, NeedsThreeDistinctSizes) {
  auto made = generalize(at_sizes({{2, 3}, {3, 5}, {2, 4}}));
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message.find("only 2 distinct sizes"), std::string::npos) << made.error().message;
  EXPECT_FALSE(generalize(at_sizes({{2, 3}, {3, 5}})).ok());
}

}  // namespace
}  // namespace tj::graph::aot
