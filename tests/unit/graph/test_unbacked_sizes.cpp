// Data-dependent sizes (graph/unbacked_sizes.h): meta inference of nonzero,
// mask indexing, unique and a slice bounded by sym_item gives the
// placeholder for the data-dependent dims, exact sizes for the others, and
// flags the nodes; the interpreter runs the same graph on real tensors.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "graph/interpreter.h"
#include "graph/lint.h"
#include "graph/meta_infer.h"
#include "graph/sym_ints.h"
#include "graph/unbacked_sizes.h"
#include "graph_test_util.h"

namespace tj::graph {
namespace {

using testing::op;

TEST(UnbackedSizes, NonzeroAndMaskIndexGetThePlaceholder) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({5, 3}, c10::kFloat));
  Node* mask = g.call(op("aten::gt.Scalar"), {x, 0.0});
  Node* idx = g.call(op("aten::nonzero"), {mask});
  Node* rows = g.call(op("aten::gt.Scalar"), {g.call(op("aten::sum.dim_IntList"), {x, Arg::list({int64_t{1}})}), 0.0});
  Node* picked = g.call(op("aten::index.Tensor"), {x, Arg::list({rows})});
  Node* doubled = g.call(op("aten::mul.Scalar"), {picked, 2.0});
  g.output(Arg::tuple({idx, doubled}));
  ASSERT_TRUE(infer_meta_all(g).ok());
  ASSERT_TRUE(lint(g).ok());
  EXPECT_EQ(idx->meta().tensor()->sizes, (std::vector<int64_t>{kUnbackedHint, 2}));
  EXPECT_EQ(idx->meta().tensor()->dtype, c10::kLong);
  EXPECT_TRUE(idx->meta().unbacked);
  EXPECT_EQ(doubled->meta().tensor()->sizes, (std::vector<int64_t>{kUnbackedHint, 3}));
  EXPECT_FALSE(doubled->meta().unbacked);  // computed from one: flagged through its input
  EXPECT_TRUE(depends_on_unbacked(*doubled));
  EXPECT_TRUE(unbacked_dim(*doubled, 0));
  EXPECT_FALSE(unbacked_dim(*doubled, 1));  // 3 columns, exact
  EXPECT_FALSE(depends_on_unbacked(*mask));
  EXPECT_EQ(first_unbacked_node(g), idx);

  at::Tensor real = at::tensor({1.f, -1.f, 2.f, -3.f, -1.f, -1.f, 0.5f, 0.5f, 0.5f, -2.f, -2.f, 9.f, 0.f, 0.f, 0.f})
                        .reshape({5, 3});
  auto out = interpret_tensors(g, {real});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(at::equal(out->at(0), at::nonzero(real > 0)));
  at::Tensor keep = real.sum(1) > 0;
  EXPECT_TRUE(at::equal(out->at(1), real.index({keep}) * 2));
}

TEST(UnbackedSizes, UniqueGivesItsThreeResults) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({4, 2}, c10::kFloat));
  Node* u = g.call(op("aten::_unique2"), {x, true, true, false});
  ASSERT_TRUE(infer_meta(g, *u).ok());
  ASSERT_EQ(u->meta().fake.size(), 3u);
  EXPECT_TRUE(u->meta().fake_is_sequence);
  EXPECT_EQ(u->meta().fake[0].sizes, (std::vector<int64_t>{kUnbackedHint}));
  EXPECT_EQ(u->meta().fake[1].sizes, (std::vector<int64_t>{4, 2}));  // the inverse: the input's shape
  EXPECT_EQ(u->meta().fake[2].sizes, (std::vector<int64_t>{0}));     // no counts asked: empty, as eager
}

TEST(UnbackedSizes, SliceByATensorValueIsReadWhenItRuns) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({6, 2}, c10::kFloat));
  Node* n = g.placeholder("n", TensorMeta::contiguous({}, c10::kLong));
  Node* item = g.call(OpRegistry::instance().sym(SymOp::item), {n}, {}, "item");
  Node* head = g.call(op("aten::slice.Tensor"), {x, int64_t{0}, Arg(), item, int64_t{1}});
  g.output(Arg::tuple({head}));
  ASSERT_TRUE(infer_meta_all(g).ok());
  EXPECT_TRUE(item->meta().unbacked);
  // the slice's dim is data-dependent, not the input's 6 the placeholder would clamp to
  EXPECT_EQ(head->meta().tensor()->sizes, (std::vector<int64_t>{kUnbackedHint, 2}));
  at::Tensor real = at::arange(12, at::kFloat).reshape({6, 2});
  for (int64_t bound : {0, 2, 6, 9, -2}) {
    auto out = interpret_tensors(g, {real, at::scalar_tensor(bound, at::kLong)});
    ASSERT_TRUE(out.ok()) << out.error().message;
    EXPECT_TRUE(at::equal(out->at(0), real.slice(0, c10::nullopt, bound))) << bound;
  }
  // a size template or a backend would fold the placeholder: the value is unknown here
  EXPECT_FALSE(fold_sym_nodes(g).ok());
}

}  // namespace
}  // namespace tj::graph
