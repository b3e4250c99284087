// The llvm backend on the shapes a training step's graph has (issue 41
// item 3): an optimizer's new value of a parameter is written straight into
// the parameter (no copy by AOT's epilogue, no second buffer alive until
// it) when the forward and backward read the parameter, and views of it,
// through extern matmuls before the update; not when a view of it is a
// result or an extern step reads it after the update.
#include <vector>

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

}  // namespace
}  // namespace tj::jit
