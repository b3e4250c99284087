// DCE, CSE, constant folding and the decompositions for fusing backends:
// results stay equal, and they remove exactly what they should (and nothing
// side-effecting).
#include <algorithm>
#include <limits>

#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include "graph/effects.h"
#include "graph/interpreter.h"
#include "graph/lint.h"
#include "graph/passes/constant_fold.h"
#include "graph/passes/cse.h"
#include "graph/meta_infer.h"
#include "graph/passes/dce.h"
#include "graph/passes/decompose.h"
#include "graph/passes/unused_results.h"
#include "graph/printer.h"
#include "graph_test_util.h"
#include "op_cases.h"

namespace tj::graph {
namespace {

using testing::op;

std::vector<at::Tensor> run(const Graph& g, const std::vector<at::Tensor>& inputs) {
  std::vector<at::Tensor> in;
  for (const auto& t : inputs) in.push_back(t.clone());
  auto out = interpret_tensors(g, in);
  EXPECT_TRUE(out.ok()) << out.error().message;
  return out.ok() ? *out : std::vector<at::Tensor>{};
}

void expect_same(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i], b[i])) << "output " << i;
}

std::vector<std::string> names(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes()) out.push_back(n->name());
  return out;
}

TEST(DeadCode, RemovesUnusedPureNodesOnly) {
  Graph g;
  g.set_attr("unused_w", at::ones({2}));
  Node* x = testing::input(g, "x", at::ones({2}));
  g.get_attr("unused_w");
  Node* s = g.call(op("aten::sin"), {x});
  g.call(op("aten::cos"), {s});                       // dead (sin stays: the output uses it)
  Node* t = g.call(op("aten::exp"), {x});
  g.call(op("aten::neg"), {t});                       // dead, and makes exp dead
  Node* c = g.call(op("aten::clone"), {x});
  g.call(op("aten::add_.Scalar"), {c, 1});            // mutates: stays
  g.call(op("aten::bernoulli.p"), {x, 0.5});          // random: stays
  g.output(Arg::tuple({s, c}));
  auto before = run(g, {at::ones({2})});
  EXPECT_EQ(eliminate_dead_code(g), 4);
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "sin", "clone", "add_", "bernoulli", "output"}));
  expect_same(run(g, {at::ones({2})}), before);
  EXPECT_EQ(eliminate_dead_code(g), 0);
}

// Outputs `result`, infers the metas and runs expose_unused_results: the
// nodes it appended to the output tuple.
std::vector<Node*> exposed(Graph& g, const std::vector<Arg>& result) {
  g.output(Arg::tuple(result));
  auto inferred = infer_meta_all(g);
  EXPECT_TRUE(inferred.ok()) << inferred.error().message;
  const int added = expose_unused_results(g);
  std::vector<Node*> extra;
  const auto& items = g.output_node()->args()[0].items();
  for (size_t i = result.size(); i < items.size(); ++i) extra.push_back(items[i].node());
  EXPECT_EQ(static_cast<size_t>(added), extra.size());
  return extra;
}

// Eager runs ops whose results nobody uses, and some fail only at run time
// (integer division by zero): they become extra outputs, so a functional
// graph cannot drop them. Views and effects (kept anyway) do not.
TEST(UnusedResults, BecomeExtraOutputsUnlessViewsOrEffects) {
  Graph g;
  Node* x = testing::input(g, "x", at::arange(4, at::kLong));
  Node* div = g.call(op("aten::div.Scalar_mode"), {x, 0}, {{"rounding_mode", "floor"}});  // unused, fails at run time
  Node* max = g.call(op("aten::max.dim"), {x, 0});
  Node* idx = g.call(op("getitem"), {max, 1});                      // unused result of a used op
  g.call(op("aten::view"), {x, Arg::ints({2, 2})});                 // a view: its checks are metadata
  Node* y = g.call(op("aten::add.Scalar"), {x, 1});
  g.call(op("aten::add_.Scalar"), {x, 1});                          // in place on an input: an effect already
  EXPECT_EQ(exposed(g, {y}), (std::vector<Node*>{div, idx}));
  eliminate_dead_code(g);  // what the functional graph's passes do: the division stays
  EXPECT_TRUE(g.contains(div));
  EXPECT_ANY_THROW({
    auto r = interpret_tensors(g, {at::arange(4, at::kLong)});
    if (!r.ok()) throw std::runtime_error(r.error().message);
  });
  EXPECT_EQ(expose_unused_results(g), 0);  // nothing unused is left
}

// The last in-place op on an intermediate nobody reads afterwards is a new
// value nobody uses in a functional graph: it becomes an extra output too.
// One whose result is read later, or on an input, does not.
TEST(UnusedResults, LastInPlaceOpOnAnIntermediate) {
  Graph g;
  Node* x = testing::input(g, "x", at::ones({3}));
  Node* b = g.call(op("aten::_to_copy"), {x}, {{"dtype", at::kLong}});
  Node* relu = g.call(op("aten::div_.Scalar_mode"), {b, 0}, {{"rounding_mode", "floor"}});  // integer division by zero: fails at run time; b never read again
  Node* c = g.call(op("aten::mul.Scalar"), {x, 2});
  g.call(op("aten::relu_"), {c});                       // c is read below: computed anyway
  Node* s = g.call(op("aten::sin"), {c});
  g.call(op("aten::add_.Scalar"), {x, 1});              // an input: AOT writes it back anyway
  EXPECT_EQ(exposed(g, {s}), (std::vector<Node*>{relu}));
}

// The same through views of the intermediate (`v[0] = x`, `v.t()[1].add_(1)`):
// the last write is an output unless a view of it is read afterwards.
TEST(UnusedResults, LastInPlaceOpThroughAViewOfAnIntermediate) {
  Graph g;
  Node* x = testing::input(g, "x", at::arange(6, at::kLong).view({2, 3}));
  Node* div = g.call(op("aten::div.Scalar_mode"), {x, 0}, {{"rounding_mode", "floor"}});  // fails at run time
  Node* row = g.call(op("aten::select.int"), {div, 0, 0});
  Node* write = g.call(op("aten::add_.Scalar"), {row, 1});                               // nothing reads div again
  Node* kept = g.call(op("aten::mul.Scalar"), {x, 2});
  Node* col = g.call(op("aten::select.int"), {kept, 1, 0});
  g.call(op("aten::zero_"), {col});
  Node* s = g.call(op("aten::sum"), {g.call(op("aten::t"), {kept})});  // a view of `kept` read after its write
  EXPECT_EQ(exposed(g, {s}), (std::vector<Node*>{write}));
}

// A result only overwritten whole (`v[...] = x`) is read by nothing in a
// functional graph: a clone of it, taken before the copy_, is an output.
// Also when it is restrided in place first (`v.unsqueeze_(0); v.copy_(x)`,
// fuzz seed 4702887: a bool matmul whose size error vanished); not when a
// reader of the restrided tensor reads its values.
TEST(UnusedResults, ResultOnlyOverwrittenIsClonedFirst) {
  for (bool restrided : {false, true}) {
    Graph g;
    Node* x = testing::input(g, "x", at::arange(3, at::kLong));
    Node* y = testing::input(g, "y", at::arange(3, at::kLong));
    Node* div = g.call(op("aten::div.Scalar_mode"), {x, 0}, {{"rounding_mode", "floor"}});
    Node* target = restrided ? g.call(op("aten::unsqueeze_"), {div, int64_t{0}}) : div;
    Node* copy = g.call(op("aten::copy_"), {target, y});
    std::vector<Node*> extra = exposed(g, {copy});
    ASSERT_EQ(extra.size(), 1u) << "restrided " << restrided;
    EXPECT_EQ(extra[0]->target(), "aten.clone.default");
    EXPECT_EQ(extra[0]->args()[0].node(), div);
    std::vector<Node*> order = g.nodes();
    Node* first_write = restrided ? target : copy;  // the clone reads div before it
    EXPECT_LT(std::find(order.begin(), order.end(), extra[0]), std::find(order.begin(), order.end(), first_write));
  }
  Graph g;
  Node* x = testing::input(g, "x", at::arange(3, at::kLong));
  Node* div = g.call(op("aten::div.Scalar_mode"), {x, 0}, {{"rounding_mode", "floor"}});
  Node* unsqueeze = g.call(op("aten::unsqueeze_"), {div, int64_t{0}});
  EXPECT_TRUE(exposed(g, {g.call(op("aten::add.Tensor"), {unsqueeze, x})}).empty());
}

TEST(CommonSubexpressions, MergesEqualPureNodes) {
  Graph g;
  Node* x = testing::input(g, "x", at::ones({3}));
  Node* a1 = g.call(op("aten::add.Tensor"), {x, x}, {{"alpha", 2}});
  Node* a2 = g.call(op("aten::add.Tensor"), {x, x}, {{"alpha", 2}});
  Node* a3 = g.call(op("aten::add.Tensor"), {x, x}, {{"alpha", 3}});  // differs in a kwarg
  Node* s1 = g.call(op("aten::sin"), {a1});
  Node* s2 = g.call(op("aten::sin"), {a2});  // equal once a2 is a1
  Node* r1 = g.call(op("aten::rand_like"), {x});
  Node* r2 = g.call(op("aten::rand_like"), {x});  // random: never merged
  g.output(Arg::tuple({s1, s2, a3, r1, r2}));
  at::Tensor in = at::arange(3, at::kFloat);
  // a2 becomes a1; s2 then equals s1 but both are returned: two tensors
  // stay two tensors (a caller writing into one must not change the other).
  EXPECT_EQ(eliminate_common_subexpressions(g), 1);
  EXPECT_EQ(names(g),
            (std::vector<std::string>{"x", "add", "add_2", "sin", "sin_1", "rand_like", "rand_like_1", "output"}));
  auto out = run(g, {in});
  EXPECT_TRUE(at::equal(out[0], at::sin(at::mul(in, 3))));
  EXPECT_TRUE(at::equal(out[1], out[0]));
  EXPECT_FALSE(out[1].is_alias_of(out[0]));
}

TEST(CommonSubexpressions, KeepsNodesOfDifferentGradModes) {
  Graph g;
  Node* x = testing::input(g, "x", at::ones({3}));
  Node* r1 = g.call(op("aten::relu"), {x});
  r1->meta().tags.grad_enabled = false;  // traced inside `with torch.no_grad():`
  Node* r2 = g.call(op("aten::relu"), {x});
  g.output(Arg::tuple({g.call(op("aten::add.Tensor"), {r1, r2})}));
  EXPECT_EQ(eliminate_common_subexpressions(g), 0);
}

TEST(CommonSubexpressions, RespectsMutation) {
  Graph g;
  Node* x = testing::input(g, "x", at::ones({3}));
  Node* s1 = g.call(op("aten::sin"), {x});
  g.call(op("aten::add_.Scalar"), {x, 1});      // x changes: the next sin differs
  Node* s2 = g.call(op("aten::sin"), {x});
  Node* c1 = g.call(op("aten::clone"), {x});
  Node* c2 = g.call(op("aten::clone"), {x});    // c2 is mutated below: not merged with c1
  Node* v = g.call(op("aten::view"), {c2, Arg::ints({3})});
  g.call(op("aten::mul_.Scalar"), {v, 2});
  g.output(Arg::tuple({s1, s2, c1, c2}));
  auto before = run(g, {at::arange(3, at::kFloat)});
  EXPECT_EQ(eliminate_common_subexpressions(g), 0);
  expect_same(run(g, {at::arange(3, at::kFloat)}), before);
}

TEST(ConstantFolding, FoldsConstantSubgraphs) {
  Graph g;
  g.set_attr("w", at::arange(4, at::kFloat));
  Node* x = testing::input(g, "x", at::ones({4}));
  Node* w = g.get_attr("w");
  Node* two = g.call(op("aten::mul.Scalar"), {w, 2});
  Node* ones = g.call(op("aten::ones"), {Arg::ints({4})}, {{"dtype", c10::ScalarType::Float}});
  Node* sum = g.call(op("aten::add.Tensor"), {two, ones});
  Node* out = g.call(op("aten::mul.Tensor"), {x, sum});
  Node* r = g.call(op("aten::rand"), {Arg::ints({4})});  // random: not folded
  g.output(Arg::tuple({out, r}));
  auto before = run(g, {at::full({4}, 3.0)});
  auto folded = fold_constants(g);
  ASSERT_TRUE(folded.ok()) << folded.error().message;
  EXPECT_EQ(*folded, 3);
  EXPECT_EQ(print_graph(g),
            "graph():\n"
            "    %x : f32[4] = placeholder[target=x]\n"
            "    %_folded_add : f32[4] = get_attr[target=_folded_add]\n"
            "    %mul_1 : ? = call_function[target=aten.mul.Tensor](args = (%x, %_folded_add))\n"
            "    %rand : ? = call_function[target=aten.rand.default](args = ([4],))\n"
            "    return (%mul_1, %rand)\n");
  auto after = run(g, {at::full({4}, 3.0)});
  EXPECT_TRUE(at::equal(after[0], before[0]));
}

TEST(ConstantFolding, LeavesMutatedAttributesAlone) {
  Graph g;
  g.set_attr("counter", at::zeros({1}));
  Node* c = g.get_attr("counter");
  Node* plus = g.call(op("aten::add.Scalar"), {c, 1});
  g.call(op("aten::add_.Scalar"), {c, 1});
  g.output(Arg::tuple({plus}));
  auto folded = fold_constants(g);
  ASSERT_TRUE(folded.ok());
  EXPECT_EQ(*folded, 0);
}

// Found by the fuzzer (seed 20147): a returned constant, folded, was one
// tensor returned by every call, so writing into one call's result changed
// the next call's. Returned values and what returned views alias stay ops.
TEST(ConstantFolding, LeavesReturnedValuesAndTheirViewsAlone) {
  Graph g;
  Node* eye = g.call(op("aten::eye"), {2});
  Node* sum = g.call(op("aten::sum"), {eye});
  Node* ones = g.call(op("aten::ones"), {Arg::ints({4})}, {{"dtype", c10::ScalarType::Float}});
  Node* v = g.call(op("aten::view"), {ones, Arg::ints({2, 2})});
  g.output(Arg::tuple({eye, sum, v}));
  auto folded = fold_constants(g);
  ASSERT_TRUE(folded.ok()) << folded.error().message;
  EXPECT_EQ(*folded, 0);
  auto first = run(g, {});
  auto second = run(g, {});
  for (size_t i = 0; i < first.size(); ++i) EXPECT_FALSE(first[i].is_alias_of(second[i])) << "output " << i;
}

// Every op case survives DCE + CSE + folding with equal results.
TEST(Passes, KeepOpCaseResults) {
  for (const auto& c : testing::op_cases()) {
    std::vector<at::Tensor> inputs = c.inputs();
    auto g = testing::build_case(c, inputs);
    auto before = run(*g, inputs);
    eliminate_common_subexpressions(*g);
    eliminate_dead_code(*g);
    ASSERT_TRUE(fold_constants(*g).ok()) << c.name;
    EXPECT_TRUE(lint(*g).ok()) << c.name;
    auto after = run(*g, inputs);
    ASSERT_EQ(after.size(), before.size()) << c.name;
    for (size_t i = 0; i < after.size(); ++i) EXPECT_TRUE(at::equal(after[i], before[i])) << c.name << " output " << i;
  }
}

// An inference batch norm (BatchNorm1d/2d in eval) as its pointwise ops:
// bit-identical to ATen's CPU kernel, with and without affine parameters,
// and untouched in training mode or when its saved statistics are used.
struct BatchNormCase {
  std::vector<int64_t> shape;
  bool affine;
  bool channels_last;
};

std::unique_ptr<Graph> batch_norm_graph(const BatchNormCase& c, bool training, bool use_saved_mean,
                                        std::vector<at::Tensor>& inputs) {
  auto g = std::make_unique<Graph>();
  int64_t channels = c.shape[1];
  at::Tensor x = at::randn(c.shape);
  if (c.channels_last) x = x.contiguous(at::MemoryFormat::ChannelsLast);
  inputs = {x, at::randn({channels}), at::randn({channels}), at::randn({channels}), at::rand({channels}).add(0.5)};
  Node* xn = testing::input(*g, "x", inputs[0]);
  Node* w = testing::input(*g, "w", inputs[1]);
  Node* b = testing::input(*g, "b", inputs[2]);
  Node* rm = testing::input(*g, "rm", inputs[3]);
  Node* rv = testing::input(*g, "rv", inputs[4]);
  Node* bn = g->call(op("aten::native_batch_norm"), {xn, c.affine ? Arg(w) : Arg(), c.affine ? Arg(b) : Arg(), rm, rv,
                                                     training, 0.1, 1e-5});
  EXPECT_TRUE(infer_meta(*g, *bn).ok());
  Node* out = g->call(OpRegistry::instance().getitem(), {bn, int64_t{0}});
  EXPECT_TRUE(infer_meta(*g, *out).ok());
  std::vector<Arg> outs = {out};
  if (use_saved_mean) {
    Node* saved = g->call(OpRegistry::instance().getitem(), {bn, int64_t{1}});
    EXPECT_TRUE(infer_meta(*g, *saved).ok());
    outs.emplace_back(saved);
  }
  g->output(Arg::tuple(outs));
  return g;
}

TEST(DecomposeForFusion, InferenceBatchNormIsBitIdentical) {
  for (const BatchNormCase& c : {BatchNormCase{{4, 3, 5, 6}, true, false}, BatchNormCase{{4, 3, 5, 6}, false, false},
                                 BatchNormCase{{2, 3, 4, 5}, true, true}, BatchNormCase{{3, 16, 9, 11}, true, false}}) {
    std::vector<at::Tensor> inputs;
    auto g = batch_norm_graph(c, false, false, inputs);
    auto before = run(*g, inputs);
    auto done = decompose_for_fusion(*g);
    ASSERT_TRUE(done.ok()) << done.error().message;
    EXPECT_EQ(*done, 1) << "shape rank " << c.shape.size() << (c.channels_last ? " channels_last" : "");
    eliminate_dead_code(*g);
    for (const Node* n : g->nodes()) EXPECT_NE(n->target(), "aten.native_batch_norm.default");
    auto after = run(*g, inputs);
    ASSERT_EQ(after.size(), 1u);
    EXPECT_TRUE(at::equal(after[0], before[0])) << "rank " << c.shape.size() << (c.affine ? " affine" : "");
    EXPECT_EQ(after[0].strides(), before[0].strides());
  }
}

TEST(DecomposeForFusion, LeavesTrainingAndSavedStatisticsAlone) {
  std::vector<at::Tensor> inputs;
  auto training = batch_norm_graph({{4, 3, 5, 6}, true, false}, true, false, inputs);
  EXPECT_EQ(*decompose_for_fusion(*training), 0);
  auto saved = batch_norm_graph({{4, 3, 5, 6}, true, false}, false, true, inputs);
  EXPECT_EQ(*decompose_for_fusion(*saved), 0);
  // BatchNorm1d: ATen's 2-d and 3-d paths round differently from x * alpha + beta.
  for (std::vector<int64_t> shape : {std::vector<int64_t>{8, 5}, std::vector<int64_t>{2, 4, 7}}) {
    auto one_d = batch_norm_graph({shape, true, false}, false, false, inputs);
    EXPECT_EQ(*decompose_for_fusion(*one_d), 0);
  }
}

// Max pooling whose indices are unused becomes the maximum of its window
// views (bit-identical: max is exact), for every kernel/stride/padding/
// dilation/ceil_mode; used indices keep the op.
TEST(DecomposeForFusion, MaxPoolIsTheMaximumOfItsWindowViews) {
  struct PoolCase {
    std::vector<int64_t> shape, kernel, stride, padding, dilation;
    bool ceil;
  };
  for (const PoolCase& c : {PoolCase{{2, 3, 9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
                            PoolCase{{2, 3, 8, 10}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
                            PoolCase{{1, 2, 11, 7}, {3, 2}, {2, 1}, {1, 0}, {2, 1}, true},
                            PoolCase{{3, 9, 9}, {3, 3}, {2, 2}, {0, 0}, {1, 1}, true}}) {
    for (bool indices_used : {false, true}) {
      auto g = std::make_unique<Graph>();
      at::Tensor x = at::randn(c.shape);
      x.view(-1)[5] = NAN;
      Node* xn = testing::input(*g, "x", x);
      Node* pool = g->call(op("aten::max_pool2d_with_indices"), {xn, Arg::ints(c.kernel), Arg::ints(c.stride),
                                                                 Arg::ints(c.padding), Arg::ints(c.dilation), c.ceil});
      EXPECT_TRUE(infer_meta(*g, *pool).ok());
      std::vector<Arg> outs;
      for (int64_t i = 0; i < (indices_used ? 2 : 1); ++i) {
        Node* item = g->call(OpRegistry::instance().getitem(), {pool, i});
        EXPECT_TRUE(infer_meta(*g, *item).ok());
        outs.emplace_back(item);
      }
      g->output(Arg::tuple(outs));
      auto before = run(*g, {x});
      auto done = decompose_for_fusion(*g);
      ASSERT_TRUE(done.ok()) << done.error().message;
      EXPECT_EQ(*done, indices_used ? 0 : 1);
      eliminate_dead_code(*g);
      auto after = run(*g, {x});
      ASSERT_EQ(after.size(), before.size());
      EXPECT_TRUE(at::equal(after[0].nan_to_num(7), before[0].nan_to_num(7))) << "rank " << c.shape.size();
      EXPECT_EQ(after[0].strides(), before[0].strides());
    }
  }
}

// addmm read by one activation becomes mm + bias add (the add fuses into
// the activation's kernel); other addmms stay.
TEST(DecomposeForFusion, AddmmBeforeAnActivationBecomesMmPlusBias) {
  for (int variant = 0; variant < 3; ++variant) {
    auto g = std::make_unique<Graph>();
    std::vector<at::Tensor> in = {at::randn({16}), at::randn({4, 8}), at::randn({8, 16})};
    Node* b = testing::input(*g, "b", in[0]);
    Node* x = testing::input(*g, "x", in[1]);
    Node* w = testing::input(*g, "w", in[2]);
    std::vector<Kwarg> kwargs;
    if (variant == 2) kwargs.push_back({"beta", 2.0});
    Node* mm = g->call(op("aten::addmm"), {b, x, w}, kwargs);
    EXPECT_TRUE(infer_meta(*g, *mm).ok());
    Node* act = g->call(op("aten::gelu"), {mm});
    EXPECT_TRUE(infer_meta(*g, *act).ok());
    std::vector<Arg> outs = {act};
    if (variant == 1) outs.emplace_back(mm);  // also returned: stays
    g->output(Arg::tuple(outs));
    auto before = run(*g, in);
    auto done = decompose_for_fusion(*g);
    ASSERT_TRUE(done.ok()) << done.error().message;
    EXPECT_EQ(*done, variant == 0 ? 1 : 0) << "variant " << variant;
    eliminate_dead_code(*g);
    bool has_addmm = false;
    for (const Node* n : g->nodes()) has_addmm = has_addmm || n->target() == "aten.addmm.default";
    EXPECT_EQ(has_addmm, variant != 0);
    auto after = run(*g, in);
    EXPECT_TRUE(at::allclose(after[0], before[0], 1e-5, 1e-6)) << "variant " << variant;
  }
}

// A gradient zeroed and accumulated into (functionalized: add(zero(g), y))
// becomes add(y, 0.0): no zeros are made (the zero node is dead), the same
// bits (-0.0 in y comes out +0.0 as 0 + y does); an alpha or a broadcast
// keep the add as it is; zeros also returned are still made.
TEST(DecomposeForFusion, ZeroPlusGradientBecomesGradientPlusZero) {
  for (int variant = 0; variant < 5; ++variant) {
    auto g = std::make_unique<Graph>();
    at::Tensor y0 = at::randn({3, 5});
    y0[0][0] = -0.0;
    y0[1][1] = std::numeric_limits<float>::quiet_NaN();
    std::vector<at::Tensor> in = {at::randn({3, 5}), variant == 3 ? at::randn({5}) : y0};
    Node* grad = testing::input(*g, "grad", in[0]);
    Node* y = testing::input(*g, "y", in[1]);
    Node* zero = g->call(op("aten::zero"), {grad});
    ASSERT_TRUE(infer_meta(*g, *zero).ok());
    std::vector<Kwarg> kwargs;
    if (variant == 2) kwargs.push_back({"alpha", 2.0});
    std::vector<Arg> args = variant == 1 ? std::vector<Arg>{y, zero} : std::vector<Arg>{zero, y};
    Node* sum = g->call(op("aten::add.Tensor"), args, kwargs);
    ASSERT_TRUE(infer_meta(*g, *sum).ok());
    std::vector<Arg> outs = {sum};
    if (variant == 4) outs.emplace_back(zero);  // the zeros returned: made anyway, the add stays
    g->output(Arg::tuple(outs));
    auto before = run(*g, in);
    auto done = decompose_for_fusion(*g);
    ASSERT_TRUE(done.ok()) << done.error().message;
    const bool applies = variant <= 1 || variant == 4;
    EXPECT_EQ(*done, applies ? 1 : 0) << "variant " << variant;
    eliminate_dead_code(*g);
    bool has_zero = false;
    for (const Node* n : g->nodes()) has_zero = has_zero || n->target() == "aten.zero.default";
    EXPECT_EQ(has_zero, !applies || variant == 4) << "variant " << variant;
    auto after = run(*g, in);
    ASSERT_EQ(after.size(), before.size());
    for (size_t i = 0; i < after.size(); ++i) {
      EXPECT_EQ(after[i].strides(), before[i].strides());
      // bit for bit, NaN and the sign of zero included
      EXPECT_TRUE(at::equal(after[i].view(at::kInt), before[i].view(at::kInt))) << "variant " << variant;
    }
  }
}

// nn.MultiheadAttention's inference fast path (self-attention, no mask, no
// weights asked for) becomes its linears, bmm, scale, softmax, bmm: eager's
// values within a rounding (the scale follows q kT instead of scaling q),
// for odd head dims; weights asked for, or a key that is not the query, keep
// the op.
TEST(DecomposeForFusion, SelfAttentionFastPathBecomesLinearsBmmSoftmax) {
  struct MhaCase {
    int64_t batch, tokens, embed, heads;
    bool need_weights, cross;
  };
  for (const MhaCase& c : {MhaCase{2, 7, 21, 3, false, false}, MhaCase{3, 5, 32, 4, false, false},
                           MhaCase{2, 7, 21, 3, true, false}, MhaCase{2, 7, 21, 3, false, true}}) {
    const int64_t e = c.embed;
    auto g = std::make_unique<Graph>();
    at::manual_seed(7);
    // weights scaled as nn.Linear initializes them (1/sqrt(E)): unscaled, the logits reach hundreds and the
    // softmax's output turns on roundings of them
    const double w = 1.0 / std::sqrt(static_cast<double>(e));
    std::vector<at::Tensor> in = {at::randn({c.batch, c.tokens, e}), at::randn({3 * e, e}).mul(w), at::randn({3 * e}).mul(w),
                                  at::randn({e, e}).mul(w), at::randn({e}).mul(w), at::randn({c.batch, c.tokens, e})};
    std::vector<Node*> x;
    for (size_t i = 0; i < in.size(); ++i) x.push_back(testing::input(*g, "in" + std::to_string(i), in[i]));
    Node* kv = c.cross ? x[5] : x[0];
    Node* mha = g->call(op("aten::_native_multi_head_attention"),
                        {x[0], kv, kv, e, c.heads, x[1], x[2], x[3], x[4], Arg(), c.need_weights});
    ASSERT_TRUE(infer_meta(*g, *mha).ok());
    Node* out = g->call(OpRegistry::instance().getitem(), {mha, int64_t{0}});
    ASSERT_TRUE(infer_meta(*g, *out).ok());
    g->output(Arg::tuple({out}));
    auto before = run(*g, in);
    auto done = decompose_for_fusion(*g);
    ASSERT_TRUE(done.ok()) << done.error().message;
    const bool applies = !c.need_weights && !c.cross;
    EXPECT_EQ(*done, applies ? 1 : 0) << "embed " << e << " heads " << c.heads;
    eliminate_dead_code(*g);
    int bmms = 0;
    bool has_mha = false;
    for (const Node* n : g->nodes()) {
      bmms += n->target() == "aten.bmm.default";
      has_mha = has_mha || n->target() == "aten._native_multi_head_attention.default";
    }
    EXPECT_EQ(has_mha, !applies);
    EXPECT_EQ(bmms, applies ? 2 : 0);
    auto after = run(*g, in);
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(after[0].sizes(), before[0].sizes());
    EXPECT_EQ(after[0].strides(), before[0].strides());
    EXPECT_TRUE(at::allclose(after[0], before[0], 1e-4, 1e-5)) << "embed " << e << " heads " << c.heads;
  }
}

// A graph that can fail only before its first write needs no copy of the
// inputs it writes (runtime/input_snapshot.h): ops that raise on the data
// (an index out of range, an integer division by zero) after a write make
// `may_fail_after_a_write`; float arithmetic and ops before the write do not.
TEST(Effects, MayFailAfterAWriteOnlyForOpsThatRaiseOnData) {
  auto effects = [](const std::function<void(Graph&, Node*, Node*)>& build) {
    Graph g;
    Node* x = testing::input(g, "x", at::ones({4}));
    Node* i = testing::input(g, "i", at::zeros({2}, at::kLong));
    build(g, x, i);
    Status inferred = infer_meta_all(g);
    EXPECT_TRUE(inferred.ok()) << (inferred.ok() ? "" : inferred.error().message);
    return effects_of(g);
  };
  GraphEffects floats = effects([](Graph& g, Node* x, Node*) {
    Node* w = g.call(op("aten::add_.Scalar"), {x, 1});
    g.output(Arg::tuple({g.call(op("aten::div.Tensor"), {g.call(op("aten::sqrt"), {w}), x})}));
  });
  EXPECT_TRUE(floats.writes_inputs);
  EXPECT_FALSE(floats.may_fail_after_a_write);
  GraphEffects index_after = effects([](Graph& g, Node* x, Node* i) {
    Node* w = g.call(op("aten::add_.Scalar"), {x, 1});
    g.output(Arg::tuple({g.call(op("aten::index_select"), {w, 0, i})}));
  });
  EXPECT_TRUE(index_after.may_fail_after_a_write);
  GraphEffects index_before = effects([](Graph& g, Node* x, Node* i) {
    Node* s = g.call(op("aten::index_select"), {x, 0, i});
    g.call(op("aten::add_.Scalar"), {x, 1});
    g.output(Arg::tuple({s}));
  });
  EXPECT_FALSE(index_before.may_fail_after_a_write);
  GraphEffects int_remainder = effects([](Graph& g, Node* x, Node* i) {
    g.call(op("aten::add_.Scalar"), {x, 1});
    g.output(Arg::tuple({g.call(op("aten::remainder.Tensor"), {i, i})}));
  });
  EXPECT_TRUE(int_remainder.may_fail_after_a_write);
  GraphEffects float_remainder = effects([](Graph& g, Node* x, Node*) {
    g.call(op("aten::add_.Scalar"), {x, 1});
    g.output(Arg::tuple({g.call(op("aten::remainder.Tensor"), {x, x})}));
  });
  EXPECT_FALSE(float_remainder.may_fail_after_a_write);
  // a training step's convolutions (and batch norms, their backward ops) raise on sizes only
  GraphEffects conv_after = effects([](Graph& g, Node* x, Node*) {
    Node* w = g.call(op("aten::add_.Scalar"), {x, 1});
    Node* img = g.call(op("aten::view"), {w, Arg::ints({1, 1, 2, 2})});
    g.output(Arg::tuple({g.call(op("aten::convolution"), {img, img, Arg(), Arg::ints({1, 1}), Arg::ints({0, 0}),
                                                          Arg::ints({1, 1}), false, Arg::ints({0, 0}), int64_t{1}})}));
  });
  EXPECT_FALSE(conv_after.may_fail_after_a_write);
}

// Only the arguments an op's schema marks written are written: the index
// and source of `fresh.scatter_add_(0, index, src)` (views of the inputs)
// are read, so a graph that scatters its inputs into a new tensor writes
// none of them (unbacked_split.cpp cuts such a graph; it used to run op by
// op); an out= argument and in-place self are written, through views too.
TEST(Effects, OnlyArgumentsTheSchemaMarksWrittenAreWritten) {
  auto effects = [](bool write_o) {
    Graph g;
    Node* x = testing::input(g, "x", at::ones({4, 3}));
    Node* i = testing::input(g, "i", at::zeros({4}, at::kLong));
    Node* o = testing::input(g, "o", at::zeros({4, 3}));
    Node* fresh = g.call(op("aten::zeros"), {Arg::ints({2, 3})});
    Node* index = g.call(op("aten::expand"), {g.call(op("aten::unsqueeze"), {i, -1}), Arg::ints({4, 3})});
    Node* scattered = g.call(op("aten::scatter_add_"), {fresh, 0, index, x});
    if (write_o) g.call(op("aten::add_.Scalar"), {g.call(op("aten::view"), {o, Arg::ints({12})}), 1});
    g.output(Arg::tuple({scattered}));
    Status inferred = infer_meta_all(g);
    EXPECT_TRUE(inferred.ok()) << (inferred.ok() ? "" : inferred.error().message);
    return effects_of(g);
  };
  GraphEffects reads = effects(false);
  EXPECT_FALSE(reads.writes_inputs);
  EXPECT_TRUE(reads.written_inputs.empty());
  GraphEffects writes = effects(true);
  EXPECT_TRUE(writes.writes_inputs);
  EXPECT_EQ(writes.written_inputs, std::vector<int>{2});
}

}  // namespace
}  // namespace tj::graph
