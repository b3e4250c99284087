// Cutting a graph with data-dependent sizes (graph/unbacked_split.h): the
// head holds what depends on no data-dependent size, the middle the
// data-dependent ops (and getitems of their tuples), the tail the rest;
// running the three stages through their slots gives what the whole graph
// gives; a sym_item reading an input binds to a value; random ops keep
// their order; graphs that write their inputs are refused.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "graph/interpreter.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "graph/printer.h"
#include "graph/sym_ints.h"
#include "graph/unbacked_sizes.h"
#include "graph/unbacked_split.h"
#include "graph_test_util.h"

namespace tj::graph {
namespace {

using testing::op;

// Runs the stages as the runtime does (every stage op by op here).
std::vector<at::Tensor> run_stages(const UnbackedStages& s, const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> env(static_cast<size_t>(s.slots));
  for (size_t i = 0; i < inputs.size(); ++i) env[i] = inputs[i];
  auto stage = [&](const UnbackedStage& st) {
    if (!st.graph) return;
    std::vector<at::Tensor> in;
    for (int k : st.inputs) in.push_back(env[static_cast<size_t>(k)]);
    auto out = interpret_tensors(*st.graph, in);
    ASSERT_TRUE(out.ok()) << out.error().message;
    ASSERT_EQ(out->size(), st.outputs.size());
    for (size_t k = 0; k < st.outputs.size(); ++k) env[static_cast<size_t>(st.outputs[k])] = (*out)[k];
  };
  stage(s.head);
  stage(s.middle);
  stage(s.tail);
  std::vector<at::Tensor> out;
  for (int k : s.results) out.push_back(env[static_cast<size_t>(k)]);
  return out;
}

size_t calls(const UnbackedStage& s) {
  if (!s.graph) return 0;
  size_t n = 0;
  for (const Node* node : s.graph->nodes()) n += node->kind() == NodeKind::call_function;
  return n;
}

TEST(UnbackedSplit, OpsBeforeAndAfterANonzeroGoToHeadAndTail) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({5, 3}, c10::kFloat));
  Node* doubled = g.call(op("aten::mul.Scalar"), {x, 2.0});
  Node* mask = g.call(op("aten::gt.Scalar"), {doubled, 0.5});
  Node* idx = g.call(op("aten::nonzero"), {mask});
  Node* after = g.call(op("aten::add.Scalar"), {g.call(op("aten::mul.Scalar"), {idx, int64_t{3}}), int64_t{1}});
  Node* total = g.call(op("aten::sum"), {doubled});
  g.output(Arg::tuple({after, total, doubled}));
  ASSERT_TRUE(infer_meta_all(g).ok());
  auto s = split_at_unbacked(g);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(calls(s->head), 3u);    // mul, gt, sum
  EXPECT_EQ(calls(s->middle), 1u);  // nonzero
  EXPECT_EQ(calls(s->tail), 2u);    // mul, add
  EXPECT_EQ(s->head.graph->placeholders().size(), 1u);
  EXPECT_NE(s->source.find("aten::nonzero"), std::string::npos);
  for (const Node* n : s->head.graph->nodes()) EXPECT_FALSE(n->meta().unbacked);
  // the nonzero's result is a plain input of the tail: its sizes are known when the tail compiles
  for (const Node* n : s->tail.graph->placeholders()) EXPECT_FALSE(n->meta().unbacked) << n->name();
  EXPECT_EQ(first_unbacked_node(*s->tail.graph), nullptr);
  EXPECT_EQ(s->folded_sizes, 0);  // nothing fixed to these sizes: the stages serve every size
  for (const at::Tensor& real : {at::randn({5, 3}), -at::ones({5, 3}), at::ones({5, 3})}) {
    auto want = interpret_tensors(g, {real});
    ASSERT_TRUE(want.ok());
    auto got = run_stages(*s, {real});
    ASSERT_EQ(got.size(), want->size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(at::equal(got[i], (*want)[i])) << i;
  }
}

TEST(UnbackedSplit, UniqueTupleStaysInTheMiddleWithItsGetitems) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({6}, c10::kFloat));
  Node* r = g.call(op("aten::round"), {x});
  Node* u = g.call(op("aten::_unique2"), {r, true, true, true});
  Node* values = g.call(OpRegistry::instance().getitem(), {u, int64_t{0}});
  Node* counts = g.call(OpRegistry::instance().getitem(), {u, int64_t{2}});
  Node* v2 = g.call(op("aten::mul.Scalar"), {values, 2.0});
  g.output(Arg::tuple({v2, counts}));
  ASSERT_TRUE(infer_meta_all(g).ok());
  auto s = split_at_unbacked(g);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(calls(s->middle), 3u);  // _unique2 and two getitems
  EXPECT_EQ(calls(s->tail), 1u);
  at::Tensor real = at::tensor({1.2f, -0.4f, 1.1f, 3.f, 2.9f, 0.f});
  auto want = interpret_tensors(g, {real});
  ASSERT_TRUE(want.ok());
  auto got = run_stages(*s, {real});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(at::equal(got[0], (*want)[0]));
  EXPECT_TRUE(at::equal(got[1], (*want)[1]));
}

TEST(UnbackedSplit, ASymItemGoesToTheTailAndBindsToItsValue) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({6, 2}, c10::kFloat));
  Node* n = g.placeholder("n", TensorMeta::contiguous({2}, c10::kLong));
  Node* first = g.call(op("aten::select.int"), {n, int64_t{0}, int64_t{0}});
  Node* item = g.call(OpRegistry::instance().sym(SymOp::item), {first}, {}, "item");
  Node* y = g.call(op("aten::mul.Scalar"), {x, 2.0});
  Node* head = g.call(op("aten::slice.Tensor"), {y, int64_t{0}, Arg(), item, int64_t{1}});
  g.output(Arg::tuple({head}));
  ASSERT_TRUE(infer_meta_all(g).ok());
  auto s = split_at_unbacked(g);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_FALSE(s->middle.graph);
  ASSERT_TRUE(s->tail.graph);
  std::vector<InputItem> items = input_items(*s->tail.graph);
  ASSERT_EQ(items.size(), 1u);  // reads the head's select, a placeholder of the tail
  std::shared_ptr<Graph> bound = s->tail.graph->clone();
  bind_item(*bound, input_items(*bound)[0].item, 4);
  EXPECT_FALSE(has_sym_nodes(*bound));
  at::Tensor real = at::arange(12, at::kFloat).reshape({6, 2});
  for (int64_t b : {0, 4, 9, -2}) {
    auto got = run_stages(*s, {real, at::tensor({b, int64_t{1}})});
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(at::equal(got[0], (real * 2).slice(0, c10::nullopt, b))) << b;
  }
}

// A size node of an input (x.shape[0] as an int argument) stays a size
// node: copied into each stage that uses it, with the input it reads, so
// the stages hold for every size of the inputs (issue 43: no cut and AOT
// capture per input size).
TEST(UnbackedSplit, InputSizeNodesAreCopiedIntoTheirStages) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({6, 2}, c10::kFloat));
  Node* rows = g.call(OpRegistry::instance().sym(SymOp::size), {x, int64_t{0}}, {}, "size");
  Node* flat = g.call(op("aten::reshape"), {x, Arg::list({Arg(rows), Arg(int64_t{2})})});
  Node* idx = g.call(op("aten::nonzero"), {g.call(op("aten::gt.Scalar"), {flat, 0.0})});
  Node* rows2 = g.call(OpRegistry::instance().sym(SymOp::mul), {rows, int64_t{2}});
  g.output(Arg::tuple({g.call(op("aten::add.Scalar"), {idx, rows2})}));
  ASSERT_TRUE(infer_meta_all(g).ok());
  auto s = split_at_unbacked(g);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->folded_sizes, 0);
  auto count_sym = [](const Graph& stage) {
    int n = 0;
    for (const Node* node : stage.nodes()) n += is_sym(*node) ? 1 : 0;
    return n;
  };
  ASSERT_TRUE(s->head.graph && s->tail.graph);
  EXPECT_EQ(count_sym(*s->head.graph), 1) << print_graph(*s->head.graph);  // size(x, 0) for the reshape
  EXPECT_EQ(count_sym(*s->tail.graph), 2) << print_graph(*s->tail.graph);  // size(x, 0) * 2 for the add
  // the tail reads input 0 (x) for its size
  EXPECT_NE(std::find(s->tail.inputs.begin(), s->tail.inputs.end(), 0), s->tail.inputs.end());
}

// A size of an intermediate (not a graph input) is folded to the value
// the metas give: the stages hold for these sizes only, and say so.
TEST(UnbackedSplit, FoldedSizeNodesAreCounted) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({6, 2}, c10::kFloat));
  Node* y = g.call(op("aten::neg"), {x});
  Node* rows = g.call(OpRegistry::instance().sym(SymOp::size), {y, int64_t{0}}, {}, "size");
  Node* flat = g.call(op("aten::reshape"), {x, Arg::list({Arg(rows), Arg(int64_t{2})})});
  Node* idx = g.call(op("aten::nonzero"), {g.call(op("aten::gt.Scalar"), {flat, 0.0})});
  g.output(Arg::tuple({g.call(op("aten::mul.Scalar"), {idx, int64_t{2}})}));
  ASSERT_TRUE(infer_meta_all(g).ok());
  auto s = split_at_unbacked(g);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->folded_sizes, 1);
}

// `v = d[d > 0]; d.zero_(); a + 1` (a a view of d made before): the write
// depends on no data-dependent size, but the middle reads d as it was, so
// the write and every later read of d's memory go to the tail (fuzz seed
// 9963638: the head zeroed d first).
TEST(UnbackedSplit, AWriteAfterADataDependentOpStaysAfterIt) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({2, 3}, c10::kFloat));
  Node* d = g.call(op("aten::mul.Scalar"), {x, 2.0});
  Node* row = g.call(op("aten::select.int"), {d, int64_t{0}, int64_t{0}});
  Node* mask = g.call(op("aten::gt.Scalar"), {d, 0.0});
  Node* picked = g.call(op("aten::masked_select"), {d, mask});
  Node* zeroed = g.call(op("aten::zero_"), {d});
  Node* row_after = g.call(op("aten::add.Scalar"), {row, 1.0});
  Node* other = g.call(op("aten::neg"), {x});
  g.output(Arg::tuple({picked, zeroed, row_after, other}));
  ASSERT_TRUE(infer_meta_all(g).ok());
  auto s = split_at_unbacked(g);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(calls(s->head), 4u);  // mul, select, gt, neg
  EXPECT_EQ(calls(s->middle), 1u);
  EXPECT_EQ(calls(s->tail), 2u);  // zero_, the add reading the row of d
  for (const at::Tensor& real : {at::randn({2, 3}), at::ones({2, 3})}) {
    auto want = interpret_tensors(g, {real});
    ASSERT_TRUE(want.ok());
    auto got = run_stages(*s, {real});
    ASSERT_EQ(got.size(), want->size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(at::equal(got[i], (*want)[i])) << i;
  }
}

// A random op that depends on no data-dependent size but comes after a
// draw of the tail goes to the tail too: the head runs first, and the
// draws must keep eager's order (`m = x[x > 0]; rand_like(m), rand(2)`).
TEST(UnbackedSplit, RandomOpsAfterADrawOfTheTailStayAfterIt) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({4}, c10::kFloat));
  Node* before = g.call(op("aten::rand"), {Arg::ints({3})});  // drawn first: stays in the head
  Node* mask = g.call(op("aten::gt.Scalar"), {x, 0.0});
  Node* picked = g.call(op("aten::masked_select"), {x, mask});
  Node* like = g.call(op("aten::rand_like"), {picked});
  Node* after = g.call(op("aten::rand"), {Arg::ints({2})});
  Node* other = g.call(op("aten::neg"), {x});
  g.output(Arg::tuple({before, like, after, other}));
  ASSERT_TRUE(infer_meta_all(g).ok());
  auto s = split_at_unbacked(g);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(calls(s->head), 3u);  // rand(3), gt, neg
  EXPECT_EQ(calls(s->middle), 1u);
  EXPECT_EQ(calls(s->tail), 2u);  // rand_like, rand(2)
  const at::Tensor real = at::tensor({1.0f, -1.0f, 2.0f, 3.0f});
  at::manual_seed(3);
  auto want = interpret_tensors(g, {real});
  ASSERT_TRUE(want.ok());
  at::manual_seed(3);
  auto got = run_stages(*s, {real});
  ASSERT_EQ(got.size(), want->size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(at::equal(got[i], (*want)[i])) << i;
}

TEST(UnbackedSplit, AGraphWritingItsInputIsNotCut) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({4}, c10::kFloat));
  Node* w = g.call(op("aten::add_.Scalar"), {x, 1.0});
  Node* idx = g.call(op("aten::nonzero"), {w});
  g.output(Arg::tuple({idx}));
  ASSERT_TRUE(infer_meta_all(g).ok());
  auto s = split_at_unbacked(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("writes its inputs"), std::string::npos);
}

TEST(UnbackedSplit, AGraphWithoutDataDependentOpsIsNotCut) {
  Graph g;
  Node* x = g.placeholder("x", TensorMeta::contiguous({4}, c10::kFloat));
  g.output(Arg::tuple({g.call(op("aten::neg"), {x})}));
  ASSERT_TRUE(infer_meta_all(g).ok());
  EXPECT_FALSE(split_at_unbacked(g).ok());
}

}  // namespace
}  // namespace tj::graph
