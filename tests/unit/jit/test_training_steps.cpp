// The llvm backend on the shapes a training step's graph has (issue 41
// item 3): an optimizer's new value of a parameter is written straight into
// the parameter (no copy by AOT's epilogue, no second buffer alive until
// it) when the forward and backward read the parameter, and views of it,
// through extern matmuls before the update; not when a view of it is a
// result or an extern step reads it after the update. A gradient's
// accumulation into `.grad` runs as soon as the gradient is made. Updates
// followed by a step that may raise are written after it, not held to the end.
#include <vector>

#include "jit/lowering.h"
#include "llvm_test_util.h"

namespace tj::jit {
namespace {

using namespace test_util;  // NOLINT: the helpers of llvm_test_util.h
using graph::Graph;
using graph::Node;

// W [4, 6] (donated), X [3, 4]: Y = X @ W, G = X^T @ Y, new W = 0.9 W + G.
// With `view`: Y = X2 @ W^T for X2 [3, 6], G = Y^T @ X2.
Body update_after_matmuls(bool view) {
  return [view](Graph& g, const std::vector<Node*>& x) {
    x[0]->meta().tags.donated_to_output = 0;
    Node* y = view ? g.call(op("aten::mm"), {x[1], g.call(op("aten::t"), {x[0]})}) : g.call(op("aten::mm"), {x[1], x[0]});
    Node* grad = view ? g.call(op("aten::mm"), {g.call(op("aten::t"), {y}), x[1]})
                      : g.call(op("aten::mm"), {g.call(op("aten::t"), {x[1]}), y});
    Node* w = g.call(op("aten::add.Tensor"), {g.call(op("aten::mul.Tensor"), {x[0], 0.9}), grad});
    return std::vector<Node*>{w, y};
  };
}

TEST(TrainingSteps, ParameterReadByExternMatmulsIsUpdatedInPlace) {
  for (bool view : {false, true}) {
    at::Tensor w = at::randn({4, 6}), in = view ? at::randn({3, 6}) : at::randn({3, 4});
    auto built = build(update_after_matmuls(view), {w, in});
    ASSERT_TRUE(built);
    auto fn = find_backend("llvm")->compile(built->graph, built->metas);
    ASSERT_TRUE(fn.ok()) << fn.error().message;
    const long long written = kernel_outputs_written_in_place();
    for (int call = 1; call <= 2; ++call) {
      at::Tensor y = view ? at::mm(in, w.t()) : at::mm(in, w);
      at::Tensor want = w * 0.9 + (view ? at::mm(y.t(), in) : at::mm(in.t(), y));
      std::vector<at::Tensor> got = (*fn)({w, in});
      EXPECT_EQ(got[0].data_ptr(), w.data_ptr()) << "view " << view << " call " << call;
      EXPECT_TRUE(at::allclose(w, want, 1e-5, 1e-5)) << "view " << view << " call " << call;
      EXPECT_TRUE(at::allclose(got[1], y, 1e-5, 1e-5)) << "view " << view << " call " << call;
      EXPECT_EQ(kernel_outputs_written_in_place(), written + call);
    }
  }
}

TEST(TrainingSteps, NoInPlaceUpdateWhenAViewIsAResultOrReadAfterwards) {
  // W^T is a result: it must keep the old values
  Body returned_view = [](Graph& g, const std::vector<Node*>& x) {
    x[0]->meta().tags.donated_to_output = 0;
    Node* wt = g.call(op("aten::t"), {x[0]});
    Node* y = g.call(op("aten::mm"), {x[1], x[0]});
    Node* w = g.call(op("aten::add.Tensor"), {g.call(op("aten::mul.Tensor"), {x[0], 0.9}), g.call(op("aten::sum"), {y})});
    return std::vector<Node*>{w, wt};
  };
  // an extern matmul reads W after the update (it needs the update's value too)
  Body read_after = [](Graph& g, const std::vector<Node*>& x) {
    x[0]->meta().tags.donated_to_output = 0;
    Node* w = g.call(op("aten::add.Tensor"), {g.call(op("aten::mul.Tensor"), {x[0], 0.9}), 1.0});
    Node* z = g.call(op("aten::mm"), {g.call(op("aten::t"), {w}), x[0]});
    return std::vector<Node*>{w, z};
  };
  at::Tensor in = at::randn({3, 4});
  {
    at::Tensor w = at::randn({4, 6}), before = w.clone();
    auto built = build(returned_view, {w, in});
    ASSERT_TRUE(built);
    auto fn = find_backend("llvm")->compile(built->graph, built->metas);
    ASSERT_TRUE(fn.ok()) << fn.error().message;
    std::vector<at::Tensor> got = (*fn)({w, in});
    EXPECT_NE(got[0].data_ptr(), w.data_ptr());
    EXPECT_TRUE(at::equal(got[1], before.t()));
    EXPECT_TRUE(at::allclose(got[0], before * 0.9 + at::mm(in, before).sum(), 1e-5, 1e-5));
  }
  {
    at::Tensor w = at::randn({4, 6}), before = w.clone();
    auto built = build(read_after, {w, in});
    ASSERT_TRUE(built);
    auto fn = find_backend("llvm")->compile(built->graph, built->metas);
    ASSERT_TRUE(fn.ok()) << fn.error().message;
    std::vector<at::Tensor> got = (*fn)({w, in});
    at::Tensor want_w = before * 0.9 + 1.0;
    EXPECT_NE(got[0].data_ptr(), w.data_ptr());
    EXPECT_TRUE(at::equal(w, before));
    EXPECT_TRUE(at::allclose(got[1], at::mm(want_w.t(), before), 1e-5, 1e-5));
  }
}

// G [4, 6] a `.grad` (donated), X [3, 4], Y [3, 6]: the weight's gradient
// D = X^T @ Y is accumulated into G (`add(zero(G), detach(D))`, the graph's
// last node, as AOT's whole-step graphs have it) while more backward work
// (relu(X @ Y2) for Y2 [4, 5]) follows D in the graph. The accumulation
// runs right after D (fusion_order), so D is released there, and still
// writes into G. With an in-place op between (`add_` on Y2), it stays last.
TEST(TrainingSteps, GradientAccumulationRunsRightAfterTheGradient) {
  for (bool write_between : {false, true}) {
    Body step = [write_between](Graph& g, const std::vector<Node*>& x) {
      x[0]->meta().tags.donated_to_output = 0;
      Node* zeroed = g.call(op("aten::zero"), {x[0]});  // zero_grad, at the step's start
      Node* d = g.call(op("aten::mm"), {g.call(op("aten::t"), {x[1]}), x[2]});
      if (write_between) g.call(op("aten::add_.Tensor"), {x[3], 1.0});
      Node* z = g.call(op("aten::relu"), {g.call(op("aten::mm"), {x[1], x[3]})});
      Node* acc = g.call(op("aten::add.Tensor"), {zeroed, g.call(op("aten::detach"), {d})});
      return std::vector<Node*>{acc, z};
    };
    at::Tensor grad = at::randn({4, 6}), x = at::randn({3, 4}), y = at::randn({3, 6}), y2 = at::randn({4, 5});
    auto built = build(step, {grad, x, y, y2});
    ASSERT_TRUE(built);
    std::vector<const Node*> order = fusion_order(*built->graph);
    auto at_of = [&](const char* name) {
      for (size_t i = 0; i < order.size(); ++i)
        if (order[i]->kind() == graph::NodeKind::call_function && order[i]->op()->qualified_name() == name) return i;
      return order.size();
    };
    const size_t first_mm = at_of("aten::mm"), acc = at_of("aten::add.Tensor"), relu = at_of("aten::relu");
    ASSERT_LT(acc, order.size());
    if (write_between) {
      EXPECT_GT(acc, relu) << "moved past an in-place op";
    } else {
      EXPECT_LT(acc, relu);
      EXPECT_EQ(acc, first_mm + 2) << "the accumulation and its detach follow the gradient's mm";
    }
    at::Tensor want_grad = at::mm(x.t(), y), want_z = at::relu(at::mm(x, write_between ? y2 + 1 : y2));
    auto fn = find_backend("llvm")->compile(built->graph, built->metas);
    ASSERT_TRUE(fn.ok()) << fn.error().message;
    std::vector<at::Tensor> got = (*fn)({grad, x, y, y2});
    EXPECT_EQ(got[0].data_ptr(), grad.data_ptr()) << "write_between " << write_between;
    EXPECT_TRUE(at::allclose(grad, want_grad, 1e-5, 1e-5)) << "write_between " << write_between;
    EXPECT_TRUE(at::allclose(got[1], want_z, 1e-5, 1e-5)) << "write_between " << write_between;
  }
}

// P [4, 6] and its moments M, V [4, 6] (all donated), X [3, 4], as Adam's:
// G = X^T @ (X @ P), M' = 0.9 M + G, V' = 0.99 V + G * G,
// P' = P - 0.1 M' / (sqrt(V') + 1), then Z = X @ P' and a step that may raise
// on data (`index_select(Z, 0, I)`: an index out of range; as a GAN's
// binary_cross_entropy check after the discriminator's update). M' and V'
// are computed again after it and written into M and V there (sink_updates.h:
// they free more than G, which they keep alive); P', which the matmul reads
// before, is copied into P right after it (Step::write_back). With an index
// out of range the call raises and P, M and V are left as they were.
TEST(TrainingSteps, UpdatesBeforeAStepThatMayRaiseAreWrittenAfterIt) {
  Body step = [](Graph& g, const std::vector<Node*>& x) {
    for (int i = 0; i < 3; ++i) x[static_cast<size_t>(i)]->meta().tags.donated_to_output = i;
    Node* grad = g.call(op("aten::mm"), {g.call(op("aten::t"), {x[3]}), g.call(op("aten::mm"), {x[3], x[0]})});
    Node* m = g.call(op("aten::add.Tensor"), {g.call(op("aten::mul.Tensor"), {x[1], 0.9}), grad});
    Node* v = g.call(op("aten::add.Tensor"), {g.call(op("aten::mul.Tensor"), {x[2], 0.99}),
                                               g.call(op("aten::mul.Tensor"), {grad, grad})});
    Node* denom = g.call(op("aten::add.Scalar"), {g.call(op("aten::sqrt"), {v}), 1.0});
    Node* step_size = g.call(op("aten::mul.Tensor"), {g.call(op("aten::div.Tensor"), {m, denom}), 0.1});
    Node* p = g.call(op("aten::sub.Tensor"), {x[0], step_size});
    Node* rows = g.call(op("aten::index_select"), {g.call(op("aten::mm"), {x[3], p}), 0, x[4]});
    return std::vector<Node*>{p, m, v, rows};
  };
  at::Tensor p = at::randn({4, 6}), m = at::randn({4, 6}), v = at::rand({4, 6}), x = at::randn({3, 4});
  at::Tensor rows = at::tensor({2, 0});
  auto built = build(step, {p, m, v, x, rows});
  ASSERT_TRUE(built);
  auto fn = find_backend("llvm")->compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  for (int call = 1; call <= 2; ++call) {
    at::Tensor grad = at::mm(x.t(), at::mm(x, p));
    at::Tensor want_m = m * 0.9 + grad, want_v = v * 0.99 + grad * grad;
    at::Tensor want_p = p - want_m / (want_v.sqrt() + 1) * 0.1;
    const long long in_place = kernel_outputs_written_in_place(), early = outputs_written_back_early();
    std::vector<at::Tensor> got = (*fn)({p, m, v, x, rows});
    EXPECT_EQ(kernel_outputs_written_in_place() - in_place, 2) << "M' and V' computed again, into M and V";
    EXPECT_EQ(outputs_written_back_early() - early, 1) << "P' copied into P after the step that may raise";
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(got[i].data_ptr(), (std::vector<at::Tensor>{p, m, v})[i].data_ptr());
    EXPECT_TRUE(at::allclose(p, want_p, 1e-5, 1e-5)) << "call " << call;
    EXPECT_TRUE(at::allclose(m, want_m, 1e-5, 1e-5)) << "call " << call;
    EXPECT_TRUE(at::allclose(v, want_v, 1e-5, 1e-5)) << "call " << call;
    EXPECT_TRUE(at::allclose(got[3], at::mm(x, want_p).index_select(0, rows), 1e-5, 1e-5)) << "call " << call;
  }
  at::Tensor p_before = p.clone(), m_before = m.clone(), v_before = v.clone();
  EXPECT_ANY_THROW((*fn)({p, m, v, x, at::tensor({2, 3})}));
  EXPECT_TRUE(at::equal(p, p_before) && at::equal(m, m_before) && at::equal(v, v_before));
}

}  // namespace
}  // namespace tj::jit
