// The llvm backend's batched matmul steps (jit/onednn_matmul.h) against
// ATen: bmm and baddbmm on odd sizes, transposed and non-contiguous
// operands, an expanded (broadcast) batch, the view that splits the batch
// into dims, a scale, padding and causal masks added as post-ops; attention
// (`softmax(q @ kᵀ · scale + mask) @ v`) as two oneDNN steps with the
// llvm softmax kernel between them; TRACEJIT_ONEDNN=0 gives the same
// values without oneDNN steps; cases oneDNN's step does not take run as
// ATen ops. Attention's head splits (a contiguous clone of a [B, H, T, D]
// view, viewed 3-d) are read through their strides, no copy made. Large step outputs go on recycled blocks (jit/onednn_buffers.h):
// a freed one serves the next output of its size, resizes as any tensor's.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>

#include "jit/onednn_buffers.h"
#include "jit/onednn_exec.h"
#include "jit/onednn_matmul.h"
#include "jit/onednn_plan.h"
#include "support/log.h"
#include "llvm_test_util.h"

namespace tj::jit {
namespace {

using namespace test_util;

void expect_near(const at::Tensor& want, const at::Tensor& got, const std::string& what) {
  ASSERT_EQ(want.sizes(), got.sizes()) << what;
  EXPECT_EQ(want.strides(), got.strides()) << what;
  EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-4, /*equal_nan=*/true))
      << what << ": max difference " << (got - want).abs().max().item<double>();
}

// Compiles `body`, checks it planned `matmuls` oneDNN matmul steps, runs it
// and compares with the interpreter (ATen); returns how many steps oneDNN ran.
long long expect_matches_aten(const Body& body, const std::vector<at::Tensor>& in, int matmuls,
                              const std::string& what) {
  auto built = build(body, in);
  EXPECT_TRUE(built) << what;
  if (!built) return -1;
  at::Tensor want = (*graph::interpret_tensors(*built->graph, in))[0];
  auto fn = llvm_compile(built->graph, built->metas);
  EXPECT_TRUE(fn.ok()) << what << ": " << fn.error().message;
  if (!fn.ok()) return -1;
  EXPECT_EQ(last_llvm_compile_stats().onednn_matmuls, matmuls) << what;
  const long long before = onednn::matmul_stats().steps_run;
  expect_near(want, (*fn)(in)[0], what);
  return onednn::matmul_stats().steps_run - before;
}

class OneDnnMatmul : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("TJ_TEST_PERF")) tj::log::set_topics("perf", nullptr);
    onednn::set_enabled(true);
    onednn::reset();
  }
  void TearDown() override {
    onednn::set_enabled(true);
    onednn::refuse_after(-1);
  }
};

Node* bmm(Graph& g, Node* a, Node* b) { return g.call(op("aten::bmm"), {a, b}); }

TEST_F(OneDnnMatmul, BmmOfOddSizesAndLayoutsMatchesAten) {
  struct Case {
    const char* what;
    at::Tensor a, b;
  };
  const int64_t B = 7, M = 37, K = 29, N = 43;
  at::Tensor base = at::randn({B, K, M});
  const std::vector<Case> cases = {
      {"contiguous", at::randn({B, M, K}), at::randn({B, K, N})},
      {"transposed weights (k.transpose(-2, -1))", at::randn({B, M, K}), at::randn({B, N, K}).transpose(1, 2)},
      {"transposed source", base.transpose(1, 2), at::randn({B, K, N})},
      {"strided rows (a slice of a wider tensor)", at::randn({B, M, 2 * K}).slice(2, 0, K),
       at::randn({B, K, N + 7}).slice(2, 3, N + 3)},
      {"expanded batch (stride 0)", at::randn({1, M, K}).expand({B, M, K}), at::randn({B, K, N})},
      {"neither inner dim dense (copied)", at::randn({B, M, K, 2}).select(3, 1), at::randn({B, K, N})},
  };
  for (const Case& c : cases) {
    Body body = [](Graph& g, const std::vector<Node*>& in) { return std::vector<Node*>{bmm(g, in[0], in[1])}; };
    EXPECT_EQ(expect_matches_aten(body, {c.a, c.b}, 1, c.what), 1) << c.what << ": oneDNN ran it";
  }
}

TEST_F(OneDnnMatmul, EpiloguesAreFusedIntoOneStep) {
  const int64_t B = 2, H = 3, T = 33, D = 47;
  at::Tensor q = at::randn({B, H, T, D}), k = at::randn({B, H, T, D});
  at::Tensor pad = at::zeros({B, 1, 1, T});
  pad.select(0, 1).narrow(2, T - 5, 5).fill_(-1e9);
  at::Tensor causal = at::ones({T, T}).tril().log().view({1, 1, T, T});  // 0 and -inf
  at::Tensor bias3 = at::randn({B * H, T, T});
  struct Case {
    const char* what;
    std::function<Node*(Graph&, Node*, const std::vector<Node*>&)> build;
    size_t nodes;  // nodes the step computes
  };
  const std::vector<Case> cases = {
      {"view, mul", [](Graph& g, Node* y, const std::vector<Node*>&) {
         Node* v = g.call(op("aten::_unsafe_view"), {y, Arg::ints({2, 3, 33, 33})});
         return g.call(op("aten::mul.Tensor"), {v, 0.125});
       }, 3},
      {"view, div, padding mask", [](Graph& g, Node* y, const std::vector<Node*>& in) {
         Node* v = g.call(op("aten::view"), {y, Arg::ints({2, 3, 33, 33})});
         return g.call(op("aten::add.Tensor"), {g.call(op("aten::div.Tensor"), {v, 4.123}), in[2]});
       }, 4},
      {"view, causal mask first, then scale", [](Graph& g, Node* y, const std::vector<Node*>& in) {
         Node* v = g.call(op("aten::_unsafe_view"), {y, Arg::ints({2, 3, 33, 33})});
         return g.call(op("aten::mul.Scalar"), {g.call(op("aten::add.Tensor"), {in[3], v}), 0.3});
       }, 4},
      {"3-d, full-size addition", [](Graph& g, Node* y, const std::vector<Node*>& in) {
         return g.call(op("aten::add.Tensor"), {y, in[4]});
       }, 2},
      {"view, scale, heads merged back: transpose(1, 2) then a contiguous clone",
       [](Graph& g, Node* y, const std::vector<Node*>&) {
         Node* v = g.call(op("aten::_unsafe_view"), {y, Arg::ints({2, 3, 33, 33})});
         Node* t = g.call(op("aten::transpose.int"), {g.call(op("aten::mul.Tensor"), {v, 2.0}), 1, 2});
         return g.call(op("aten::clone"), {t}, {Kwarg{"memory_format", Arg(c10::MemoryFormat::Contiguous)}});
       }, 5},
      {"view, permute keeping the rows, contiguous clone", [](Graph& g, Node* y, const std::vector<Node*>&) {
         Node* v = g.call(op("aten::_unsafe_view"), {y, Arg::ints({2, 3, 33, 33})});
         Node* t = g.call(op("aten::permute"), {v, Arg::ints({2, 0, 1, 3})});
         return g.call(op("aten::clone"), {t}, {Kwarg{"memory_format", Arg(c10::MemoryFormat::Contiguous)}});
       }, 4},
      {"view, permute moving the rows' dim: not absorbed", [](Graph& g, Node* y, const std::vector<Node*>&) {
         Node* v = g.call(op("aten::_unsafe_view"), {y, Arg::ints({2, 3, 33, 33})});
         Node* t = g.call(op("aten::permute"), {v, Arg::ints({2, 0, 3, 1})});
         return g.call(op("aten::clone"), {t}, {Kwarg{"memory_format", Arg(c10::MemoryFormat::Contiguous)}});
       }, 2},
      {"a clone that preserves the permuted strides: not absorbed", [](Graph& g, Node* y, const std::vector<Node*>&) {
         Node* v = g.call(op("aten::_unsafe_view"), {y, Arg::ints({2, 3, 33, 33})});
         return g.call(op("aten::clone"), {g.call(op("aten::transpose.int"), {v, 1, 2})});
       }, 2},
      {"the view is not a split of the batch: not absorbed", [](Graph& g, Node* y, const std::vector<Node*>&) {
         return g.call(op("aten::view"), {y, Arg::ints({6, 33 * 33})});
       }, 1},
  };
  for (const Case& c : cases) {
    Body body = [&](Graph& g, const std::vector<Node*>& in) {
      Node* qv = g.call(op("aten::view"), {in[0], Arg::ints({B * H, T, D})});
      Node* kt = g.call(op("aten::transpose.int"), {g.call(op("aten::view"), {in[1], Arg::ints({B * H, T, D})}), 1, 2});
      return std::vector<Node*>{c.build(g, bmm(g, qv, kt), in)};
    };
    const std::vector<at::Tensor> in = {q, k, pad, causal, bias3};
    auto built = build(body, in);
    ASSERT_TRUE(built) << c.what;
    EXPECT_EQ(expect_matches_aten(body, in, 1, c.what), 1) << c.what;
    // the nodes one step takes: every node but the inputs, views of q and k and the transpose
    const graph::Graph& g = *built->graph;
    std::unordered_set<const Node*> none;
    for (const Node* n : g.nodes())
      if (n->op() && n->op()->qualified_name() == "aten::bmm") {
        auto m = onednn::match(*n, none, none);
        ASSERT_TRUE(m) << c.what;
        EXPECT_EQ(m->nodes.size(), c.nodes) << c.what << ": " << m->plan->describe();
      }
  }
}

TEST_F(OneDnnMatmul, BaddbmmMatchesAten) {
  at::Tensor a = at::randn({8, 31, 45}), b = at::randn({8, 45, 27});
  for (double alpha : {1.0, 0.5}) {
    for (double beta : {1.0, 0.0, 2.0}) {
      for (const at::Tensor& self : {at::randn({8, 31, 27}), at::randn({27}), at::randn({1, 31, 1})}) {
        const std::string what = "alpha " + std::to_string(alpha) + " beta " + std::to_string(beta) + " self " +
                                 c10::str(self.sizes());
        Body body = [&](Graph& g, const std::vector<Node*>& in) {
          return std::vector<Node*>{
              g.call(op("aten::baddbmm"), {in[2], in[0], in[1]}, {Kwarg{"beta", Arg(beta)}, Kwarg{"alpha", Arg(alpha)}})};
        };
        // beta 2 is not planned: ATen's
        const int planned = beta == 2.0 ? 0 : 1;
        EXPECT_EQ(expect_matches_aten(body, {a, b, self}, planned, what), planned) << what;
      }
    }
  }
}

// softmax(q @ kᵀ · scale + mask) @ v, as the traced attention of a
// Transformer (BERT's padding mask, a causal mask): two oneDNN matmuls,
// the softmax one llvm kernel between them.
TEST_F(OneDnnMatmul, AttentionIsTwoMatmulsAroundOneSoftmaxKernel) {
  const int64_t B = 2, H = 4, T = 41, D = 24;
  at::Tensor qkv = at::randn({B, T, 3 * H * D});
  // q, k, v as the heads of one projection: [B, H, T, D] views, not contiguous
  auto heads = [&](int i) { return qkv.narrow(2, i * H * D, H * D).view({B, T, H, D}).transpose(1, 2); };
  at::Tensor pad = at::zeros({B, 1, 1, T});
  pad.select(0, 0).narrow(2, T - 4, 4).fill_(std::numeric_limits<float>::lowest());
  at::Tensor causal = at::ones({T, T}).tril().log().view({1, 1, T, T});
  for (const at::Tensor& mask : {pad, causal}) {
    Body body = [&](Graph& g, const std::vector<Node*>& in) {
      auto flat = [&](Node* x) {
        return g.call(op("aten::reshape"), {x, Arg::ints({B * H, T, D})});
      };
      Node* kt = g.call(op("aten::transpose.int"), {flat(in[1]), 1, 2});
      Node* s = g.call(op("aten::_unsafe_view"), {bmm(g, flat(in[0]), kt), Arg::ints({B, H, T, T})});
      s = g.call(op("aten::add.Tensor"), {g.call(op("aten::mul.Tensor"), {s, 0.25}), in[3]});
      Node* p = g.call(op("aten::_softmax"), {s, -1, false});
      Node* o = bmm(g, g.call(op("aten::reshape"), {p, Arg::ints({B * H, T, T})}), flat(in[2]));
      return std::vector<Node*>{g.call(op("aten::_unsafe_view"), {o, Arg::ints({B, H, T, D})})};
    };
    const std::vector<at::Tensor> in = {heads(0), heads(1), heads(2), mask};
    EXPECT_EQ(expect_matches_aten(body, in, 2, "attention"), 2);
    EXPECT_EQ(last_llvm_compile_stats().kernels, 1) << "the softmax alone is an llvm kernel";
    // TRACEJIT_ONEDNN=0: the same values, no oneDNN step
    auto built = build(body, in);
    ASSERT_TRUE(built);
    auto on = llvm_compile(built->graph, built->metas);
    ASSERT_TRUE(on.ok());
    at::Tensor with = (*on)(in)[0];
    onednn::set_enabled(false);
    auto off = llvm_compile(built->graph, built->metas);
    ASSERT_TRUE(off.ok());
    EXPECT_EQ(last_llvm_compile_stats().onednn_matmuls, 0);
    const long long steps = onednn::matmul_stats().steps_run;
    expect_near((*off)(in)[0], with, "TRACEJIT_ONEDNN=0 against on");
    EXPECT_EQ(onednn::matmul_stats().steps_run, steps);
    onednn::set_enabled(true);
  }
}

TEST_F(OneDnnMatmul, SmallAndFloat64MatmulsStayAten) {
  Body body = [](Graph& g, const std::vector<Node*>& in) { return std::vector<Node*>{bmm(g, in[0], in[1])}; };
  expect_matches_aten(body, {at::randn({2, 5, 7}), at::randn({2, 7, 3})}, 0, "below the size oneDNN wins at");
  expect_matches_aten(body, {at::randn({4, 40, 50}, at::kDouble), at::randn({4, 50, 60}, at::kDouble)}, 0, "float64");
}

// A step oneDNN refuses runs its nodes as ATen ops (the same values), and
// shapes that disagree are refused with a reason (ATen then raises its error).
TEST_F(OneDnnMatmul, RefusedStepsRunAsAtenOps) {
  const int64_t B = 2, H = 3, T = 33, D = 47;
  Body body = [&](Graph& g, const std::vector<Node*>& in) {
    Node* v = g.call(op("aten::_unsafe_view"), {bmm(g, in[0], in[1]), Arg::ints({B, H, T, T})});
    return std::vector<Node*>{g.call(op("aten::add.Tensor"), {g.call(op("aten::mul.Tensor"), {v, 0.5}), in[2]})};
  };
  const std::vector<at::Tensor> in = {at::randn({B * H, T, D}), at::randn({B * H, D, T}), at::randn({B, 1, 1, T})};
  onednn::refuse_after(0);
  EXPECT_EQ(expect_matches_aten(body, in, 1, "refused"), 0);
  EXPECT_GT(onednn::stats().refused, 0);
  onednn::refuse_after(-1);
  onednn::Plan p;
  p.op = onednn::Plan::Op::matmul;
  graph::TensorMeta meta;
  std::string why;
  at::Tensor a = at::randn({2, 5, 7}), b = at::randn({2, 6, 3});
  EXPECT_FALSE(onednn::run(p, {&a, &b, nullptr, nullptr}, meta, &why));
  EXPECT_NE(why, "");
  p.out_view = {3, 5, 3};  // does not split a batch of 2
  at::Tensor b2 = at::randn({2, 7, 3});
  why.clear();
  EXPECT_FALSE(onednn::run(p, {&a, &b2, nullptr, nullptr}, meta, &why));
  EXPECT_NE(why, "");
}

// Attention's q, k, v as AOT gives them to bmm: `_unsafe_view(clone(s, memory_format=contiguous))` of [B, H, T, D]
// views of one projection. The steps read s through its strides: no clone kernel is left, only the softmax's;
// refused, the clones run as ATen ops with the same values.
TEST_F(OneDnnMatmul, HeadSplitsAreReadThroughTheirStrides) {
  const int64_t B = 2, H = 3, T = 61, D = 15;  // an odd head dim (above kMinWork: 6 x 61 x 61 x 15)
  at::Tensor qkv = at::randn({B, T, 3 * H * D});
  auto heads = [&](int i) { return qkv.narrow(2, i * H * D, H * D).view({B, T, H, D}).transpose(1, 2); };
  at::Tensor causal = at::ones({T, T}).tril().log().view({1, 1, T, T});
  const auto contiguous = Kwarg{"memory_format", Arg(c10::MemoryFormat::Contiguous)};
  Body body = [&](Graph& g, const std::vector<Node*>& in) {
    auto split = [&](Node* x, std::vector<int64_t> sizes) {
      return g.call(op("aten::_unsafe_view"), {g.call(op("aten::clone"), {x}, {contiguous}), Arg::ints(sizes)});
    };
    Node* kt = g.call(op("aten::transpose.int"), {in[1], 2, 3});
    Node* s = bmm(g, split(in[0], {B * H, T, D}), split(kt, {B * H, D, T}));
    s = g.call(op("aten::mul.Tensor"), {g.call(op("aten::_unsafe_view"), {s, Arg::ints({B, H, T, T})}), 0.25});
    Node* p = g.call(op("aten::_softmax"), {g.call(op("aten::add.Tensor"), {s, in[3]}), -1, false});
    Node* o = bmm(g, g.call(op("aten::reshape"), {p, Arg::ints({B * H, T, T})}), split(in[2], {B * H, T, D}));
    o = g.call(op("aten::_unsafe_view"), {o, Arg::ints({B, H, T, D})});
    Node* merged = g.call(op("aten::clone"), {g.call(op("aten::transpose.int"), {o, 1, 2})}, {contiguous});
    return std::vector<Node*>{merged};
  };
  const std::vector<at::Tensor> in = {heads(0), heads(1), heads(2), causal};
  EXPECT_EQ(expect_matches_aten(body, in, 2, "attention on head splits"), 2);
  EXPECT_EQ(last_llvm_compile_stats().kernels, 1) << "no clone kernel: the softmax alone";
  onednn::refuse_after(0);
  EXPECT_EQ(expect_matches_aten(body, in, 2, "refused: the clones run as ATen ops"), 0);
  onednn::refuse_after(-1);
  // contiguous sources (q, k, v of their own projections) the same way
  const std::vector<at::Tensor> dense = {at::randn({B, H, T, D}), at::randn({B, H, T, D}), at::randn({B, H, T, D}), causal};
  EXPECT_EQ(expect_matches_aten(body, dense, 2, "attention on dense heads"), 2);
}

// A head split's source at run time: of the planned rank and leading sizes it is read as it is; otherwise its
// copy, viewed as bmm's operand; one that cannot give that view is refused with a reason (ATen then raises).
TEST_F(OneDnnMatmul, HeadSplitSourcesOfOtherShapesAreCopiedOrRefused) {
  onednn::Plan p;
  p.op = onednn::Plan::Op::matmul;
  p.out_view = {2, 3, 33, 21};
  p.a_view = {6, 33, 47};
  graph::TensorMeta meta;
  at::Tensor b = at::randn({6, 47, 21});
  at::Tensor strided = at::randn({2, 33, 3, 47}).transpose(1, 2);
  const std::vector<at::Tensor> sources = {strided, at::randn({6, 33, 47}), at::randn({2, 3, 33 * 47})};
  for (const at::Tensor& a : sources) {
    std::string why;
    auto got = onednn::run(p, {&a, &b, nullptr, nullptr}, meta, &why);
    ASSERT_TRUE(got) << why;
    expect_near(at::bmm(a.contiguous().view({6, 33, 47}), b).view({2, 3, 33, 21}), *got, "a source of sizes " +
                c10::str(a.sizes()));
  }
  at::Tensor wrong = at::randn({2, 3, 33, 46});
  std::string why;
  EXPECT_FALSE(onednn::run(p, {&wrong, &b, nullptr, nullptr}, meta, &why));
  EXPECT_NE(why, "");
}

// The recycler: a large block freed serves the next allocation of its size (no new mapping), small ones are
// ATen's, a recycled tensor resizes past its block, and the free list is bounded per size.
TEST(OneDnnBuffers, FreedBlocksServeTheNextOutputOfTheirSize) {
  onednn::forget_recycled();
  const at::TensorOptions f32 = at::TensorOptions().dtype(at::kFloat);
  const int64_t rows = 1024, cols = 384;  // 1.5 MiB
  void* first = nullptr;
  {
    at::Tensor t = onednn::recycled_empty({rows, cols}, f32);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(t.sizes(), c10::IntArrayRef({rows, cols}));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);
    t.fill_(3.0f);
    EXPECT_EQ(t.sum().item<double>(), 3.0 * rows * cols);
    first = t.data_ptr();
  }
  onednn::RecycleCounts c = onednn::recycle_counts();
  EXPECT_EQ(c.fresh, 1);
  EXPECT_EQ(c.free_bytes, static_cast<size_t>(rows * cols * 4));
  at::Tensor again = onednn::recycled_empty({cols, rows}, f32);  // the same bytes, other sizes
  EXPECT_EQ(again.data_ptr(), first);
  EXPECT_EQ(onednn::recycle_counts().reused, 1);
  EXPECT_EQ(onednn::recycle_counts().free_bytes, 0u);
  // resizing past the block takes new memory through the same allocator; the values before are kept
  again.fill_(1.0f);
  again.resize_({2 * cols, rows});
  EXPECT_EQ(again.narrow(0, 0, cols).sum().item<double>(), 1.0 * rows * cols);
  // below the threshold: ATen's own allocation, not counted
  at::Tensor small = onednn::recycled_empty({4, 5}, f32);
  EXPECT_EQ(small.sizes(), c10::IntArrayRef({4, 5}));
  EXPECT_EQ(onednn::recycle_counts().fresh, 2);
  // at most a few free blocks of one size are kept
  {
    std::vector<at::Tensor> many;
    for (int i = 0; i < 10; ++i) many.push_back(onednn::recycled_empty({rows, cols}, f32));
  }
  EXPECT_LE(onednn::recycle_counts().free_bytes, static_cast<size_t>(8 * rows * cols * 4));
  EXPECT_GT(onednn::recycle_counts().free_bytes, 0u);
  onednn::forget_recycled();
  EXPECT_EQ(onednn::recycle_counts().free_bytes, 0u);
}

// Two compiled calls of a graph whose matmul step writes a large output: the second call's output is written
// on the block the first call's freed output gave back.
TEST_F(OneDnnMatmul, SecondCallWritesItsLargeOutputOnARecycledBlock) {
  Body body = [](Graph& g, const std::vector<Node*>& in) { return std::vector<Node*>{bmm(g, in[0], in[1])}; };
  const std::vector<at::Tensor> in = {at::randn({8, 128, 64}), at::randn({8, 64, 256})};  // out: 1 MiB
  auto built = build(body, in);
  ASSERT_TRUE(built);
  auto fn = llvm_compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  at::Tensor want = at::bmm(in[0], in[1]);
  expect_near(want, (*fn)(in)[0], "first call");
  const long long before = onednn::stats().outputs_recycled;
  expect_near(want, (*fn)(in)[0], "second call");
  EXPECT_EQ(onednn::stats().outputs_recycled, before + 1);
}

}  // namespace
}  // namespace tj::jit
