// The llvm backend against ATen: every op the lowering fuses, over
// contiguous, transposed, sliced, broadcast, zero-size and 0-d inputs, in
// each supported dtype (bit-exact for integer/bool results, a tolerance for
// floats), plus fusion itself (an 8-op chain is one kernel), the kernel
// cache counters, extern ops between groups, inputs written in place, and
// debug_inject_bug.
#include <functional>
#include <string>
#include <vector>

#include "jit/onednn_plan.h"
#include "llvm_test_util.h"

namespace tj::jit {
namespace {

using namespace test_util;  // NOLINT: the helpers of llvm_test_util.h
using graph::Arg;
using graph::Graph;
using graph::Kwarg;
using graph::Node;

// One operand in a given layout, (3, 5)-shaped unless zero-size or 0-d.
at::Tensor operand(const std::string& layout, c10::ScalarType t, int which) {
  if (layout == "contiguous") return values({3, 5}, t);
  if (layout == "transposed") return values({5, 3}, t).t();
  if (layout == "sliced") return values({4, 10}, t).slice(0, 1, 4).slice(1, 0, 10, 2);
  if (layout == "broadcast") return which == 0 ? values({1, 5}, t).expand({3, 5}) : values({5}, t);
  if (layout == "broadcast_col") return which == 0 ? values({3, 5}, t) : values({3, 1}, t);
  if (layout == "zero_size") return values({0, 5}, t);
  if (layout == "zero_d") return values({}, t);
  if (layout == "with_0d") return which == 0 ? values({3, 5}, t) : values({}, t);
  throw std::runtime_error("layout " + layout);
}

const std::vector<std::string> kLayouts = {"contiguous", "transposed", "sliced",   "broadcast",
                                           "broadcast_col", "zero_size", "zero_d", "with_0d"};

struct Case {
  std::string name;
  int arity;
  std::function<Node*(Graph&, const std::vector<Node*>&)> make;
};

Case call(const char* name, int arity, std::vector<Arg> extra = {}, std::vector<Kwarg> kwargs = {}) {
  return {std::string(name) + (extra.empty() && kwargs.empty() ? "" : "+args"), arity,
          [=](Graph& g, const std::vector<Node*>& x) {
            std::vector<Arg> args(x.begin(), x.end());
            for (const Arg& a : extra) args.push_back(a);
            return g.call(op(name), args, kwargs);
          }};
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* name : {"aten::neg", "aten::abs", "aten::relu", "aten::sigmoid", "aten::tanh", "aten::exp",
                           "aten::log", "aten::sin", "aten::cos", "aten::sqrt", "aten::rsqrt", "aten::reciprocal",
                           "aten::erf", "aten::logical_not", "aten::square", "aten::silu", "aten::clone"})
    out.push_back(call(name, 1));
  out.push_back(call("aten::gelu", 1));
  out.push_back(call("aten::gelu", 1, {}, {{"approximate", "tanh"}}));
  for (const char* name : {"aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor", "aten::div.Tensor",
                           "aten::maximum", "aten::minimum", "aten::pow.Tensor_Tensor", "aten::eq.Tensor",
                           "aten::ne.Tensor", "aten::lt.Tensor", "aten::le.Tensor", "aten::gt.Tensor",
                           "aten::ge.Tensor", "aten::logical_and", "aten::logical_or", "aten::logical_xor",
                           "aten::sigmoid_backward", "aten::tanh_backward", "aten::rsub.Tensor"})
    out.push_back(call(name, 2));
  out.push_back(call("aten::add.Tensor", 2, {}, {{"alpha", int64_t{2}}}));
  out.push_back(call("aten::sub.Tensor", 2, {}, {{"alpha", 0.5}}));
  out.push_back(call("aten::where.self", 3));
  // Python numbers: eager's promotion (a float on an int tensor gives the default dtype)
  out.push_back(call("aten::add.Tensor", 1, {2.5}));
  out.push_back(call("aten::add.Tensor", 1, {int64_t{3}}));
  out.push_back(call("aten::mul.Tensor", 1, {-1.5}));
  out.push_back(call("aten::div.Tensor", 1, {int64_t{2}}));
  out.push_back(call("aten::add.Scalar", 1, {2.5}));
  out.push_back(call("aten::mul.Scalar", 1, {int64_t{3}}));
  out.push_back(call("aten::sub.Scalar", 1, {1.0}));
  out.push_back(call("aten::rsub.Scalar", 1, {1.0}));
  for (double p : {2.0, 3.0, 0.5, -1.0, 1.7}) out.push_back(call("aten::pow.Tensor_Scalar", 1, {p}));
  out.push_back(call("aten::clamp", 1, {-0.5, 0.5}));
  out.push_back(call("aten::clamp", 1, {int64_t{-1}, Arg()}));
  out.push_back(call("aten::clamp_min", 1, {0.25}));
  out.push_back(call("aten::clamp_max", 1, {int64_t{1}}));
  for (const char* name : {"aten::eq.Scalar", "aten::ne.Scalar", "aten::lt.Scalar", "aten::le.Scalar",
                           "aten::gt.Scalar", "aten::ge.Scalar"}) {
    out.push_back(call(name, 1, {int64_t{0}}));
    out.push_back(call(name, 1, {0.5}));
  }
  out.push_back(call("aten::threshold_backward", 2, {0.0}));
  // the backward's activation masks (issue 41 item 3: training graphs ran them as ATen's ops)
  out.push_back(call("aten::leaky_relu", 1));
  out.push_back(call("aten::leaky_relu", 1, {0.2}));
  out.push_back(call("aten::leaky_relu_backward", 2, {0.2, false}));
  out.push_back(call("aten::leaky_relu_backward", 2, {0.01, true}));
  out.push_back(call("aten::gelu_backward", 2));
  out.push_back(call("aten::gelu_backward", 2, {}, {{"approximate", "tanh"}}));
  out.push_back(call("aten::masked_fill.Scalar", 2, {1.5}));
  out.push_back(call("aten::fill.Scalar", 1, {2.0}));
  for (c10::ScalarType t : kDtypes) out.push_back(call("aten::_to_copy", 1, {}, {{"dtype", t}}));
  return out;
}

TEST(LlvmBackend, EveryFusedOpMatchesAtenInEveryLayoutAndDtype) {
  at::manual_seed(0);
  for (const Case& c : cases()) {
    int ran = 0;
    for (c10::ScalarType t : kDtypes) {
      for (const std::string& layout : kLayouts) {
        std::vector<at::Tensor> inputs;
        for (int i = 0; i < c.arity; ++i) {
          // where's condition and masked_fill's mask are bool
          bool is_mask = (c.name == "aten::where.self" && i == 0) || (c.name.rfind("aten::masked_fill", 0) == 0 && i == 1);
          inputs.push_back(operand(layout, is_mask ? at::kBool : t, i));
        }
        std::string what = c.name + " " + c10::toString(t) + " " + layout;
        Body body = [&](Graph& g, const std::vector<Node*>& x) { return std::vector<Node*>{c.make(g, x)}; };
        ran += compare(body, inputs, what);
      }
    }
    EXPECT_GT(ran, 0) << c.name << " ran for no dtype";
  }
}

// The op is actually fused (not extern): every case builds one kernel for float32.
TEST(LlvmBackend, EveryCaseIsFusedForFloat) {
  for (const Case& c : cases()) {
    std::vector<at::Tensor> inputs;
    for (int i = 0; i < c.arity; ++i)
      inputs.push_back(operand("contiguous", c.name == "aten::where.self" && i == 0 ? at::kBool : at::kFloat, i));
    if (c.name.rfind("aten::masked_fill", 0) == 0) inputs[1] = operand("contiguous", at::kBool, 1);
    int kernels = -1;
    Body body = [&](Graph& g, const std::vector<Node*>& x) { return std::vector<Node*>{c.make(g, x)}; };
    ASSERT_TRUE(compare(body, inputs, c.name, &kernels)) << c.name;
    EXPECT_EQ(kernels, 1) << c.name << " was not fused";
  }
}

std::vector<Node*> chain8(Graph& g, const std::vector<Node*>& x) {
  Node* v = g.call(op("aten::mul.Tensor"), {x[0], 2.0});
  v = g.call(op("aten::add.Tensor"), {v, x[1]});
  v = g.call(op("aten::relu"), {v});
  v = g.call(op("aten::sub.Tensor"), {v, 0.5});
  v = g.call(op("aten::mul.Tensor"), {v, x[0]});
  v = g.call(op("aten::abs"), {v});
  v = g.call(op("aten::add.Tensor"), {v, 1.0});
  v = g.call(op("aten::neg"), {v});
  return {v};
}

TEST(LlvmBackend, AnEightOpChainIsOneKernelAndTheCacheServesTheSecondCompile) {
  std::vector<at::Tensor> in = {at::randn({1000}), at::randn({1000})};
  zero_kernel_counters();
  int kernels = -1;
  ASSERT_TRUE(compare(chain8, in, "chain8", &kernels));
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(last_llvm_compile_stats().fused_nodes, 8);
  EXPECT_EQ(kernels_compiled(), 1);
  EXPECT_EQ(kernel_cache_hits(), 0);
  ASSERT_TRUE(compare(chain8, in, "chain8 again"));
  EXPECT_EQ(kernels_compiled(), 1);
  EXPECT_EQ(kernel_cache_hits(), 1);
  // another shape is another kernel
  ASSERT_TRUE(compare(chain8, {at::randn({7, 3}), at::randn({3})}, "chain8 broadcast"));
  EXPECT_EQ(kernels_compiled(), 2);
}

// float16/bfloat16 chains are one kernel computing in float32, each op's
// result rounded once, bit-identical to eager; ops eager's CPU kernels lack
// for a dtype (exp on float16 in LibTorch 1.13) stay extern and raise as eager.
TEST(LlvmBackend, ReducedFloatsFuseAndRoundLikeEager) {
  // no relu: LibTorch 1.13 has no float16 clamp_min on CPU
  Body chain = [](Graph& g, const std::vector<Node*>& x) {
    Node* v = g.call(op("aten::add.Tensor"), {g.call(op("aten::mul.Tensor"), {x[0], 2.0}), x[1]});
    v = g.call(op("aten::mul.Tensor"), {g.call(op("aten::sub.Tensor"), {v, 0.3}), x[0]});
    v = g.call(op("aten::add.Tensor"), {g.call(op("aten::neg"), {v}), 1.0});
    Node* positive = g.call(op("aten::gt.Scalar"), {x[0], 0.0});
    return std::vector<Node*>{g.call(op("aten::where.self"), {positive, v, x[1]})};
  };
  for (c10::ScalarType t : {at::kHalf, at::kBFloat16}) {
    std::vector<at::Tensor> in = {values({64, 33}, t), values({33}, t)};
    int kernels = -1;
    ASSERT_TRUE(compare(chain, in, std::string("chain ") + c10::toString(t), &kernels));
    EXPECT_EQ(kernels, 1);
    auto built = build(chain, in);
    auto fn = find_backend("llvm")->compile(built->graph, built->metas);
    ASSERT_TRUE(fn.ok());
    auto eager = graph::interpret_tensors(*built->graph, in);
    ASSERT_TRUE(eager.ok());
    EXPECT_TRUE(at::equal((*fn)(in)[0], (*eager)[0])) << c10::toString(t);
  }
  Body exp = [](Graph& g, const std::vector<Node*>& x) { return std::vector<Node*>{g.call(op("aten::exp"), {x[0]})}; };
  auto built = build(exp, {values({4}, at::kHalf)});
  ASSERT_TRUE(built);
  auto fn = find_backend("llvm")->compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  EXPECT_EQ(last_llvm_compile_stats().kernels, 0);
  EXPECT_THROW((*fn)({values({4}, at::kHalf)}), std::exception);
}

// Group values used by extern ops (mm) are stored; ops after the extern go
// into a second kernel, with the sum that reads them; intermediate values
// of a group are not outputs.
TEST(LlvmBackend, ExternOpsSplitGroupsAndOnlyNeededValuesAreStored) {
  Body body = [](Graph& g, const std::vector<Node*>& x) {
    Node* a = g.call(op("aten::mul.Tensor"), {x[0], 2.0});
    Node* b = g.call(op("aten::tanh"), {a});
    Node* m = g.call(op("aten::mm"), {b, x[1]});
    Node* c = g.call(op("aten::relu"), {m});
    Node* d = g.call(op("aten::add.Tensor"), {c, x[2]});
    Node* s = g.call(op("aten::sum"), {d});
    return std::vector<Node*>{d, s, b};
  };
  int kernels = -1;
  ASSERT_TRUE(compare(body, {at::randn({4, 6}), at::randn({6, 3}), at::randn({3})}, "mlp-like", &kernels));
  EXPECT_EQ(kernels, 2);
  EXPECT_EQ(last_llvm_compile_stats().extern_steps, 1);
}

// A Linear's addmm(bias, x, w.t()) and mm(x, w), float32 and large
// enough, the weight a graph input (a parameter, seen transposed or not),
// run as oneDNN's inner product with the relu after it as a post-op
// (values within the float tolerance of ATen's BLAS; jit/onednn_plan.h);
// small ones, other dtypes and addmm with beta stay ATen's.
TEST(LlvmBackend, LargeFloatLinearsRunThroughOneDnn) {
  const jit::onednn::ScopedLinearMode always(jit::onednn::LinearMode::always);  // on every CPU (the default: test_onednn.cpp)
  if (!at::hasMKLDNN()) GTEST_SKIP() << "LibTorch without oneDNN";
  auto linear = [](bool bias, bool transposed) {
    return Body([bias, transposed](Graph& g, const std::vector<Node*>& x) {
      Node* wt = transposed ? g.call(op("aten::t"), {x[1]}) : x[1];
      Node* y = bias ? g.call(op("aten::addmm"), {x[2], x[0], wt}) : g.call(op("aten::mm"), {x[0], wt});
      return std::vector<Node*>{g.call(op("aten::relu"), {y})};
    });
  };
  struct Case {
    const char* what;
    bool bias, transposed;
    int64_t m, k, n;
    c10::ScalarType dtype;
    int onednn;
  };
  for (const Case& c : {Case{"addmm 64x512x512", true, true, 64, 512, 512, at::kFloat, 1},
                        Case{"mm 32x256x1024", false, true, 32, 256, 1024, at::kFloat, 1},
                        Case{"addmm 4x6x5 (small)", true, true, 4, 6, 5, at::kFloat, 0},
                        Case{"addmm 8x512x1024 (few rows)", true, true, 8, 512, 1024, at::kFloat, 0},
                        Case{"addmm float64", true, true, 64, 512, 512, at::kDouble, 0},
                        Case{"mm, weight not transposed", false, false, 64, 512, 512, at::kFloat, 1}}) {
    std::vector<at::Tensor> in = {at::randn({c.m, c.k}, c.dtype),
                                  c.transposed ? at::randn({c.n, c.k}, c.dtype) : at::randn({c.k, c.n}, c.dtype),
                                  at::randn({c.n}, c.dtype)};
    auto built = build(linear(c.bias, c.transposed), in);
    ASSERT_TRUE(built) << c.what;
    at::Tensor want = (*graph::interpret_tensors(*built->graph, in))[0];
    auto fn = llvm_compile(built->graph, built->metas);
    ASSERT_TRUE(fn.ok()) << c.what;
    EXPECT_EQ(last_llvm_compile_stats().onednn_linears, c.onednn) << c.what;
    at::Tensor got = (*fn)(in)[0];
    EXPECT_EQ(got.strides(), want.strides()) << c.what;
    // another summation order over k = 512 products: a tolerance for that
    EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-4)) << c.what << ": max difference "
                                                     << (got - want).abs().max().item<double>();
  }
  Body scaled = [](Graph& g, const std::vector<Node*>& x) {
    Node* wt = g.call(op("aten::t"), {x[1]});
    return std::vector<Node*>{g.call(op("aten::addmm"), {x[2], x[0], wt}, {Kwarg{"beta", Arg(2.0)}})};
  };
  ASSERT_TRUE(compare(scaled, {at::randn({64, 512}), at::randn({512, 512}), at::randn({512})}, "addmm beta=2"));
  EXPECT_EQ(last_llvm_compile_stats().onednn_linears, 0) << "beta=2 is ATen's";
}

// An intermediate a kernel writes and an extern op reads goes back to the
// executable's pool after its last use; the next call writes into it. A
// buffer a returned view still holds is never reused.
TEST(LlvmBackend, ReleasedIntermediatesLendTheirBuffers) {
  Body body = [](Graph& g, const std::vector<Node*>& x) {
    Node* t = g.call(op("aten::tanh"), {x[0]});
    Node* m = g.call(op("aten::mm"), {t, x[1]});
    return std::vector<Node*>{g.call(op("aten::relu"), {m})};
  };
  std::vector<at::Tensor> in = {at::randn({8, 8}), at::randn({8, 8})};
  auto built = build(body, in);
  auto fn = find_backend("llvm")->compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  auto eager = graph::interpret_tensors(*built->graph, in);
  long long before = buffers_reused();
  at::Tensor first = (*fn)(in)[0];
  EXPECT_EQ(buffers_reused(), before);  // nothing released yet
  at::Tensor second = (*fn)(in)[0];
  EXPECT_EQ(buffers_reused(), before + 1);  // tanh's buffer from the first call
  EXPECT_TRUE(at::allclose(first, (*eager)[0]));
  EXPECT_TRUE(at::allclose(second, (*eager)[0]));
  EXPECT_FALSE(first.data_ptr() == second.data_ptr());

  // the intermediate is also returned through a view: its buffer is never
  // lent (the next call must not overwrite what the caller holds)
  Body viewed = [](Graph& g, const std::vector<Node*>& x) {
    Node* t = g.call(op("aten::tanh"), {x[0]});
    Node* m = g.call(op("aten::mm"), {t, x[1]});
    return std::vector<Node*>{g.call(op("aten::relu"), {m}), g.call(op("aten::t"), {t})};
  };
  built = build(viewed, in);
  fn = find_backend("llvm")->compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  auto a = (*fn)(in);
  at::Tensor held = a[1].clone();
  auto b = (*fn)(in);
  EXPECT_NE(a[1].data_ptr(), b[1].data_ptr());
  EXPECT_TRUE(at::equal(a[1], held));
  EXPECT_TRUE(at::allclose(a[1], at::tanh(in[0]).t()));
  EXPECT_TRUE(at::allclose(b[1], a[1]));
}

// A dynamic entry compiles each size on its own: executables of one
// program structure. Only the one that ran last keeps its buffers, so an
// entry called at many sizes holds one size's intermediates; a program of
// another structure keeps its own.
TEST(LlvmBackend, ExecutablesOfOneStructureKeepOneSetOfBuffers) {
  Body body = [](Graph& g, const std::vector<Node*>& x) {
    Node* t = g.call(op("aten::tanh"), {x[0]});
    Node* m = g.call(op("aten::mm"), {t, x[1]});
    return std::vector<Node*>{g.call(op("aten::relu"), {m})};
  };
  Body other = [](Graph& g, const std::vector<Node*>& x) {
    Node* t = g.call(op("aten::sigmoid"), {x[0]});
    Node* m = g.call(op("aten::mm"), {t, x[1]});
    return std::vector<Node*>{g.call(op("aten::relu"), {m})};
  };
  auto compiled = [](const Body& b, int64_t n) {
    std::vector<at::Tensor> in = {at::randn({n, n}), at::randn({n, n})};
    auto built = build(b, in);
    auto fn = find_backend("llvm")->compile(built->graph, built->metas);
    EXPECT_TRUE(fn.ok());
    return std::make_pair(*fn, in);
  };
  auto [small, small_in] = compiled(body, 8);
  auto [large, large_in] = compiled(body, 16);
  auto [third, third_in] = compiled(other, 12);
  const long long start = pooled_bytes();
  small(small_in);
  EXPECT_EQ(pooled_bytes(), start + 8 * 8 * 4) << "tanh's buffer kept for the next call";
  long long reused = buffers_reused();
  small(small_in);
  EXPECT_EQ(buffers_reused(), reused + 1);
  third(third_in);  // another structure: both keep theirs
  EXPECT_EQ(pooled_bytes(), start + 8 * 8 * 4 + 12 * 12 * 4);
  large(large_in);  // the same structure at another size: the small one's buffer is given back
  EXPECT_EQ(pooled_bytes(), start + 16 * 16 * 4 + 12 * 12 * 4);
  reused = buffers_reused();
  auto out = small(small_in)[0];  // allocates again, then keeps it
  EXPECT_EQ(buffers_reused(), reused);
  EXPECT_EQ(pooled_bytes(), start + 8 * 8 * 4 + 12 * 12 * 4);
  EXPECT_TRUE(at::allclose(out, at::relu(at::mm(at::tanh(small_in[0]), small_in[1])), 1e-5, 1e-5));
  small = CompiledFn();  // an executable gone takes its buffers with it
  EXPECT_EQ(pooled_bytes(), start + 12 * 12 * 4);
}

// A kernel's result that AOT would copy into a graph input (its tag
// "donated_to_output") is written straight into it, counted per call; an
// input of the compiled sizes that is not one dense block runs the graph op
// by op instead, counted too.
TEST(LlvmBackend, DonatedInputsAreWrittenInPlaceOnlyWhenDense) {
  Body body = [](Graph& g, const std::vector<Node*>& x) {
    x[0]->meta().tags.donated_to_output = 0;
    Node* m = g.call(op("aten::mul.Tensor"), {x[0], 0.9});
    return std::vector<Node*>{g.call(op("aten::add.Tensor"), {m, x[1]})};
  };
  at::Tensor buf = at::randn({4, 6}), grad = at::randn({4, 6});
  auto built = build(body, {buf, grad});
  ASSERT_TRUE(built);
  auto fn = find_backend("llvm")->compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  const long long written = kernel_outputs_written_in_place(), fallbacks = inplace_dense_fallbacks();
  for (int call = 1; call <= 2; ++call) {
    at::Tensor want = buf * 0.9 + grad;
    at::Tensor got = (*fn)({buf, grad})[0];
    EXPECT_EQ(got.data_ptr(), buf.data_ptr()) << "call " << call;
    EXPECT_TRUE(at::allclose(buf, want)) << "call " << call;
    EXPECT_EQ(kernel_outputs_written_in_place(), written + call);
  }
  EXPECT_EQ(inplace_dense_fallbacks(), fallbacks);

  // every other column of a [4, 12] tensor: the compiled sizes, not one block
  at::Tensor wide = at::randn({4, 12});
  at::Tensor before = wide.clone();
  at::Tensor got = (*fn)({wide.slice(1, 0, 12, 2), grad})[0];
  EXPECT_EQ(inplace_dense_fallbacks(), fallbacks + 1);
  EXPECT_EQ(kernel_outputs_written_in_place(), written + 2);
  EXPECT_TRUE(at::allclose(got, before.slice(1, 0, 12, 2) * 0.9 + grad));
  EXPECT_TRUE(at::equal(wide, before));  // op by op the functional graph writes nothing
}

// ATen's addcmul kernel is built with FP contraction: self + value * t1 * t2
// adds the last product with one rounding. The fused kernel's fma gives
// the very bits (a plain multiply and add differs in ~30% of elements).
TEST(LlvmBackend, AddcmulIsBitIdenticalToAten) {
  at::manual_seed(3);
  for (c10::ScalarType t : {at::kFloat, at::kDouble}) {
    std::vector<at::Tensor> in = {values({4099}, t), values({4099}, t), values({4099}, t)};
    for (double value : {1.0, 0.7}) {
      auto body = [value](Graph& g, const std::vector<Node*>& x) {
        return std::vector<Node*>{g.call(op("aten::addcmul"), {x[0], x[1], x[2]}, {{"value", value}})};
      };
      auto built = build(body, in);
      ASSERT_TRUE(built.has_value());
      auto fn = find_backend("llvm")->compile(built->graph, built->metas);
      ASSERT_TRUE(fn.ok()) << fn.error().message;
      EXPECT_TRUE(at::equal((*fn)(in)[0], at::addcmul(in[0], in[1], in[2], value)))
          << c10::toString(t) << " value " << value;
    }
  }
}

// Outputs get eager's strides even when the inputs are transposed.
TEST(LlvmBackend, OutputsFollowEagerStrides) {
  Body body = [](Graph& g, const std::vector<Node*>& x) {
    return std::vector<Node*>{g.call(op("aten::add.Tensor"), {x[0], x[0]})};
  };
  at::Tensor t = at::randn({6, 4}).t();
  ASSERT_TRUE(compare(body, {t}, "transposed add"));
  at::Tensor nhwc = at::randn({2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast);
  ASSERT_TRUE(compare(body, {nhwc}, "channels-last add"));
}

// Inputs of another shape than compiled for still give eager's values.
TEST(LlvmBackend, OtherInputShapesRunOpByOp) {
  auto built = build(chain8, {at::randn({8}), at::randn({8})});
  ASSERT_TRUE(built);
  auto fn = find_backend("llvm")->compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  std::vector<at::Tensor> other = {at::randn({5}), at::randn({5})};
  auto expected = graph::interpret_tensors(*built->graph, other);
  ASSERT_TRUE(expected.ok());
  const long long before = inputs_differ_fallbacks();
  expect_close((*expected)[0], (*fn)(other)[0], "other shape");
  EXPECT_EQ(inputs_differ_fallbacks(), before + 1) << "the fallback is counted";
  (*fn)({at::randn({8}), at::randn({8})});
  EXPECT_EQ(inputs_differ_fallbacks(), before + 1) << "a call as compiled is not";
}

// A kernel reading an extern op's result whose sizes at run time are not
// its node's meta (a meta kernel wrong for the op: `_embedding_bag`'s
// unused offset2bag was [indices] on meta, [0] on CPU, and the clone AOT
// keeps of it read 40 elements of an empty tensor) runs its nodes op by op
// instead of reading past the tensor: eager's values and sizes.
TEST(LlvmBackend, KernelInputsNotAsTheirMetaSaysRunOpByOp) {
  auto g = std::make_shared<Graph>();
  at::Tensor x = at::randn({6, 3});
  Node* in = g->placeholder("x", graph::TensorMeta::of(x));
  Node* flipped = g->call(op("aten::cumsum"), {in, int64_t{0}});  // extern
  Node* scaled = g->call(op("aten::mul.Tensor"), {g->call(op("aten::neg"), {flipped}), 2.0});
  Node* summed = g->call(op("aten::sum.dim_IntList"), {g->call(op("aten::exp"), {flipped}), Arg::ints({1})});
  g->output(Arg::tuple({scaled, summed}));
  auto inferred = graph::infer_meta_all(*g);
  ASSERT_TRUE(inferred.ok()) << inferred.error().message;
  auto expected = graph::interpret_tensors(*g, {x});
  ASSERT_TRUE(expected.ok());
  // the wrong meta: flip's result (and what follows it) described with 8 rows, not 6
  for (Node* n : g->nodes()) {
    const graph::TensorMeta* m = n->meta().tensor();
    if (n->kind() != graph::NodeKind::call_function || !m || m->sizes.empty() || m->sizes[0] != 6) continue;
    std::vector<int64_t> sizes = m->sizes;
    sizes[0] = 8;
    n->meta().set_tensor(graph::TensorMeta::contiguous(sizes, m->dtype));
  }
  auto fn = find_backend("llvm")->compile(g, {graph::TensorMeta::of(x)});
  ASSERT_TRUE(fn.ok()) << fn.error().message;
  EXPECT_GE(last_llvm_compile_stats().kernels, 1);
  const long long before = kernel_input_fallbacks();
  std::vector<at::Tensor> got = (*fn)({x});
  ASSERT_EQ(got.size(), 2u);
  expect_close((*expected)[0], got[0], "pointwise kernel after the extern op");
  expect_close((*expected)[1], got[1], "reduction kernel after the extern op");
  EXPECT_GT(kernel_input_fallbacks(), before) << "the fallback is counted";
}

// A kernel whose buffers are contiguous as compiled is compiled with its
// flat entry alone; a call with a strided view of the same sizes compiles
// the strided entry then, once, and gives eager's values.
TEST(LlvmBackend, TheStridedEntryIsCompiledWhenACallFirstNeedsIt) {
  auto built = build(chain8, {at::randn({6, 4}), at::randn({6, 4})});
  ASSERT_TRUE(built);
  forget_kernels();
  zero_kernel_counters();
  auto fn = find_backend("llvm")->compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  EXPECT_EQ(kernels_compiled(), 1);
  std::vector<at::Tensor> contiguous = {at::randn({6, 4}), at::randn({6, 4})};
  (*fn)(contiguous);
  EXPECT_EQ(kernels_compiled(), 1) << "contiguous inputs take the flat entry";
  for (int round = 0; round < 2; ++round) {
    std::vector<at::Tensor> transposed = {at::randn({4, 6}).t(), at::randn({6, 4})};
    auto expected = graph::interpret_tensors(*built->graph, transposed);
    ASSERT_TRUE(expected.ok());
    // values only: outputs keep the strides compiled for
    EXPECT_TRUE(at::allclose((*expected)[0], (*fn)(transposed)[0], 1e-5, 1e-6)) << "transposed input";
    EXPECT_EQ(kernels_compiled(), 2) << "the strided entry, compiled once";
  }
}

Body relu_body = [](Graph& g, const std::vector<Node*>& x) {
  return std::vector<Node*>{g.call(op("aten::relu"), {g.call(op("aten::add.Tensor"), {x[0], 1.0})})};
};

TEST(LlvmBackend, DebugInjectBug) {
  std::vector<at::Tensor> in = {at::randn({16})};
  auto built = build(relu_body, in);
  ASSERT_TRUE(built);
  const Backend* llvm = find_backend("llvm");

  set_debug_inject_bug("relu_compile_error");
  EXPECT_FALSE(llvm->compile(built->graph, built->metas).ok());

  set_debug_inject_bug("relu_runtime_error");
  auto fn = llvm->compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  EXPECT_ANY_THROW((*fn)(in));

  set_debug_inject_bug("relu_accuracy_error");
  fn = llvm->compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  at::Tensor expected = at::relu(in[0] + 1);
  EXPECT_TRUE(at::allclose((*fn)(in)[0], expected + 1));

  set_debug_inject_bug("");
  fn = llvm->compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  EXPECT_TRUE(at::allclose((*fn)(in)[0], expected));
}

}  // namespace
}  // namespace tj::jit
