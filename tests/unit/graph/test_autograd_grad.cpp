// The tracejit::autograd_grad operator (graph/autograd_grad.h) on graphs
// built by hand: the interpreter's gradients are eager's backward's, laid
// out as AccumulateGrad lays them out (a transposed leaf gets its own
// strides), and two leaves handed the same gradient tensor by the engine
// get tensors of their own; meta inference gives the leaves' layouts and no
// requires_grad; the op is side-effecting (never removed or merged); AOT's
// capture with `backward_inside` records the backward ops into the one
// functional graph (no autograd_grad node left) and takes an in-place
// update of a leaf under no_grad as a plain input mutation, and its graph
// gives the interpreter's numbers.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "compile/aot/capture.h"
#include "compile/aot/joint_step.h"
#include "graph/autograd_grad.h"
#include "graph/interpreter.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "graph/passes/dce.h"
#include "graph/printer.h"

namespace tj::graph {
namespace {

const OpInfo& op(const char* name) { return **OpRegistry::instance().get(name); }

const OpInfo& autograd_grad() {
  register_autograd_grad_op();
  return op(kAutogradGradOp);
}

// loss = sum(tanh(x @ w)) + sum(b); grads of (w, b); then, under no_grad,
// w.sub_(grad_w * 0.1). Returns (loss detached, grad_w, grad_b).
std::unique_ptr<Graph> step_graph(const at::Tensor& w, const at::Tensor& b) {
  auto g = std::make_unique<Graph>();
  Node* x = g->placeholder("x", TensorMeta::contiguous({3, 4}, c10::kFloat));
  Node* pw = g->placeholder("w", TensorMeta::of(w));
  Node* pb = g->placeholder("b", TensorMeta::of(b));
  Node* mm = g->call(op("aten::mm"), {x, pw});
  Node* t = g->call(op("aten::tanh"), {mm});
  Node* s1 = g->call(op("aten::sum"), {t});
  Node* s2 = g->call(op("aten::sum"), {pb});
  Node* loss = g->call(op("aten::add.Tensor"), {s1, s2});
  Node* grads = g->call(autograd_grad(), {loss, Arg::list({pw, pb}), Arg()});
  Node* gw = g->call(OpRegistry::instance().getitem(), {grads, 0});
  Node* gb = g->call(OpRegistry::instance().getitem(), {grads, 1});
  Node* scaled = g->call(op("aten::mul.Scalar"), {gw, 0.1});
  Node* update = g->call(op("aten::sub_.Tensor"), {pw, scaled});
  update->meta().tags.grad_enabled = false;
  scaled->meta().tags.grad_enabled = false;
  Node* detached = g->call(op("aten::detach"), {loss});
  g->output(Arg::tuple({detached, gw, gb}));
  EXPECT_TRUE(infer_meta_all(*g).ok());
  return g;
}

at::Tensor input() { return at::linspace(-1, 1, 12).reshape({3, 4}); }
// w transposed in memory: AccumulateGrad lays its gradient out the same way.
at::Tensor weight() { return at::linspace(-0.5, 0.7, 8).reshape({2, 4}).t().detach().requires_grad_(true); }
at::Tensor bias() { return at::linspace(0, 1, 2).detach().requires_grad_(true); }

TEST(AutogradGrad, InterpreterGivesEagersGradientsLaidOutAsTheLeaf) {
  at::Tensor w = weight(), b = bias();
  auto g = step_graph(w, b);
  at::Tensor we = weight(), be = bias();
  at::Tensor loss = at::tanh(at::mm(input(), we)).sum() + be.sum();
  loss.backward();
  auto out = interpret_tensors(*g, {input(), w, b});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(at::equal((*out)[0], loss.detach()));
  EXPECT_TRUE(at::equal((*out)[1], we.grad()));
  EXPECT_TRUE(at::equal((*out)[2], be.grad()));
  EXPECT_EQ((*out)[1].strides(), w.strides()) << "the gradient of a transposed leaf is laid out as the leaf";
  EXPECT_EQ((*out)[1].strides(), we.grad().strides());
  EXPECT_FALSE((*out)[1].requires_grad());
  EXPECT_TRUE(at::equal(w.detach(), (we - we.grad() * 0.1).detach())) << "the update under no_grad wrote w";
  EXPECT_TRUE(w.is_leaf() && w.requires_grad());
}

TEST(AutogradGrad, LeavesHandedOneTensorGetTensorsOfTheirOwn) {
  // loss = sum((a + b) * 2): add's backward hands a and b the one tensor
  // mul's backward made.
  auto g = std::make_unique<Graph>();
  TensorMeta m = TensorMeta::contiguous({3}, c10::kFloat);
  m.requires_grad = true;
  Node* a = g->placeholder("a", m);
  Node* b = g->placeholder("b", m);
  Node* add = g->call(op("aten::add.Tensor"), {a, b});
  Node* twice = g->call(op("aten::mul.Scalar"), {add, 2.0});
  Node* loss = g->call(op("aten::sum"), {twice});
  Node* grads = g->call(autograd_grad(), {loss, Arg::list({a, b}), Arg()});
  Node* ga = g->call(OpRegistry::instance().getitem(), {grads, 0});
  Node* gb = g->call(OpRegistry::instance().getitem(), {grads, 1});
  g->output(Arg::tuple({ga, gb}));
  ASSERT_TRUE(infer_meta_all(*g).ok());
  at::Tensor x = at::ones({3}).requires_grad_(true), y = at::ones({3}).requires_grad_(true);
  auto out = interpret_tensors(*g, {x, y});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(at::equal((*out)[0], at::full({3}, 2.0)));
  EXPECT_TRUE(at::equal((*out)[1], at::full({3}, 2.0)));
  EXPECT_FALSE((*out)[0].storage().is_alias_of((*out)[1].storage())) << "a.grad.zero_() must not reach b.grad";
}

// Two nodes over one loss: with retain_graph on the first, the second
// backward runs through the kept nodes (eager's retain_graph=True); without
// it the interpreter raises eager's "backward through the graph a second
// time" error.
std::unique_ptr<Graph> twice_graph(bool retain) {
  auto g = std::make_unique<Graph>();
  TensorMeta m = TensorMeta::contiguous({3}, c10::kFloat);
  m.requires_grad = true;
  Node* a = g->placeholder("a", m);
  Node* loss = g->call(op("aten::sum"), {g->call(op("aten::tanh"), {a})});
  std::vector<Kwarg> kept;
  if (retain) kept.emplace_back("retain_graph", Arg(true));
  Node* first = g->call(autograd_grad(), {loss, Arg::list({a}), Arg()}, std::move(kept));
  Node* second = g->call(autograd_grad(), {loss, Arg::list({a}), Arg()});
  g->output(Arg::tuple({g->call(OpRegistry::instance().getitem(), {first, 0}),
                        g->call(OpRegistry::instance().getitem(), {second, 0})}));
  EXPECT_TRUE(infer_meta_all(*g).ok());
  return g;
}

TEST(AutogradGrad, RetainGraphKeepsTheNodesForASecondBackward) {
  at::Tensor x = at::linspace(-1, 1, 3).requires_grad_(true);
  auto out = interpret_tensors(*twice_graph(true), {x});
  ASSERT_TRUE(out.ok()) << out.error().message;
  at::Tensor want = 1 - at::tanh(x.detach()).pow(2);
  EXPECT_TRUE(at::allclose((*out)[0], want) && at::equal((*out)[0], (*out)[1]));
  bool raised = false;
  try {
    auto again = interpret_tensors(*twice_graph(false), {x});
    raised = !again.ok();
  } catch (const std::exception& e) {
    raised = std::string(e.what()).find("second time") != std::string::npos;
  }
  EXPECT_TRUE(raised) << "without retain_graph the second backward raises, as eager";
}

TEST(AutogradGrad, MetasAreTheLeavesWithoutGrad) {
  at::Tensor w = weight(), b = bias();
  auto g = step_graph(w, b);
  for (const Node* n : g->nodes()) {
    if (n->kind() != NodeKind::call_function || !n->op()->traits.backward) continue;
    ASSERT_EQ(n->meta().fake.size(), 2u);
    EXPECT_EQ(n->meta().fake[0].strides, w.strides().vec());
    EXPECT_FALSE(n->meta().fake[0].requires_grad);
    EXPECT_TRUE(n->op()->traits.side_effecting());
  }
  EXPECT_TRUE(aot::runs_backward_inside(*g));
}

TEST(AutogradGrad, NeverRemovedAsDeadCode) {
  at::Tensor w = weight(), b = bias();
  auto g = step_graph(w, b);
  g->output_node()->set_args({Arg::tuple({})});  // nothing reads the gradients
  eliminate_dead_code(*g);
  bool kept = false;
  for (const Node* n : g->nodes()) kept |= n->kind() == NodeKind::call_function && n->op()->traits.backward;
  EXPECT_TRUE(kept);
}

TEST(AutogradGrad, AotRecordsTheBackwardInsideTheFunctionalGraph) {
  at::Tensor w = weight(), b = bias();
  auto g = step_graph(w, b);
  aot::CaptureOptions options;
  options.backward_inside = true;
  auto cap = aot::capture(*g, {input(), w, b}, options);
  ASSERT_TRUE(cap.ok()) << cap.error().message;
  const std::string text = print_graph(*cap->graph);
  EXPECT_EQ(text.find("autograd_grad"), std::string::npos) << text;
  EXPECT_NE(text.find("tanh_backward"), std::string::npos) << text;
  EXPECT_FALSE(cap->joint);
  ASSERT_EQ(cap->mutated.size(), 1u) << "w's update is an input mutation";
  EXPECT_EQ(cap->inputs[static_cast<size_t>(cap->mutated[0])].position, 1);
  // The functional graph gives the interpreter's numbers: (new w, loss, grad_w, grad_b).
  at::Tensor w2 = weight(), b2 = bias();
  auto want = interpret_tensors(*step_graph(w2, b2), {input(), w2, b2});
  ASSERT_TRUE(want.ok());
  at::NoGradGuard no_grad;
  auto got = interpret_tensors(*cap->graph, {input(), weight().detach(), bias().detach()});
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->size(), 4u);
  EXPECT_TRUE(at::allclose((*got)[0], w2.detach()));
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(at::allclose((*got)[i + 1], (*want)[i])) << i;
}

}  // namespace
}  // namespace tj::graph
