// AOT capture and partition at the graph layer (no runtime wrapper): the
// functional graph has no mutations and computes the new input values; a
// data-dependent op fails the capture; random ops are recorded, not frozen;
// the joint graph partitioned into forward and backward reproduces eager
// autograd when both halves are run by the interpreter; the min-cut choice
// saves a matmul's output and recomputes the cheap values after it; a backward whose tangents
// did not all come runs without what only the absent ones reach.
#include <algorithm>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "compile/aot/capture.h"
#include "compile/aot/min_cut.h"
#include "compile/aot/partition.h"
#include "graph/interpreter.h"
#include "graph/op_registry.h"
#include "graph/printer.h"
#include "graph/text_format.h"

namespace tj::graph {
namespace {

std::unique_ptr<Graph> parse(const std::string& text) {
  auto g = parse_graph(text);
  if (!g.ok()) throw std::runtime_error(g.error().message);
  return std::move(*g);
}

bool has_op(const Graph& g, const std::string& target) {
  for (const Node* n : g.nodes())
    if (n->target() == target) return true;
  return false;
}

TEST(AotCapture, FunctionalGraphReturnsNewInputValues) {
  auto g = parse(R"(graph():
    %x : ? = placeholder[target=x]
    %sel : ? = call_function[target=aten.select.int](args = (%x, 0, 1))
    %mul_ : ? = call_function[target=aten.mul_.Scalar](args = (%sel, 10))
    %add_ : ? = call_function[target=aten.add_.Scalar](args = (%x, 1))
    %exp : ? = call_function[target=aten.exp.default](args = (%x,))
    return (%exp,)
)");
  at::Tensor x = at::arange(6, at::kFloat).reshape({2, 3});
  auto cap = aot::capture(*g, {x}, {});
  ASSERT_TRUE(cap.ok()) << cap.error().message;
  EXPECT_TRUE(cap->inputs[0].data_mutated);
  EXPECT_EQ(cap->inputs[0].version_bumps, 2);
  EXPECT_EQ(cap->mutated, std::vector<int>{0});
  for (const Node* n : cap->graph->nodes())
    if (n->op()) {
      EXPECT_FALSE(n->op()->traits.mutates) << print_graph(*cap->graph);
    }
  EXPECT_TRUE(has_op(*cap->graph, "aten.select_scatter.default")) << print_graph(*cap->graph);
  // The functional graph leaves its input alone and returns (new x, exp).
  at::Tensor input = x.clone();
  auto out = interpret_tensors(*cap->graph, {input});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(at::equal(input, x));
  at::Tensor expected = x.clone();
  expected[1].mul_(10);
  expected.add_(1);
  ASSERT_EQ(out->size(), 2u);
  EXPECT_TRUE(at::allclose((*out)[0], expected));
  EXPECT_TRUE(at::allclose((*out)[1], expected.exp()));
}

TEST(AotCapture, DataDependentOpIsAnError) {
  auto g = parse(R"(graph():
    %x : ? = placeholder[target=x]
    %m : ? = placeholder[target=m]
    %sel : ? = call_function[target=aten.masked_select.default](args = (%x, %m))
    return (%sel,)
)");
  auto cap = aot::capture(*g, {at::ones({4}), at::ones({4}, at::kBool)}, {});
  ASSERT_FALSE(cap.ok());
  EXPECT_NE(cap.error().message.find("masked_select"), std::string::npos) << cap.error().message;
  EXPECT_NE(cap.error().message.find("depends on tensor data"), std::string::npos) << cap.error().message;
}

TEST(AotCapture, RandomOpsAreRecordedNotFrozen) {
  auto g = parse(R"(graph():
    %x : ? = placeholder[target=x]
    %r : ? = call_function[target=aten.randn_like.default](args = (%x,))
    %add : ? = call_function[target=aten.add.Tensor](args = (%x, %r))
    return (%add,)
)");
  at::Tensor x = at::zeros({16});
  auto cap = aot::capture(*g, {x}, {});
  ASSERT_TRUE(cap.ok()) << cap.error().message;
  EXPECT_TRUE(has_op(*cap->graph, "aten.randn_like.default")) << print_graph(*cap->graph);
  EXPECT_TRUE(cap->graph->attr_names().empty());
  at::manual_seed(3);
  auto a = interpret_tensors(*cap->graph, {x});
  at::manual_seed(3);
  auto b = interpret_tensors(*g, {x});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(at::equal((*a)[0], (*b)[0]));
}

TEST(AotPartition, ForwardAndBackwardReproduceEagerAutograd) {
  auto g = parse(R"(graph():
    %x : ? = placeholder[target=x]
    %w : ? = placeholder[target=w]
    %mm : ? = call_function[target=aten.mm.default](args = (%x, %w))
    %relu : ? = call_function[target=aten.relu.default](args = (%mm,))
    %mul : ? = call_function[target=aten.mul.Tensor](args = (%relu, %x))
    %total : ? = call_function[target=aten.sum.default](args = (%mul,))
    return (%total,)
)");
  at::Tensor x = at::sin(at::arange(9, at::kFloat)).reshape({3, 3});
  at::Tensor w = at::cos(at::arange(9, at::kFloat)).reshape({3, 3}).requires_grad_(true);
  at::AutoGradMode grad(true);
  auto cap = aot::capture(*g, {x, w}, {true});
  ASSERT_TRUE(cap.ok()) << cap.error().message;
  EXPECT_EQ(cap->grad_inputs, std::vector<int>{1});
  ASSERT_EQ(cap->differentiable.size(), 1u);
  auto part = aot::partition_joint(*cap->graph, 2, 1, cap->num_forward_outputs());
  ASSERT_TRUE(part.ok()) << part.error().message;
  std::string both = print_graph(*part->forward) + print_graph(*part->backward);
  EXPECT_EQ(part->forward->placeholders().size(), 2u) << both;
  EXPECT_EQ(part->backward->placeholders().size(), static_cast<size_t>(part->num_saved) + 1) << both;

  at::Tensor loss;
  at::Tensor grad_w;
  {
    at::NoGradGuard no_grad;
    auto fw = interpret_tensors(*part->forward, {x, w.detach()});
    ASSERT_TRUE(fw.ok()) << fw.error().message;
    ASSERT_EQ(fw->size(), 1u + part->num_saved) << both;
    loss = (*fw)[0];
    std::vector<at::Tensor> bw_in(fw->begin() + 1, fw->end());
    bw_in.push_back(at::ones({}));
    auto bw = interpret_tensors(*part->backward, bw_in);
    ASSERT_TRUE(bw.ok()) << bw.error().message;
    ASSERT_EQ(bw->size(), 1u);
    grad_w = (*bw)[0];
  }
  at::Tensor eager = (at::relu(at::mm(x, w)) * x).sum();
  eager.backward();
  EXPECT_TRUE(at::allclose(loss, eager.detach()));
  EXPECT_TRUE(at::allclose(grad_w, w.grad())) << both;
}

TEST(AotPartition, CheapChainsAreRecomputed) {
  auto g = parse(R"(graph():
    %x : ? = placeholder[target=x]
    %w : ? = placeholder[target=w]
    %mul : ? = call_function[target=aten.mul.Tensor](args = (%x, %w))
    %sin : ? = call_function[target=aten.sin.default](args = (%mul,))
    %big : ? = call_function[target=aten.mm.default](args = (%sin, %w))
    return (%big,)
)");
  at::Tensor x = at::ones({8, 8}).requires_grad_(true), w = at::ones({8, 8}).requires_grad_(true);
  at::AutoGradMode grad(true);
  auto cap = aot::capture(*g, {x, w}, {true});
  ASSERT_TRUE(cap.ok()) << cap.error().message;
  auto part = aot::partition_joint(*cap->graph, 2, 1, cap->num_forward_outputs());
  ASSERT_TRUE(part.ok()) << part.error().message;
  // mm needs sin (saved: recomputing it needs x*w, which is as big) ...
  // and the cos of the sin backward is recomputed from x and w.
  EXPECT_LT(part->saved_bytes, part->saved_bytes_naive) << print_graph(*part->backward);
  EXPECT_GT(part->num_recomputed, 0) << print_graph(*part->backward);
  EXPECT_TRUE(has_op(*part->backward, "aten.cos.default")) << print_graph(*part->backward);
}

// The min-cut choice (partition.h): exp and tanh of one matmul output, each
// read by its own backward formula (exp's and tanh's derivatives are their
// outputs). Recomputing either alone needs the matmul's output, as big as
// it, so the greedy rule this replaced saved both; the cut saves the
// matmul's output once and recomputes both from it, and the two halves
// still give eager's gradients.
TEST(AotPartition, MinCutSavesMatmulAndRecomputesPointwiseChain) {
  auto g = parse(R"(graph():
    %x : ? = placeholder[target=x]
    %w : ? = placeholder[target=w]
    %mm : ? = call_function[target=aten.mm.default](args = (%x, %w))
    %exp : ? = call_function[target=aten.exp.default](args = (%mm,))
    %tanh : ? = call_function[target=aten.tanh.default](args = (%mm,))
    %both : ? = call_function[target=aten.add.Tensor](args = (%exp, %tanh))
    %total : ? = call_function[target=aten.sum.default](args = (%both,))
    return (%total,)
)");
  at::Tensor x = at::sin(at::arange(64, at::kFloat)).reshape({8, 8}) * 0.3;
  at::Tensor w = at::cos(at::arange(64, at::kFloat)).reshape({8, 8}).requires_grad_(true);
  at::AutoGradMode grad(true);
  auto cap = aot::capture(*g, {x, w}, {true});
  ASSERT_TRUE(cap.ok()) << cap.error().message;
  auto part = aot::partition_joint(*cap->graph, 2, 1, cap->num_forward_outputs());
  ASSERT_TRUE(part.ok()) << part.error().message;
  const std::string both = print_graph(*part->forward) + print_graph(*part->backward);
  std::vector<std::string> saved;
  for (int i = 0; i < part->num_saved; ++i) saved.push_back(part->backward->placeholders()[i]->target());
  EXPECT_NE(std::find(saved.begin(), saved.end(), "mm"), saved.end()) << both;
  EXPECT_EQ(std::find(saved.begin(), saved.end(), "tanh"), saved.end()) << both;
  EXPECT_EQ(std::find(saved.begin(), saved.end(), "exp"), saved.end()) << both;
  EXPECT_TRUE(has_op(*part->backward, "aten.tanh.default")) << both;
  EXPECT_TRUE(has_op(*part->backward, "aten.exp.default")) << both;
  EXPECT_EQ(part->saved_bytes, part->saved_bytes_recomputing);
  EXPECT_LT(part->saved_bytes, part->saved_bytes_naive) << both;

  at::Tensor grad_w;
  {
    at::NoGradGuard no_grad;
    auto fw = interpret_tensors(*part->forward, {x, w.detach()});
    ASSERT_TRUE(fw.ok()) << fw.error().message;
    std::vector<at::Tensor> bw_in(fw->begin() + 1, fw->end());
    bw_in.push_back(at::ones({}));
    auto bw = interpret_tensors(*part->backward, bw_in);
    ASSERT_TRUE(bw.ok()) << bw.error().message;
    grad_w = (*bw)[0];
  }
  at::Tensor m = at::mm(x, w);
  (at::exp(m) + at::tanh(m)).sum().backward();
  EXPECT_TRUE(at::allclose(grad_w, w.grad())) << both;
}

// The cut itself (min_cut.h): the cheapest set of edges separating source
// from sink, and of the minimum cuts the one nearest the source.
TEST(AotPartition, MinCutNearestTheSource) {
  // 0 -> 1 (3), 0 -> 2 (2), 1 -> 2 (5), 1 -> 3 (2), 2 -> 3 (3): the cut {0->1, 0->2} and
  // the cut {1->3, 2->3} both cost 5; the one nearest the source leaves 1 and 2 on the sink side.
  aot::MinCut cut(4);
  cut.add_edge(0, 1, 3);
  cut.add_edge(0, 2, 2);
  cut.add_edge(1, 2, 5);
  cut.add_edge(1, 3, 2);
  cut.add_edge(2, 3, 3);
  EXPECT_EQ(cut.solve(0, 3), 5);
  EXPECT_TRUE(cut.source_side(0));
  EXPECT_FALSE(cut.source_side(1));
  EXPECT_FALSE(cut.source_side(2));
  EXPECT_FALSE(cut.source_side(3));
  aot::MinCut forced(3);  // an infinite edge is never cut
  forced.add_edge(0, 1, aot::MinCut::infinite);
  forced.add_edge(1, 2, 7);
  EXPECT_EQ(forced.solve(0, 2), 7);
  EXPECT_TRUE(forced.source_side(1));
}

// The program order of a leaf's contributions (grad_relays.h): a view
// output of the input first, then clone's and mul's contributions, handed
// over as two parts (the input has a size-1 dim) in the engine's arrival
// order (mul's, the later op, first).
TEST(AotCapture, GradOrderRanksContributionsAndInputViews) {
  auto g = parse(R"(graph():
    %x : ? = placeholder[target=x]
    %t : ? = call_function[target=aten.t.default](args = (%x,))
    %c : ? = call_function[target=aten.clone.default](args = (%x,))
    %m : ? = call_function[target=aten.mul.Tensor](args = (%x, 2))
    return (%t, %c, %m)
)");
  at::Tensor x = at::ones({3, 1}, at::kDouble).requires_grad_(true);
  at::AutoGradMode grad(true);
  auto cap = aot::capture(*g, {x}, {true});
  ASSERT_TRUE(cap.ok()) << cap.error().message;
  ASSERT_EQ(cap->outputs.size(), 3u);
  EXPECT_EQ(cap->outputs[0].kind, aot::OutputKind::view_of_input);
  EXPECT_EQ(cap->outputs[0].grad_order, 1);
  EXPECT_EQ(cap->outputs[1].grad_order, 0);  // fresh: no order
  EXPECT_EQ(cap->grad_inputs, (std::vector<int>{0, 0}));
  EXPECT_EQ(cap->grad_order, (std::vector<int>{3, 2}));
}

// A backward run where the first output's tangent did not come: what only
// it reaches goes (sqrt's derivative, infinite at 0: no NaN), a node mixing
// it with the present one reads zeros, a saved value only it reads is not
// asked for, and an input only it reaches gets None (undefined).
TEST(AotPartition, BackwardWithoutAbsentTangents) {
  auto g = parse(R"(graph():
    %x : ? = placeholder[target=x]
    %y : ? = placeholder[target=y]
    %sqrt : ? = call_function[target=aten.sqrt.default](args = (%x,))
    %mul : ? = call_function[target=aten.mul.Tensor](args = (%x, 3))
    %ys : ? = call_function[target=aten.mul.Tensor](args = (%y, 2))
    return (%sqrt, %mul, %ys)
)");
  at::Tensor x = at::tensor({0.0, 4.0}, at::kDouble).requires_grad_(true);
  at::Tensor y = at::tensor({1.0, 2.0}, at::kDouble).requires_grad_(true);
  at::AutoGradMode grad(true);
  auto cap = aot::capture(*g, {x, y}, {true});
  ASSERT_TRUE(cap.ok()) << cap.error().message;
  ASSERT_EQ(cap->differentiable.size(), 3u);
  ASSERT_EQ(cap->grad_tangents.size(), 2u);
  EXPECT_EQ(cap->grad_tangents[0], (std::vector<int>{0, 1}));  // x: sqrt's and mul's tangents
  EXPECT_EQ(cap->grad_tangents[1], (std::vector<int>{2}));     // y: ys's
  auto part = aot::partition_joint(*cap->graph, 2, 3, cap->num_forward_outputs(), false);
  ASSERT_TRUE(part.ok()) << part.error().message;
  const std::string bw = print_graph(*part->backward);
  at::NoGradGuard no_grad;
  auto fw = interpret_tensors(*part->forward, {x.detach(), y.detach()});
  ASSERT_TRUE(fw.ok()) << fw.error().message;
  std::vector<at::Tensor> saved(fw->begin() + cap->num_forward_outputs(), fw->end());
  std::vector<at::Tensor> tangents = {at::zeros({2}, at::kDouble), at::ones({2}, at::kDouble),
                                      at::zeros({2}, at::kDouble)};
  std::vector<at::Tensor> all = saved;
  all.insert(all.end(), tangents.begin(), tangents.end());
  auto plain = interpret_tensors(*part->backward, all);  // zero tangents: 0 * inf
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_TRUE(at::isnan((*plain)[0]).any().item<bool>()) << bw;

  std::vector<size_t> asked;
  auto input = [&](size_t i) {
    asked.push_back(i);
    return all.at(i);
  };
  auto pruned = aot::run_without_absent_tangents(*part->backward, {true, false, true}, input);
  ASSERT_TRUE(pruned.ok()) << pruned.error().message;
  ASSERT_EQ(pruned->size(), 2u);
  EXPECT_TRUE(at::equal((*pruned)[0], at::full({2}, 3.0, at::kDouble))) << (*pruned)[0] << bw;
  EXPECT_FALSE((*pruned)[1].defined()) << bw;
  for (size_t i : asked) EXPECT_GE(i, saved.size()) << "asked for saved value " << i << "\n" << bw;
}

}  // namespace
}  // namespace tj::graph
