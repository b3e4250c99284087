// The autograd_function node (graph/autograd_function.h), on a graph built
// by hand: a straight-through round (the custom backward passes the grad
// unchanged, where autograd's own formula for round gives zeros) with a
// second output whose gradient uses a saved intermediate. Checked: the
// interpreter's gradients are the custom ones (undefined grads become
// zeros); a saved tensor written in place raises eager's error; lint
// rejects a missing body and a wrong arity; clone keeps the body; the
// printer shows it after `return`; AOT capture records the body's ops into
// the joint graph (no autograd_function node left), and its partitioned
// halves give the interpreter's gradients.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>

#include "compile/aot/capture.h"
#include "compile/aot/partition.h"
#include "graph/autograd_function.h"
#include "graph/interpreter.h"
#include "graph/lint.h"
#include "graph/meta_infer.h"
#include "graph/op_registry.h"
#include "graph/outline.h"
#include "graph/printer.h"
#include "graph/python_codegen.h"
#include "graph/text_format.h"

namespace tj::graph {
namespace {

const OpInfo& op(const char* name) { return **OpRegistry::instance().get(name); }

// backward(saved_0 = exp, grad_0, grad_1) = (grad_0 + grad_1 * saved_0,)
std::shared_ptr<const AutogradFunctionBody> straight_through_body() {
  auto b = std::make_shared<Graph>();
  TensorMeta m = TensorMeta::contiguous({2, 3}, c10::kFloat);
  Node* saved = b->placeholder("saved_0", m);
  Node* g0 = b->placeholder("grad_0", m);
  Node* g1 = b->placeholder("grad_1", m);
  Node* mul = b->call(op("aten::mul.Tensor"), {g1, saved});
  Node* add = b->call(op("aten::add.Tensor"), {g0, mul});
  b->output(Arg::tuple({add}));
  EXPECT_TRUE(infer_meta_all(*b).ok());
  auto body = std::make_shared<AutogradFunctionBody>();
  body->class_name = "StraightThrough";
  body->backward = b;
  body->num_inputs = 1;
  body->num_outputs = 2;
  body->num_saved = 1;
  body->non_differentiable = {false, false};
  body->grad_of_input = {0};
  return body;
}

// x -> mul = 2x -> (round(mul), exp(mul)) under no_grad -> the node;
// returns (sum(o0), o1).
std::unique_ptr<Graph> straight_through_graph() {
  auto g = std::make_unique<Graph>();
  TensorMeta m = TensorMeta::contiguous({2, 3}, c10::kFloat);
  m.requires_grad = true;
  Node* x = g->placeholder("x", m);
  Node* mul = g->call(op("aten::mul.Scalar"), {x, 2.0});
  Node* round = g->call(op("aten::round"), {mul});
  Node* exp = g->call(op("aten::exp"), {mul});
  round->meta().tags.grad_enabled = false;
  exp->meta().tags.grad_enabled = false;
  g->set_autograd_function("autograd_function", straight_through_body());
  Node* af = g->call(OpRegistry::instance().autograd_function(),
                     {"autograd_function", Arg::tuple({mul}), Arg::tuple({round, exp}), Arg::tuple({exp})});
  Node* o0 = g->call(OpRegistry::instance().getitem(), {af, 0});
  Node* o1 = g->call(OpRegistry::instance().getitem(), {af, 1});
  Node* sum = g->call(op("aten::sum"), {o0});
  g->output(Arg::tuple({sum, o1}));
  EXPECT_TRUE(infer_meta_all(*g).ok());
  return g;
}

at::Tensor example() { return at::linspace(-1, 1, 6).reshape({2, 3}); }

TEST(AutogradFunction, InterpreterRunsTheCustomBackward) {
  auto g = straight_through_graph();
  ASSERT_TRUE(lint(*g).ok()) << lint(*g).error().message;
  EXPECT_TRUE(g->find("autograd_function")->meta().fake.at(0).requires_grad);
  at::AutoGradMode grad(true);
  at::Tensor x = example().requires_grad_(true);
  auto out = interpret_tensors(*g, {x});
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ(out->size(), 2u);
  EXPECT_TRUE(at::equal((*out)[0], at::round(x.detach() * 2).sum()));
  ASSERT_TRUE((*out)[1].grad_fn());
  EXPECT_EQ((*out)[1].grad_fn()->name(), "StraightThroughBackward");
  // Only o0 reaches the loss: grad_1 is undefined, materialized as zeros;
  // d(2x)/dx = 2 through the straight-through grad of ones.
  (*out)[0].backward();
  EXPECT_TRUE(at::equal(x.grad(), at::full({2, 3}, 2.0))) << x.grad();
  // Both outputs: 2 * (1 + exp(2x)).
  auto again = interpret_tensors(*g, {x});
  ASSERT_TRUE(again.ok());
  auto grads = torch::autograd::grad({(*again)[0], (*again)[1]}, {x}, {at::ones({}), at::ones({2, 3})});
  EXPECT_TRUE(at::allclose(grads[0], 2 * (1 + at::exp(2 * x.detach())))) << grads[0];
}

TEST(AutogradFunction, NoGradReturnsOutputsWithoutHistory) {
  auto g = straight_through_graph();
  at::Tensor x = example().requires_grad_(true);
  at::NoGradGuard no_grad;
  auto out = interpret_tensors(*g, {x});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_FALSE((*out)[1].requires_grad());
}

TEST(AutogradFunction, SavedTensorWrittenInPlaceRaises) {
  at::AutoGradMode grad(true);
  at::Tensor x = example().requires_grad_(true);
  at::Tensor a = x * 1;
  at::Tensor raw0, raw1;
  {
    at::NoGradGuard no_grad;
    raw0 = at::round(a);
    raw1 = at::exp(a);
  }
  auto body = straight_through_body();
  auto prepared = PreparedGraph::prepare(*body->backward);
  ASSERT_TRUE(prepared.ok());
  auto run = [p = std::make_shared<PreparedGraph>(std::move(*prepared))](const AutogradFunctionBody&,
                                                                          std::vector<at::Tensor> in) {
    return *p->run_tensors(in);
  };
  auto zeros = [](const TensorMeta& m) { return at::zeros(m.sizes); };
  auto outs = apply_autograd_function(body, {a}, {raw0, raw1}, {a}, run, zeros);
  a.mul_(3);  // eager: "one of the variables needed for gradient computation has been modified by an inplace operation"
  EXPECT_THROW(outs[0].sum().backward(), c10::Error);
}

TEST(AutogradFunction, LintCloneAndPrinter) {
  auto g = straight_through_graph();
  auto copy = g->clone();
  EXPECT_EQ(copy->autograd_function("autograd_function"), g->autograd_function("autograd_function"));
  EXPECT_TRUE(lint(*copy).ok());
  std::string text = print_graph(*g);
  size_t ret = text.find("    return (%sum_1, %getitem_1)");
  size_t body = text.find("autograd_function autograd_function = StraightThrough(inputs=1, outputs=2, saved=1, "
                          "grads=[0], non_differentiable=[False, False], materialize_grads=True):\n"
                          "        %saved_0 : f32[2, 3] = placeholder[target=saved_0]");
  EXPECT_NE(ret, std::string::npos) << text;
  EXPECT_NE(body, std::string::npos) << text;
  EXPECT_LT(ret, body) << text;

  auto missing = straight_through_graph();
  Node* af = missing->find("autograd_function");
  std::vector<Arg> args = af->args();
  args[0] = Arg("no_such_body");
  af->set_args(args);
  ASSERT_FALSE(lint(*missing).ok());
  EXPECT_NE(lint(*missing).error().message.find("no autograd_function body"), std::string::npos);

  auto arity = straight_through_graph();
  Node* af2 = arity->find("autograd_function");
  std::vector<Arg> args2 = af2->args();
  args2[3] = Arg::tuple({});
  af2->set_args(args2);
  ASSERT_FALSE(lint(*arity).ok());
  EXPECT_NE(lint(*arity).error().message.find("counts"), std::string::npos) << lint(*arity).error().message;
}

TEST(OutlineRegion, ExternalsStandInsAndPlaceholdersThatStay) {
  Graph g;
  TensorMeta m = TensorMeta::contiguous({3}, c10::kFloat);
  Node* x = g.placeholder("x", m);
  Node* a = g.call(op("aten::mul.Scalar"), {x, 2.0});
  Node* s = g.call(op("aten::empty_strided"), {Arg::ints({3}), Arg::ints({1})});  // region starts here
  Node* p = g.placeholder("p", m);  // a frame input read by the region: stays
  Node* mul = g.call(op("aten::mul.Tensor"), {s, a});
  Node* add = g.call(op("aten::add.Tensor"), {mul, p});
  ASSERT_TRUE(infer_meta_all(g).ok());
  auto out = outline_region(g, 2, {s}, {add, a});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->externals, (std::vector<Node*>{a, p}));
  std::vector<Node*> left = g.nodes();
  EXPECT_EQ(left, (std::vector<Node*>{x, a, p}));
  std::string body = print_graph(*out->body);
  EXPECT_EQ(body,
            "graph():\n"
            "    %saved_0 : f32[3] = placeholder[target=saved_0]\n"
            "    %saved_1 : f32[3] = placeholder[target=saved_1]\n"
            "    %grad_0 : f32[3] = placeholder[target=grad_0]\n"
            "    %mul_1 : f32[3] = call_function[target=aten.mul.Tensor](args = (%grad_0, %saved_0))\n"
            "    %add : f32[3] = call_function[target=aten.add.Tensor](args = (%mul_1, %saved_1))\n"
            "    return (%add, %saved_0)\n");
  EXPECT_TRUE(lint(*out->body).ok());

  // A size read from outside cannot be a saved tensor: refused, graph unchanged.
  Graph h;
  Node* y = h.placeholder("y", m);
  Node* n = h.call(OpRegistry::instance().sym(SymOp::size), {y, 0});
  Node* z = h.call(op("aten::mul.Scalar"), {y, 2.0});  // region
  Node* w = h.call(op("aten::view"), {z, Arg::list({n})});
  ASSERT_TRUE(infer_meta_all(h).ok());
  size_t before = h.size();
  auto refused = outline_region(h, 2, {}, {w});
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(h.size(), before);
}

TEST(AutogradFunction, TextRoundTrip) {
  auto g = straight_through_graph();
  for (bool verbose : {false, true}) {
    std::string text = print_graph(*g, {verbose});
    auto parsed = parse_graph(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message << "\n" << text;
    EXPECT_EQ(print_graph(**parsed, {verbose}), text);
    ASSERT_TRUE(lint(**parsed).ok()) << lint(**parsed).error().message;
    auto body = (*parsed)->autograd_function("autograd_function");
    ASSERT_TRUE(body);
    EXPECT_EQ(body->class_name, "StraightThrough");
    EXPECT_EQ(body->grad_of_input, std::vector<int>{0});
  }
  auto bad = parse_graph(print_graph(*g) + "autograd_function x = Y(inputs=1):\n");
  EXPECT_FALSE(bad.ok());
}

TEST(AutogradFunction, PythonCodeDefinesAFunctionClass) {
  auto g = straight_through_graph();
  std::string code = python_code(*g);
  EXPECT_NE(code.find("class _tj_autograd_function(torch.autograd.Function):  # StraightThrough"), std::string::npos)
      << code;
  EXPECT_NE(code.find(" = _tj_autograd_function.apply(mul, round_1, exp, exp)"), std::string::npos)
      << code;
  EXPECT_LT(code.find("class _tj_"), code.find("def forward(self")) << code;
}

TEST(AutogradFunction, CaptureRecordsTheBodyIntoTheJointGraph) {
  auto g = straight_through_graph();
  at::Tensor x = example().requires_grad_(true);
  at::AutoGradMode grad(true);
  auto cap = aot::capture(*g, {x}, {true});
  ASSERT_TRUE(cap.ok()) << cap.error().message;
  for (const Node* n : cap->graph->nodes())
    EXPECT_FALSE(n->op() && n->op()->is_autograd_function) << print_graph(*cap->graph);
  ASSERT_EQ(cap->differentiable.size(), 2u) << cap->summary();
  auto part = aot::partition_joint(*cap->graph, 1, 2, cap->num_forward_outputs());
  ASSERT_TRUE(part.ok()) << part.error().message;
  std::string both = print_graph(*part->forward) + print_graph(*part->backward);
  at::Tensor grad_x;
  {
    at::NoGradGuard no_grad;
    auto fw = interpret_tensors(*part->forward, {x.detach()});
    ASSERT_TRUE(fw.ok()) << fw.error().message;
    std::vector<at::Tensor> bw_in(fw->begin() + cap->num_forward_outputs(), fw->end());
    bw_in.push_back(at::ones({}));
    bw_in.push_back(at::ones({2, 3}));
    auto bw = interpret_tensors(*part->backward, bw_in);
    ASSERT_TRUE(bw.ok()) << bw.error().message << both;
    ASSERT_EQ(bw->size(), 1u) << both;
    grad_x = (*bw)[0];
  }
  EXPECT_TRUE(at::allclose(grad_x, 2 * (1 + at::exp(2 * x.detach())))) << grad_x << both;
}

}  // namespace
}  // namespace tj::graph
