// AOT with grad: the joint graph recorded by LibTorch's autograd on proxies,
// partitioned, and run through one CompiledFunctionBackward node. Compared
// with eager autograd over the captured graph: a training step (conv, batch
// norm with running statistics, an in-place relu, dropout with a fixed seed,
// linear, layer norm, cross entropy), .backward() / autograd::grad /
// retain_graph / an output used twice / parameter gradients accumulating,
// and a finite-difference check in float64 on a few ops.
#include <chrono>
#include <cstdio>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>

#include "aot_test_util.h"

namespace tj::jit {
namespace {

using testing::graph_of;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct Outcome {
  std::vector<at::Tensor> inputs;
  std::vector<at::Tensor> outputs;
};

// Inputs from `make` (those named in `grad` get requires_grad), run eagerly
// (interpreter with autograd recording) or compiled.
Outcome run(const std::shared_ptr<const graph::Graph>& g, const CompiledFn* fn,
        const std::function<std::vector<at::Tensor>()>& make, const std::vector<int>& grad) {
  Outcome r;
  r.inputs = make();
  for (int i : grad) r.inputs[i].requires_grad_(true);
  if (fn) {
    r.outputs = (*fn)(r.inputs);
  } else {
    auto out = graph::interpret_tensors(*g, r.inputs);
    EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
    if (out.ok()) r.outputs = *out;
  }
  return r;
}

CompiledFn compile(const std::shared_ptr<const graph::Graph>& g, const std::function<std::vector<at::Tensor>()>& make,
                   const std::vector<int>& grad, AotGraphs* graphs = nullptr, bool fusing_backend = false) {
  std::vector<at::Tensor> ex = make();
  for (int i : grad) ex[i].requires_grad_(true);
  auto fn = aot_compile(g, ex, testing::interpreter_backend(fusing_backend), AotOptions{true}, graphs);
  if (!fn.ok()) throw std::runtime_error(fn.error().message);
  return *fn;
}

void expect_close(const at::Tensor& e, const at::Tensor& c, const std::string& what, double rtol = 1e-4,
                  double atol = 1e-5) {
  ASSERT_EQ(e.defined(), c.defined()) << what;
  if (!e.defined()) return;
  ASSERT_EQ(e.sizes(), c.sizes()) << what;
  EXPECT_TRUE(at::allclose(e, c, rtol, atol)) << what << "\neager:\n" << e << "\ncompiled:\n" << c;
}

std::shared_ptr<const graph::Graph> mlp_graph() {
  return graph_of(R"(
    in x w1 b1 w2
    t = aten.t.default(%w1)
    lin = aten.addmm.default(%b1, %x, %t)
    act = aten.tanh.default(%lin)
    t_1 = aten.t.default(%w2)
    out = aten.mm.default(%act, %t_1)
    ret (%out,))");
}

std::vector<at::Tensor> mlp_inputs() {
  at::Tensor x = at::sin(at::arange(4 * 6, at::kFloat)).reshape({4, 6});
  at::Tensor w1 = at::cos(at::arange(5 * 6, at::kFloat)).reshape({5, 6}) * 0.3;
  at::Tensor b1 = at::linspace(-1, 1, 5);
  at::Tensor w2 = at::sin(at::arange(3 * 5, at::kFloat) * 0.7).reshape({3, 5});
  return {x, w1, b1, w2};
}

TEST(AotAutograd, GradientsOfAnMlpMatchEager) {
  auto g = mlp_graph();
  AotGraphs graphs;
  at::AutoGradMode grad(true);
  CompiledFn fn = compile(g, mlp_inputs, {1, 2, 3}, &graphs);
  ASSERT_TRUE(graphs.backward) << graphs.summary;
  Outcome e = run(g, nullptr, mlp_inputs, {1, 2, 3});
  Outcome c = run(g, &fn, mlp_inputs, {1, 2, 3});
  ASSERT_EQ(c.outputs.size(), 1u);
  ASSERT_TRUE(c.outputs[0].requires_grad());
  EXPECT_EQ(c.outputs[0].grad_fn()->name(), "CompiledFunctionBackward");
  expect_close(e.outputs[0], c.outputs[0], "output");
  at::Tensor ge = at::cos(at::arange(12, at::kFloat)).reshape({4, 3});
  e.outputs[0].backward(ge);
  c.outputs[0].backward(ge);
  for (int i : {1, 2, 3}) expect_close(e.inputs[i].grad(), c.inputs[i].grad(), "grad " + std::to_string(i));
  EXPECT_FALSE(c.inputs[0].grad().defined());
}

TEST(AotAutograd, AutogradGradRetainGraphAndOutputUsedTwice) {
  auto g = mlp_graph();
  at::AutoGradMode grad(true);
  CompiledFn fn = compile(g, mlp_inputs, {1, 2, 3});
  Outcome e = run(g, nullptr, mlp_inputs, {1, 2, 3});
  Outcome c = run(g, &fn, mlp_inputs, {1, 2, 3});
  auto loss = [](const at::Tensor& y) { return (y * 2 + y.sin() * 3).sum(); };  // y used twice
  at::Tensor le = loss(e.outputs[0]), lc = loss(c.outputs[0]);
  auto ge = torch::autograd::grad({le}, {e.inputs[1], e.inputs[3]}, {}, /*retain_graph=*/true);
  auto gc = torch::autograd::grad({lc}, {c.inputs[1], c.inputs[3]}, {}, /*retain_graph=*/true);
  for (size_t i = 0; i < 2; ++i) expect_close(ge[i], gc[i], "autograd::grad " + std::to_string(i));
  // Two more backward passes through the retained graph: gradients accumulate.
  le.backward({}, /*retain_graph=*/true);
  lc.backward({}, /*retain_graph=*/true);
  le.backward();
  lc.backward();
  for (int i : {1, 2, 3}) expect_close(e.inputs[i].grad(), c.inputs[i].grad(), "accumulated " + std::to_string(i));
  // The graph is freed now: a further backward fails in both.
  EXPECT_THROW(le.backward(), c10::Error);
  EXPECT_THROW(lc.backward(), c10::Error);
}

TEST(AotAutograd, ParameterGradientsAccumulateOverCalls) {
  auto g = mlp_graph();
  at::AutoGradMode grad(true);
  CompiledFn fn = compile(g, mlp_inputs, {1, 2, 3});
  std::vector<at::Tensor> pe = mlp_inputs(), pc = mlp_inputs();
  for (int i : {1, 2, 3}) {
    pe[i].requires_grad_(true);
    pc[i].requires_grad_(true);
  }
  for (int step = 0; step < 2; ++step) {
    auto oe = graph::interpret_tensors(*g, pe);
    ASSERT_TRUE(oe.ok());
    (*oe)[0].sum().backward();
    fn(pc)[0].sum().backward();
  }
  for (int i : {1, 2, 3}) expect_close(pe[i].grad(), pc[i].grad(), "param " + std::to_string(i));
}

TEST(AotAutograd, NoGradModeBuildsNoJointGraph) {
  auto g = mlp_graph();
  at::AutoGradMode grad(false);
  std::vector<at::Tensor> ex = mlp_inputs();
  ex[1].requires_grad_(true);
  AotGraphs graphs;
  auto fn = aot_compile(g, ex, testing::interpreter_backend(), AotOptions{false}, &graphs);
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  EXPECT_FALSE(graphs.backward);
  auto out = (*fn)(ex);
  EXPECT_FALSE(out[0].requires_grad());
}

TEST(AotAutograd, CompiledWithoutGradButCalledWithGradRunsUncompiled) {
  auto g = mlp_graph();
  auto fn = aot_compile(g, mlp_inputs(), testing::interpreter_backend(), AotOptions{false});
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  at::AutoGradMode grad(true);
  Outcome e = run(g, nullptr, mlp_inputs, {1});
  Outcome c = run(g, &*fn, mlp_inputs, {1});
  ASSERT_TRUE(c.outputs[0].requires_grad());
  e.outputs[0].sum().backward();
  c.outputs[0].sum().backward();
  expect_close(e.inputs[1].grad(), c.inputs[1].grad(), "grad");
}

TEST(AotAutograd, ViewOutputsOfAnIntermediateAndOfAnInputCarryGradients) {
  auto g = graph_of(R"(
    in x w
    mul = aten.mul.Tensor(%x, %w)
    t = aten.t.default(%mul)
    view = aten.view.default(%w, [-1])
    ret (%t, %view, %mul))");
  auto make = [] { return std::vector<at::Tensor>{at::arange(6, at::kFloat).reshape({2, 3}), at::ones({2, 3}) * 1.5}; };
  at::AutoGradMode grad(true);
  CompiledFn fn = compile(g, make, {0, 1});
  Outcome e = run(g, nullptr, make, {0, 1});
  Outcome c = run(g, &fn, make, {0, 1});
  testing::expect_same_world(e.inputs, e.outputs, c.inputs, c.outputs);
  auto loss = [](const Outcome& r) { return (r.outputs[0].sin().sum() + (r.outputs[1] * r.outputs[1]).sum() + r.outputs[2].sum()); };
  loss(e).backward();
  loss(c).backward();
  for (int i : {0, 1}) expect_close(e.inputs[i].grad(), c.inputs[i].grad(), "grad " + std::to_string(i));
}

TEST(AotAutograd, UnusedResultsKeptAsOutputsAddNothingToTheBackward) {
  // rsqrt and b * 3 are results nobody uses, kept as the last two outputs
  // (compile/aot/boundary.h): rsqrt's derivative is NaN at -1 (times a zero
  // tangent: NaN), and b, read only by dead code, gets no gradient in eager.
  // Regression 26.
  auto g = graph_of(R"(
    in a b
    r = aten.rsqrt.default(%a)
    m = aten.mul.Scalar(%b, 3)
    out = aten.mul.Scalar(%a, 2)
    ret (%out, %r, %m))");
  auto make = [] { return std::vector<at::Tensor>{at::tensor({1.0, -1.0}), at::ones({2})}; };
  at::AutoGradMode grad(true);
  std::vector<at::Tensor> ex = make();
  for (auto& t : ex) t.requires_grad_(true);
  AotOptions options{true};
  options.undifferentiated_outputs = 2;
  AotGraphs graphs;
  auto fn = aot_compile(g, ex, testing::interpreter_backend(), options, &graphs);
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  EXPECT_TRUE(has(graphs.summary, "1 tangent(s)")) << graphs.summary;
  Outcome c = run(g, &*fn, make, {0, 1});
  ASSERT_EQ(c.outputs.size(), 3u);
  EXPECT_FALSE(c.outputs[1].requires_grad());
  EXPECT_FALSE(c.outputs[2].requires_grad());
  c.outputs[0].sum().backward();
  EXPECT_TRUE(at::equal(c.inputs[0].grad(), at::full({2}, 2.0))) << c.inputs[0].grad();
  EXPECT_FALSE(c.inputs[1].grad().defined());
}

TEST(AotAutograd, ViewOfAnExpandedInputGetsEagersGradient) {
  // as_strided's backward would spread the gradient of b[0] over the four
  // elements of a stride-0 b; the view is made by select again. Regression 29.
  auto g = graph_of(R"(
    in b
    s = aten.select.int(%b, 0, 0)
    ret (%s,))");
  auto make = [] { return std::vector<at::Tensor>{at::tensor({3.0}).expand({4}).detach()}; };
  at::AutoGradMode grad(true);
  AotGraphs graphs;
  CompiledFn fn = compile(g, make, {0}, &graphs);
  EXPECT_TRUE(has(graphs.summary, "replayed by its view ops")) << graphs.summary;
  Outcome e = run(g, nullptr, make, {0});
  Outcome c = run(g, &fn, make, {0});
  testing::expect_same_world(e.inputs, e.outputs, c.inputs, c.outputs);
  e.outputs[0].backward();
  c.outputs[0].backward();
  EXPECT_TRUE(at::equal(c.inputs[0].grad(), at::tensor({1.0, 0.0, 0.0, 0.0}))) << c.inputs[0].grad();
  // A view of an input that does not overlap itself is replayed too
  // (round 13): as_strided's backward lays its gradient out in the
  // input's strides, eager's view backward otherwise (size-1 dims).
  AotGraphs dense;
  compile(g, [] { return std::vector<at::Tensor>{at::ones({4})}; }, {0}, &dense);
  EXPECT_TRUE(has(dense.summary, "replayed by its view ops")) << dense.summary;
}

TEST(AotAutograd, GradientPassedOnIsLaidOutAsEagers) {
  // add's backward passes the incoming gradient on: sum's expand reaches
  // AccumulateGrad, which copies it into b's strides (1, 5), the size-1 dim
  // included; the backward graph's contiguous tangent would be kept as it
  // is, strides (1, 1). Regression 28.
  auto g = graph_of(R"(
    in b
    add = aten.add.Scalar(%b, 1)
    ret (%add,))");
  auto make = [] { return std::vector<at::Tensor>{at::arange(5, at::kFloat).reshape({1, 5}).t().detach()}; };
  at::AutoGradMode grad(true);
  CompiledFn fn = compile(g, make, {0});
  Outcome e = run(g, nullptr, make, {0});
  Outcome c = run(g, &fn, make, {0});
  e.outputs[0].sum().backward();
  c.outputs[0].sum().backward();
  ASSERT_TRUE(c.inputs[0].grad().defined());
  EXPECT_EQ(c.inputs[0].grad().strides(), e.inputs[0].grad().strides());
  expect_close(e.inputs[0].grad(), c.inputs[0].grad(), "grad");
  // A view of the tangent (unsqueeze's backward squeezes it).
  auto u = graph_of(R"(
    in b
    sq = aten.squeeze.dim(%b, 1)
    add = aten.add.Scalar(%sq, 1)
    ret (%add,))");
  CompiledFn fu = compile(u, make, {0});
  Outcome eu = run(u, nullptr, make, {0});
  Outcome cu = run(u, &fu, make, {0});
  eu.outputs[0].sum().backward();
  cu.outputs[0].sum().backward();
  EXPECT_EQ(cu.inputs[0].grad().strides(), eu.inputs[0].grad().strides());
  expect_close(eu.inputs[0].grad(), cu.inputs[0].grad(), "grad through squeeze");
}

std::vector<at::Tensor> training_inputs() {
  auto wave = [](std::vector<int64_t> sizes, double f) {
    int64_t n = 1;
    for (auto s : sizes) n *= s;
    return (at::sin(at::arange(n, at::kFloat) * f) * 0.5).reshape(sizes);
  };
  return {
      wave({2, 3, 5, 5}, 0.37),                     // 0 x
      at::tensor(std::vector<int64_t>{1, 4}),       // 1 target
      wave({4, 3, 3, 3}, 0.11),                     // 2 conv weight
      wave({4}, 0.5),                               // 3 conv bias
      at::ones({4}) + wave({4}, 0.3),               // 4 bn weight
      wave({4}, 0.9),                               // 5 bn bias
      at::zeros({4}),                               // 6 running mean
      at::ones({4}),                                // 7 running var
      wave({5, 100}, 0.013),                        // 8 linear weight
      wave({5}, 0.2),                               // 9 linear bias
      at::ones({5}),                                // 10 ln weight
      wave({5}, 0.4),                               // 11 ln bias
  };
}

TEST(AotAutograd, TrainingStepMatchesEager) {
  auto g = graph_of(R"(
    in x target cw cb bw bb rm rv lw lb nw nb
    conv = aten.convolution.default(%x, %cw, %cb, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    bn = aten.batch_norm.default(%conv, %bw, %bb, %rm, %rv, True, 0.1, 1e-05, False)
    relu_ = aten.relu_.default(%bn)
    drop = aten.dropout.default(%relu_, 0.25, True)
    flat = aten.view.default(%drop, [2, -1])
    lt = aten.t.default(%lw)
    lin = aten.addmm.default(%lb, %flat, %lt)
    ln = aten.layer_norm.default(%lin, [5], %nw, %nb, 1e-05, False)
    loss = aten.cross_entropy_loss.default(%ln, %target)
    ret (%loss,))");
  const std::vector<int> params = {2, 3, 4, 5, 8, 9, 10, 11};
  at::AutoGradMode grad(true);
  AotGraphs graphs;
  CompiledFn fn = compile(g, training_inputs, params, &graphs);
  SCOPED_TRACE(graphs.summary + "\nforward:\n" + graph::print_graph(*graphs.forward) + "\nbackward:\n" +
               graph::print_graph(*graphs.backward));
  for (int step = 0; step < 2; ++step) {
    at::manual_seed(step);
    Outcome e = run(g, nullptr, training_inputs, params);
    at::manual_seed(step);
    Outcome c = run(g, &fn, training_inputs, params);
    expect_close(e.outputs[0], c.outputs[0], "loss");
    e.outputs[0].backward();
    c.outputs[0].backward();
    for (int i : params) expect_close(e.inputs[i].grad(), c.inputs[i].grad(), "grad of input " + std::to_string(i));
    for (int i : {6, 7}) {
      expect_close(e.inputs[i], c.inputs[i], "running stat " + std::to_string(i));
      EXPECT_EQ(e.inputs[i]._version(), c.inputs[i]._version()) << "running stat " << i;
    }
  }
}

// Finite differences in float64: the vector-Jacobian product of the compiled
// function against central differences of its forward.
void gradcheck(const std::shared_ptr<const graph::Graph>& g, const std::function<std::vector<at::Tensor>()>& make,
               const std::vector<int>& wrt) {
  at::AutoGradMode grad(true);
  AotGraphs graphs;
  CompiledFn fn = compile(g, make, wrt, &graphs);
  SCOPED_TRACE(graphs.summary + "\nforward:\n" + graph::print_graph(*graphs.forward) + "\nbackward:\n" +
               graph::print_graph(*graphs.backward));
  std::vector<at::Tensor> in = make();
  for (int i : wrt) in[i].requires_grad_(true);
  std::vector<at::Tensor> out = fn(in);
  std::vector<at::Tensor> v;
  at::Tensor total = at::zeros({}, at::kDouble);
  for (size_t k = 0; k < out.size(); ++k) {
    v.push_back(at::cos(at::arange(out[k].numel(), at::kDouble) * 0.7 + static_cast<double>(k)).reshape(out[k].sizes()));
    total = total + (out[k] * v[k]).sum();
  }
  std::vector<at::Tensor> wrt_t;
  for (int i : wrt) wrt_t.push_back(in[i]);
  auto analytic = torch::autograd::grad({total}, wrt_t);
  const double eps = 1e-6;
  for (size_t w = 0; w < wrt.size(); ++w) {
    at::Tensor base = make()[wrt[w]];
    at::Tensor numeric = at::zeros_like(base);
    for (int64_t j = 0; j < base.numel(); ++j) {
      double f[2];
      for (int side = 0; side < 2; ++side) {
        std::vector<at::Tensor> probe = make();
        probe[wrt[w]].view(-1)[j] += side ? eps : -eps;
        at::NoGradGuard no_grad;
        std::vector<at::Tensor> o = fn(probe);
        double s = 0;
        for (size_t k = 0; k < o.size(); ++k) s += (o[k] * v[k]).sum().item<double>();
        f[side] = s;
      }
      numeric.view(-1)[j] = (f[1] - f[0]) / (2 * eps);
    }
    EXPECT_TRUE(at::allclose(analytic[w], numeric, 1e-4, 1e-6))
        << "input " << wrt[w] << "\nanalytic:\n" << analytic[w] << "\nnumeric:\n" << numeric;
  }
}

std::vector<at::Tensor> doubles(std::vector<std::vector<int64_t>> shapes) {
  std::vector<at::Tensor> out;
  double f = 0.3;
  for (auto& s : shapes) {
    int64_t n = 1;
    for (auto d : s) n *= d;
    out.push_back((at::sin(at::arange(n, at::kDouble) * f + 0.1) * 0.8).reshape(s));
    f += 0.21;
  }
  return out;
}

TEST(AotGradcheck, PointwiseAndReductions) {
  gradcheck(graph_of(R"(
    in x y
    mul = aten.mul.Tensor(%x, %y)
    sin = aten.sin.default(%mul)
    exp = aten.exp.default(%y)
    div = aten.div.Tensor(%sin, %exp)
    amax = aten.amax.default(%div, [1], True)
    sub = aten.sub.Tensor(%div, %amax)
    ret (%sub, %amax))"),
            [] { return doubles({{3, 4}, {3, 4}}); }, {0, 1});
}

TEST(AotGradcheck, MatmulSoftmaxLayerNorm) {
  gradcheck(graph_of(R"(
    in x w g b
    mm = aten.mm.default(%x, %w)
    softmax = aten._softmax.default(%mm, 1, False)
    ln = aten.layer_norm.default(%softmax, [5], %g, %b, 1e-05, False)
    ret (%ln,))"),
            [] { return doubles({{3, 4}, {4, 5}, {5}, {5}}); }, {0, 1, 2, 3});
}

TEST(AotGradcheck, WhereWhoseBackwardMakesAScalar) {
  gradcheck(graph_of(R"(
    in a b
    gt = aten.gt.Scalar(%a, 0)
    mul = aten.mul.Tensor(%a, %b)
    sq = aten.pow.Tensor_Scalar(%b, 2)
    where = aten.where.self(%gt, %mul, %sq)
    ret (%where,))"),
            [] { return doubles({{3, 4}, {3, 4}}); }, {0, 1});
}

TEST(AotGradcheck, InPlaceOnIntermediateAndViews) {
  gradcheck(graph_of(R"(
    in x y
    add = aten.add.Tensor(%x, %y)
    sel = aten.select.int(%add, 0, 1)
    mul_ = aten.mul_.Scalar(%add, 3)
    exp_ = aten.exp_.default(%add)
    tanh = aten.tanh.default(%exp_)
    t = aten.t.default(%tanh)
    ret (%t, %sel))"),
            [] { return doubles({{3, 4}, {3, 4}}); }, {0, 1});
}

// Known gap: an in-place op on a view of a tensor that requires grad. Under
// functionalization LibTorch 1.13's CopySlices puts the view's gradient at
// the wrong offset, so capture refuses it and the runtime runs the frame
// uncompiled.
TEST(AotAutograd, InPlaceOnAViewOfATensorRequiringGradFailsCapture) {
  auto g = graph_of(R"(
    in x y
    add = aten.add.Tensor(%x, %y)
    sel = aten.select.int(%add, 0, 1)
    mul_ = aten.mul_.Scalar(%sel, 3)
    ret (%add,))");
  std::vector<at::Tensor> ex = doubles({{3, 4}, {3, 4}});
  ex[0].requires_grad_(true);
  at::AutoGradMode grad(true);
  auto fn = aot_compile(g, ex, testing::interpreter_backend(), AotOptions{true});
  ASSERT_FALSE(fn.ok());
  EXPECT_TRUE(has(fn.error().message, "writes a view of a tensor that requires grad")) << fn.error().message;
  // Without grad the same graph compiles and matches eager.
  testing::check_against_eager(g, [] { return doubles({{3, 4}, {3, 4}}); }, false);
}

TEST(AotAutograd, RecomputesCheapOpsInsteadOfSavingThem) {
  auto g = graph_of(R"(
    in x w
    mul = aten.mul.Tensor(%x, %w)
    sin = aten.sin.default(%mul)
    ret (%sin,))");
  auto make = [] { return std::vector<at::Tensor>{at::ones({64}), at::ones({64})}; };
  at::AutoGradMode grad(true);
  AotGraphs graphs;
  CompiledFn fn = compile(g, make, {0, 1}, &graphs, /*fusing_backend=*/true);
  // The backward needs cos(mul): it recomputes mul and cos from x and w
  // (saved for mul's own backward anyway) instead of saving cos.
  EXPECT_TRUE(has(graphs.summary, "2 saved tensor(s), 512 bytes (768 without recomputation, 512 with it; 2 node(s) recomputed)"))
      << graphs.summary;
  // A backend that does not fuse would pay for the recomputed ops in time:
  // it gets every value saved, and the rule's saving is only reported.
  AotGraphs unfused;
  compile(g, make, {0, 1}, &unfused, /*fusing_backend=*/false);
  EXPECT_TRUE(has(unfused.summary, "3 saved tensor(s), 768 bytes (768 without recomputation, 512 with it; 0 node(s) recomputed)"))
      << unfused.summary;
  Outcome e = run(g, nullptr, make, {0, 1});
  Outcome c = run(g, &fn, make, {0, 1});
  e.outputs[0].sum().backward();
  c.outputs[0].sum().backward();
  for (int i : {0, 1}) expect_close(e.inputs[i].grad(), c.inputs[i].grad(), "grad " + std::to_string(i));
}

// Timings for scripts/bench (printed, not asserted: the CI machine is shared).
TEST(AotBench, CompileTimeAndPerCallOverhead) {
  std::string text = "in x w\n";
  std::string prev = "%x";
  for (int i = 0; i < 50; ++i) {
    std::string name = "n" + std::to_string(i);
    const char* op = i % 3 == 0 ? "aten.mul.Tensor(" : i % 3 == 1 ? "aten.add.Tensor(" : "aten.tanh.default(";
    text += name + " = " + op + prev + (i % 3 == 2 ? ")\n" : ", %w)\n");
    prev = "%" + name;
  }
  text += "ret (" + prev + ",)\n";
  auto g = graph_of(text);
  auto make = [] { return std::vector<at::Tensor>{at::ones({8}), at::ones({8})}; };
  at::AutoGradMode grad(true);
  compile(g, make, {1});  // warm-up: registers the recording kernels once
  auto t0 = std::chrono::steady_clock::now();
  const int compiles = 5;
  for (int i = 0; i < compiles; ++i) compile(g, make, {1});
  double compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / compiles;

  // Per-call overhead: the wrapper around a backend that does nothing.
  auto small = graph_of("in x\nadd = aten.add.Tensor(%x, %x)\nret (%add,)\n");
  Backend nothing = testing::interpreter_backend();
  at::Tensor fixed = at::ones({8});
  nothing.compile = [fixed](std::shared_ptr<const graph::Graph>, const std::vector<graph::TensorMeta>&)
      -> Expected<CompiledFn> { return CompiledFn([fixed](c10::ArrayRef<at::Tensor>) { return std::vector<at::Tensor>{fixed}; }); };
  at::AutoGradMode no_grad(false);
  at::Tensor x = at::ones({8});
  auto wrapped = aot_compile(small, {x}, nothing, AotOptions{false});
  ASSERT_TRUE(wrapped.ok());
  CompiledFn raw = [fixed](c10::ArrayRef<at::Tensor>) { return std::vector<at::Tensor>{fixed}; };
  const int calls = 200000;
  std::vector<at::Tensor> args{x};
  auto time_calls = [&](const CompiledFn& f) {
    auto s = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) f(args);
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - s).count() / calls;
  };
  double raw_ns = time_calls(raw), wrapped_ns = time_calls(*wrapped);
  EXPECT_TRUE((*wrapped)(args)[0].is_same(fixed));
  std::printf("aot: compile of a 50-node forward graph with grad: %.2f ms\n", compile_ms);
  std::printf("aot: runtime wrapper overhead per call: %.0f ns (%.0f ns wrapped, %.0f ns raw)\n", wrapped_ns - raw_ns,
              wrapped_ns, raw_ns);
}

}  // namespace
}  // namespace tj::jit
