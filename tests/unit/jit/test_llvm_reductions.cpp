// The llvm backend's fused reductions against ATen: every reduction the
// lowering fuses (sum, mean, amax/amin, argmax/argmin, var/std, softmax,
// log_softmax, layer_norm) over contiguous, transposed, sliced, 3-d and
// zero-size inputs in each dtype eager accepts, with NaN and inf; that
// they fuse with the pointwise ops before and after them into one kernel
// (views of row values too); that a reduction over other dims opens
// another kernel; that sums across rows keeping the contiguous dim run as
// ATen's; the accuracy of long float32 sums; and that flat loops
// prefetch the memory ahead of them.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <ATen/Parallel.h>

#include "jit/lowering.h"
#include "llvm_test_util.h"
#include "reduction_cases.h"

namespace tj::jit {
namespace {

using namespace test_util;  // NOLINT: the helpers of llvm_test_util.h
using graph::Arg;
using graph::Graph;
using graph::Kwarg;
using graph::Node;

TEST(LlvmReductions, EveryReductionMatchesAtenInEveryLayoutAndDtype) {
  at::manual_seed(0);
  for (const Reduction& r : reductions()) {
    int ran = 0;
    for (c10::ScalarType t : kDtypes) {
      if (r.floats_only && !at::isFloatingType(t)) continue;
      for (const std::string& layout : kInputs)
        ran += compare(single(r.make), {input(layout, t)}, r.name + " " + c10::toString(t) + " " + layout);
    }
    EXPECT_GT(ran, 0) << r.name << " ran for no input";
  }
}

// Each reduction is a kernel of its own (not extern) on float32 and float64 rows.
TEST(LlvmReductions, EveryReductionIsFused) {
  for (const Reduction& r : reductions()) {
    for (c10::ScalarType t : {at::kFloat, at::kDouble}) {
      int kernels = -1;
      ASSERT_TRUE(compare(single(r.make), {input("contiguous", t)}, r.name, &kernels)) << r.name;
      EXPECT_EQ(kernels, r.name.rfind("layer_norm", 0) == 0 && r.name != "layer_norm plain" &&
                                 r.name != "layer_norm rstd"
                             ? 2  // the weight and bias are made by a kernel of their own shape
                             : 1)
          << r.name << " " << c10::toString(t);
      EXPECT_EQ(last_llvm_compile_stats().extern_steps,
                r.name == "layer_norm" || r.name == "layer_norm mean" ? 1 : 0)  // aten::ones
          << r.name << " " << c10::toString(t);
    }
  }
}

// Pointwise ops before and after a reduction, row values broadcast back
// over the rows (keepdim, or a squeezed value unsqueezed by a view): one kernel.
TEST(LlvmReductions, PointwiseOpsAroundReductionsFuseIntoOneKernel) {
  Body softmax_chain = [](Graph& g, const std::vector<Node*>& x) {
    Node* y = g.call(op("aten::add.Tensor"), {g.call(op("aten::mul.Tensor"), {x[0], 2.0}), 1.0});
    Node* s = g.call(op("aten::_softmax"), {y, int64_t{-1}, false});
    return std::vector<Node*>{g.call(op("aten::mul.Tensor"), {s, 3.0}), y};
  };
  Body centering = [](Graph& g, const std::vector<Node*>& x) {
    Node* m = g.call(op("aten::mean.dim"), {x[0], ints({-1}), true});
    Node* c = g.call(op("aten::sub.Tensor"), {x[0], m});
    Node* v = g.call(op("aten::mean.dim"), {g.call(op("aten::mul.Tensor"), {c, c}), ints({-1}), true});
    return std::vector<Node*>{g.call(op("aten::div.Tensor"), {c, g.call(op("aten::sqrt"), {v})})};
  };
  Body unsqueezed = [](Graph& g, const std::vector<Node*>& x) {
    Node* s = g.call(op("aten::sum.dim_IntList"), {x[0], ints({1})});
    Node* u = g.call(op("aten::unsqueeze"), {g.call(op("aten::mul.Tensor"), {s, 0.5}), int64_t{1}});
    return std::vector<Node*>{g.call(op("aten::sub.Tensor"), {x[0], u}), s};
  };
  Body layer_norm_relu = [](Graph& g, const std::vector<Node*>& x) {
    Node* y = g.call(op("aten::mul.Tensor"), {x[0], x[1]});
    Node* ln = g.call(op("aten::native_layer_norm"), {y, ints({7}), x[1], Arg(), 1e-5});
    Node* out = g.call(graph::OpRegistry::instance().getitem(), {ln, int64_t{0}});
    return std::vector<Node*>{g.call(op("aten::relu"), {out})};
  };
  for (auto [name, body] : std::vector<std::pair<std::string, Body>>{
           {"softmax chain", softmax_chain}, {"centering", centering}, {"unsqueezed", unsqueezed},
           {"layer_norm relu", layer_norm_relu}}) {
    int kernels = -1;
    ASSERT_TRUE(compare(body, {input("contiguous", at::kFloat), at::randn({7})}, name, &kernels)) << name;
    EXPECT_EQ(kernels, 1) << name;
    EXPECT_EQ(last_llvm_compile_stats().extern_steps, 0) << name;
    ASSERT_TRUE(compare(body, {input("transposed", at::kDouble), at::randn({7}, at::kDouble)}, name + " strided"));
  }
}

// Reductions over different dims of one tensor are two kernels, both right.
TEST(LlvmReductions, ReductionsOverOtherDimsOpenAnotherKernel) {
  Body body = [](Graph& g, const std::vector<Node*>& x) {
    Node* rows = g.call(op("aten::sum.dim_IntList"), {x[0], ints({1}), true});
    Node* cols = g.call(op("aten::amax"), {x[0], ints({0}), true});
    return std::vector<Node*>{g.call(op("aten::add.Tensor"), {rows, cols})};
  };
  int kernels = -1;
  ASSERT_TRUE(compare(body, {input("contiguous", at::kFloat)}, "rows and cols", &kernels));
  EXPECT_GE(kernels, 2);
}

// A sum or mean across rows that keeps the contiguous dim (outer `sum(0)`,
// a middle dim of a 3-d tensor) runs as ATen's op, unfused: a fused loop
// would read each output element's row with a stride. One over the
// contiguous dim (inner), or keeping fewer than 8 contiguous elements, or
// reading a transposed input along its contiguous dim, stays a kernel.
// Odd sizes, keepdim, float32 and float64, a pointwise producer fused
// before the ATen sum; values against eager in every case.
TEST(LlvmReductions, SumsAcrossRowsKeepingTheContiguousDimRunAsAten) {
  at::manual_seed(2);
  struct Case {
    std::string name;
    const char* op;
    at::Tensor x;
    std::vector<int64_t> dims;
    bool keepdim;
    int externs;  // ATen steps expected
  };
  for (c10::ScalarType t : {at::kFloat, at::kDouble}) {
    const std::vector<Case> cases = {
        {"outer sum(0)", "aten::sum.dim_IntList", values({37, 129}, t), {0}, false, 1},
        {"outer mean(0) keepdim", "aten::mean.dim", values({701, 33}, t), {0}, true, 1},
        {"middle sum(1)", "aten::sum.dim_IntList", values({5, 37, 19}, t), {1}, false, 1},
        {"outer two dims sum(0, 1)", "aten::sum.dim_IntList", values({3, 7, 131}, t), {0, 1}, false, 1},
        {"inner sum(1)", "aten::sum.dim_IntList", values({37, 129}, t), {1}, false, 0},
        {"inner and outer sum(0, 2)", "aten::sum.dim_IntList", values({5, 37, 19}, t), {0, 2}, false, 0},
        {"narrow kept dim sum(0)", "aten::sum.dim_IntList", values({37, 7}, t), {0}, false, 0},
        {"transposed sum(0)", "aten::sum.dim_IntList", values({129, 37}, t).t(), {0}, false, 0},
        // an input small enough to stay in L1 (at most 8 KiB): fused, with its producer
        {"small outer sum(0)", "aten::sum.dim_IntList", values({16, 32}, t), {0}, false, 0},
        {"small outer mean(0, 1)", "aten::mean.dim", values({2, 3, 64}, t), {0, 1}, false, 0},
    };
    for (const Case& c : cases) {
      const std::string what = c.name + " " + c10::toString(t);
      for (bool producer : {false, true}) {
        Body body = [&](Graph& g, const std::vector<Node*>& x) {
          Node* in = producer ? g.call(op("aten::mul.Tensor"), {x[0], 2.0}) : x[0];
          return std::vector<Node*>{g.call(op(c.op), {in, ints(c.dims), c.keepdim})};
        };
        int kernels = -1;
        ASSERT_TRUE(compare(body, {c.x}, what, &kernels)) << what;
        EXPECT_EQ(last_llvm_compile_stats().extern_steps, c.externs) << what << " producer " << producer;
        EXPECT_EQ(kernels, (c.externs ? 0 : 1) + (producer && c.externs ? 1 : 0)) << what << " producer " << producer;
      }
    }
  }
}

// Kernels with costly functions over many elements share their rows among
// ATen's threads, on the flat and the strided path, with the same results.
TEST(LlvmReductions, ComputeBoundKernelsRunOnIntraOpThreads) {
  int threads = at::get_num_threads();
  at::set_num_threads(2);
  Body softmax_tanh = [](Graph& g, const std::vector<Node*>& x) {
    Node* s = g.call(op("aten::_softmax"), {g.call(op("aten::tanh"), {x[0]}), int64_t{1}, false});
    return std::vector<Node*>{s};
  };
  Body cheap = [](Graph& g, const std::vector<Node*>& x) {
    return std::vector<Node*>{g.call(op("aten::add.Tensor"), {x[0], 1.0})};
  };
  for (const at::Tensor& x : {at::randn({512, 300}), at::randn({300, 512}).t(), at::randn({70, 1000, 3}).select(2, 1)}) {
    ASSERT_TRUE(compare(softmax_tanh, {x}, "softmax(tanh)"));
    EXPECT_EQ(last_llvm_compile_stats().parallel_kernels, 1);
    ASSERT_TRUE(compare(cheap, {x}, "x + 1"));
    EXPECT_EQ(last_llvm_compile_stats().parallel_kernels, 0);  // memory-bound: one thread
  }
  at::set_num_threads(threads);
}

// A float32 sum over 2^22 elements stays as close to the exact sum as eager's.
TEST(LlvmReductions, LongFloatSumsAreAccurate) {
  at::manual_seed(1);
  at::Tensor x = at::rand({1 << 22}) + 100;
  Body body = single(call("aten::sum", {}));
  auto built = build(body, {x});
  ASSERT_TRUE(built);
  auto fn = find_backend("llvm")->compile(built->graph, built->metas);
  ASSERT_TRUE(fn.ok());
  double got = (*fn)({x})[0].item<double>();
  double exact = x.to(at::kDouble).sum().item<double>();
  double eager = x.sum().item<double>();
  EXPECT_LE(std::abs(got - exact), std::max(std::abs(eager - exact), 1e-7 * exact)) << got << " vs " << exact;
}

// The optimized IR of the one kernel `body` lowers to.
std::string kernel_ir(const Body& body, const at::Tensor& x, bool flat) {
  auto built = build(body, {x});
  if (!built) return "graph rejected";
  auto program = lower(built->graph, LoweringOptions{});
  if (!program.ok() || program->kernels.size() != 1) return "not one kernel";
  auto ir = optimized_ir(program->kernels[0], flat);
  return ir.ok() ? *ir : ir.error().message;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Loops of flat entries ask for memory ahead once vectorized
// (jit/llvm_passes.h, kPrefetchAhead). A reduction: its first inner loop
// prefetches the next row of its row-major input before each vector load
// (one row and at most 4 KiB on), the loop that writes the output row
// prefetches the next one for writing, the loop between them nothing; the
// loops stay vectorized. A pointwise kernel: every stream 2 KiB ahead, reads
// and writes. Strided entries prefetch nothing.
TEST(LlvmReductions, FlatLoopsPrefetchTheMemoryAhead) {
  auto reads = [](const std::string& ir) { return count(ir, ", i32 0, i32 3, i32 1)"); };
  auto writes = [](const std::string& ir) { return count(ir, ", i32 1, i32 3, i32 1)"); };
  Body softmax = [](Graph& g, const std::vector<Node*>& x) {
    return std::vector<Node*>{g.call(op("aten::_softmax"), {x[0], int64_t{1}, false})};
  };
  const std::string flat = kernel_ir(softmax, at::randn({64, 1024}), /*flat=*/true);
  EXPECT_GE(reads(flat), 1u) << flat;
  EXPECT_GE(writes(flat), 1u) << flat;
  EXPECT_EQ(count(flat, "getelementptr i8, ptr"), reads(flat) + writes(flat)) << "one address per prefetch\n" << flat;
  EXPECT_NE(flat.find("x float>, ptr"), std::string::npos) << "the loops are still vectorized\n" << flat;
  EXPECT_NE(flat.find("mul i64 %2, 4"), std::string::npos) << "a row is `cols` floats\n" << flat;
  EXPECT_NE(flat.find("@llvm.umin.i64(i64 %row.bytes, i64 4096)"), std::string::npos) << "at most 4 KiB on\n" << flat;
  // softmax reads its row three times: the second loop, from cache, asks for nothing
  EXPECT_LT(reads(flat), count(flat, "= load <")) << flat;

  Body weighted = [](Graph& g, const std::vector<Node*>& x) {
    Node* scaled = g.call(op("aten::mul.Tensor"), {x[0], g.call(op("aten::ones"), {ints({1024})})});
    return std::vector<Node*>{g.call(op("aten::sum.dim_IntList"), {scaled, ints({1}), true})};
  };
  const std::string sum = kernel_ir(weighted, at::randn({64, 1024}), true);
  EXPECT_GE(reads(sum), 1u) << sum;
  EXPECT_EQ(writes(sum), 0u) << "one value per row is not streamed\n" << sum;

  Body pointwise = [](Graph& g, const std::vector<Node*>& x) {
    return std::vector<Node*>{g.call(op("aten::add.Tensor"), {x[0], 1.0})};
  };
  const std::string add = kernel_ir(pointwise, at::randn({64, 1024}), true);
  EXPECT_GE(reads(add), 1u) << add;
  EXPECT_GE(writes(add), 1u) << add;
  EXPECT_EQ(count(add, "getelementptr i8, ptr"), count(add, "i64 2048\n")) << "2 KiB ahead\n" << add;

  for (const Body* body : {&softmax, &pointwise}) {
    const std::string strided = kernel_ir(*body, at::randn({64, 1024}), /*flat=*/false);
    EXPECT_NE(strided.find("_strided"), std::string::npos) << strided;
    EXPECT_EQ(count(strided, "@llvm.prefetch"), 0u) << strided;
  }
}

// A vectorized sin is the inline polynomial for vectors below 16 in
// magnitude and libmvec's call for the others, behind a branch (InlineSin
// in llvm_passes.cpp; its accuracy is test_llvm_math's).
TEST(LlvmReductions, VectorSinIsInlineWithLibmvecForLargeArguments) {
  Body sin = [](Graph& g, const std::vector<Node*>& x) {
    return std::vector<Node*>{g.call(op("aten::mul.Tensor"), {g.call(op("aten::sin"), {x[0]}), x[0]})};
  };
  const std::string ir = kernel_ir(sin, at::randn({64, 1024}), /*flat=*/true);
  // lines holding every one of `parts`
  auto lines = [&](std::initializer_list<const char*> parts) {
    size_t n = 0;
    for (size_t at = 0; at < ir.size();) {
      size_t end = ir.find('\n', at);
      if (end == std::string::npos) end = ir.size();
      const std::string line = ir.substr(at, end - at);
      n += std::all_of(parts.begin(), parts.end(), [&](const char* p) { return line.find(p) != std::string::npos; });
      at = end + 1;
    }
    return n;
  };
  const size_t calls = lines({"call <", "v_sinf(<"});
  EXPECT_GE(calls, 1u) << "libmvec stays for large arguments\n" << ir;
  EXPECT_EQ(lines({"call i1 @llvm.vector.reduce.or"}), calls) << "one check per call\n" << ir;
  EXPECT_EQ(lines({"fcmp uge <", "float 1.600000e+01"}), calls) << "|x| >= 16 or NaN\n" << ir;
  EXPECT_EQ(lines({"= phi <", "x float>"}), calls) << "inline or called, joined\n" << ir;
}

// A flat pointwise entry over many elements gets no second, narrower
// vector loop for the elements its vector loop leaves (vectorize_epilogue,
// llvm_codegen.cpp). One over a few elements, its strided entry and
// reductions keep LLVM's default, which adds one after loops of 16 lanes
// (512-bit float vectors).
TEST(LlvmReductions, OnlyLongFlatPointwiseEntriesGoWithoutVectorEpilogue) {
  Body pointwise = [](Graph& g, const std::vector<Node*>& x) {
    return std::vector<Node*>{g.call(op("aten::mul.Tensor"), {g.call(op("aten::add.Tensor"), {x[0], 1.0}), x[0]})};
  };
  Body softmax = [](Graph& g, const std::vector<Node*>& x) {
    return std::vector<Node*>{g.call(op("aten::_softmax"), {x[0], int64_t{-1}, false})};
  };
  const std::string flat = kernel_ir(pointwise, at::randn({256, 1000}), /*flat=*/true);
  EXPECT_NE(flat.find("vector.body"), std::string::npos) << "vectorized\n" << flat;
  EXPECT_EQ(count(flat, "vec.epilog"), 0u) << flat;
  // (Narrower vectors get no epilogue from LLVM anyway.)
  const size_t wide = count(flat, "<16 x float>") > 0 ? 1 : 0;
  const std::string small = kernel_ir(pointwise, at::randn({24}), /*flat=*/true);
  EXPECT_GE(count(small, "vec.epilog"), wide) << small;
  const std::string strided = kernel_ir(pointwise, at::randn({256, 1000}), /*flat=*/false);
  EXPECT_GE(count(strided, "vec.epilog"), wide) << strided;
  const std::string rows = kernel_ir(softmax, at::randn({256, 1000}), /*flat=*/true);
  EXPECT_GE(count(rows, "vec.epilog"), wide) << rows;
}

}  // namespace
}  // namespace tj::jit
